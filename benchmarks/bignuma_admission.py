# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Whole admissions on big NUMA machines: time and peak RSS per row, each row in a fresh process.

What one ad hoc module run pays is a fresh Python process: imports, building the simulator (the
managers' start-up checks) and one admission. Each row runs in its own child process (so caches
and peak RSS belong to that row alone) under a wall-clock limit (``--timeout``) and an address
space limit (``--memory-limit``), and prints:

* ``fresh ms``: CPU time of the whole child process (interpreter start, imports, simulator,
  one admission) when the pod's result is there; ``fresh wall``: wall time in the child from
  before the first engine import to the result (inflated by other work on a busy machine);
* ``first ms``: CPU time of the first simulator and admission in the child, after the imports and
  the machine's description (the issue's "time per admission" in a fresh process: cold caches and
  tables, no compiling);
* ``steady ms``: median CPU time of ``--repeat`` further admissions in the same child, each on a
  new simulator (process-wide tables already built);
* ``peak RSS MB``: the child's maximum resident set size;
* the decision (admitted, NUMA nodes) and the kubelet's own forecast (``kubelet_cost``) when
  the engine returns one.

Rows: ``N`` NUMA nodes (4 CPUs and 16Gi per node, 1Gi hugepages, static CPU + Static memory,
restricted, pod scope) with a pod that fits one node (``one``) and one that needs four
(``four``); the GB200-like tray (2 Grace nodes with 72 CPUs each + 34 CPU-less memory nodes,
Static memory); and the upstream worst case of the merge alone (8 nodes, four hint lists of all
255 masks, no preferred result; kubernetes/kubernetes#137700 reports 258 s and 407 GB for it).
The first row, ``baseline``, is a child that only starts: the interpreter and this harness.

Run: ``.venv/bin/python benchmarks/bignuma_admission.py [--nodes 2,4,8,16,24,32,64]
[--bytecode none|cached] [--before /path/to/older/checkout] [--samples 7]``. ``--bytecode none`` (default)
compiles every module in every row, as an AnsiballZ module run does; ``cached`` reads pyc files.
``--samples K`` runs every row K times (alternating with ``--before``) and shows the sample with
the least CPU time (steady: the least median; RSS: the largest): on a shared machine the minimum
is the figure other work disturbed least. A script that prints figures, not a test: nothing
fails on time.
"""

from __future__ import absolute_import, division, print_function

import os
import sys
import time

GIB = 1 << 30


def _importable():
    """The checkout under test: the ``ansible_collections`` link directory the parent made for
    it (NUMAGUARD_BENCH_PATH), so that a row's child imports no tempfile/shutil/json of its own
    (the harness's share of "fresh" stays the interpreter's start); or, run by hand, this
    checkout or the one named by NUMAGUARD_BENCH_ROOT."""
    path = os.environ.get("NUMAGUARD_BENCH_PATH")
    if path:
        sys.path.insert(0, path)
        return
    from _collection import ROOT, importable  # benchmarks/ is the script's directory

    importable(os.environ.get("NUMAGUARD_BENCH_ROOT") or ROOT)


def _pod(resources):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bench"},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": dict(resources), "limits": dict(resources)}}]}}


def _machine(row):
    """(topology, config, devices, manifest) of a benchmark row."""
    from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, HugePages, NumaNode, Topology

    nodes, cpus = [], []
    before = []
    devices = None
    if row["kind"] in ("groups", "fallback"):
        # hint sets that are not monotone, no preferred merged hint, > 20 reachable nodes
        n = row["nodes"]
        layout = [(node, 4, 16) for node in range(n)]
        policy, scope = "best-effort", "pod"
        if row["kind"] == "groups":
            # pod a spans nodes 0 and 1 (a memory NUMA group); pod b (measured) prefers one node
            # for CPUs and two for memory: the kubelet's best non-preferred hint is {2,3}
            before = [_pod({"cpu": "2", "memory": "20Gi"})]
            manifest = _pod({"cpu": "2", "memory": "20Gi"})
        else:
            # a device on each node from 8 on (13 or more device nodes: a described hint set); the
            # 1.36 fallback hint spans every node. 14 CPUs need four nodes, the device one: the
            # best non-preferred hint is {0,1,2,3} (the device list holds it by the fallback hint)
            devices = {"example.com/gpu": dict(("gpu%d" % node, node) for node in range(8, n))}
            manifest = _pod({"cpu": "14", "memory": "4Gi", "example.com/gpu": "1"})
    elif row["kind"] == "gb200":
        # two Grace nodes (72 CPUs, 240Gi each) and 34 CPU-less GPU memory nodes (23Gi each)
        layout = [(0, 72, 240), (1, 72, 240)] + [(node, 0, 23) for node in range(2, 36)]
        policy, scope = "restricted", "pod"
        manifest = _pod({"cpu": "8", "memory": "32Gi"})
    else:
        n = row["nodes"]
        layout = [(node, 4, 16) for node in range(n)]
        policy, scope = "restricted", "pod"
        if row["kind"] == "one":
            manifest = _pod({"cpu": "2", "memory": "4Gi", "hugepages-1Gi": "1Gi"})
        else:  # four: 14 CPUs need four nodes (CPU 0 is reserved)
            manifest = _pod({"cpu": "14", "memory": "40Gi", "hugepages-1Gi": "4Gi"})
    next_cpu = 0
    ids = [node for node, _c, _m in layout]
    for node, count, mem in layout:
        own = tuple(range(next_cpu, next_cpu + count))
        next_cpu += count
        pages = {}
        if row["kind"] != "gb200":
            page = HugePages(page_size_bytes=GIB, total_pages=4, free_pages=4)
            pages[page.resource_name] = page
        nodes.append(NumaNode(id=node, cpus=own, memory_total_bytes=mem * GIB, memory_free_bytes=mem * GIB,
                              hugepages=pages,
                              distances=dict((peer, 10 if peer == node else 20) for peer in ids)))
        cpus.extend(CPU(id=c, node=node, core=c, socket=node if count else 0, die=0, online=True,
                        siblings=(c,), cache_id=node) for c in own)
    config = {
        "cpuManagerPolicy": "static", "memoryManagerPolicy": "Static", "topologyManagerPolicy": policy,
        "topologyManagerScope": scope,
        "topologyManagerPolicyOptions": {"max-allowable-numa-nodes": str(max(8, len(ids)))},
        "reservedSystemCPUs": "0", "systemReserved": {"memory": "1Gi"},
        "evictionHard": {"memory.available": "100Mi"},
        "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}],
    }
    return Topology(nodes=tuple(nodes), cpus=tuple(cpus)), config, devices, manifest, before


def _cpu_so_far():
    """CPU seconds this process has used since it started (user + system)."""
    import resource
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _child_admission(row, repeat):
    start = time.perf_counter()
    _importable()
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator

    topology, config, devices, manifest, before = _machine(row)
    first = time.process_time()
    simulator = AdmissionSimulator(topology, config, devices=devices)
    for earlier in before:  # pods already running (their admission is part of the figures)
        simulator.admit(simulator.pod_from_manifest(earlier))
    result = simulator.admit(simulator.pod_from_manifest(manifest))
    result["first_ms"] = (time.process_time() - first) * 1000.0
    fresh = (_cpu_so_far(), time.perf_counter() - start)
    steady = []
    for _round in range(repeat):
        begin = time.process_time()
        again = AdmissionSimulator(topology, config, devices=devices)
        for earlier in before:
            again.admit(again.pod_from_manifest(earlier))
        again.admit(again.pod_from_manifest(manifest))
        steady.append(time.process_time() - begin)
    return fresh, steady, result


def _child_upstream(repeat):
    """The merge alone: four lists of all 255 masks of 8 nodes, none preferred."""
    start = time.perf_counter()
    _importable()
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import NUMAInfo
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_options import PolicyOptions
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.topology_manager import create_policy

    info = NUMAInfo(list(range(8)))
    policy = create_policy("best-effort", info, PolicyOptions())
    hints = [TopologyHint(BitMask.from_value(m), False) for m in range(1, 256)]
    providers = [{"a": list(hints)}, {"b": list(hints)}, {"c": list(hints), "d": list(hints)}]
    first = time.process_time()
    merged, _admit = policy.merge(providers)
    first_ms = (time.process_time() - first) * 1000.0
    fresh = (_cpu_so_far(), time.perf_counter() - start)
    steady = []
    for _round in range(repeat):
        begin = time.process_time()
        policy.merge(providers)
        steady.append(time.process_time() - begin)
    try:
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager import kubelet_cost
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.merge import merge_permutations
    except ImportError:  # a checkout from before the forecast
        cost = None
    else:
        permutations = merge_permutations(policy.last_lists)
        cost = {"permutations": permutations, "estimated_seconds": kubelet_cost.estimate(4 * 255, permutations)}
    result = {"admitted": True, "numa_nodes": list(merged.affinity.bits()) if merged.affinity else None,
              "merged": str(merged), "kubelet_cost": cost, "first_ms": first_ms}
    return fresh, steady, result


def _child_baseline():
    """Nothing but the child's own start: the floor under every "fresh" figure."""
    return (_cpu_so_far(), 0.0), [], {}


def child(argv):
    """Entry of the per-row child process: print one JSON line (json, statistics and resource
    are imported after the row's figures are taken)."""
    row = {"kind": argv[0], "nodes": int(argv[1])}
    repeat = int(argv[2])
    try:
        if row["kind"] == "baseline":
            fresh, steady, result = _child_baseline()
        elif row["kind"] == "upstream":
            fresh, steady, result = _child_upstream(repeat)
        else:
            fresh, steady, result = _child_admission(row, repeat)
        import statistics

        out = {"fresh_ms": fresh[0] * 1000.0, "fresh_wall_ms": fresh[1] * 1000.0, "first_ms": result.get("first_ms"),
               "steady_ms": statistics.median(steady) * 1000.0 if steady else None,
               "admitted": result.get("admitted"), "numa_nodes": result.get("numa_nodes"),
               "verdict": result.get("verdict"),
               "reason": result.get("reason"), "kubelet_cost": result.get("kubelet_cost")}
    except MemoryError:
        out = {"error": "MemoryError"}
    except Exception as exc:  # a benchmark row reports its failure instead of stopping the table
        out = {"error": "%s: %s" % (type(exc).__name__, str(exc)[:160])}
    import json
    import resource

    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(json.dumps(out))
    return 0


def _limit_memory(limit_mb):
    def apply():
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (limit_mb << 20, limit_mb << 20))
    return apply


