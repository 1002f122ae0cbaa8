# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Print the re-admission search's size and time for 5, 7, 10, 50 and 200 running pods.

A node of 4 NUMA nodes (64 CPUs and 256Gi each is scaled with the pod count so that every pod
fits), static CPU manager, Static memory manager, restricted Topology Manager; Guaranteed pods of
1-4 CPUs and 1-8Gi; two of them (the 10th and the 20th) span two NUMA nodes, so that the
running set fits the node in some order (more two-node pods than node pairs could never all run).
Fresh start (reboot with the state refused). Run:

    .venv/bin/python benchmarks/readmit_search.py [max_orders]

Nothing here fails on time.
"""

from __future__ import print_function

import os
import random
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _importable():
    """Make ``ansible_collections.numaguard.kubelet`` importable from the repository tree."""
    if os.path.basename(os.path.dirname(os.path.dirname(ROOT))) == "ansible_collections":
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(ROOT))))
        return
    tmp = tempfile.mkdtemp(prefix="numaguard-bench-")
    os.makedirs(os.path.join(tmp, "ansible_collections", "numaguard"))
    os.symlink(ROOT, os.path.join(tmp, "ansible_collections", "numaguard", "kubelet"))
    sys.path.insert(0, tmp)


_importable()

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.readmit import readmit  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, NumaNode, Topology  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults  # noqa: E402

NODES = 4


def machine(pods):
    per_node_cpus = max(16, pods)
    per_node_memory = max(64, 3 * pods) << 30
    nodes, cpus = [], []
    for node in range(NODES):
        ids = tuple(range(node * per_node_cpus, (node + 1) * per_node_cpus))
        nodes.append(NumaNode(id=node, cpus=ids, memory_total_bytes=per_node_memory,
                              memory_free_bytes=per_node_memory, hugepages={},
                              distances=dict((peer, 10 if peer == node else 21) for peer in range(NODES))))
        cpus.extend(CPU(id=c, node=node, core=c, socket=node // 2, die=0, online=True, siblings=(c,), cache_id=node)
                    for c in ids)
    return Topology(nodes=tuple(nodes), cpus=tuple(cpus)), per_node_memory


def manifests(count, per_node_memory, seed=1):
    rnd = random.Random(seed)
    out = []
    for index in range(count):
        if index in (9, 19):
            memory = per_node_memory + (1 << 30)   # needs two NUMA nodes: one pair each
        else:
            memory = rnd.choice([1, 2, 4, 8]) << 30
        resources = {"cpu": str(rnd.choice([1, 2, 4])), "memory": str(memory)}
        out.append({"apiVersion": "v1", "kind": "Pod",
                    "metadata": {"name": "p%03d" % index, "namespace": "bench", "uid": "uid-%03d" % index},
                    "spec": {"containers": [{"name": "c", "image": "x",
                                             "resources": {"requests": resources, "limits": resources}}]}})
    return out


def main():
    max_orders = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    config = kubelet_defaults()
    config.update({"cpuManagerPolicy": "static", "memoryManagerPolicy": "Static", "topologyManagerPolicy": "best-effort",
                   "reservedSystemCPUs": "0", "systemReserved": {"memory": "1Gi"},
                   "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}]})
    print("%6s %-11s %14s %12s %11s %10s %9s %8s" % ("pods", "method", "orders", "tried", "admissions",
                                                     "seconds", "ms/order", "at risk"))
    for count in (5, 7, 10, 50, 200):
        topology, per_node = machine(count)
        pods = manifests(count, per_node)
        config["maxPods"] = max(110, count)   # a node that runs 200 pods has maxPods raised
        started = time.perf_counter()
        result = readmit(lambda: AdmissionSimulator(topology, config), pods, max_orders=max_orders)
        seconds = time.perf_counter() - started
        search = result["search"]
        possible = search["orders_possible"]
        print("%6d %-11s %14s %12d %11d %10.2f %9.1f %8d" % (
            count, search["method"], possible if possible is not None else "%d!" % count, search["orders_tried"],
            search["admissions"], seconds, 1000.0 * seconds / max(1, search["orders_tried"]),
            len(result["rejected"])))


if __name__ == "__main__":
    main()
