# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""End-to-end admission cases from YAML files in ``cases/`` (real providers, no fakes).

Each file is one scenario::

    description: ...
    topology:                 # compact machine description
      smt_offset: 8           # optional: CPU i and i+8 are SMT siblings (else one thread per core)
      nodes:
        - {id: 0, cpus: "0-3", memory: 8Gi, hugepages: {1Gi: 4}, socket: 0, distances: {0: 10, 1: 21}}
    config: {...}             # KubeletConfiguration fields (kubelet defaults fill the rest)
    devices: {...}            # optional device inventory; device_allocations: optional
    pods:                     # evaluated in order
      - name: p1
        containers: [{name: c, cpu: "2", memory: 1Gi, hugepages-1Gi: 2Gi, nvidia.com/gpu: 1}]
        init_containers: [...]   # a container with sidecar: true is restartable
        burstable: true          # optional: requests only (default Guaranteed: requests == limits)
        expect: {admitted: true, reason: ..., message: ..., numa_nodes: [0],
                 containers: {c: {cpus: "1-2", memory_blocks: [[type, size, [numa]]], devices: {...}}}}
    memory_after: {"0": {memory: {reserved: ..., free: ...}}}   # optional, partial
    pinning: {...}            # optional, partial
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

import pytest
import yaml

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, HugePages, NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import parse_cpuset
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import quantity_bytes
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults

