# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Admissions on machines the kubelet's own enumeration cannot handle: 24 to 64 NUMA nodes and a
GB200-like tray. The decisions are checked against what the kubelet's rules define (worked out
by hand below), the forecast against 2^N - 1 masks per provider and the product of the hint
counts, and the bounded cases against their messages (never a MemoryError)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, NumaNode, Topology

GIB = 1 << 30


def machine(layout, policy="restricted", scope="pod"):
    """layout: [(node id, CPUs, GiB)]; static CPU + Static memory, CPU 0 reserved."""
    ids = [node for node, _cpus, _mem in layout]
    nodes, cpus, next_cpu = [], [], 0
    for node, count, mem in layout:
        own = tuple(range(next_cpu, next_cpu + count))
        next_cpu += count
        nodes.append(NumaNode(id=node, cpus=own, memory_total_bytes=mem * GIB, memory_free_bytes=mem * GIB,
                              distances=dict((peer, 10 if peer == node else 20) for peer in ids)))
        cpus.extend(CPU(id=c, node=node, core=c, socket=node, die=0, online=True, siblings=(c,), cache_id=node)
                    for c in own)
    config = {
        "cpuManagerPolicy": "static", "memoryManagerPolicy": "Static", "topologyManagerPolicy": policy,
        "topologyManagerScope": scope, "topologyManagerPolicyOptions": {"max-allowable-numa-nodes": "64"},
        "reservedSystemCPUs": "0", "systemReserved": {"memory": "1Gi"},
        "evictionHard": {"memory.available": "100Mi"},
        "reservedMemory": [{"numaNode": ids[0], "limits": {"memory": "1124Mi"}}],
    }
    return AdmissionSimulator(Topology(nodes=tuple(nodes), cpus=tuple(cpus)), config)


def pod(cpu, memory, name="p"):
    resources = {"cpu": str(cpu), "memory": memory}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": resources, "limits": dict(resources)}}]}}


def admit(sim, manifest):
    return sim.admit(sim.pod_from_manifest(manifest))


def test_64_nodes_four_node_pod():
    sim = machine([(n, 4, 16) for n in range(64)])
    # 14 CPUs: four nodes (CPU 0 reserved leaves 15 on 0-3); 50Gi: four nodes (14.9 + 3 x 16)
    result = admit(sim, pod(14, "50Gi"))
    assert result["admitted"] and result["numa_nodes"] == [0, 1, 2, 3]
    cost = result["kubelet_cost"]
    masks = (1 << 64) - 1
    assert cost["providers"]["cpu"]["cpu"]["masks"] == masks
    assert cost["providers"]["memory"]["memory"]["masks"] == masks
    cpu_hints = cost["providers"]["cpu"]["cpu"]["hints"]
    memory_hints = cost["providers"]["memory"]["memory"]["hints"]
    # CPU: every mask of >= 4 nodes reaches 14 free CPUs except {0,a,b,c}? no: 3+4+4+4 = 15 >= 14
    assert cpu_hints == sum(math.comb(64, k) for k in range(4, 65))
    assert memory_hints == sum(math.comb(64, k) for k in range(4, 65))
    assert cost["permutations"] == cpu_hints * memory_hints
    assert "see max-allowable-numa-nodes" in cost["warning"]
    assert "in practice the kubelet would not finish" in cost["warning"]
    merge = result["merges"][0]
    assert merge["merged_hint"] == {"numa_affinity": [0, 1, 2, 3], "preferred": True}
    assert len(merge["hints"]["cpu"]["cpu"]) == 16  # the best few, not 2^64
    assert merge["hints"]["cpu"]["cpu"][0] == {"numa_affinity": [0, 1, 2, 3], "preferred": True}


