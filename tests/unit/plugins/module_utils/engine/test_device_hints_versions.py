# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Device-manager hints by kubelet release (kubernetes/kubernetes#138244): <= 1.35 every mask of
every NUMA node; from 1.36 only the NUMA nodes hosting devices of the resource, plus one
non-preferred hint spanning every node."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.devicemanager import DeviceInventory, DeviceManager
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import DEVICE_HINTS_FROM_DEVICE_NUMA_NODES, behaviour

DEVICES = {"example.com/gpu": {"gpu0": {"numa": [0]}, "gpu1": {"numa": [1]}}}


def hints(manager, request=1):
    available = manager.available_devices("example.com/gpu")
    return [(tuple(h.affinity.bits()), h.preferred)
            for h in manager.topology_hints("example.com/gpu", available, set(), request)]


def manager(release):
    return DeviceManager([0, 1, 2, 3], DeviceInventory.from_spec(DEVICES),
                         device_numa_nodes_only=behaviour(DEVICE_HINTS_FROM_DEVICE_NUMA_NODES, (1, release)))


def test_1_35_enumerates_every_mask_of_every_node():
    got = hints(manager(35))
    assert len(got) == 12  # masks touching node 0 or 1 among the 15 of four nodes
    assert ((0,), True) in got and ((0, 2), False) in got and ((0, 1, 2, 3), False) in got


def test_1_36_enumerates_device_nodes_plus_one_fallback():
    assert hints(manager(36)) == [((0,), True), ((1,), True), ((0, 1), False), ((0, 1, 2, 3), False)]
    # two devices needed: only the pair, then the fallback
    assert hints(manager(36), request=2) == [((0, 1), True), ((0, 1, 2, 3), False)]


def test_no_fallback_when_devices_cover_every_node_or_no_hint_fits():
    every = DeviceManager([0, 1], DeviceInventory.from_spec(DEVICES), device_numa_nodes_only=True)
    assert hints(every) == [((0,), True), ((1,), True), ((0, 1), False)]
    assert hints(manager(36), request=3) == []


def test_admission_follows_the_kubelet_version():
    from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import HugePages, NumaNode, Topology
    from ansible_collections.numaguard.kubelet.tests.fleet import topologies  # noqa: F401  (fleet importable)
    nodes = [NumaNode(id=n, cpus=(2 * n, 2 * n + 1), memory_total_bytes=8 << 30, memory_free_bytes=8 << 30,
                      hugepages={"hugepages-2Mi": HugePages(page_size_bytes=2 << 20, total_pages=0, free_pages=0)},
                      distances=dict((m, 10 if m == n else 20) for m in range(4))) for n in range(4)]
    topology = Topology(nodes=nodes)
    cfg = {"topologyManagerPolicy": "best-effort"}
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "x",
                                    "resources": {"limits": {"example.com/gpu": "1"}}}]}}
    old = AdmissionSimulator(topology, cfg, devices=DEVICES, kubelet_version="1.35")
    new = AdmissionSimulator(topology, cfg, devices=DEVICES, kubelet_version="1.36")
    old_hints = old.admit(old.pod_from_manifest(pod))["merges"][0]["hints"]["device"]["example.com/gpu"]
    new_hints = new.admit(new.pod_from_manifest(pod))["merges"][0]["hints"]["device"]["example.com/gpu"]
    assert len(old_hints) == 12 and len(new_hints) == 4
    assert new_hints[-1] == {"numa_affinity": [0, 1, 2, 3], "preferred": False}