def _link_dir(args, root):
    """A directory with ``ansible_collections/numaguard/kubelet`` -> the checkout (made once)."""
    checkout = os.path.abspath(root or os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    path = os.path.join(args.cache_dir, "link-before" if root else "link-this")
    if not os.path.isdir(path):
        os.makedirs(os.path.join(path, "ansible_collections", "numaguard"))
        os.symlink(checkout, os.path.join(path, "ansible_collections", "numaguard", "kubelet"))
    return path


def run_row(row, args, root=None):
    import json
    import subprocess  # the parent's only: a row's child process does not import it

    command = [sys.executable, os.path.abspath(__file__), "--child", row["kind"], str(row["nodes"]), str(args.repeat)]
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env["NUMAGUARD_BENCH_PATH"] = _link_dir(args, root)
    # bytecode: "none" compiles every module from source, as an AnsiballZ module run does (its
    # zip carries no bytecode): an empty cache directory, nothing written; "cached": a cache
    # directory per checkout, written by a warm-up run (a module_utils tree installed with pyc)
    # (the standard library keeps its installed pyc files in both modes, as on a managed host;
    # "none" expects checkouts without __pycache__ directories)
    if args.bytecode == "none":
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    else:
        env["PYTHONPYCACHEPREFIX"] = os.path.join(args.cache_dir, "pyc-before" if root else "pyc-this")
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, timeout=args.timeout,
                              preexec_fn=_limit_memory(args.memory_limit), check=False, env=env)
    except subprocess.TimeoutExpired:
        return {"error": "no answer within %d s" % args.timeout}, time.perf_counter() - start
    wall = time.perf_counter() - start
    lines = done.stdout.decode("utf-8", "replace").strip().splitlines()
    if not lines:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return {"error": "child died (rc %d): %s" % (done.returncode, tail[-1] if tail else "")}, wall
    return json.loads(lines[-1]), wall


