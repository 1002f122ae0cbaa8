# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Whole admissions with the fast providers (shared tables, interned hints, memoised result
dicts, short-cuts) equal admissions with the literal per-mask providers: same hints, merges,
allocations and messages, pod after pod, on sparse NUMA ids with two hugepage sizes and devices
on one or several nodes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os
import random

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, HugePages, NumaNode, Topology

_HERE = os.path.dirname(os.path.abspath(__file__))


def _memory_reference():
    path = os.path.join(_HERE, "memorymanager", "test_mm_hints_differential.py")
    spec = importlib.util.spec_from_file_location("mm_reference_for_admission", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reference_hints


IDS = (0, 2, 3, 6, 9)


def machine(seed):
    rnd = random.Random(seed)
    nodes, cpus = [], []
    next_cpu = 0
    for node in IDS:
        count = rnd.choice([4, 6, 8])
        ids = tuple(range(next_cpu, next_cpu + count))
        next_cpu += count
        pages = {}
        for size, total in ((2 << 20, rnd.choice([0, 256, 512])), (1 << 30, rnd.choice([2, 4, 8]))):
            page = HugePages(page_size_bytes=size, total_pages=total, free_pages=total)
            pages[page.resource_name] = page
        memory = rnd.choice([16, 32, 64]) << 30
        nodes.append(NumaNode(id=node, cpus=ids, memory_total_bytes=memory, memory_free_bytes=memory,
                              hugepages=pages, distances=dict((peer, 10 if peer == node else 20) for peer in IDS)))
        cpus.extend(CPU(id=c, node=node, core=c, socket=IDS.index(node) // 2, die=0, online=True, siblings=(c,),
                        cache_id=node) for c in ids)
    devices = {"example.com/gpu": {}}
    for index in range(rnd.randint(2, 7)):
        where = rnd.choice([[n] for n in IDS] + [[IDS[0], IDS[1]], [IDS[2], IDS[4]]])
        devices["example.com/gpu"]["gpu%d" % index] = where if len(where) > 1 else where[0]
    return Topology(nodes=tuple(nodes), cpus=tuple(cpus)), devices


def config(policy, scope):
    return {
        "cpuManagerPolicy": "static", "memoryManagerPolicy": "Static", "topologyManagerPolicy": policy,
        "topologyManagerScope": scope,
        "reservedSystemCPUs": "0", "systemReserved": {"memory": "1Gi"},
        "evictionHard": {"memory.available": "100Mi"},
        "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}],
    }


def manifests(seed, count):
    rnd = random.Random(seed * 7919 + 1)
    out = []
    for index in range(count):
        containers = []
        for cindex in range(rnd.choice([1, 1, 2])):
            resources = {"cpu": str(rnd.choice([1, 2, 4, 6, 10])), "memory": "%dGi" % rnd.choice([1, 8, 20, 40])}
            if rnd.random() < 0.6:
                resources["hugepages-1Gi"] = "%dGi" % rnd.choice([1, 2, 5])
            if rnd.random() < 0.4:
                resources["hugepages-2Mi"] = "%dMi" % rnd.choice([2, 200, 600])
            if rnd.random() < 0.5:
                resources["example.com/gpu"] = str(rnd.choice([1, 1, 2, 3]))
            containers.append({"name": "c%d" % cindex, "image": "x",
                               "resources": {"requests": resources, "limits": dict(resources)}})
        out.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p%d" % index},
                    "spec": {"containers": containers}})
    return out


def literal_simulator(topology, cfg, devices, reference):
    sim = AdmissionSimulator(topology, cfg, devices=devices)
    dm = sim.device_manager
    dm.generate_hints = dm.generate_hints_literal
    policy = sim.cpu_manager.policy
    policy.generate_hints = policy.generate_hints_literal
    mm = sim.memory_manager.policy if hasattr(sim.memory_manager, "policy") else sim.memory_manager
    if not hasattr(mm, "calculate_hints"):
        pytest.skip("memory manager has no calculate_hints")

    def calculate_hints(pod_uid, requested):
        mm._require_tables(tuple(sorted(mm._state)), sorted(requested))
        pairs = reference(mm._state, requested, mm._reusable.get(pod_uid, {}))
        return dict((name, [TopologyHint(BitMask.from_ids(ids), preferred) for ids, preferred in hints])
                    for name, hints in pairs.items())

    mm.calculate_hints = calculate_hints
    return sim


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("policy,scope", [("restricted", "container"), ("best-effort", "pod"),
                                          ("single-numa-node", "container")])
def test_fast_admission_sequence_equals_literal(seed, policy, scope):
    reference = _memory_reference()
    topology, devices = machine(seed)
    cfg = config(policy, scope)
    fast = AdmissionSimulator(topology, cfg, devices=devices)
    literal = literal_simulator(topology, cfg, devices, reference)
    admitted = 0
    for manifest in manifests(seed, 8):
        got = fast.admit(fast.pod_from_manifest(manifest))
        want = literal.admit(literal.pod_from_manifest(manifest))
        assert got == want
        admitted += bool(got["admitted"])
    assert fast.memory_manager.machine_state() == literal.memory_manager.machine_state()
