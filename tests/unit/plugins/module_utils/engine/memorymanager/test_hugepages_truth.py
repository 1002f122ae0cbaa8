# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Hugepages truth: the memory manager's free 2Mi pages against the kernel's free_hugepages.

Two NUMA nodes with 512 pages of 2Mi each (1Gi); the kernel reports only 128 free on node 0
(something outside Kubernetes holds 384 pages), the state file believes all 512 are free.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.hugepages_truth import Backing, compare
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, HugePages, NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults

GI = 1 << 30
MI = 1 << 20


def machine(free=(128, 512)):
    nodes, cpus = [], []
    for node in range(2):
        pool = HugePages(page_size_bytes=2 * MI, total_pages=512, free_pages=free[node])
        nodes.append(NumaNode(id=node, cpus=tuple(range(node * 4, node * 4 + 4)), memory_total_bytes=8 * GI,
                              memory_free_bytes=8 * GI, hugepages={pool.resource_name: pool},
                              distances={0: 10 if node == 0 else 20, 1: 20 if node == 0 else 10}))
        cpus.extend(CPU(id=c, node=node, core=c, socket=node, die=0, online=True, siblings=(c,), cache_id=node)
                    for c in range(node * 4, node * 4 + 4))
    return Topology(nodes=tuple(nodes), cpus=tuple(cpus))


def config():
    out = kubelet_defaults()
    out.update({"memoryManagerPolicy": "Static", "topologyManagerPolicy": "single-numa-node",
                "systemReserved": {"memory": "1Gi"}, "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}]})
    return out


def pod(name, hugepages):
    resources = {"cpu": "1", "memory": "1Gi", "hugepages-2Mi": hugepages}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": resources, "limits": resources}}]}}


def test_state_and_os_disagree_on_node_0_only():
    simulator = AdmissionSimulator(machine(), config())
    rows = dict((row["numa_node"], row) for row in compare(simulator.memory_map(), machine()))
    assert rows[0]["state_free"] == GI and rows[0]["os_free"] == 256 * MI and rows[0]["os_free_pages"] == 128
    assert rows[0]["difference"] == 768 * MI and rows[0]["diverged"] is True
    assert "768Mi more than the OS can back" in rows[0]["note"]
    assert rows[1]["difference"] == 0 and rows[1]["diverged"] is False


def test_admitted_then_fails_at_runtime():
    topology = machine()
    simulator = AdmissionSimulator(topology, config())
    backing = Backing(topology, simulator.memory_map())
    first = simulator.admit(simulator.pod_from_manifest(pod("fits", "128Mi")))
    assert first["admitted"] and first["numa_nodes"] == [0]
    assert backing.charge(simulator.memory_map()) == []
    second = simulator.admit(simulator.pod_from_manifest(pod("too-many", "512Mi")))
    assert second["admitted"] and second["numa_nodes"] == [0]   # the state had 896Mi free on node 0
    problems = backing.charge(simulator.memory_map())
    assert problems == ["hugepages-2Mi on NUMA node 0: the pod takes 512Mi, the OS has 128Mi free (free_hugepages 64)"]


def test_a_missing_pool_is_a_divergence():
    simulator = AdmissionSimulator(machine(), config())
    tables = simulator.memory_map()
    del tables["1"]["hugepages-2Mi"]
    rows = [row for row in compare(tables, machine()) if row["numa_node"] == 1]
    assert rows[0]["diverged"] is True and "memory manager state" in rows[0]["note"]
