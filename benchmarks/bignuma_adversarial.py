# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Adversarial big-NUMA admissions: CPU time, peak RSS and verdict per case (issue 24).

Machines of N NUMA nodes (4 CPUs and 16Gi per node, four 1Gi hugepages per node, CPU 0 and
1124Mi of node 0 reserved; static CPU manager, Static memory manager, pod scope) with every
topology manager policy (none, best-effort, restricted, single-numa-node), with and without
``prefer-closest-numa-nodes``, and three distance shapes:

* ``ring``: 10 to itself, 10 + 6 per hop around a ring (the farthest nodes of 64 are 202 apart);
* ``uniform``: 10 to itself, 20 to every other node;
* ``two-level``: sockets of four nodes, 10 / 12 inside a socket / 32 across sockets.

Pods: ``one`` (2 CPUs, 4Gi, 1Gi of hugepages: one node), ``four`` (14 CPUs, 40Gi, 4Gi of hugepages:
four nodes) and ``half`` (2N CPUs and 8N Gi: half the machine's totals; more than half its nodes
since CPU 0 and memory of node 0 are reserved), each on an ``empty`` machine and after a
``partial`` allocation (two small pods first: 2 CPUs + 20Gi, a memory NUMA group over two nodes,
and 3 CPUs + 8Gi; these are not timed, but their verdicts must be decided too).

Every case runs in this process (caches warm after the first case of a machine size, as in a
module run that admits several pods) and prints the CPU time of the measured admission
(``time.process_time``), the process's peak RSS so far (``ru_maxrss``, which only grows: the
last line is the peak of the whole run) and the verdict with its NUMA nodes. ``--check``
compares each case's verdict and NUMA nodes with the literal (exhaustive) merge where that can
run (N <= 8). A script that prints figures, not a test: nothing fails on time.

