# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The CPU manager's topology: core ids, sockets, uncore caches, sparse and memory-only nodes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.cpu_topology import (
    CPUInfo,
    discover,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology


def cpu(cid, node, core, socket, siblings, cache=None, online=True):
    return {"id": cid, "node": node, "core": core, "socket": socket, "die": 0, "online": online,
            "siblings": siblings, "cache_id": cache}


def test_two_socket_smt_host_with_kernel_core_ids_per_package():
    # kernel core ids restart at 0 in each package; CPU n and n+4 are SMT siblings
    cpus = [cpu(c, c % 4 // 2, c % 2, c % 4 // 2, sorted({c % 4, c % 4 + 4}), cache=c % 4 // 2)
            for c in range(8)]
    topo = discover(Topology.from_facts({"nodes": [
        {"id": 0, "cpus": [0, 1, 4, 5], "memory_total_bytes": 1}, {"id": 1, "cpus": [2, 3, 6, 7], "memory_total_bytes": 1}],
        "cpus": cpus}))
    assert topo.details[6] == CPUInfo(numa_node=1, socket=1, core=2, uncore_cache=1)
    assert topo.details[1] == CPUInfo(numa_node=0, socket=0, core=1, uncore_cache=0)
    assert (topo.num_cpus, topo.num_cores, topo.num_sockets, topo.num_numa_nodes) == (8, 4, 2, 2)
    assert (topo.cpus_per_core(), topo.cpus_per_socket()) == (2, 4)
    assert topo.siblings_of([0, 3]) == frozenset([0, 4, 3, 7])


def test_sparse_ids_memory_only_nodes_offline_cpus_and_uncore_fallback():
    cpus = [cpu(0, 0, 0, 0, [0]), cpu(1, 0, 1, 0, [1]), cpu(2, None, None, None, [], online=False),
            cpu(3, 33, 0, 1, [3])]
    topo = discover(Topology.from_facts({"nodes": [
        {"id": 0, "cpus": [0, 1], "memory_total_bytes": 1},
        {"id": 7, "cpus": [], "memory_total_bytes": 1},
        {"id": 33, "cpus": [3], "memory_total_bytes": 1}], "cpus": cpus}))
    assert topo.numa_ids == (0, 33)
    assert topo.num_numa_nodes == 2 and topo.num_cpus == 3
    assert 2 not in topo.details
    # no uncore cache reported: the kubelet falls back to the socket id
    assert topo.details[3] == CPUInfo(numa_node=33, socket=1, core=3, uncore_cache=1)


def test_without_cpu_details_every_cpu_is_a_core_on_socket_zero():
    topo = discover(Topology.from_facts({"nodes": [{"id": 0, "cpus": [0, 1], "memory_total_bytes": 1}]}))
    assert topo.details == {0: CPUInfo(0, 0, 0, 0), 1: CPUInfo(0, 0, 1, 0)}


def test_no_online_cpu_is_the_kubelet_error():
    with pytest.raises(StateError) as info:
        discover(Topology.from_facts({"nodes": [{"id": 0, "cpus": [], "memory_total_bytes": 1}]}))
    assert str(info.value) == "could not detect number of cpus"
