# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Median Topology Manager decision time: fast exact merge vs the kubelet's exhaustive merge.

Scenarios at 2, 4, 8 and 16 NUMA nodes, each with four hint lists (cpu, memory, hugepages-1Gi,
one device resource) generated with the providers' rule (every NUMA mask with enough capacity;
preferred = masks of the minimal size that could fit on an empty node):

* ``fits``: a fresh node, everything fits on one node -> a preferred result exists;
* ``split``: cpu only fits on the last node, memory and hugepages only on the first, the device
  sits in the middle -> no preferred result, the non-preferred search (Moebius inversion) runs;
* ``wide``: requests that need half the machine -> long lists, preferred result of size N/2.

Prints one table. The exhaustive merge is timed only where the permutation count is at most
``--exhaustive-limit`` (default 2e6); beyond that its time is estimated from the slowest measured
time per permutation (marked "est.").
Run: ``.venv/bin/python benchmarks/admission_merge.py [--repeat 15]``.
A second table times one whole admission with the real providers (hint generation of the
device, CPU and memory managers, the merge, and allocation), and the merge's share of it.
"""

from __future__ import absolute_import, division, print_function

import argparse
import statistics
import sys
import time

from _collection import importable as _importable  # noqa: E402  (benchmarks/ is the script's directory)

_importable()

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask, iterate_bitmask_values, popcount  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.merge import merge_exhaustive, merge_fast  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import NUMAInfo  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_options import PolicyOptions  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.topology_manager import create_policy  # noqa: E402


def generate(ids, capacity, free, request):
    """Provider rule: masks whose free amount fits; preferred = minimal size fitting capacity."""
    hints = []
    min_size = len(ids)
    for mask in iterate_bitmask_values(ids):
        nodes = [i for i in ids if mask >> i & 1]
        if sum(capacity[i] for i in nodes) >= request:
            min_size = min(min_size, len(nodes))
        if sum(free[i] for i in nodes) >= request:
            hints.append(mask)
    return [TopologyHint(BitMask.from_value(m), popcount(m) == min_size) for m in hints]


def scenario(kind, n):
    ids = list(range(n))
    cap_cpu = dict((i, 16) for i in ids)
    cap_mem = dict((i, 64) for i in ids)
    cap_huge = dict((i, 8) for i in ids)
    cap_dev = dict((i, 1) for i in ids)
    free_cpu, free_mem, free_huge, free_dev = dict(cap_cpu), dict(cap_mem), dict(cap_huge), dict(cap_dev)
    req = {"cpu": 4, "memory": 16, "huge": 2, "dev": 1}
    if kind == "split":
        for i in ids:
            free_cpu[i] = 16 if i == n - 1 else 2
            free_mem[i] = 64 if i == 0 else 8
            free_huge[i] = 8 if i == 0 else 1
            free_dev[i] = 1 if i == n // 2 else 0
    elif kind == "wide":
        req = {"cpu": 16 * max(1, n // 2), "memory": 64 * max(1, n // 2), "huge": 8 * max(1, n // 2),
               "dev": max(1, n // 2)}
    lists = [
        generate(ids, cap_cpu, free_cpu, req["cpu"]),
        generate(ids, cap_mem, free_mem, req["memory"]),
        generate(ids, cap_huge, free_huge, req["huge"]),
        generate(ids, cap_dev, free_dev, req["dev"]),
    ]
    providers = [{"example.com/gpu": lists[3]}, {"cpu": lists[0]},
                 {"memory": lists[1], "hugepages-1Gi": lists[2]}]
    return lists, providers


#: the clock used for every figure: wall time (default) or this process's CPU time (--clock cpu),
#: which is far less disturbed by other work on a busy machine
CLOCK = [time.perf_counter]


def _duration(seconds):
    """Human duration for estimates (s, min, h, days, years)."""
    for unit, size in (("years", 365 * 86400.0), ("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return "%.3g %s" % (seconds / size, unit)
    return "%.3g s" % seconds


def median_ms(func, repeat):
    times = []
    for _round in range(repeat):
        start = CLOCK[0]()
        result = func()
        times.append((CLOCK[0]() - start) * 1000.0)
    return statistics.median(times), result


def admission_scenario(n, policy, merger="fast"):
    """A fresh node of ``n`` NUMA nodes (8 CPUs, 64 GiB, 8x1Gi pages, one GPU each) and a pod."""
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
    from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, HugePages, NumaNode, Topology

    nodes, cpus = [], []
    for node in range(n):
        ids = tuple(range(node * 8, node * 8 + 8))
        pages = HugePages(page_size_bytes=1 << 30, total_pages=8, free_pages=8)
        nodes.append(NumaNode(id=node, cpus=ids, memory_total_bytes=64 << 30, memory_free_bytes=64 << 30,
                              hugepages={pages.resource_name: pages},
                              distances=dict((peer, 10 if peer == node else 20) for peer in range(n))))
        cpus.extend(CPU(id=c, node=node, core=c, socket=node // 2, die=0, online=True, siblings=(c,), cache_id=node)
                    for c in ids)
    config = {
        "cpuManagerPolicy": "static", "memoryManagerPolicy": "Static", "topologyManagerPolicy": policy,
        "topologyManagerPolicyOptions": {"max-allowable-numa-nodes": str(max(8, n))},
        "reservedSystemCPUs": "0", "systemReserved": {"memory": "1Gi"},
        "evictionHard": {"memory.available": "100Mi"},
        "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}],
    }
    devices = {"example.com/gpu": dict(("gpu%d" % node, node) for node in range(n))}
    simulator = AdmissionSimulator(Topology(nodes=tuple(nodes), cpus=tuple(cpus)), config, devices=devices,
                                   merger=merger)
    resources = {"cpu": "4", "memory": "8Gi", "hugepages-1Gi": "2Gi", "example.com/gpu": "1"}
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bench"},
                "spec": {"containers": [{"name": "c", "image": "x",
                                         "resources": {"requests": resources, "limits": dict(resources)}}]}}
    return simulator, simulator.pod_from_manifest(manifest)


class _MergeTimer:
    """Wraps a policy's merge and adds up the time spent in it."""

    def __init__(self, merge):
        self.merge = merge
        self.spent = 0.0

    def __call__(self, providers_hints):
        start = CLOCK[0]()
        try:
            return self.merge(providers_hints)
        finally:
            self.spent += CLOCK[0]() - start


