# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""PodLevelResourceManagers (KEP-5526): pods with ``spec.resources`` by kubelet release and gate.

Upstream: pkg/kubelet/cm/topologymanager/scope_pod.go (``admitUsingPodResources``),
pkg/kubelet/cm/cpumanager/policy_static.go and pkg/kubelet/cm/memorymanager/policy_static.go
(``AllocatePod``, ``validatePodScopeResources``), pkg/kubelet/cm/qos
(``IsContainerEquivalentQOSGuaranteed``); gate defaults: alpha off 1.36, beta 1.37 but off by
default (kubernetes/kubernetes#141209). Messages as the kubelet's tutorial shows them
(kubernetes/website content/en/docs/tutorials/cluster-management/use-pod-level-resource-managers.md).

The node: two NUMA nodes of 8 CPUs (no SMT) and 8Gi, CPU 0 reserved, 1124Mi reserved on node 0,
static CPU manager, Static memory manager.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.scope_pod import (
    POD_LEVEL_AFFINITY_MESSAGE,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import parse_cpuset
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults

GI = 1 << 30
EMPTY_POOL_CPU = ("pod rejected, sum of exclusive container cpu requests equals pod budget, "
                  "leaving no cpus for shared containers")
EMPTY_POOL_MEMORY = ("pod rejected, sum of exclusive container memory requests equals pod budget, "
                     "leaving no memory for shared containers")


def topology():
    """Two NUMA nodes of 8 CPUs (one thread per core, one socket per node) and 8Gi each."""
    return Topology.from_facts({
        "nodes": [{"id": n, "cpus": list(range(8 * n, 8 * n + 8)), "memory_total_bytes": 8 * GI,
                   "memory_free_bytes": 8 * GI, "distances": {0: 10 + 10 * n, 1: 20 - 10 * n}} for n in (0, 1)],
        "cpus": [{"id": c, "node": c // 8, "core": c, "socket": c // 8, "die": 0, "siblings": [c], "cache_id": c // 8}
                 for c in range(16)],
    })


def config(gates=None, **changes):
    out = kubelet_defaults()
    out.update({"cpuManagerPolicy": "static", "memoryManagerPolicy": "Static",
                "topologyManagerPolicy": "single-numa-node", "topologyManagerScope": "pod",
                "reservedSystemCPUs": "0", "systemReserved": {"memory": "1Gi"},
                "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}]})
    if gates is not None:
        out["featureGates"] = gates
    out.update(changes)
    return out


def container(name, cpu=None, memory=None, limits=True):
    resources = {}
    values = dict((k, v) for k, v in (("cpu", cpu), ("memory", memory)) if v is not None)
    if values:
        resources = {"requests": dict(values)}
        if limits:
            resources["limits"] = dict(values)
    return {"name": name, "image": "x", "resources": resources}


def pod(name, budget_cpu, budget_memory, containers, init=None):
    spec = {"resources": {"requests": {"cpu": budget_cpu, "memory": budget_memory},
                          "limits": {"cpu": budget_cpu, "memory": budget_memory}},
            "containers": containers}
    if init:
        spec["initContainers"] = init
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "uid": "uid-" + name},
            "spec": spec}


MIXED = pod("mixed", "4", "4Gi", [container("main", "2", "2Gi"), container("metrics"), container("logging")])
EMPTY_POOL = pod("empty-pool", "4", "4Gi", [container("a", "1", "1Gi"), container("b", "3", "3Gi"), container("c")])


def admit(manifest, release, gates=None, **changes):
    simulator = AdmissionSimulator(topology(), config(gates, **changes), kubelet_version=release)
    result = simulator.admit(simulator.pod_from_manifest(manifest))
    return simulator, result


def cpus_of(result):
    return dict((c["name"], c["cpus"]) for c in result["containers"])


def blocks_of(result):
    return dict((c["name"], [(b["type"], b["size"], tuple(b["numa_affinity"])) for b in c["memory_blocks"]])
                for c in result["containers"])


# ---- the version switch -----------------------------------------------------------------------

@pytest.mark.parametrize("release", ["1.36", "1.37"])
def test_default_gates_keep_the_managers_away_from_pod_level_pods_in_1_36_and_1_37(release):
    """1.36: alpha, off. 1.37: beta but switched off by default before the release (#141209)."""
    simulator, result = admit(MIXED, release)
    assert simulator.feature_gates["PodLevelResourceManagers"] is False
    assert result["admitted"] is True
    assert cpus_of(result) == {"main": "", "metrics": "", "logging": ""}
    assert blocks_of(result) == {"main": [], "metrics": [], "logging": []}
    assert result["pod_level_resources"] == {"managed": False, "pod_scope_path": False, "cpus": "", "memory_blocks": []}


@pytest.mark.parametrize("release, gates, on", [
    ("1.36", {"AllBeta": True}, False),   # alpha in 1.36: AllBeta does not reach it
    ("1.37", {"AllBeta": True}, True),    # beta in 1.37
    ("1.36", {"AllAlpha": True}, True),
    ("1.37", {"AllAlpha": True}, False),
    ("1.37", {"AllBeta": True, "PodLevelResourceManagers": False}, False),
])
def test_1_36_vs_1_37_the_gate_stage_decides_what_all_alpha_and_all_beta_switch_on(release, gates, on):
    simulator, result = admit(MIXED, release, gates)
    assert simulator.feature_gates["PodLevelResourceManagers"] is on
    assert result["admitted"] is True
    assert result["pod_level_resources"]["pod_scope_path"] is on
    assert bool(cpus_of(result)["main"]) is on


@pytest.mark.parametrize("release", ["1.36", "1.37"])
def test_gate_on_pod_scope_budget_exclusive_slice_and_pod_shared_pool(release):
    simulator, result = admit(MIXED, release, {"PodLevelResourceManagers": True})
    assert result["admitted"] is True, result["message"]
    level = result["pod_level_resources"]
    pod_cpus = parse_cpuset(level["cpus"])
    assert len(pod_cpus) == 4 and 0 not in pod_cpus
    assert len(set(c // 8 for c in pod_cpus)) == 1     # one NUMA node (single-numa-node)
    cpus = dict((name, parse_cpuset(text)) for name, text in cpus_of(result).items())
    assert len(cpus["main"]) == 2 and cpus["main"] <= pod_cpus
    assert cpus["metrics"] == cpus["logging"] == pod_cpus - cpus["main"]   # the pod shared pool
    node = tuple(sorted(set(c // 8 for c in pod_cpus)))
    assert level["memory_blocks"] == [{"type": "memory", "size": 4 * GI, "numa_affinity": list(node)}]
    assert blocks_of(result) == {"main": [("memory", 2 * GI, node)], "metrics": [("memory", 2 * GI, node)],
                                 "logging": [("memory", 2 * GI, node)]}
    # the node's shared pool lost the whole budget; the budget returns with the last container
    assert not pod_cpus & simulator.cpu_manager.default_cpu_set()
    simulator._garbage_collect(simulator.pod_from_manifest(dict(MIXED, metadata=dict(MIXED["metadata"]))))
    assert pod_cpus <= simulator.cpu_manager.default_cpu_set()
    assert simulator.memory_map()[str(node[0])]["memory"]["reserved"] == 0


def test_gate_on_state_files_carry_the_pod_entries():
    simulator, result = admit(MIXED, "1.37", {"PodLevelResourceManagers": True})
    assert result["admitted"] is True
    memory = simulator.memory_manager.state()
    assert list(memory["pod_entries"]) == ["uid-mixed"]
    assert simulator.cpu_manager.state()["pod_entries"] == {"uid-mixed": result["pod_level_resources"]["cpus"]}
    files = simulator.state_after()
    assert '\\"podEntries\\":{\\"uid-mixed\\"' in files["cpu_manager_state"]
    assert '\\"podEntries\\":{\\"uid-mixed\\":{\\"memoryBlocks\\"' in files["memory_manager_state"]


# ---- rejection when the exclusive requests use up the budget ------------------------------------

@pytest.mark.parametrize("release", ["1.36", "1.37"])
def test_empty_pod_shared_pool_rejected_by_the_merge_under_single_numa_node(release):
    _simulator, result = admit(EMPTY_POOL, release, {"PodLevelResourceManagers": True})
    assert result["admitted"] is False
    assert (result["reason"], result["message"]) == ("TopologyAffinityError", POD_LEVEL_AFFINITY_MESSAGE)
    assert result["merges"][0]["hints"]["cpu"] == {"cpu": []}


def test_empty_pod_shared_pool_rejected_by_allocate_pod_under_best_effort():
    # best-effort admits the merge of an empty hint list; AllocatePod then refuses (CPU first)
    _simulator, result = admit(EMPTY_POOL, "1.37", {"PodLevelResourceManagers": True},
                               topologyManagerPolicy="best-effort")
    assert (result["reason"], result["message"]) == ("EmptyPodSharedPoolError", EMPTY_POOL_CPU)
    assert result["failed_provider"] == "cpu"


def test_memory_budget_used_up_names_memory():
    manifest = pod("mem-pool", "4", "3Gi", [container("a", "2", "3Gi"), container("c")])
    _simulator, result = admit(manifest, "1.37", {"PodLevelResourceManagers": True},
                               topologyManagerPolicy="best-effort")
    assert (result["reason"], result["message"]) == ("EmptyPodSharedPoolError", EMPTY_POOL_MEMORY)
    assert result["failed_provider"] == "memory"
    _simulator, strict = admit(manifest, "1.37", {"PodLevelResourceManagers": True})
    assert (strict["reason"], strict["message"]) == ("TopologyAffinityError", POD_LEVEL_AFFINITY_MESSAGE)


def test_gate_off_the_same_pod_is_admitted_without_pinning():
    _simulator, result = admit(EMPTY_POOL, "1.37")
    assert result["admitted"] is True and cpus_of(result) == {"a": "", "b": "", "c": ""}


def test_shared_init_container_needs_budget_beside_earlier_sidecars():
    init = [dict(container("sidecar", "4", "1Gi"), restartPolicy="Always"), container("setup")]
    manifest = pod("inits", "4", "4Gi", [container("main")], init=init)
    _simulator, result = admit(manifest, "1.37", {"PodLevelResourceManagers": True},
                               topologyManagerPolicy="best-effort")
    assert (result["reason"], result["message"]) == (
        "EmptyPodSharedPoolError", "pod rejected, pod has shared init containers but no cpus available for them")
    assert result["failed_provider"] == "cpu"


class _Ctr:
    def __init__(self, name, cpus, restartable=False):
        self.name, self.restartable = name, restartable
        self.requests = {"cpu": cpus * 1000} if cpus else {}

    def equivalent_guaranteed(self):
        return bool(self.requests)


class _Pod:
    """Past API validation (init + earlier sidecars above the pod budget): only a hand-built pod
    reaches the kubelet's first init-container check."""
    qos_class = "Guaranteed"
    has_pod_level_resources = True
    feature_gates = {"PodLevelResourceManagers": True}

    def __init__(self, budget, init, containers):
        self.pod_level_requests = {"cpu": budget * 1000}
        self.init_containers, self.containers = init, containers


def test_exclusive_init_container_larger_than_the_room_beside_sidecars_names_both_counts():
    simulator, _result = admit(MIXED, "1.37", {"PodLevelResourceManagers": True})
    policy = simulator.cpu_manager.policy
    hand_built = _Pod(4, [_Ctr("sidecar", 2, restartable=True), _Ctr("setup", 3)], [_Ctr("main", 0)])
    assert policy.pod_scope_error(hand_built) == (
        "pod rejected, largest exclusive init container requests 3 cpus, but only 2 available")
    assert policy.pod_scope_error(_Pod(4, [_Ctr("setup", 3)], [_Ctr("main", 0)])) is None


def test_sidecar_slice_and_regular_init_container_sharing_the_rest():
    manifest = pod("sidecars", "4", "4Gi", [container("main", "1", "1Gi"), container("shared")],
                   init=[dict(container("proxy", "1", "1Gi"), restartPolicy="Always"), container("setup")])
    _simulator, result = admit(manifest, "1.37", {"PodLevelResourceManagers": True})
    assert result["admitted"] is True, result["message"]
    cpus = dict((name, parse_cpuset(text)) for name, text in cpus_of(result).items())
    pod_cpus = parse_cpuset(result["pod_level_resources"]["cpus"])
    assert len(cpus["proxy"]) == 1 and len(cpus["main"]) == 1
    assert cpus["setup"] == pod_cpus - cpus["proxy"]               # runs before main: budget minus sidecars
    assert cpus["shared"] == pod_cpus - cpus["proxy"] - cpus["main"]


# ---- container scope and qualification ----------------------------------------------------------

def test_container_scope_gives_exclusive_cpus_only_to_containers_whose_requests_equal_limits():
    # CPU manager alone (memory manager None): the container path, no pod budget
    manifest = pod("ctr-scope", "4", "4Gi", [container("infra", "2", "2Gi"),
                                             container("burst", "1", "1Gi", limits=False),
                                             container("worker")])
    simulator, result = admit(manifest, "1.37", {"PodLevelResourceManagers": True}, topologyManagerScope="container",
                              memoryManagerPolicy="None", reservedMemory=[])
    assert result["admitted"] is True, (result["reason"], result["message"])
    assert result["pod_level_resources"]["pod_scope_path"] is False
    cpus = cpus_of(result)
    assert len(parse_cpuset(cpus["infra"])) == 2 and cpus["burst"] == "" and cpus["worker"] == ""
    assert simulator.cpu_manager.pod_cpus("uid-ctr-scope") is None
    _simulator, off = admit(manifest, "1.37", None, topologyManagerScope="container",
                            memoryManagerPolicy="None", reservedMemory=[])
    assert cpus_of(off) == {"infra": "", "burst": "", "worker": ""}


def test_container_scope_static_memory_refuses_a_container_without_qualifying_requests():
    """memorymanager/policy_static.go Allocate (read from the code, no upstream test covers it):
    with the gate on, a container of a Guaranteed pod-level pod whose requests do not equal its
    limits has no memory request; Allocate still runs, finds no default hint and fails."""
    manifest = pod("ctr-scope-mem", "4", "4Gi", [container("infra", "2", "2Gi"), container("worker")])
    _simulator, result = admit(manifest, "1.37", {"PodLevelResourceManagers": True}, topologyManagerScope="container")
    assert result["admitted"] is False
    assert result["reason"] == "UnexpectedAdmissionError"
    assert "[memorymanager] failed to get the default NUMA affinity" in result["message"]
    assert result["failed_container"] == "worker"


def test_non_integral_pod_budget_runs_in_the_node_shared_pool():
    manifest = pod("fraction", "3500m", "4Gi", [container("main", "2", "2Gi"), container("rest")])
    _simulator, result = admit(manifest, "1.37", {"PodLevelResourceManagers": True})
    assert result["admitted"] is True
    assert result["pod_level_resources"]["cpus"] == "" and cpus_of(result)["main"] == ""
    # memory still gets its pod budget
    assert result["pod_level_resources"]["memory_blocks"][0]["size"] == 4 * GI