def _cost_text(cost):
    if not isinstance(cost, dict):
        return "-"
    if "error" in cost:
        return "error: " + cost["error"]
    perms = cost.get("permutations")
    seconds = cost.get("estimated_seconds")
    perms_text = "%.3g" % perms if isinstance(perms, (int, float)) else perms
    seconds_text = _duration(seconds) if isinstance(seconds, (int, float)) else seconds
    return "kubelet: %s perms, ~%s" % (perms_text, seconds_text)


def _duration(seconds):
    for unit, size in (("years", 365 * 86400.0), ("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size:
            return "%.3g %s" % (seconds / size, unit)
    return "%.3g s" % seconds


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--child":
        return child(argv[1:])
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", default="2,4,8,12,16,20,24,32,48,64")
    parser.add_argument("--repeat", type=int, default=5, help="steady-state admissions per row")
    parser.add_argument("--timeout", type=int, default=60, help="seconds per row")
    parser.add_argument("--memory-limit", type=int, default=2048, help="address space limit per row, MB")
    parser.add_argument("--before", default="",
                        help="a checkout of an earlier version: every row runs there too, right before this one")
    parser.add_argument("--only", default="", help="comma list of row names to run (e.g. gb200,upstream,16/one)")
    parser.add_argument("--samples", type=int, default=1,
                        help="child processes per row (and checkout), alternating; figures of the least disturbed one")
    parser.add_argument("--bytecode", choices=["none", "cached"], default="none",
                        help="none: every module compiled from source (an AnsiballZ module run); cached: pyc files")
    args = parser.parse_args(argv)
    import shutil
    import tempfile

    args.cache_dir = tempfile.mkdtemp(prefix="numaguard-bench-pyc-")
    try:
        return _table(args)
    finally:
        shutil.rmtree(args.cache_dir, True)


def _pycache_dirs(root):
    """__pycache__ directories under a checkout's plugins/ (``--bytecode none`` would read them)."""
    found = []
    for top, dirs, _files in os.walk(os.path.join(root, "plugins")):
        found.extend(os.path.join(top, d) for d in dirs if d == "__pycache__")
    return found


def _table(args):
    rows = [{"name": "baseline", "kind": "baseline", "nodes": 0}]
    for n in [int(x) for x in args.nodes.split(",") if x]:
        rows.append({"name": "%d/one" % n, "kind": "one", "nodes": n})
        if n >= 4:
            rows.append({"name": "%d/four" % n, "kind": "four", "nodes": n})
    rows.append({"name": "gb200", "kind": "gb200", "nodes": 36})
    for n in (24, 64):
        rows.append({"name": "%d/groups" % n, "kind": "groups", "nodes": n})
        rows.append({"name": "%d/fallback" % n, "kind": "fallback", "nodes": n})
    rows.append({"name": "upstream", "kind": "upstream", "nodes": 8})
    if args.only:
        wanted = set(args.only.split(","))
        rows = [row for row in rows if row["name"] in wanted or row["kind"] == "baseline"]
    print("python %s; limits per row: %d s, %d MB address space; steady = median of %d; bytecode: %s; "
          "samples per row: %d (minimum CPU shown)"
          % (sys.version.split()[0], args.timeout, args.memory_limit, args.repeat, args.bytecode, args.samples))
    print("load average %s" % " ".join("%.1f" % x for x in os.getloadavg()))
    if args.bytecode == "none":
        for root in [os.path.dirname(os.path.dirname(os.path.abspath(__file__)))] + ([args.before] if args.before else []):
            if _pycache_dirs(root):
                print("warning: %s has __pycache__ directories under plugins/: --bytecode none reads them" % root)
    print("%-17s %9s %10s %9s %10s %11s %7s  %s"
          % ("row", "fresh ms", "fresh wall", "first ms", "steady ms", "peak RSS MB", "wall s", "result"))
    for row in rows:
        runs = [("before", args.before), ("", None)] if args.before else [("", None)]
        samples = dict((label, []) for label, _root in runs)
        for _sample in range(args.samples):  # alternating, so background load hits both alike
            for label, root in runs:
                if args.bytecode == "cached" and not samples[label]:
                    run_row(row, args, root)  # warm-up: writes the pyc files
                samples[label].append(run_row(row, args, root))
        for label, _root in runs:
            name = row["name"] + (" " + label if label else "")
            good = [(out, wall) for out, wall in samples[label] if "error" not in out]
            if not good:
                out, wall = samples[label][0]
                rss = "%.0f" % out["rss_mb"] if "rss_mb" in out else "-"
                print("%-17s %9s %10s %9s %10s %11s %7.1f  %s" % (name, "-", "-", "-", "-", rss, wall, out["error"]))
                continue
            # the least disturbed sample: minimum CPU time (and the wall time of that sample)
            out, wall = min(good, key=lambda sample: sample[0]["fresh_ms"])
            steadies = sorted(o["steady_ms"] for o, _w in good if o["steady_ms"] is not None)
            steady = "%.2f" % steadies[0] if steadies else "-"
            result = "%s numa=%s %s" % (out.get("verdict") or "admitted=%s" % out["admitted"], out["numa_nodes"],
                                        out.get("reason") or "")
            if row["kind"] == "baseline":
                result = "the child's interpreter start and harness alone (the floor of every fresh figure)"
            firsts = sorted(o["first_ms"] for o, _w in good if o.get("first_ms") is not None)
            first = "%.2f" % firsts[0] if firsts else "-"
            print("%-17s %9.1f %10.1f %9s %10s %11.0f %7.1f  %s; %s" % (
                name, out["fresh_ms"], out["fresh_wall_ms"], first, steady,
                max(o["rss_mb"] for o, _w in good), wall, result.strip(), _cost_text(out.get("kubelet_cost"))))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
