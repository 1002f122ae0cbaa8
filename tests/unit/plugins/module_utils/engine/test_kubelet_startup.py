# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kubelet's start-up (``_engine/startup.py``): construction order, validateNodeAllocatable,
and prefer-closest-numa-nodes on sparse NUMA ids (the kubelet starts, then panics at the pod whose
merge compares two different masks of equal width). Cases built from issue 21's description."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSetupError, AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.startup import (
    CRASHED,
    REFUSES,
    STARTS,
    KubeletRefusesToStart,
    start_kubelet,
    startup_verdict,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults

GIB = 1024 ** 3


def machine(ids, cpus_per_node=2, distances=True):
    """Nodes ``ids`` (sparse allowed), ``cpus_per_node`` CPUs each, 4 GiB each; distances as sysfs
    gives them (one entry per node, in node order: 10 local, 21 remote)."""
    nodes, cpus = [], []
    for index, node_id in enumerate(ids):
        own = tuple(range(index * cpus_per_node, (index + 1) * cpus_per_node))
        dist = dict((peer, 10 if peer == node_id else 21) for peer in ids) if distances else {}
        nodes.append(NumaNode(id=node_id, cpus=own, memory_total_bytes=4 * GIB, memory_free_bytes=4 * GIB,
                              hugepages={}, distances=dist))
        cpus.extend(CPU(id=c, node=node_id, core=c, socket=index, die=0, online=True, siblings=(c,), cache_id=index)
                    for c in own)
    return Topology(nodes=tuple(nodes), cpus=tuple(cpus))


def config(**fields):
    out = kubelet_defaults()
    out.update(fields)
    return out


def pod(name, cpu=None):
    container = {"name": "c", "image": "registry.example/app:1"}
    if cpu is not None:
        resources = {"cpu": str(cpu), "memory": "256Mi"}
        container["resources"] = {"requests": dict(resources), "limits": dict(resources)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [container]}}


def kubelet(version="1.32"):
    return KubeletAssumption.resolve(version, None, None)


PREFER_CLOSEST = dict(cpuManagerPolicy="static", reservedSystemCPUs="0", topologyManagerPolicy="best-effort",
                      topologyManagerPolicyOptions={"prefer-closest-numa-nodes": "true"})


def run(topology, cfg, pods, version="1.32"):
    simulator = AdmissionSimulator(topology, cfg, kubelet_version=version)
    return [simulator.admit(simulator.pod_from_manifest(p)) for p in pods]


# ---- construction order and the kubelet's messages -------------------------------------------

def test_first_failing_manager_in_construction_order():
    topo = machine([0, 1])
    # everything wrong at once: the Topology Manager is built first
    bad = config(topologyManagerPolicy="best-effort", topologyManagerPolicyOptions={"bogus": "1"},
                 cpuManagerPolicy="static", memoryManagerPolicy="Static",
                 kubeReserved={"memory": "5Gi"}, systemReserved={"memory": "5Gi"})
    verdict = startup_verdict(topo, bad, kubelet())
    assert verdict == {"verdict": REFUSES, "manager": "topology",
                       "message": 'unknown Topology Manager Policy option: "bogus"'}
    # then the CPU Manager (static without reserved CPUs)
    bad["topologyManagerPolicyOptions"] = {}
    verdict = startup_verdict(topo, bad, kubelet())
    assert verdict["verdict"] == REFUSES and verdict["manager"] == "cpu"
    # then the Memory Manager (Static without a matching reservedMemory)
    bad["reservedSystemCPUs"] = "0"
    verdict = startup_verdict(topo, bad, kubelet())
    assert verdict["verdict"] == REFUSES and verdict["manager"] == "memory"
    # then Start's validateNodeAllocatable
    bad["memoryManagerPolicy"] = "None"
    verdict = startup_verdict(topo, bad, kubelet())
    assert verdict["verdict"] == REFUSES and verdict["manager"] == "node_allocatable"
    bad.pop("kubeReserved")
    assert startup_verdict(topo, bad, kubelet()) == {"verdict": STARTS, "manager": "", "message": ""}


@pytest.mark.parametrize("version, wording", [
    ("1.32", 'Resource "memory" has a reservation of '),
    ("1.29", 'Resource "memory" has an allocatable of '),
])
def test_reservations_above_capacity_refuse_to_start(version, wording):
    """kube + system reserved + hard eviction above the node's memory: the kubelet exits in
    ContainerManager.Start (validateNodeAllocatable), whatever the manager policies."""
    topo = machine([0, 1])  # 8 GiB
    cfg = config(kubeReserved={"memory": "4Gi"}, systemReserved={"memory": "4Gi"})  # + 100Mi eviction
    with pytest.raises(KubeletRefusesToStart) as err:
        start_kubelet(topo, cfg, kubelet(version))
    assert err.value.manager == "node_allocatable"
    assert str(err.value).startswith("invalid Node Allocatable configuration. " + wording)
    # the admission simulator (admission_check, check_pod.yml) refuses the same way, no pod admitted
    with pytest.raises(AdmissionSetupError) as again:
        AdmissionSimulator(topo, cfg, kubelet_version=version)
    assert str(again.value) == str(err.value)
    # exactly at capacity minus the eviction threshold it starts
    cfg["systemReserved"] = {"memory": "3996Mi"}
    assert startup_verdict(topo, cfg, kubelet(version))["verdict"] == STARTS