Run: ``.venv/bin/python benchmarks/bignuma_adversarial.py [--nodes 8,16,24,32,48,64]
[--policies ...] [--shapes ...] [--pods one,four,half] [--check]``.
"""

from __future__ import absolute_import, division, print_function

import argparse
import itertools
import os
import resource
import sys
import time

from _collection import ROOT, importable  # benchmarks/ is the script's directory

GIB = 1 << 30
POLICIES = ("none", "best-effort", "restricted", "single-numa-node")
SHAPES = ("ring", "uniform", "two-level")
PODS = ("one", "four", "half")


def distance(shape, n, a, b):
    if a == b:
        return 10
    if shape == "ring":
        hops = abs(a - b)
        return 10 + 6 * min(hops, n - hops)
    if shape == "two-level":
        return 12 if a // 4 == b // 4 else 32
    return 20


def machine(n, shape):
    from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, HugePages, NumaNode, Topology

    nodes, cpus = [], []
    for node in range(n):
        own = tuple(range(4 * node, 4 * node + 4))
        page = HugePages(page_size_bytes=GIB, total_pages=4, free_pages=4)
        nodes.append(NumaNode(id=node, cpus=own, memory_total_bytes=16 * GIB, memory_free_bytes=16 * GIB,
                              hugepages={page.resource_name: page},
                              distances=dict((peer, distance(shape, n, node, peer)) for peer in range(n))))
        cpus.extend(CPU(id=c, node=node, core=c, socket=node // 4, die=0, online=True, siblings=(c,), cache_id=node)
                    for c in own)
    return Topology(nodes=tuple(nodes), cpus=tuple(cpus))


def config(n, policy, closest):
    options = {"max-allowable-numa-nodes": str(max(8, n))}
    if closest:
        options["prefer-closest-numa-nodes"] = "true"
    return {
        "cpuManagerPolicy": "static", "memoryManagerPolicy": "Static", "topologyManagerPolicy": policy,
        "topologyManagerScope": "pod", "topologyManagerPolicyOptions": options,
        "reservedSystemCPUs": "0", "systemReserved": {"memory": "1Gi"},
        "evictionHard": {"memory.available": "100Mi"},
        "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}],
    }


def manifest(name, resources):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": dict(resources), "limits": dict(resources)}}]}}


def pod(kind, n):
    if kind == "one":
        return manifest("one", {"cpu": "2", "memory": "4Gi", "hugepages-1Gi": "1Gi"})
    if kind == "four":
        return manifest("four", {"cpu": "14", "memory": "40Gi", "hugepages-1Gi": "4Gi"})
    return manifest("half", {"cpu": str(2 * n), "memory": "%dGi" % (8 * n)})


PARTIAL = (manifest("small-a", {"cpu": "2", "memory": "20Gi"}), manifest("small-b", {"cpu": "3", "memory": "8Gi"}))


def cases(args):
    for n, policy, closest, shape, kind, state in itertools.product(
            args.nodes, args.policies, (False, True), args.shapes, args.pods, ("empty", "partial")):
        yield {"nodes": n, "policy": policy, "closest": closest, "shape": shape, "pod": kind, "state": state}


def run_case(case, merger="fast"):
    """(cpu seconds of the measured admission, its result, the earlier pods' verdicts)."""
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator

    n = case["nodes"]
    simulator = AdmissionSimulator(machine(n, case["shape"]), config(n, case["policy"], case["closest"]), merger=merger)
    earlier = []
    if case["state"] == "partial":
        for before in PARTIAL:
            earlier.append(simulator.admit(simulator.pod_from_manifest(before)))
    measured = simulator.pod_from_manifest(pod(case["pod"], n))
    begin = time.process_time()
    result = simulator.admit(measured)
    return time.process_time() - begin, result, earlier


def describe(result):
    text = "%s numa=%s" % (result["verdict"], result.get("numa_nodes"))
    if result["verdict"] == "cannot_check":
        text += " (%s)" % result.get("cannot_check")
    elif result["verdict"] == "rejected":
        text += " (%s)" % result.get("reason")
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="8,16,24,32,48,64")
    parser.add_argument("--policies", default=",".join(POLICIES))
    parser.add_argument("--shapes", default=",".join(SHAPES))
    parser.add_argument("--pods", default=",".join(PODS))
    parser.add_argument("--check", action="store_true", help="compare with the literal merge where N <= 8")
    args = parser.parse_args(argv)
    args.nodes = [int(x) for x in args.nodes.split(",") if x]
    args.policies = [x for x in args.policies.split(",") if x]
    args.shapes = [x for x in args.shapes.split(",") if x]
    args.pods = [x for x in args.pods.split(",") if x]
    importable(os.environ.get("NUMAGUARD_BENCH_ROOT") or ROOT)
    print("python %s; PYTHONDONTWRITEBYTECODE=%s; load average %s" % (
        sys.version.split()[0], os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
        " ".join("%.1f" % x for x in os.getloadavg())))
    print("%-4s %-16s %-7s %-9s %-4s %-7s %9s %8s  %s" % ("N", "policy", "closest", "shape", "pod", "state", "CPU ms",
                                                          "RSS MB", "verdict"))
    worst = 0.0
    undecided = mismatched = 0
    total = 0
    for case in cases(args):
        total += 1
        try:
            cpu, result, earlier = run_case(case)
        except Exception as exc:  # a case reports its failure instead of stopping the table
            print("%-4d %-16s %-7s %-9s %-4s %-7s  error %s: %s" % (
                case["nodes"], case["policy"], case["closest"], case["shape"], case["pod"], case["state"],
                type(exc).__name__, exc))
            undecided += 1
            continue
        worst = max(worst, cpu)
        verdicts = [r["verdict"] for r in earlier] + [result["verdict"]]
        undecided += verdicts.count("cannot_check")
        text = describe(result)
        if earlier:
            text += "; before: " + ", ".join(describe(r) for r in earlier)
        if args.check and case["nodes"] <= 8:
            _cpu, literal, literal_earlier = run_case(case, merger="exhaustive")
            same = all((a["verdict"], a.get("numa_nodes")) == (b["verdict"], b.get("numa_nodes"))
                       for a, b in zip(earlier + [result], literal_earlier + [literal]))
            mismatched += not same
            text += "; literal: %s" % ("same" if same else describe(literal))
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
        print("%-4d %-16s %-7s %-9s %-4s %-7s %9.1f %8.0f  %s" % (
            case["nodes"], case["policy"], case["closest"], case["shape"], case["pod"], case["state"], cpu * 1000.0,
            rss, text))
        sys.stdout.flush()
    print("cases %d; slowest admission %.1f ms CPU; peak RSS %.0f MB; cannot_check or error: %d%s" % (
        total, worst * 1000.0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, undecided,
        "; differing from the literal merge: %d" % mismatched if args.check else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
