# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The admission engine as kubelets 1.27-1.32 decide, on both sides of each boundary (issue 28).

Rows of ``_k8s/versions.py`` (sources in docs/kubelet-versions.md), read from the kubelet's own
code of 1.27.7, 1.28.6, 1.29.6, 1.30.7, 1.31.12 and 1.32.10:

* ``SidecarContainers`` alpha off 1.28, beta on 1.29, GA locked 1.33; with it off the predicate
  admit handler refuses a restartable init container (``InitContainerRestartPolicyForbidden``,
  pkg/kubelet/lifecycle/predicate.go); 1.27 has no such field and never refuses;
* ``managers-sidecar-aware`` 1.29: before, the CPU, memory and device managers size a pod as
  max(largest init container, apps) and reuse every init container's resources, sidecars' too;
* ``cpu-shortage-text-counts`` 1.29, ``smt-alignment-error-by-cause`` 1.32,
  ``memory-allocate-numa-group-rule`` 1.32.

The machines are built here: two NUMA nodes of four CPUs and 4Gi (CPU 0 and 1124Mi on node 0
reserved), and for SMT two NUMA nodes of two cores with two threads each.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.devicemanager import DeviceInventory, DeviceManager
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import (
    CPU_SHORTAGE,
    gate_errors,
    gate_spec,
    kubelet_text,
)

GI = 1 << 30
MI = 1 << 20
FORBIDDEN = 'Init container "proxy" may not have a non-default restartPolicy'
GROUP_RULE = "Allocate failed due to [memorymanager] preferred hint violates NUMA node allocation, which is unexpected"


def facts(smt=False):
    """Two NUMA nodes of four CPUs and 4Gi; with ``smt`` CPU c and c+4 are one core (node 0:
    CPUs 0,1,4,5; node 1: 2,3,6,7), else every CPU is its own core (node 0: 0-3, node 1: 4-7)."""
    def node_of(c):
        return (c % 4) // 2 if smt else c // 4
    cpus = [{"id": c, "node": node_of(c), "core": c % 4 if smt else c, "socket": node_of(c), "die": 0,
             "siblings": [c % 4, c % 4 + 4] if smt else [c], "cache_id": node_of(c)} for c in range(8)]
    return {"nodes": [{"id": n, "cpus": sorted(c["id"] for c in cpus if c["node"] == n), "memory_total_bytes": 4 * GI,
                       "memory_free_bytes": 4 * GI, "distances": {0: 10 + 10 * n, 1: 20 - 10 * n}} for n in (0, 1)],
            "cpus": cpus}


def config(gates=None, **changes):
    out = {"cpuManagerPolicy": "static", "memoryManagerPolicy": "Static", "topologyManagerPolicy": "single-numa-node",
           "reservedSystemCPUs": "0", "systemReserved": {"memory": "1Gi"},
           "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}]}
    if gates is not None:
        out["featureGates"] = gates
    out.update(changes)
    return out


def container(name, cpu, memory, restartable=False, **extra):
    values = {"cpu": cpu, "memory": memory}
    values.update(extra)
    out = {"name": name, "image": "x", "resources": {"requests": dict(values), "limits": dict(values)}}
    if restartable:
        out["restartPolicy"] = "Always"
    return out


def pod(name, containers, init=()):
    spec = {"containers": list(containers)}
    if init:
        spec["initContainers"] = list(init)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "uid": "uid-" + name}, "spec": spec}


def run(release, manifests, gates=None, smt=False, **changes):
    simulator = AdmissionSimulator(Topology.from_facts(facts(smt)), config(gates, **changes), kubelet_version=release)
    return simulator, simulator.run(manifests)["pods"]


def cpus_of(result):
    return dict((c["name"], c["cpus"]) for c in result["containers"])


SIDECAR_POD = pod("mesh", [container("app", "1", "256Mi")], init=[container("proxy", "1", "256Mi", restartable=True)])


# ---- SidecarContainers and the predicate admit handler ------------------------------------------

