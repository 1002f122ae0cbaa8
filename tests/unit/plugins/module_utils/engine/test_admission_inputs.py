# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Inputs of the admission checker: manifests, kubelet flags, state options; simulator details."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission_inputs import AdmissionInputError, pods_from_documents, state_input
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.flags import flags_to_config

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"},
       "spec": {"containers": [{"name": "c", "image": "x"}]}}


def test_pods_from_documents_kinds():
    deploy = {"kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
              "spec": {"replicas": 3, "template": {"metadata": {"labels": {"a": "b"}},
                                                   "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    cron = {"kind": "CronJob", "metadata": {"name": "nightly"},
            "spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}}}
    listed = {"kind": "List", "items": [POD]}
    pods = pods_from_documents([POD, None, deploy, cron, listed], "f.yaml")
    assert [label for label, _pod in pods] == ["f.yaml#1", "f.yaml#3", "f.yaml#4", "f.yaml#5.items#1"]
    assert pods[1][1]["metadata"] == {"labels": {"a": "b"}, "name": "web", "namespace": "shop"}
    assert pods[2][1]["metadata"]["name"] == "nightly"
    assert pods_from_documents([POD], "one.yaml")[0][0] == "one.yaml"


@pytest.mark.parametrize("documents, message", [
    (["text"], "f.yaml: a manifest must be a mapping, got str"),
    ([{"kind": "Service"}], "f.yaml: kind 'Service' has no pod to admit"),
    ([{"kind": "Deployment", "spec": {}}], "f.yaml: Deployment has no pod template (spec.template.spec)"),
    ([{"kind": "CronJob", "spec": {}}], "f.yaml: CronJob has no spec.jobTemplate.spec"),
    ([{"kind": "List"}], "f.yaml: List without an items list"),
])
def test_pods_from_documents_errors(documents, message):
    with pytest.raises(AdmissionInputError) as err:
        pods_from_documents(documents, "f.yaml")
    assert str(err.value).startswith(message)


def test_flags_to_config():
    config, paths = flags_to_config({
        "--cpu-manager-policy": "static", "reserved-cpus": "0-1", "--topology-manager-policy-options":
        "prefer-closest-numa-nodes=true", "--reserved-memory": "0:memory=1Gi;1:memory=100Mi",
        "--system-reserved": "cpu=1,memory=1Gi", "--eviction-hard": "memory.available<100Mi",
        "--feature-gates": "CPUManagerPolicyAlphaOptions=true", "--root-dir": "/data/kubelet",
        "memoryManagerPolicy": "Static"})
    assert config == {
        "cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1",
        "topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": "true"},
        "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}, {"numaNode": 1, "limits": {"memory": "100Mi"}}],
        "systemReserved": {"cpu": "1", "memory": "1Gi"}, "evictionHard": {"memory.available": "100Mi"},
        "featureGates": {"CPUManagerPolicyAlphaOptions": True}, "memoryManagerPolicy": "Static"}
    assert paths == {"root-dir": "/data/kubelet"}
    assert flags_to_config(None) == ({}, {})


@pytest.mark.parametrize("flags, message", [
    ({"--nope": "1"}, "kubelet_flags: unsupported flag --nope (supported: --config,"),
    ({"--feature-gates": "A=maybe"}, "kubelet_flags: invalid value 'maybe' for --feature-gates"),
    ({"--cpu-manager-policy": ["a", "b"]}, "kubelet_flags --cpu-manager-policy: expected a single value"),
    ({"--kube-reserved": "cpu"}, "kubelet_flags --kube-reserved: malformed pair"),
    ("--x", "kubelet_flags must be a mapping of flag name to value, got str"),
])
def test_flags_errors(flags, message):
    with pytest.raises(AdmissionInputError) as err:
        flags_to_config(flags)
    assert str(err.value).startswith(message)


@pytest.mark.parametrize("value, expected", [
    (None, ("default", None)), ("", ("fresh", None)), ("  ", ("fresh", None)),
    ('{"policyName":"none"}', ("content", '{"policyName":"none"}')),
    ("/var/lib/kubelet/cpu_manager_state", ("path", "/var/lib/kubelet/cpu_manager_state")),
])
def test_state_input(value, expected):
    assert state_input(value) == expected


def _two_nodes():
    nodes = tuple(NumaNode(id=n, cpus=tuple(range(n * 4, n * 4 + 4)), memory_total_bytes=8 << 30,
                           memory_free_bytes=8 << 30) for n in range(2))
    cpus = tuple(CPU(id=c, node=c // 4, core=c, socket=c // 4, die=0, online=True, siblings=(c,)) for c in range(8))
    return Topology(nodes=nodes, cpus=cpus)


def _pod(name, cpu, uid=None):
    res = {"cpu": cpu, "memory": "1Gi"}
    meta = {"name": name}
    if uid:
        meta["uid"] = uid
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "a", "image": "x", "resources": {"requests": res, "limits": res}},
                                    {"name": "b", "image": "x", "resources": {"requests": res, "limits": res}}]}}


