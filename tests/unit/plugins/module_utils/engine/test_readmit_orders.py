# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Re-admission over pod orders (``_engine/readmit.py``) with hand-built state files.

The node: two NUMA nodes of 8Gi and 4 CPUs, 1124Mi reserved on node 0 (1Gi system-reserved +
100Mi eviction), static CPU manager with CPU 0 reserved, Static memory manager. The running pods
``big`` (10Gi, had to span {0,1}) and ``small`` (1Gi) were admitted under ``best-effort`` in
that order, so ``small`` joined the NUMA group {0,1} (a grouped node serves no single-node mask).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.checkpoint import restore_cpu_manager_state
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.checkpoint import restore_memory_manager_state
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.readmit import ReadmitInputError, readmit
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults
from ansible_collections.numaguard.kubelet.tests.unit.plugins.module_utils.engine.state_fixtures import SPANNING_MEMORY_STATE

GI = 1 << 30

MEMORY_STATE = SPANNING_MEMORY_STATE
CPU_STATE = '{"policyName":"static","defaultCpuSet":"0,3-7","entries":{"uid-big":{"c":"1"},"uid-small":{"c":"2"}},"checksum":0}'


def topology(nodes=2, cpus_per_node=4, memory=8 * GI):
    out, cpus = [], []
    for node in range(nodes):
        ids = tuple(range(node * cpus_per_node, (node + 1) * cpus_per_node))
        out.append(NumaNode(id=node, cpus=ids, memory_total_bytes=memory, memory_free_bytes=memory, hugepages={},
                            distances=dict((peer, 10 if peer == node else 20) for peer in range(nodes))))
        cpus.extend(CPU(id=c, node=node, core=c, socket=node, die=0, online=True, siblings=(c,), cache_id=node)
                    for c in ids)
    return Topology(nodes=tuple(out), cpus=tuple(cpus))