def admission_table(node_counts, repeat):
    """Median time of one whole pod admission (hints of all providers + merge + allocation).

    Every round builds a new simulator; the per-machine tables the providers share (mask order,
    interned hints, subset sums) are built by the first round only, whose time is shown as
    "first ms" (what one module run, a fresh process, pays for that machine size).
    """
    print()
    print("full admission, one Guaranteed container (cpu 4, memory 8Gi, hugepages-1Gi 2Gi, 1 GPU), restricted")
    print("%-6s %14s %10s %16s  %s" % ("nodes", "admission ms", "first ms", "merge share ms", "result"))
    for n in node_counts:
        times, merge_times, outcome = [], [], None
        for _round in range(repeat):
            simulator, pod = admission_scenario(n, "restricted")
            policy = simulator.topology_manager.policy
            timer = _MergeTimer(policy.merge)
            policy.merge = timer
            start = CLOCK[0]()
            outcome = simulator.admit(pod)
            times.append((CLOCK[0]() - start) * 1000.0)
            merge_times.append(timer.spent * 1000.0)
        print("%-6d %14.2f %10.2f %16.3f  admitted=%s numa=%s" % (
            n, statistics.median(times), times[0], statistics.median(merge_times), outcome["admitted"],
            outcome["numa_nodes"]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--exhaustive-limit", type=float, default=2e6)
    parser.add_argument("--nodes", default="2,4,8,16")
    parser.add_argument("--no-admission", action="store_true", help="skip the full-admission table")
    parser.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                        help="wall time, or CPU time of this process (steadier on a loaded machine)")
    args = parser.parse_args(argv)
    if args.clock == "cpu":
        CLOCK[0] = time.process_time
    print("clock: %s" % ("process CPU time" if args.clock == "cpu" else "wall time"))
    rate = []  # ms per permutation measured where the exhaustive merge ran
    header = ("nodes", "case", "hints", "fast ms", "policy ms", "exhaustive ms", "result")
    print("%-6s %-6s %10s %12s %12s %14s  %s" % header)
    for n in [int(x) for x in args.nodes.split(",")]:
        info = NUMAInfo(list(range(n)))
        opts = PolicyOptions(max_allowable_numa_nodes=max(8, n))
        policy = create_policy("best-effort", info, opts)
        for kind in ("fits", "split", "wide"):
            lists, providers = scenario(kind, n)
            perms = 1
            for hints in lists:
                perms *= max(1, len(hints))
            fast_ms, fast = median_ms(lambda: merge_fast(lists, info), args.repeat)
            policy_ms, _unused = median_ms(lambda: policy.merge(providers), args.repeat)
            if perms <= args.exhaustive_limit:
                ex_ms, slow = median_ms(lambda: merge_exhaustive(lists, info), 1 if perms > 1e4 else 3)
                assert slow == fast, (n, kind, slow, fast)
                ex_text = "%.2f" % ex_ms
                if perms >= 1000:
                    rate.append(ex_ms / perms)
            else:
                if rate:
                    seconds = max(rate) * perms / 1000.0
                    ex_text = "~%s (est.)" % _duration(seconds)
                else:
                    ex_text = "- (%.1e perms)" % perms
            print("%-6d %-6s %10d %12.3f %12.3f %14s  %s" % (
                n, kind, sum(len(x) for x in lists), fast_ms, policy_ms, ex_text, fast))
    if not args.no_admission:
        admission_table([int(x) for x in args.nodes.split(",")], max(3, args.repeat // 3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