def test_cpu_reservation_above_capacity_refuses():
    topo = machine([0, 1])  # 4 CPUs
    cfg = config(kubeReserved={"cpu": "3"}, systemReserved={"cpu": "1500m"})
    verdict = startup_verdict(topo, cfg, kubelet())
    assert verdict["verdict"] == REFUSES and verdict["manager"] == "node_allocatable"
    assert 'Resource "cpu" has a reservation of ' in verdict["message"]


# ---- prefer-closest-numa-nodes on sparse NUMA ids --------------------------------------------

@pytest.mark.parametrize("ids, panic", [
    ([0, 2], "runtime error: index out of range [2] with length 2"),
    ([0, 1, 3], "runtime error: index out of range [3] with length 3"),
])
def test_sparse_ids_start_then_crash_at_the_guaranteed_pod(ids, panic):
    topo = machine(ids)
    cfg = config(**PREFER_CLOSEST)
    assert startup_verdict(topo, cfg, kubelet())["verdict"] == STARTS
    results = run(topo, cfg, [pod("best-effort"), pod("one-cpu", 1), pod("after")])
    assert results[0]["verdict"] == "admitted"            # no exclusive CPUs: no hints, no comparison
    crashed = results[1]
    assert crashed["verdict"] == CRASHED and not crashed["admitted"]
    assert crashed["message"] == "panic: " + panic
    assert crashed["crash"] == {"pod": "default/one-cpu", "panic": panic}
    # the kubelet is gone (and crashes again at that pod when it restarts): nothing after it is admitted
    assert results[2]["verdict"] == CRASHED and results[2]["crash"] == {"pod": "default/one-cpu", "panic": panic}


def test_sparse_ids_admit_when_no_equal_width_masks_are_compared():
    topo = machine([0, 2])  # CPU 0 reserved: node 0 has one free CPU, node 2 two
    results = run(topo, config(**PREFER_CLOSEST), [pod("two-cpus", 2), pod("one-cpu", 1)])
    assert results[0]["verdict"] == "admitted" and results[0]["numa_nodes"] == [2]
    # node 2 is full now: only {0} is preferred, no two masks of one width meet
    assert results[1]["verdict"] == "admitted" and results[1]["numa_nodes"] == [0]


def test_sparse_ids_never_panic_under_single_numa_node():
    cfg = config(**{**PREFER_CLOSEST, "topologyManagerPolicy": "single-numa-node"})
    results = run(machine([0, 2]), cfg, [pod("one-cpu", 1), pod("again", 1)])
    assert [r["verdict"] for r in results] == ["admitted", "admitted"]


def test_one_node_with_a_high_id_never_panics():
    results = run(machine([1], cpus_per_node=4), config(**PREFER_CLOSEST), [pod("one-cpu", 1), pod("two", 2)])
    assert [r["verdict"] for r in results] == ["admitted", "admitted"]


def test_dense_ids_never_panic():
    results = run(machine([0, 1]), config(**PREFER_CLOSEST), [pod("one-cpu", 1), pod("again", 1)])
    assert [r["verdict"] for r in results] == ["admitted", "admitted"]


def test_sparse_ids_refusal_names_the_cpu_manager_first():
    """Both refuse: the kubelet's first error comes from the CPU Manager (built after the
    Topology Manager, which starts on sparse ids), not from the distances."""
    cfg = config(**{**PREFER_CLOSEST, "reservedSystemCPUs": ""})
    verdict = startup_verdict(machine([0, 2]), cfg, kubelet())
    assert verdict["verdict"] == REFUSES and verdict["manager"] == "cpu"
    assert "distance" not in verdict["message"]


def test_missing_distances_still_refuse_in_the_topology_manager():
    verdict = startup_verdict(machine([0, 2], distances=False), config(**PREFER_CLOSEST), kubelet())
    assert verdict["verdict"] == REFUSES and verdict["manager"] == "topology"
    assert "error getting NUMA distances from cadvisor" in verdict["message"]


@pytest.mark.parametrize("version", ["1.28", "1.30", "1.32", "1.35"])
def test_every_release_keeps_the_positional_lookup(version):
    results = run(machine([0, 2]), config(**PREFER_CLOSEST), [pod("one-cpu", 1)], version)
    assert results[0]["verdict"] == CRASHED