def test_gate_rows_and_start_up_refusals():
    assert gate_spec("SidecarContainers", (1, 27)) is None
    assert gate_spec("SidecarContainers", (1, 28)) == (False, "alpha", False)
    assert gate_spec("SidecarContainers", (1, 29)) == (True, "beta", False)
    assert gate_spec("SidecarContainers", (1, 33)) == (True, "stable", True)
    assert gate_errors((1, 27), {"SidecarContainers": True}) == {
        "SidecarContainers": "unrecognized feature gate: SidecarContainers"}
    assert gate_errors((1, 32), {"SidecarContainers": False}) == {}
    assert gate_errors((1, 33), {"SidecarContainers": False}) == {
        "SidecarContainers": "cannot set feature gate SidecarContainers to false, feature is locked to true"}


@pytest.mark.parametrize("release, gates, refused", [
    ("1.28", None, True),                                 # alpha, off by default
    ("1.28", {"SidecarContainers": True}, False),
    ("1.28", {"AllAlpha": True}, False),
    ("1.29", None, False),                                # beta, on by default
    ("1.29", {"SidecarContainers": False}, True),
    ("1.32", {"AllBeta": False}, True),
    ("1.33", None, False),
])
def test_predicate_refuses_restartable_init_containers_while_the_gate_is_off(release, gates, refused):
    simulator, (result,) = run(release, [SIDECAR_POD], gates)
    assert simulator.feature_gates["SidecarContainers"] is (not refused)
    if refused:
        assert (result["admitted"], result["verdict"]) == (False, "rejected")
        assert (result["reason"], result["message"]) == ("InitContainerRestartPolicyForbidden", FORBIDDEN)
        assert result["resource_fit"] == {"evaluated": False}   # the first check of the predicate handler
        assert result.get("released") is True                   # what the Topology Manager gave is freed
        assert simulator.memory_map()["0"]["memory"]["reserved"] == 0
    else:
        assert result["admitted"] and result["reason"] in (None, "")


def test_predicate_names_the_first_restartable_init_container_go_quoted():
    manifest = pod("two", [container("app", "1", "256Mi")],
                   init=[container("setup", "1", "256Mi"), container("log-\u00e9", "1", "256Mi", restartable=True),
                         container("proxy", "1", "256Mi", restartable=True)])
    manifest["spec"]["initContainers"][1]["name"] = "log-a"
    _sim, (result,) = run("1.28", [manifest])
    assert result["message"] == 'Init container "log-a" may not have a non-default restartPolicy'


def test_topology_manager_decides_before_the_predicate():
    too_big = pod("big", [container("app", "6", "256Mi")], init=[container("proxy", "1", "256Mi", restartable=True)])
    _sim, (result,) = run("1.28", [too_big])
    assert result["reason"] == "TopologyAffinityError"


def test_the_predicate_comes_before_the_resource_fit():
    hungry = pod("hungry", [container("app", "1", "100Gi")], init=[container("proxy", "1", "256Mi", restartable=True)])
    no_memory_manager = dict(topologyManagerPolicy="none", memoryManagerPolicy="None", reservedMemory=[])
    _sim, (result,) = run("1.28", [hungry], **no_memory_manager)
    assert result["reason"] == "InitContainerRestartPolicyForbidden"
    _sim, (result,) = run("1.29", [hungry], **no_memory_manager)
    assert result["reason"] == "OutOfmemory"


def test_1_27_has_no_restart_policy_field_a_sidecar_is_a_regular_init_container():
    simulator, (result,) = run("1.27", [SIDECAR_POD])
    assert result["admitted"] and "SidecarContainers" not in simulator.kubelet.configured_gates
    assert [c["restartable"] for c in result["containers"]] == [False, False]
    # as a regular init container its CPU is reused by the app container
    assert cpus_of(result) == {"proxy": "1", "app": "1"}
    assert simulator.cpu_manager.summary()["default_cpu_set"] == "0,2-7"


# ---- the managers: sizing and reuse ----------------------------------------------------------------

#: sidecar 2 CPUs, regular init 3, app 2: 1.29 sizes the pod max(2+3, 2+2) = 5 CPUs, 1.28 max(3, 2) = 3
SIZED = pod("sized", [container("app", "2", "256Mi")],
            init=[container("proxy", "2", "256Mi", restartable=True), container("setup", "3", "256Mi")])


