# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Implicit hint sets + their merge equal the literal providers + the kubelet's exhaustive merge.

Random machines of 1 to 12 NUMA nodes (sparse ids, memory-only nodes, two hugepage sizes,
devices on one or several nodes), every policy, both scopes, with and without
prefer-closest-numa-nodes, pods with init containers and sidecars admitted one after another
(so multi-node memory groups and single-node allocations exist in the memory manager's state).
One simulator describes its hints (hint sets forced on at every size); the other lists them
with the literal per-mask loops and merges with the kubelet's permutation loop wherever that
loop is small enough (else with the Moebius merge, itself checked against it). Whole pod results
must be equal: decisions, allocations, shown hints, and ``kubelet_cost`` -- whose
``permutations`` is therefore the product of the literal list lengths, and equals the number of
permutations the exhaustive loop visited.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os
import random

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager import hint_sets, hints, merge
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import EmptyHintMap, HintList, TopologyHint
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, HugePages, NumaNode, Topology

_HERE = os.path.dirname(os.path.abspath(__file__))
EXHAUSTIVE_LIMIT = 20000


def _memory_reference():
    path = os.path.join(_HERE, "memorymanager", "test_mm_hints_differential.py")
    spec = importlib.util.spec_from_file_location("mm_reference_for_bignuma", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reference_hints


REFERENCE = _memory_reference()


def machine(rnd, prefer_closest):
    count = rnd.choice([1, 2, 3, 4, 5, 6, 8, 10, 12])
    if prefer_closest:
        ids = list(range(count))  # the kubelet cannot use distances with sparse ids
    else:
        ids = sorted(rnd.sample(range(0, 40), count)) if rnd.random() < 0.6 else list(range(count))
    nodes, cpus = [], []
    next_cpu = 0
    distance = {}
    for a in ids:
        for b in ids:
            distance[(a, b)] = 10 if a == b else distance.get((b, a), rnd.choice([11, 12, 20, 21, 32]))
    for index, node in enumerate(ids):
        memory_only = index > 0 and rnd.random() < 0.25
        cpu_count = 0 if memory_only else rnd.choice([2, 4, 6])
        own = tuple(range(next_cpu, next_cpu + cpu_count))
        next_cpu += cpu_count
        pages = {}
        for size, total in ((2 << 20, rnd.choice([0, 256, 512])), (1 << 30, rnd.choice([0, 2, 4]))):
            page = HugePages(page_size_bytes=size, total_pages=total, free_pages=total)
            pages[page.resource_name] = page
        memory = rnd.choice([8, 16, 32]) << 30
        nodes.append(NumaNode(id=node, cpus=own, memory_total_bytes=memory, memory_free_bytes=memory, hugepages=pages,
                              distances=dict((peer, distance[(node, peer)]) for peer in ids)))
        cpus.extend(CPU(id=c, node=node, core=c, socket=index // 2, die=0, online=True, siblings=(c,),
                        cache_id=node) for c in own)
    devices = {"example.com/gpu": {}}
    for index in range(rnd.randint(0, 6)):
        where = rnd.choice([[n] for n in ids] + [rnd.sample(ids, min(2, len(ids)))])
        devices["example.com/gpu"]["gpu%d" % index] = where if len(where) > 1 else where[0]
    return Topology(nodes=tuple(nodes), cpus=tuple(cpus)), devices, ids


def config(rnd, ids, prefer_closest):
    options = {"max-allowable-numa-nodes": "64"}
    if prefer_closest:
        options["prefer-closest-numa-nodes"] = "true"
    return {
        "cpuManagerPolicy": "static", "memoryManagerPolicy": "Static",
        "topologyManagerPolicy": rnd.choice(["none", "best-effort", "restricted", "single-numa-node"]),
        "topologyManagerScope": rnd.choice(["container", "pod"]),
        "topologyManagerPolicyOptions": options,
        "reservedSystemCPUs": "0", "systemReserved": {"memory": "1Gi"},
        "evictionHard": {"memory.available": "100Mi"},
        "reservedMemory": [{"numaNode": ids[0], "limits": {"memory": "1124Mi"}}],
    }


def container(rnd, name, gpu):
    resources = {"cpu": str(rnd.choice([1, 2, 3, 4, 7])), "memory": "%dGi" % rnd.choice([1, 4, 10, 20, 40])}
    if rnd.random() < 0.5:
        resources["hugepages-1Gi"] = "%dGi" % rnd.choice([1, 2, 3])
    if rnd.random() < 0.3:
        resources["hugepages-2Mi"] = "%dMi" % rnd.choice([2, 200, 600])
    if gpu and rnd.random() < 0.5:
        resources["example.com/gpu"] = str(rnd.choice([1, 1, 2]))
    if rnd.random() < 0.1:
        resources["cpu"] = "1500m"  # not integral: no exclusive CPUs
    return {"name": name, "image": "x", "resources": {"requests": resources, "limits": dict(resources)}}


def manifests(rnd, count, gpu):
    out = []
    for index in range(count):
        spec = {"containers": [container(rnd, "c%d" % c, gpu) for c in range(rnd.choice([1, 1, 2]))]}
        if rnd.random() < 0.35:
            init = [container(rnd, "i0", gpu)]
            if rnd.random() < 0.5:
                sidecar = container(rnd, "s0", gpu)
                sidecar["restartPolicy"] = "Always"
                init.append(sidecar)
            spec["initContainers"] = init
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p%d" % index}, "spec": spec})
    return out


def literal_simulator(topology, cfg, devices, visits):
    # kubelet 1.35: every mask of every node (the 1.36 device-node switch is tested in test_device_hints_versions.py)
    sim = AdmissionSimulator(topology, cfg, devices=devices, kubelet_version="1.35")
    dm = sim.device_manager
    walked_dm = (1 << len(dm.numa_node_ids)) - 1
    dm.topology_hints = lambda r, a, u, q: HintList(dm.generate_hints_literal(r, a, u, q), walked_dm)
    policy = sim.cpu_manager.policy
    if policy is not None:
        walked_cpu = (1 << len(policy.topology.numa_ids)) - 1
        policy.topology_hints = lambda a, u, q: HintList(policy.generate_hints_literal(a, u, q), walked_cpu)
    mm = sim.memory_manager

    def calculate_hints(pod_uid, requested):
        mm._require_tables(tuple(sorted(mm._state)), sorted(requested))
        pairs = REFERENCE(mm._state, requested, mm._reusable.get(pod_uid, {}))
        return dict((name, [TopologyHint(BitMask.from_ids(ids), preferred) for ids, preferred in hints])
                    for name, hints in pairs.items())

    def topology_hints(pod_uid, requested):
        walked = (1 << len(mm._state)) - 1
        if not requested or not mm._state:
            return {}
        hints = calculate_hints(pod_uid, requested)
        if not hints:
            return EmptyHintMap(dict((name, walked) for name in requested))
        return dict((name, HintList(value, walked)) for name, value in hints.items())

    if hasattr(mm, "calculate_hints"):
        mm.topology_hints = topology_hints
    tm_policy = sim.topology_manager.policy

    def literal_merge(lists, numa_info, prefer_closest):
        product = 1
        for hint_list in lists:
            product *= len(hint_list)
        if product > EXHAUSTIVE_LIMIT:
            return merge.merge_fast(lists, numa_info, prefer_closest)
        before = visits[0]
        original = merge._Comparer.better

        def counting(self, current, candidate):
            visits[0] += 1
            return original(self, current, candidate)

        merge._Comparer.better = counting
        try:
            result = merge.merge_exhaustive(lists, numa_info, prefer_closest)
        finally:
            merge._Comparer.better = original
        assert visits[0] - before == product, "the merge loop visits the product of the list lengths"
        return result

    tm_policy._merge = literal_merge
    return sim


@pytest.fixture(params=["walk", "rules"])
def implicit_everywhere(request, monkeypatch):
    """Hint sets at every size; "walk" answers small sets by walking their masks (as in
    production up to 12 ids), "rules" forces the big-machine answers (counting programme,
    projections, bounded searches, the ranked non-preferred merge) on these small machines."""
    monkeypatch.setattr(hints, "IMPLICIT_FROM_NODES", [1])
    if request.param == "rules":
        monkeypatch.setattr(hint_sets, "BRUTE_NODES", 0)
        monkeypatch.setattr(merge, "RANKED_FROM_NODES", [1])


@pytest.mark.parametrize("seed", range(80))
def test_implicit_admission_equals_literal(seed, implicit_everywhere):
    rnd = random.Random(seed)
    prefer_closest = rnd.random() < 0.3
    topology, devices, ids = machine(rnd, prefer_closest)
    cfg = config(rnd, ids, prefer_closest)
    visits = [0]
    try:
        implicit = AdmissionSimulator(topology, cfg, devices=devices, kubelet_version="1.35")
    except ValueError as err:  # a machine the kubelet would not start on: both must say so
        with pytest.raises(ValueError) as literal_err:
            AdmissionSimulator(topology, cfg, devices=devices, kubelet_version="1.35")
        assert str(literal_err.value) == str(err)
        return
    literal = literal_simulator(topology, cfg, devices, visits)
    assert_same_admissions(implicit, literal, manifests(rnd, 6, bool(devices["example.com/gpu"])))


def assert_same_admissions(implicit, literal, pods):
    """Admit ``pods`` one after another on both simulators: equal results (or equal errors),
    every forecast's permutations known, equal manager states at the end."""
    for manifest in pods:
        try:
            got = implicit.admit(implicit.pod_from_manifest(manifest))
        except ValueError as err:
            with pytest.raises(ValueError) as literal_err:
                literal.admit(literal.pod_from_manifest(manifest))
            assert str(literal_err.value) == str(err)
            continue
        want = literal.admit(literal.pod_from_manifest(manifest))
        assert got == want
        for merged in got["merges"]:
            assert merged["kubelet_cost"]["permutations"] is not None
    assert implicit.memory_manager.machine_state() == literal.memory_manager.machine_state()
    assert implicit.cpu_manager.state() == literal.cpu_manager.state()
    assert implicit.device_manager.state() == literal.device_manager.state()
