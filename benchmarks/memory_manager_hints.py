# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Print the cost of the Memory Manager simulator's hints and Allocate at 2, 4, 8 and 16 NUMA nodes.

The kubelet's memory hints enumerate all 2^N - 1 NUMA masks (65535 at 16 nodes) for each request,
and Allocate recomputes them when the Topology Manager hands over a nil or too-narrow mask. Run:

    .venv/bin/python benchmarks/memory_manager_hints.py [repeats]

Figures are medians in milliseconds; nothing here fails on time.
"""

from __future__ import print_function

import statistics
import sys
import time

from _collection import importable as _importable  # noqa: E402  (benchmarks/ is the script's directory)

_importable()

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.memory_manager import (  # noqa: E402
    new_memory_manager,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import (  # noqa: E402
    HugePages,
    NumaNode,
    Topology,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import Quantity  # noqa: E402

GI = 1024 ** 3
MI = 1024 ** 2


def machine(count):
    nodes = []
    for node_id in range(count):
        pools = {}
        for size, pages in ((2 * MI, 1024), (GI, 4)):
            pool = HugePages(page_size_bytes=size, total_pages=pages, free_pages=pages)
            pools[pool.resource_name] = pool
        nodes.append(NumaNode(id=node_id, cpus=(), memory_total_bytes=32 * GI, memory_free_bytes=32 * GI,
                              hugepages=pools))
    topo = Topology(nodes=tuple(nodes))
    config = {"memoryManagerPolicy": "Static",
              "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}]}
    return new_memory_manager(topo, config, allocatable_reservation={"memory": Quantity.parse("1Gi")})


def guaranteed(name, memory):
    return Pod.from_manifest({"metadata": {"name": name, "uid": name}, "spec": {"containers": [{
        "name": "c", "resources": {"limits": {"cpu": "2", "memory": memory, "hugepages-2Mi": "512Mi",
                                              "hugepages-1Gi": "1Gi"}}}]}})


def median_ms(function, repeats):
    samples = []
    for _dummy in range(repeats):
        start = time.perf_counter()
        function()
        samples.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(samples)


def main():
    repeats = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    print("%-6s %-8s %-14s %-16s %-16s" % ("nodes", "masks", "hints (ms)", "hints big (ms)", "allocate nil (ms)"))
    for count in (2, 4, 8, 16):
        mm = machine(count)
        small = guaranteed("small", "4Gi")
        big = guaranteed("big", "%dGi" % (31 * count // 2))   # needs about half of the machine
        container = small.containers[0]
        hints_ms = median_ms(lambda: mm.get_topology_hints(small, container), repeats)
        big_ms = median_ms(lambda: mm.get_topology_hints(big, big.containers[0]), repeats)

        def allocate_and_release():
            mm.allocate(small, container, TopologyHint(None, False))
            mm.remove(small.uid, "c")

        allocate_ms = median_ms(allocate_and_release, repeats)
        print("%-6d %-8d %-14.2f %-16.2f %-16.2f" % (count, 2 ** count - 1, hints_ms, big_ms, allocate_ms))


if __name__ == "__main__":
    main()