@pytest.mark.parametrize("release", ["1.28", "1.29"])
def test_pod_scope_size_of_a_pod_with_a_sidecar(release):
    gates = {"SidecarContainers": True}
    simulator, (result,) = run(release, [SIZED], gates, topologyManagerScope="pod")
    cpu_hints = result["merges"][0]["hints"]["cpu"]["cpu"]
    if release == "1.28":
        # 3 CPUs fit node 0 (CPUs 1-3 free) or node 1: admitted on node 0
        assert result["admitted"] and result["numa_nodes"] == [0]
        assert [h["numa_affinity"] for h in cpu_hints if h["preferred"]] == [[0], [1]]
        # every init container's CPUs are reusable: the app takes the CPUs the sidecar also holds
        assert cpus_of(result) == {"proxy": "1-2", "setup": "1-3", "app": "1-2"}
    else:
        # 5 CPUs fit no single NUMA node of four: single-numa-node rejects
        assert (result["admitted"], result["reason"]) == (False, "TopologyAffinityError")
        assert [h["numa_affinity"] for h in cpu_hints] == [[0, 1]]
    assert simulator.cpu_manager.policy.pod_guaranteed_cpus(simulator.pod_from_manifest(SIZED)) == \
        (3 if release == "1.28" else 5)


@pytest.mark.parametrize("release, app_cpus", [("1.28", "1-2"), ("1.29", "4-5")])
def test_container_scope_reuse_of_a_sidecars_cpus(release, app_cpus):
    """Container scope: the sidecar gets CPUs 1-2 of node 0; 1.28 lets the app container reuse
    them (both pinned to 1-2), 1.29 keeps them the sidecar's and the app goes to node 1."""
    manifest = pod("reuse", [container("app", "2", "256Mi")], init=[container("proxy", "2", "256Mi", restartable=True)])
    simulator, (result,) = run(release, [manifest], {"SidecarContainers": True})
    assert result["admitted"]
    assert cpus_of(result) == {"proxy": "1-2", "app": app_cpus}
    free = "0,3-7" if release == "1.28" else "0,3,6-7"
    assert simulator.cpu_manager.summary()["default_cpu_set"] == free


@pytest.mark.parametrize("release, node, reserved", [("1.28", 0, 2 * GI), ("1.29", 1, 3 * GI)])
def test_memory_manager_pod_scope_size_and_reuse(release, node, reserved):
    """Sidecar 1Gi, regular init 2Gi, app 2Gi: 1.29 sizes the pod 3Gi, which node 0 (2972Mi
    allocatable) cannot hold, keeps the sidecar's 1Gi beside the app's 2Gi; 1.28 sizes it 2Gi,
    places it on node 0 and reuses the sidecar's memory for the init and app containers."""
    manifest = pod("mem", [container("app", "1", "2Gi")],
                   init=[container("proxy", "1", "1Gi", restartable=True), container("setup", "1", "2Gi")])
    simulator, (result,) = run(release, [manifest], {"SidecarContainers": True}, topologyManagerScope="pod")
    assert result["admitted"] and result["numa_nodes"] == [node]
    memory_hints = result["merges"][0]["hints"]["memory"]["memory"]
    assert [h["numa_affinity"] for h in memory_hints if h["preferred"]] == ([[0], [1]] if node == 0 else [[1]])
    assert simulator.memory_map()[str(node)]["memory"]["reserved"] == reserved
    assert simulator.memory_map()[str(1 - node)]["memory"]["reserved"] == 0
    sizes = dict((c["name"], [b["size"] for b in c["memory_blocks"]]) for c in result["containers"])
    if release == "1.28":
        assert sizes == {"proxy": [0], "setup": [0], "app": [2 * GI]}
    else:
        assert sizes == {"proxy": [GI], "setup": [0], "app": [2 * GI]}


