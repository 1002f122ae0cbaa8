# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Median CPU / device hint generation and CPU allocation time at 2, 4, 8 and 16 NUMA nodes.

Each node has 16 CPUs as 8 SMT cores and one GPU; the pod asks 4 CPUs and 1 GPU. Columns:

* ``cpu fast`` / ``cpu literal``: the static policy's hint generation (all-mask sums, interned
  hints) and the kubelet's per-mask loop it is tested against;
* ``dev fast`` / ``dev literal``: the same for the device manager;
* ``alloc``: one container allocation (takeByTopology, packed);
* ``first call``: the one-off cost of the first hint call in a process (mask table and hint
  objects for that NUMA count are built once);
* ``distributed``: ``distribute-cpus-across-numa`` taking about half the machine's CPUs from a
  node where a few CPUs are in use (the NUMA-combination search), next to the kubelet's plain
  enumeration where it finishes in reasonable time (up to 8 nodes).

Run: ``.venv/bin/python benchmarks/cpu_device_hints.py [--repeat 9]``. Prints figures only.
"""

from __future__ import absolute_import, division, print_function

import argparse
import statistics
import time

from _collection import importable as _importable  # noqa: E402  (benchmarks/ is the script's directory)

_importable()

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager import cpu_assignment_distributed  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.cpu_manager import new_cpu_manager  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.devicemanager import DeviceInventory, DeviceManager  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology  # noqa: E402

GPU = "nvidia.com/gpu"


def machine(nodes, per_node=16):
    cores = per_node // 2
    total = nodes * cores
    cpus, node_cpus = [], {}
    for node in range(nodes):
        for index in range(cores):
            first = node * cores + index
            for cpu in (first, first + total):
                cpus.append({"id": cpu, "node": node, "core": index, "socket": node // 2, "die": 0,
                             "online": True, "siblings": [first, first + total], "cache_id": node})
                node_cpus.setdefault(node, []).append(cpu)
    return Topology.from_facts({"nodes": [{"id": n, "cpus": sorted(c), "memory_total_bytes": 1 << 36}
                                          for n, c in sorted(node_cpus.items())],
                                "cpus": sorted(cpus, key=lambda c: c["id"])})


def median_ms(func, repeat):
    samples = []
    for dummy in range(repeat):  # noqa: B007
        start = time.perf_counter()
        func()
        samples.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    pod = Pod.from_manifest({"metadata": {"name": "bench"}, "spec": {"containers": [
        {"name": "c", "resources": {"limits": {"cpu": "4", "memory": "1Gi", GPU: "1"}}}]}})
    container = pod.containers[0]
    header = ("nodes", "hints", "cpu fast", "cpu literal", "dev fast", "dev literal", "alloc", "first call",
              "distributed", "dist literal")
    print("%5s %6s %10s %12s %10s %12s %8s %11s %12s %13s" % header)
    for nodes in (2, 4, 8, 16):
        topo = machine(nodes)
        cpu = new_cpu_manager(topo, {"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "1"}})
        dev = DeviceManager(range(nodes), DeviceInventory.from_spec({GPU: dict(("gpu%d" % n, n) for n in range(nodes))}))
        start = time.perf_counter()
        hints = cpu.get_topology_hints(pod, container)["cpu"]
        first = (time.perf_counter() - start) * 1000.0
        policy = cpu.policy
        available = policy.available_cpus(cpu._state)
        devices = dev.available_devices(GPU)
        cpu_fast = median_ms(lambda: policy.generate_hints(available, frozenset(), 4), args.repeat)
        cpu_slow = median_ms(lambda: policy.generate_hints_literal(available, frozenset(), 4), max(1, args.repeat // 3))
        dev_fast = median_ms(lambda: dev.generate_hints(GPU, devices, set(), 1), args.repeat)
        dev_slow = median_ms(lambda: dev.generate_hints_literal(GPU, devices, set(), 1), max(1, args.repeat // 3))

        def allocate():
            cpu.allocate(pod, container, TopologyHint(None, True))
            cpu.remove(pod.uid, container.name)
        alloc = median_ms(allocate, args.repeat)
        busy = set(cpu.cpu_topology.all_cpus) - {0, 1, 2, 17, 35}
        want = len(busy) // 2 + 1
        dist = median_ms(lambda: cpu_assignment_distributed.take_distributed(cpu.cpu_topology, busy, want), args.repeat)
        if nodes <= 8:
            dist_literal = "%11.2fms" % median_ms(lambda: cpu_assignment_distributed.take_distributed(
                cpu.cpu_topology, busy, want, literal=True), max(1, args.repeat // 3))
        else:
            dist_literal = "%13s" % "-"
        print("%5d %6d %8.2fms %10.2fms %8.2fms %10.2fms %6.2fms %9.1fms %10.2fms %s" % (
            nodes, len(hints), cpu_fast, cpu_slow, dev_fast, dev_slow, alloc, first, dist, dist_literal))


if __name__ == "__main__":
    main()