def test_gb200_tray_static_memory():
    layout = [(0, 72, 240), (1, 72, 240)] + [(n, 0, 23) for n in range(2, 36)]
    sim = machine(layout)
    first = admit(sim, pod(8, "32Gi", "a"))
    assert first["admitted"] and first["numa_nodes"] == [0]
    cost = first["kubelet_cost"]
    assert cost["providers"]["cpu"]["cpu"]["masks"] == 3  # the CPU manager walks the 2 CPU nodes only
    assert cost["providers"]["memory"]["memory"]["masks"] == (1 << 36) - 1
    # a pod bigger than a Grace node: CPU prefers one node, memory needs two: no preferred merge,
    # restricted rejects. The non-preferred merge only spans the two CPU nodes, so it is exact:
    # node 0 holds pod a's single-node memory, so no multi-node memory mask holds node 0; memory
    # masks meet {0, 1} in {1} or nothing, and the only non-empty AND with a CPU mask is {1}
    second = admit(sim, pod(8, "300Gi", "b"))
    assert (second["admitted"], second["reason"]) == (False, "TopologyAffinityError")
    assert second["merges"][0]["merged_hint"] == {"numa_affinity": [1], "preferred": False}
    assert second["kubelet_cost"]["providers"]["memory"]["memory"]["hints"] == (
        # {1} + 3 or more of the 34 GPU nodes, or 14 or more GPU nodes alone (23Gi each)
        sum(math.comb(34, k) for k in range(3, 35)) + sum(math.comb(34, k) for k in range(14, 35)))


def test_24_nodes_no_preferred_merge_searched_in_rank_order():
    # 2 CPUs fit one node, 20Gi need two: no mask is preferred by both. B = 2 (memory's narrowest);
    # {0,1} is a memory hint and CPU's full mask ANDs to it: the kubelet's best is {0,1}
    for policy, admitted in (("restricted", False), ("best-effort", True)):
        sim = machine([(n, 4, 16) for n in range(24)], policy=policy)
        result = admit(sim, pod(2, "20Gi"))
        assert result["admitted"] is admitted, policy
        assert result["merges"][0]["merged_hint"] == {"numa_affinity": [0, 1], "preferred": False}
        assert "note" not in result["merges"][0]


def test_24_nodes_group_rules_are_decided():
    # after pod a, NUMA nodes 0 and 1 form a memory group: the memory hints are no longer
    # monotone (a multi-node mask with node 0 or 1 must be exactly {0,1}, and neither makes a
    # single-node hint). Pod b: 2 CPUs prefer one node, 20Gi two: no preferred merge, B = 2.
    # Masks of 2 nodes in numeric order: every one holding node 0 or 1 has no memory hint
    # containing it ({0,1} itself has 10.9Gi left); {2,3} is a memory hint and CPU's {2,3} ANDs
    # to it: the kubelet's best is {2,3}
    sim = machine([(n, 4, 16) for n in range(24)], policy="best-effort")
    first = admit(sim, pod(2, "20Gi", "a"))
    assert first["admitted"] and first["numa_nodes"] == [0, 1]
    second = admit(sim, pod(2, "20Gi", "b"))
    assert (second["admitted"], second["verdict"]) == (True, "admitted"), second.get("cannot_check")
    assert second["merges"][0]["merged_hint"] == {"numa_affinity": [2, 3], "preferred": False}
    assert second["numa_nodes"] == [2, 3]
    assert second["merges"][0]["kubelet_cost"]["permutations"] > 0
    # restricted: pod a (6 CPUs and 20Gi both prefer two nodes) forms the group on {0,1}; pod b is
    # rejected (no preferred merge), and its merged hint is the same {2,3} (it used to be out of bounds)
    restricted = machine([(n, 4, 16) for n in range(24)])
    assert admit(restricted, pod(6, "20Gi", "a"))["numa_nodes"] == [0, 1]
    second = admit(restricted, pod(2, "20Gi", "b"))
    assert (second["admitted"], second["reason"]) == (False, "TopologyAffinityError")
    assert "note" not in second["merges"][0]
    assert second["merges"][0]["merged_hint"] == {"numa_affinity": [2, 3], "preferred": False}


def test_single_numa_node_at_40_nodes_is_exact():
    sim = machine([(n, 4, 16) for n in range(40)], policy="single-numa-node")
    fits = admit(sim, pod(2, "4Gi", "fits"))
    assert fits["admitted"] and fits["numa_nodes"] == [0]
    wide = admit(sim, pod(2, "20Gi", "wide"))
    assert (wide["admitted"], wide["reason"]) == (False, "TopologyAffinityError")