def test_repeated_pods_get_distinct_uids_unless_given():
    sim = AdmissionSimulator(_two_nodes(), {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"})
    first = sim.pod_from_manifest(_pod("x", "1"))
    second = sim.pod_from_manifest(_pod("x", "1"))
    third = sim.pod_from_manifest(_pod("x", "1"))
    assert second.uid == first.uid + "-2" and third.uid == first.uid + "-3"
    assert sim.pod_from_manifest(_pod("x", "1", uid="u1")).uid == "u1"
    assert sim.pod_from_manifest(_pod("y", "1", uid="u1")).uid == "u1"


def test_rejected_pod_is_released_before_the_next():
    config = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "topologyManagerPolicy": "restricted"}
    sim = AdmissionSimulator(_two_nodes(), config)
    # container a gets node 1 (node 0 has only 3 CPUs besides the reserved one), container b finds
    # no node with 4 free CPUs: rejected, and what a took is released before "next"
    run = sim.run([_pod("big", "4"), _pod("next", "3")])
    big, nxt = run["pods"]
    assert big["admitted"] is False and big["reason"] == "TopologyAffinityError"
    assert big["failed_container"] == "b" and big["released"] is True
    assert big["containers"][0]["cpus"] == "4-7"     # what it held when rejected
    assert sim.cpu_manager.default_cpu_set() == frozenset([0, 7])
    assert nxt["admitted"] is True
    assert [c["cpus"] for c in nxt["containers"]] == ["1-3", "4-6"]
    assert run["pinning"]["cpu_manager_pinning_requests_total"] == 3


def test_format_table_explains_topology_rejections():
    from ansible_collections.numaguard.kubelet.plugins.module_utils._report.admission_table import explain_merge, format_table
    cpu_hints = [{"numa_affinity": [0], "preferred": True}, {"numa_affinity": [0, 1], "preferred": False}]
    memory_hints = {"memory": [{"numa_affinity": [0, 1], "preferred": False}], "hugepages-1Gi": []}
    merge = {"containers": ["c"], "admit": False, "merged_hint": {"numa_affinity": [0, 1], "preferred": False},
             "hints": {"device": {}, "cpu": {"cpu": cpu_hints}, "memory": memory_hints}}
    assert explain_merge(merge) == ("container(s) c: cpu: preferred [0]; hugepages-1Gi: cannot satisfy; "
                                    "memory: only non-preferred [0,1] -> best [0,1] not preferred")
    pod = {"name": "p", "namespace": "n", "admitted": False, "reason": "TopologyAffinityError",
           "message": "Resources cannot be allocated with Topology locality", "numa_nodes": [],
           "containers": [{"cpus": ""}], "merges": [merge]}
    ok = {"name": "q", "namespace": "n", "admitted": True, "reason": "", "message": "", "numa_nodes": [1],
          "containers": [{"cpus": "4-5"}, {"cpus": ""}], "merges": []}
    assert format_table({"pods": [ok, pod]}).splitlines() == [
        "POD  VERDICT   NUMA  CPUS  REASON",
        "n/q  admitted  1     4-5   -",
        "n/p  rejected  -     -     TopologyAffinityError",
        "n/p: TopologyAffinityError: Resources cannot be allocated with Topology locality",
        "  " + explain_merge(merge),
    ]