def config(**changes):
    out = kubelet_defaults()
    out.update({"cpuManagerPolicy": "static", "memoryManagerPolicy": "Static", "topologyManagerPolicy": "best-effort",
                "reservedSystemCPUs": "0", "systemReserved": {"memory": "1Gi"},
                "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}]})
    out.update(changes)
    return out


def pod(name, cpu, memory):
    resources = {"cpu": str(cpu), "memory": memory}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "uid": "uid-" + name},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": resources, "limits": resources}}]}}


RUNNING = [pod("big", 1, "10Gi"), pod("small", 1, "1Gi")]


def builder(cfg, restored):
    machine = topology()

    def build():
        memory = restore_memory_manager_state(MEMORY_STATE if restored else None, cfg["memoryManagerPolicy"],
                                              "/var/lib/kubelet/memory_manager_state")
        cpu = restore_cpu_manager_state(CPU_STATE if restored else None, cfg["cpuManagerPolicy"],
                                        "/var/lib/kubelet/cpu_manager_state")
        return AdmissionSimulator(machine, cfg, cpu_checkpoint=cpu, memory_checkpoint=memory)
    return build


def test_restart_with_restored_state_readmits_in_every_order():
    result = readmit(builder(config(), True), RUNNING, start="restored")
    assert result["kubelet_starts"] is True
    assert result["all_readmitted"] is True and result["rejected"] == []
    assert result["search"]["method"] == "exhaustive"
    assert result["search"]["orders_tried"] == result["search"]["orders_possible"] == 2


def test_reset_readmits_in_recorded_order_but_not_the_other():
    result = readmit(builder(config(), False), RUNNING, start="fresh")
    assert result["recorded_order"]["all_readmitted"] is True
    assert result["all_readmitted"] is False
    (rejected,) = result["rejected"]
    # small first takes node 0 alone; node 0 can then join no group, and big needs {0,1}
    assert rejected["pod"] == "default/big"
    assert rejected["order"] == ["default/small", "default/big"]
    assert rejected["position"] == 2
    assert rejected["reason"] == "UnexpectedAdmissionError"
    assert rejected["message"] == ("Allocate failed due to [memorymanager] failed to find NUMA nodes to extend the "
                                   "current topology hint, which is unexpected")
    assert rejected["failed_provider"] == "memory"
    assert rejected["rejected_in_orders"] == 1
    assert result["search"]["orders_tried"] == 2


def test_proposed_configuration_with_restored_state_stops_the_kubelet():
    cfg = config(memoryManagerPolicy="None")
    cfg.pop("reservedMemory")

    def build():
        memory = restore_memory_manager_state(MEMORY_STATE, "Static", "/var/lib/kubelet/memory_manager_state")
        return AdmissionSimulator(topology(), cfg, memory_checkpoint=memory)
    result = readmit(build, RUNNING, start="restored")
    assert result["kubelet_starts"] is False
    assert 'configured policy "None" differs from state checkpoint policy "Static"' in result["start_error"]
    assert result["all_readmitted"] is False


def test_cpu_packing_order_under_single_numa_node():
    # node 0 has CPUs 1-3 free (0 reserved), node 1 has 4-7: x=3 fits only if it comes first
    cfg = config(topologyManagerPolicy="single-numa-node", memoryManagerPolicy="None")
    cfg.pop("reservedMemory")
    machine = topology()
    pods = [pod("x", 3, "1Gi"), pod("y", 2, "1Gi"), pod("z", 2, "1Gi")]
    result = readmit(lambda: AdmissionSimulator(machine, cfg), pods)
    assert result["recorded_order"]["all_readmitted"] is True
    by_pod = dict((r["pod"], r) for r in result["rejected"])
    assert by_pod["default/x"]["order"] == ["default/y", "default/z", "default/x"]
    assert by_pod["default/x"]["reason"] == "TopologyAffinityError"
    assert by_pod["default/x"]["message"] == "Resources cannot be allocated with Topology locality"
    assert by_pod["default/x"]["rejected_in_orders"] == 2   # y,z,x and z,y,x
    assert result["search"]["orders_tried"] == 6


def _fleet_of(count):
    # one 9Gi pod that needs {0,1} among 512Mi pods: any 1Gi pod before it on node 0 blocks the group
    return [pod("wide", 1, "9Gi")] + [pod("p%d" % i, 1, "512Mi") for i in range(count - 1)]


def test_bounded_search_reports_its_bound_and_finds_the_blocking_order():
    machine = topology(cpus_per_node=8)
    result = readmit(lambda: AdmissionSimulator(machine, config()), _fleet_of(9), max_orders=12, seed=3)
    search = result["search"]
    assert search["method"] == "bounded" and search["orders_bound"] == 12
    assert search["orders_tried"] == 12 and search["orders_possible"] == 362880
    assert result["recorded_order"]["all_readmitted"] is True
    wide = [r for r in result["rejected"] if r["pod"] == "default/wide"]
    assert wide and wide[0]["found_by"] != "recorded"
    assert wide[0]["order"][-1] == "default/wide" or wide[0]["order"].index("default/wide") > 0
    again = readmit(lambda: AdmissionSimulator(machine, config()), _fleet_of(9), max_orders=12, seed=3)
    assert [r["order"] for r in again["rejected"]] == [r["order"] for r in result["rejected"]]


@pytest.mark.parametrize("kwargs, message", [
    ({"start": "reboot"}, "readmit start must be one of fresh, restored, got 'reboot'"),
    ({"max_orders": 0}, "readmit max_orders must be an integer >= 1, got 0"),
    ({"exhaustive_up_to": 9}, "readmit exhaustive_up_to is at most 8"),
])
def test_bad_options_are_named(kwargs, message):
    with pytest.raises(ReadmitInputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        readmit(builder(config(), False), RUNNING, **kwargs)


def test_duplicate_uids_and_bad_manifests_are_named():
    with pytest.raises(ReadmitInputError, match="running pod #2: uid uid-big is also the uid of running pod #1"):
        readmit(builder(config(), False), [RUNNING[0], RUNNING[0]])
    with pytest.raises(ReadmitInputError, match="^web.yaml: "):
        readmit(builder(config(), False), [{"kind": "Pod", "spec": {}}], labels=["web.yaml"])