def test_kubelet_cost_rate_and_warning_thresholds():
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.kubelet_cost import estimate, pod_cost

    upstream = {"providers": {"cpu": {"cpu": {"masks": 255, "hints": 255}}}, "permutations": 255 ** 4,
                "estimated_seconds": estimate(0, 255 ** 4)}
    out = pod_cost([upstream])
    assert abs(out["estimated_seconds"] - 258.0) < 1e-6  # the upstream report's figure
    assert out["warning"] == ("the kubelet would spend about 4.3 minutes admitting this pod: 4.23e+09 "
                              "permutations; see max-allowable-numa-nodes")
    small = dict(upstream, permutations=1000, estimated_seconds=estimate(255, 1000))
    assert "warning" not in pod_cost([small])
    two = pod_cost([upstream, dict(upstream, providers={"cpu": {"cpu": {"masks": 255, "hints": None}}},
                                   permutations=None)])
    assert two["permutations"] is None and two["providers"]["cpu"]["cpu"] == {"masks": 510, "hints": None}
    assert "an unknown number of permutations" in two["warning"]


@pytest.mark.parametrize("seed", range(300))
def test_ranked_non_preferred_merge_equals_moebius(seed, monkeypatch):
    """The rank-order search with its backtracking cover test (used beyond 20 reachable nodes)
    against the Moebius merge on random non-preferred lists of 1-7 nodes."""
    import random

    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager import merge
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import NUMAInfo

    monkeypatch.setattr(merge, "RANKED_FROM_NODES", [1])
    rnd = random.Random(seed)
    ids = sorted(rnd.sample(range(12), rnd.randint(1, 7)))
    closest = rnd.random() < 0.3
    distances = None
    if closest:
        ids = list(range(len(ids)))
        table = {}
        for a in ids:
            for b in ids:
                table[(a, b)] = 10 if a == b else table.get((b, a), rnd.choice([11, 20, 21, 30]))
        distances = dict((a, [table[(a, b)] for b in ids]) for a in ids)
    info = NUMAInfo(ids, distances)
    lists = []
    for _list in range(rnd.randint(1, 4)):
        hints = []
        for _hint in range(rnd.randint(1, 6)):
            if rnd.random() < 0.1:
                hints.append(TopologyHint(None, False))
            else:
                chosen = [n for n in ids if rnd.random() < 0.5] or [rnd.choice(ids)]
                hints.append(TopologyHint(BitMask.from_ids(chosen), False))
        lists.append(hints)
    assert merge._implicit_non_preferred(lists, info, closest) == merge.merge_fast(lists, info, closest)


def test_ranked_search_work_bound_is_cannot_check(monkeypatch):
    """The node tests of one ranked search are bounded too (merge.MAX_SEARCH_WORK): past it the
    pod is cannot_check with that reason, never a long wait or an exception."""
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager import merge

    sim = machine([(n, 4, 16) for n in range(24)], policy="best-effort")
    assert admit(sim, pod(2, "20Gi", "a"))["numa_nodes"] == [0, 1]
    monkeypatch.setattr(merge, "MAX_SEARCH_WORK", 0)
    second = admit(sim, pod(2, "20Gi", "b"))
    assert second["verdict"] == "cannot_check"
    assert "over 24 NUMA nodes made more than 0 node tests" in second["cannot_check"]
    assert second["merges"][0]["merged_hint"] is None


@pytest.mark.parametrize("count", [24, 64])
def test_device_fallback_over_many_nodes_is_decided(count):
    """A device on each node from 8 on (kubelet >= 1.36: a described set over those nodes plus
    the fallback hint over every node, not monotone); 14 CPUs need four nodes, one device one
    node, 4Gi one node: no preferred merged hint, B = 4. {0,1,2,3} is the numerically first mask
    of 4 nodes and achievable (CPUs' {0,1,2,3} with 15 free CPUs, memory's {0,1,2,3}, the device
    fallback hint over every node), so it is the kubelet's best. It used to be cannot_check."""
    sim = machine([(n, 4, 16) for n in range(count)], policy="best-effort")
    devices = {"example.com/gpu": dict(("gpu%d" % n, n) for n in range(8, count))}
    sim = AdmissionSimulator(sim.topology, dict(sim.config), devices=devices, kubelet_version="1.36")
    resources = {"cpu": "14", "memory": "4Gi", "example.com/gpu": "1"}
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "image": "x",
                                         "resources": {"requests": resources, "limits": dict(resources)}}]}}
    result = admit(sim, manifest)
    assert result["verdict"] == "admitted", result.get("cannot_check")
    assert result["merges"][0]["merged_hint"] == {"numa_affinity": [0, 1, 2, 3], "preferred": False}
    assert result["containers"][0]["device_numa_nodes"] == {"example.com/gpu": [8]}