def test_device_manager_reuse_of_a_sidecars_devices():
    inventory = {"example.com/nic": {"nic0": {"numa": [0]}, "nic1": {"numa": [1]}}}
    nic_pod = Pod.from_manifest(pod("nic", [container("app", "1", "256Mi", **{"example.com/nic": "1"})],
                                    init=[container("proxy", "1", "256Mi", restartable=True, **{"example.com/nic": "1"})]))
    for aware, app_device in ((False, ["nic0"]), (True, ["nic1"])):
        manager = DeviceManager([0, 1], DeviceInventory.from_spec(inventory), sidecar_aware=aware)
        assert manager.allocate(nic_pod, "proxy", None) == {"example.com/nic": ["nic0"]}
        # 1.28: the sidecar's device is reusable, the app gets it again; 1.29 keeps it the sidecar's
        assert manager.allocate(nic_pod, "app", None) == {"example.com/nic": app_device}
        assert manager.container_devices(nic_pod.uid, "app", "example.com/nic") == app_device


# ---- messages --------------------------------------------------------------------------------------

@pytest.mark.parametrize("release, text", [
    ("1.28", "not enough cpus available to satisfy request"),
    ("1.29", "not enough cpus available to satisfy request: requested=8, available=7"),
])
def test_cpu_shortage_text(release, text):
    big = pod("big", [container("app", "8", "256Mi")])
    _sim, (result,) = run(release, [big], topologyManagerPolicy="none", memoryManagerPolicy="None", reservedMemory=[])
    assert (result["reason"], result["message"]) == (
        "UnexpectedAdmissionError", "Allocate failed due to %s, which is unexpected" % text)
    assert kubelet_text(CPU_SHORTAGE, (1, 28), requested=8, available=7) == "not enough cpus available to satisfy request"


def smt_run(release, second_cpus):
    """full-pcpus-only, CPUs 0 and 4 (one core) reserved: the first pod takes the other three cores
    (or two of them), then a second pod asks for ``second_cpus``."""
    first = pod("first", [container("app", "6" if second_cpus == "2" else "4", "256Mi")])
    second = pod("second", [container("app", second_cpus, "256Mi")])
    return run(release, [first, second], smt=True, topologyManagerPolicy="none", memoryManagerPolicy="None",
               reservedMemory=[], reservedSystemCPUs="0,4", cpuManagerPolicyOptions={"full-pcpus-only": "true"})[1]


@pytest.mark.parametrize("release, text", [
    ("1.31", "SMT Alignment Error: requested 2 cpus not multiple cpus per core = 2"),
    ("1.32", "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 0, requested CPUs = 2, "
             "CPUs per core = 2"),
])
def test_smt_alignment_text_when_no_physical_cpu_is_left(release, text):
    first, second = smt_run(release, "2")
    assert first["admitted"] and first["containers"][0]["cpus"] == "1-3,5-7"
    assert (second["reason"], second["message"]) == ("SMTAlignmentError", text)


@pytest.mark.parametrize("release", ["1.31", "1.32"])
def test_smt_alignment_text_when_some_physical_cpus_are_left_is_the_same(release):
    _first, second = smt_run(release, "4")
    assert second["message"] == ("SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 2, "
                                 "requested CPUs = 4, CPUs per core = 2")
    _first, odd = smt_run(release, "3")
    assert odd["message"] == "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"


# ---- the memory manager's NUMA-group rule in Allocate ------------------------------------------

def group_rule_run(release):
    """A 1-CPU 512Mi pod lands on node 0 (a single-NUMA allocation); then 5 CPUs and 5Gi: no node
    alone holds 5Gi and node 0 may join no multi-NUMA mask, so memory gives no hint; the CPU
    manager's [0,1] wins the merge and reaches the memory manager's Allocate."""
    small = pod("small", [container("app", "1", "512Mi")])
    wide = pod("wide", [container("app", "5", "5Gi")])
    return run(release, [small, wide], topologyManagerPolicy="restricted")


def test_group_rule_from_1_32_rejects_the_wide_pod():
    simulator, (small, wide) = group_rule_run("1.32")
    assert small["admitted"] and small["numa_nodes"] == [0]
    assert wide["merges"][0]["hints"]["memory"] == {}   # no mask fits: no preference
    assert wide["merges"][0]["hints"]["cpu"]["cpu"] == [{"numa_affinity": [0, 1], "preferred": True}]
    assert (wide["admitted"], wide["reason"], wide["message"]) == (False, "UnexpectedAdmissionError", GROUP_RULE)
    assert wide["failed_provider"] == "memory"
    assert simulator.machine_state()["0"]["cells"] == [0]


