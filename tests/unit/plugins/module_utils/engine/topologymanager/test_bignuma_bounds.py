# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Big machines beyond the kubelet's enumeration: the decision when it can be computed, else a
bounded ``cannot_check`` naming what was not decided -- never a MemoryError or a traceback.

* prefer-closest-numa-nodes with a pod needing 4 of 64 nodes (C(64, 4) = 635,376 masks, more
  than the 400,000-mask search bound): the closest preferred mask by branch and bound;
* best-effort with no preferred merged hint over more than 20 reachable nodes;
* the branch and bound (``merge.closest_member``) against brute force on small machines;
* every search out of bounds (bound lowered) ends the pod as ``cannot_check``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools
import random

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager import hint_sets, merge
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import SearchBoundExceeded
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import NUMAInfo
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, NumaNode, Topology

GIB = 1 << 30


def machine(count, distance=lambda a, b: 10 if a == b else 20, cpus_per_node=4, gib_per_node=16):
    nodes, cpus = [], []
    for node in range(count):
        own = tuple(range(node * cpus_per_node, (node + 1) * cpus_per_node))
        nodes.append(NumaNode(id=node, cpus=own, memory_total_bytes=gib_per_node * GIB,
                              memory_free_bytes=gib_per_node * GIB,
                              distances=dict((peer, distance(node, peer)) for peer in range(count))))
        cpus.extend(CPU(id=c, node=node, core=c, socket=node, die=0, online=True, siblings=(c,), cache_id=node)
                    for c in own)
    return Topology(nodes=tuple(nodes), cpus=tuple(cpus))


def config(count, policy, prefer_closest):
    options = {"max-allowable-numa-nodes": str(max(8, count))}
    if prefer_closest:
        options["prefer-closest-numa-nodes"] = "true"
    return {"cpuManagerPolicy": "static", "memoryManagerPolicy": "Static", "topologyManagerPolicy": policy,
            "topologyManagerScope": "pod", "topologyManagerPolicyOptions": options,
            "reservedSystemCPUs": "0", "systemReserved": {"memory": "1Gi"},
            "evictionHard": {"memory.available": "100Mi"},
            "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}]}


def admit(topology, cfg, cpu, memory):
    simulator = AdmissionSimulator(topology, cfg)
    resources = {"cpu": cpu, "memory": memory}
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
                "spec": {"containers": [{"name": "c", "image": "x",
                                         "resources": {"requests": resources, "limits": dict(resources)}}]}}
    return simulator.admit(simulator.pod_from_manifest(manifest))


def interleaved_sockets(a, b):
    """16 sockets of 4 nodes each: node n sits in socket n % 16."""
    if a == b:
        return 10
    return 12 if a % 16 == b % 16 else 20


@pytest.mark.parametrize("distance, want", [
    (lambda a, b: 10 if a == b else 20, [0, 1, 2, 3]),
    (interleaved_sockets, [0, 16, 32, 48]),
])
def test_prefer_closest_four_of_64_nodes(distance, want):
    # 14 CPUs and 50Gi need four nodes (CPU 0 and 1124Mi are reserved on node 0); C(64, 4) masks
    # exceed the search bound
    result = admit(machine(64, distance), config(64, "restricted", True), "14", "50Gi")
    assert result["verdict"] == "admitted", result["cannot_check"]
    assert result["numa_nodes"] == want
    assert result["merges"][0]["merged_hint"] == {"numa_affinity": want, "preferred": True}


def test_best_effort_no_preferred_hint_over_24_nodes():
    # CPUs prefer four nodes, memory two: no preferred merged hint; 24 reachable nodes
    result = admit(machine(24), config(24, "best-effort", False), "14", "20Gi")
    assert result["verdict"] == "admitted"
    assert result["merges"][0]["merged_hint"] == {"numa_affinity": [0, 1, 2, 3], "preferred": False}
    result = admit(machine(24, interleaved_sockets), config(24, "best-effort", True), "14", "20Gi")
    assert result["verdict"] == "admitted"
    assert result["merges"][0]["merged_hint"]["preferred"] is False


def uneven_sockets(a, b):
    """interleaved_sockets with 20-22 between sockets: not two-level, so the closest
    search is the branch and bound (two-level shapes are decided without walking masks)."""
    if a == b:
        return 10
    return 12 if a % 16 == b % 16 else 20 + (a * b) % 3


@pytest.mark.parametrize("policy, prefer_closest, memory, bound, expect", [
    ("restricted", True, "50Gi", 2, "the search for the preferred merged hint examined 2 masks"),
    ("best-effort", False, "20Gi", 0, "no preferred merged hint exists"),
    ("best-effort", True, "20Gi", 2, "no preferred merged hint exists"),
])
def test_out_of_bounds_is_cannot_check(monkeypatch, policy, prefer_closest, memory, bound, expect):
    monkeypatch.setattr(hint_sets, "MAX_MASK_VISITS", bound)
    monkeypatch.setattr(merge, "RANKED_FROM_NODES", [1])
    result = admit(machine(16, uneven_sockets), config(16, policy, prefer_closest), "14", memory)
    assert result["verdict"] == "cannot_check"
    assert result["admitted"] is False
    assert result["cannot_check"].startswith("topology manager: ")
    assert expect in result["cannot_check"]
    decision = result["merges"][0]
    assert decision["merged_hint"] is None and decision["admit"] is False
    assert expect in decision["note"]
    assert decision["kubelet_cost"]["permutations"] > 0  # the forecast stays


def _brute(info, within, size, accept):
    nodes = [n for n in info.nodes if (within >> n) & 1]
    found = [sum(1 << n for n in combo) for combo in itertools.combinations(nodes, size)]
    found = [m for m in found if accept(m)]
    return min(found, key=lambda m: (info.average_distance(m), m)) if found else None


@pytest.mark.parametrize("seed", range(40))
def test_closest_member_equals_brute_force(seed):
    rnd = random.Random(seed)
    count = rnd.randint(1, 9)
    symmetric = rnd.random() < 0.7
    table = {}
    for a in range(count):
        for b in range(count):
            if a == b:
                table[(a, b)] = rnd.choice([10, 10, 11])
            elif symmetric and (b, a) in table:
                table[(a, b)] = table[(b, a)]
            else:
                table[(a, b)] = rnd.choice([12, 20, 20, 21, 32])
    info = NUMAInfo(range(count), dict((a, [table[(a, b)] for b in range(count)]) for a in range(count)))
    within = sum(1 << n for n in range(count) if rnd.random() < 0.85) or 1
    accepted = set(m for m in range(1, 1 << count) if rnd.random() < rnd.choice([0.05, 0.3, 1.0]))
    for size in range(1, count + 1):
        budget = [10 ** 6]
        got = merge.closest_member(info, within, size, accepted.__contains__, budget, 10 ** 6, "test")
        assert got == _brute(info, within, size, accepted.__contains__)


def test_closest_member_out_of_budget_names_what_it_found():
    info = NUMAInfo(range(6), dict((a, [10 if a == b else 20 + ((a * b) % 3) for b in range(6)]) for a in range(6)))
    with pytest.raises(SearchBoundExceeded) as err:
        merge.closest_member(info, 63, 3, lambda m: True, [3], 3, "the search")
    assert str(err.value).startswith("the search examined 3 masks and branches of 6 NUMA nodes (masks of 3) without an answer")