CASES = sorted(glob.glob(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases", "*.yaml")))


def build_topology(spec):
    offset = spec.get("smt_offset")
    nodes, cpus = [], []
    for raw in spec["nodes"]:
        ids = sorted(parse_cpuset(str(raw.get("cpus", ""))))
        pages = {}
        for size, count in (raw.get("hugepages") or {}).items():
            page = HugePages(page_size_bytes=quantity_bytes(size), total_pages=count, free_pages=count)
            pages[page.resource_name] = page
        total = quantity_bytes(raw["memory"])
        distances = dict((int(k), int(v)) for k, v in (raw.get("distances") or {}).items())
        nodes.append(NumaNode(id=raw["id"], cpus=tuple(ids), memory_total_bytes=total, memory_free_bytes=total,
                              hugepages=pages, distances=distances))
        for cpu in ids:
            if offset:
                core = cpu if cpu % (2 * offset) < offset else cpu - offset
                siblings = (core, core + offset)
            else:
                core, siblings = cpu, (cpu,)
            cpus.append(CPU(id=cpu, node=raw["id"], core=core, socket=raw.get("socket", raw["id"]), die=0,
                            online=True, siblings=siblings, cache_id=raw.get("socket", raw["id"])))
    return Topology(nodes=tuple(nodes), cpus=tuple(sorted(cpus, key=lambda c: c.id)))


def _container(raw, burstable):
    resources = dict((k, str(v)) for k, v in raw.items() if k not in ("name", "sidecar"))
    out = {"name": raw["name"], "image": "registry.example/app:1",
           "resources": {"requests": dict(resources)} if burstable else
           {"requests": dict(resources), "limits": dict(resources)}}
    if raw.get("sidecar"):
        out["restartPolicy"] = "Always"
    return out


def build_pod(raw):
    burstable = raw.get("burstable", False)
    spec = {"containers": [_container(c, burstable) for c in raw["containers"]]}
    if raw.get("init_containers"):
        spec["initContainers"] = [_container(c, burstable) for c in raw["init_containers"]]
    meta = {"name": raw["name"], "namespace": "default"}
    if raw.get("uid"):
        meta["uid"] = raw["uid"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def _subset(expected, actual, where):
    if isinstance(expected, dict):
        assert isinstance(actual, dict), where
        for key, value in expected.items():
            assert key in actual, "%s: missing %s" % (where, key)
            _subset(value, actual[key], "%s.%s" % (where, key))
    else:
        assert actual == expected, "%s: expected %r, got %r" % (where, expected, actual)


def run_case(path):
    with open(path) as handle:
        case = yaml.safe_load(handle)
    config = kubelet_defaults()
    config.update(case.get("config") or {})
    simulator = AdmissionSimulator(build_topology(case["topology"]), config, devices=case.get("devices"),
                                   device_allocations=case.get("device_allocations"),
                                   merger=case.get("merger", "fast"))
    results = []
    for raw in case["pods"]:
        pod = simulator.pod_from_manifest(build_pod(raw))
        results.append((raw, simulator.admit(pod)))
    return case, simulator, results


@pytest.mark.parametrize("path", CASES, ids=[os.path.basename(p)[:-5] for p in CASES])
def test_case(path):
    case, simulator, results = run_case(path)
    for raw, result in results:
        expect = dict(raw.get("expect") or {})
        where = "%s: pod %s" % (os.path.basename(path), raw["name"])
        containers = expect.pop("containers", {})
        for key, value in expect.items():
            got = result[key]
            if key == "merges" and isinstance(value, list) and len(value) == len(got):
                # a case states the merge fields it is about (kubelet_cost, note are extra)
                got = [dict((k, merge.get(k)) for k in wanted) for merge, wanted in zip(got, value)]
            assert got == value, "%s: %s expected %r, got %r" % (where, key, value, got)
        by_name = dict((c["name"], c) for c in result["containers"])
        for name, wanted in containers.items():
            got = by_name[name]
            for key, value in wanted.items():
                if key == "memory_blocks":
                    blocks = [[b["type"], b["size"], b["numa_affinity"]] for b in got["memory_blocks"]]
                    assert sorted(blocks) == sorted(value), "%s/%s: blocks %r" % (where, name, blocks)
                else:
                    assert got[key] == value, "%s/%s: %s expected %r, got %r" % (where, name, key, value, got[key])
    if "memory_after" in case:
        _subset(case["memory_after"], simulator.memory_map(), "memory_after")
    if "pinning" in case:
        _subset(case["pinning"], simulator.pinning(), "pinning")


def test_fast_and_exhaustive_merges_agree_on_every_case():
    for path in CASES:
        with open(path) as handle:
            case = yaml.safe_load(handle)
        if len(case["topology"]["nodes"]) > 4:
            continue
        outcomes = []
        for merger in ("fast", "exhaustive"):
            config = kubelet_defaults()
            config.update(case.get("config") or {})
            simulator = AdmissionSimulator(build_topology(case["topology"]), config, devices=case.get("devices"),
                                           device_allocations=case.get("device_allocations"), merger=merger)
            outcomes.append([simulator.admit(simulator.pod_from_manifest(build_pod(raw))) for raw in case["pods"]])
        assert outcomes[0] == outcomes[1], path


# Every policy x scope with the real providers, one machine, one two-container pod:
# 2 nodes x 4 CPUs (CPU 0 reserved), 4Gi each, Static memory; containers a and b want 3 CPUs + 1Gi.
MATRIX_TOPOLOGY = {"nodes": [{"id": 0, "cpus": "0-3", "memory": "4Gi"}, {"id": 1, "cpus": "4-7", "memory": "4Gi"}]}
MATRIX_POD = {"name": "pair", "containers": [{"name": "a", "cpu": "3", "memory": "1Gi"},
                                             {"name": "b", "cpu": "3", "memory": "1Gi"}]}
# policy, scope -> (admitted, reason, affinity of a, affinity of b, cpus of a, cpus of b)
MATRIX = [
    ("none", "container", True, "", None, None, "1-3", "4-6"),
    ("none", "pod", True, "", None, None, "1-3", "4-6"),
    ("best-effort", "container", True, "", ([0], True), ([1], True), "1-3", "4-6"),
    ("restricted", "container", True, "", ([0], True), ([1], True), "1-3", "4-6"),
    ("single-numa-node", "container", True, "", ([0], True), ([1], True), "1-3", "4-6"),
    # pod scope: 6 CPUs need both nodes (CPU prefers {0,1}), 2Gi fit one node (memory prefers {0}
    # and {1}): no preferred merge; B = 2 picks {0,1}, not preferred
    ("best-effort", "pod", True, "", ([0, 1], False), ([0, 1], False), "1-3", "4-6"),
    ("restricted", "pod", False, "TopologyAffinityError", None, None, "", ""),
    ("single-numa-node", "pod", False, "TopologyAffinityError", None, None, "", ""),
]


@pytest.mark.parametrize("merger", ["fast", "exhaustive"])
@pytest.mark.parametrize("policy, scope, admitted, reason, aff_a, aff_b, cpus_a, cpus_b", MATRIX)
def test_policy_scope_matrix_with_real_providers(merger, policy, scope, admitted, reason, aff_a, aff_b,
                                                 cpus_a, cpus_b):
    config = kubelet_defaults()
    config.update({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "memoryManagerPolicy": "Static",
                   "topologyManagerPolicy": policy, "topologyManagerScope": scope,
                   "systemReserved": {"memory": "1Gi"}, "evictionHard": {"memory.available": "100Mi"},
                   "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}]})
    simulator = AdmissionSimulator(build_topology(MATRIX_TOPOLOGY), config, merger=merger)
    result = simulator.admit(simulator.pod_from_manifest(build_pod(MATRIX_POD)))
    assert (result["admitted"], result["reason"]) == (admitted, reason)
    got = dict((c["name"], c) for c in result["containers"])
    for name, aff, cpus in (("a", aff_a, cpus_a), ("b", aff_b, cpus_b)):
        expected = None if aff is None else {"numa_affinity": aff[0], "preferred": aff[1]}
        assert got[name]["affinity"] == expected, name
        assert got[name]["cpus"] == cpus, name
    if policy == "none":
        # no merge: the memory manager picks its own best node for both containers
        assert result["merges"] == []
        assert [b["numa_affinity"] for c in result["containers"] for b in c["memory_blocks"]] == [[0], [0]]
    if (policy, scope) == ("best-effort", "pod"):
        assert [b["numa_affinity"] for c in result["containers"] for b in c["memory_blocks"]] == [[0, 1], [0, 1]]
        hints = result["merges"][0]["hints"]
        assert hints["cpu"]["cpu"] == [{"numa_affinity": [0, 1], "preferred": True}]
        assert {"numa_affinity": [0], "preferred": True} in hints["memory"]["memory"]