@pytest.mark.parametrize("release", ["1.28", "1.31"])
def test_group_rule_before_1_32_admits_blocks_spanning_both_nodes(release):
    simulator, (small, wide) = group_rule_run(release)
    assert small["admitted"] and wide["admitted"]
    blocks = wide["containers"][0]["memory_blocks"]
    assert blocks == [{"type": "memory", "size": 5 * GI, "numa_affinity": [0, 1]}]
    state = simulator.machine_state()
    assert state["0"]["cells"] == [0, 1] and state["0"]["numberOfAssignments"] == 2
    # greedy in node order: node 0 gives what it has left (2972Mi - 512Mi), node 1 the rest
    assert simulator.memory_map()["0"]["memory"]["free"] == 0
    assert simulator.memory_map()["1"]["memory"]["reserved"] == 5 * GI - (2972 - 512) * MI


# ---- the table and its document -------------------------------------------------------------------

def test_docs_list_every_behaviour_with_its_first_minor_and_every_gate():
    import os
    import re

    from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s import versions
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "..", "..", "..", "docs", "kubelet-versions.md")) as handle:
        text = handle.read()
    for name, minor in versions.BEHAVIOURS.items():
        row = re.search(r"^\| `%s` \| 1\.(\d+)[ |]" % re.escape(name), text, re.MULTILINE)
        assert row is not None and int(row.group(1)) == minor, name
    for gate in versions.GATES:
        assert re.search(r"^\| `%s` \|" % re.escape(gate), text, re.MULTILINE), gate
    for which, entries in versions.TEXTS.items():
        assert "`%s`" % which in text and [e[0] for e in entries] == sorted(e[0] for e in entries)


# ---- the memory manager's start-up comparison of a restored state --------------------------------

def released_group_state():
    """``memory_manager_state`` after: A 5Gi on [0,1] (node 0 gives its 2972Mi, node 1 the rest),
    B 1Gi on [0,1] (node 0 has nothing left: from node 1), A deleted (released greedily from node 0
    first). Node 1 holds B's 1Gi, while replaying B alone takes it from node 0 (upstream issue
    kubernetes/kubernetes#113130)."""
    no_cpu = config(cpuManagerPolicy="none", topologyManagerPolicy="none")
    del no_cpu["reservedSystemCPUs"]
    simulator = AdmissionSimulator(Topology.from_facts(facts()), no_cpu, kubelet_version="1.32")
    a, b = simulator.run([pod("a", [container("app", "1", "5Gi")]), pod("b", [container("app", "1", "1Gi")])])["pods"]
    assert a["numa_nodes"] == b["numa_nodes"] == [0, 1]
    simulator.memory_manager.remove_pod("uid-a")
    simulator.cpu_manager.remove_pod("uid-a")
    return no_cpu, simulator.state_after()["memory_manager_state"]


@pytest.mark.parametrize("release", ["1.31", "1.32"])
def test_restored_state_compared_per_node_before_1_32_and_by_group_sums_from_1_32(release):
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.checkpoint import (
        load_memory_manager_state,
    )
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.validate_state import MemoryStateError
    no_cpu, text = released_group_state()
    restored = load_memory_manager_state(text)
    assert restored.machine_state[1]["memoryMap"]["memory"]["reserved"] == GI
    if release == "1.31":
        with pytest.raises(MemoryStateError) as err:
            AdmissionSimulator(Topology.from_facts(facts()), no_cpu, memory_checkpoint=restored, kubelet_version=release)
        assert str(err.value) == "[memorymanager] the expected machine state is different from the real one"
        assert err.value.detail == "NUMA node 0 memory: reserved is 0, expected 1073741824"
        return
    simulator = AdmissionSimulator(Topology.from_facts(facts()), no_cpu, memory_checkpoint=restored, kubelet_version=release)
    assert simulator.memory_map()["1"]["memory"]["reserved"] == GI
