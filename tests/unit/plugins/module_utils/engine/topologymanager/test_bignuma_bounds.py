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


def _ring(count):
    return lambda a, b: 10 + 6 * min(abs(a - b), count - abs(a - b))


@pytest.mark.parametrize("seed", range(30))
def test_closest_member_left_out_search_equals_brute_force(seed):
    """Masks of more than half of ``within``: the search picks the nodes left out (a mask's total
    through the left-out costs) and must give the brute force's answer, ties by the smallest mask."""
    rnd = random.Random(1000 + seed)
    count = rnd.randint(9, 13)
    shape = rnd.choice(["ring", "random", "ties"])
    ring = _ring(count)
    table = {}
    for a in range(count):
        for b in range(count):
            if shape == "ring":
                table[(a, b)] = ring(a, b)
            elif a == b:
                table[(a, b)] = rnd.choice([10, 11])
            elif (b, a) in table and rnd.random() < 0.8:
                table[(a, b)] = table[(b, a)]
            else:
                table[(a, b)] = rnd.choice([20, 21]) if shape == "ties" else rnd.randint(11, 40)
    info = NUMAInfo(range(count), dict((a, [table[(a, b)] for b in range(count)]) for a in range(count)))
    within = sum(1 << n for n in range(count) if rnd.random() < 0.9) or 1
    chance = rnd.choice([0.02, 0.3, 1.0])
    verdicts = {}

    def accept(mask):
        if mask not in verdicts:
            verdicts[mask] = rnd.random() < chance
        return verdicts[mask]

    width = bin(within).count("1")
    for size in range(width // 2 + 1, width + 1):
        got = merge.closest_member(info, within, size, accept, [10 ** 7], 10 ** 7, "test")
        assert got == _brute(info, within, size, accept)


@pytest.mark.parametrize("seed", range(40))
def test_ring_runs_have_the_least_total(seed):
    """Ring distances (non-decreasing in hops): a run of neighbours has the least total of any
    mask of its size, and with w(2) > w(1) only runs have it (brute force); then the closest
    accepted mask is the brute force's whatever is accepted."""
    rnd = random.Random(2000 + seed)
    count = rnd.randint(2, 12)
    hops = [rnd.randint(8, 12)]
    for _hop in range(count // 2):
        hops.append(hops[-1] + rnd.choice([0, 1, 2, 6]))

    def apart(a, b):
        return min(abs(a - b), count - abs(a - b))

    info = NUMAInfo(range(count), dict((a, [hops[apart(a, b)] for b in range(count)]) for a in range(count)))
    within = (1 << count) - 1 if rnd.random() < 0.5 else (sum(1 << n for n in range(count) if rnd.random() < 0.85) or 1)
    for size in range(1, count + 1):
        floor, strict, runs = merge._ring_runs(info, size)
        totals = dict((sum(1 << n for n in combo), sum(hops[apart(a, b)] for a in combo for b in combo))
                      for combo in itertools.combinations(range(count), size))
        assert floor == min(totals.values())
        assert all(totals[run] == floor for run in runs)
        if strict:
            assert set(m for m, total in totals.items() if total == floor) == set(runs)
        chance = rnd.choice([0.0, 0.05, 0.5, 1.0])
        accepted = set(m for m in totals if rnd.random() < chance)
        got = merge.closest_member(info, within, size, accepted.__contains__, [10 ** 7], 10 ** 7, "test")
        assert got == _brute(info, within, size, accepted.__contains__)


def test_ring_runs_only_for_ring_distances():
    sockets = NUMAInfo(range(8), dict((a, [10 if a == b else (12 if a // 4 == b // 4 else 32) for b in range(8)])
                                      for a in range(8)))
    assert merge._ring_runs(sockets, 3) is None
    falling = NUMAInfo(range(6), dict((a, [10 if a == b else 30 - min(abs(a - b), 6 - abs(a - b)) for b in range(6)])
                                      for a in range(6)))
    assert merge._ring_runs(falling, 3) is None
    assert merge._ring_runs(NUMAInfo(range(6)), 3) is None


@pytest.mark.parametrize("count, state, want", [
    (32, "empty", list(range(1, 17))),
    (32, "partial", list(range(3, 19))),
    (64, "empty", list(range(1, 33))),
    (64, "partial", list(range(3, 35))),
])
def test_half_machine_on_ring_distances_is_decided(count, state, want):
    """Best-effort + prefer-closest on ring distances, a pod of half the machine: cannot_check
    (2 s CPU spent) before the search picked the nodes a mask leaves out."""
    simulator = AdmissionSimulator(machine(count, _ring(count)), config(count, "best-effort", True))

    def manifest(name, cpu, memory):
        resources = {"cpu": cpu, "memory": memory}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                "spec": {"containers": [{"name": "c", "image": "x",
                                         "resources": {"requests": resources, "limits": dict(resources)}}]}}

    if state == "partial":
        for before in (manifest("small-a", "2", "20Gi"), manifest("small-b", "3", "8Gi")):
            assert simulator.admit(simulator.pod_from_manifest(before))["verdict"] == "admitted"
    result = simulator.admit(simulator.pod_from_manifest(manifest("half", str(2 * count), "%dGi" % (8 * count))))
    assert result["verdict"] == "admitted", result
    assert result["numa_nodes"] == want
