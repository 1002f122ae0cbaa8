# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Wall time of playbooks/discover.yml (or check_pod.yml) next to an ansible.builtin.ping playbook on the same fleet.

The question it answers: how much does NUMA discovery cost on top of the bare price of reaching
the hosts (ssh + Python start + AnsiballZ)? Targets (issue 24): discover.yml within 1.1x of ping,
check_pod.yml within 1.25x, at 20 and 50 hosts.

For each fleet size it brings a fleet up (hosts cycling through every bundled topology), then
alternates ping and discover runs (so background load hits both alike) and prints the median of
each and their ratio, for wall time and for the controller's CPU time (ansible-playbook and
its ssh children, user + system; the hosts' Python is not counted: on a shared machine the CPU
ratio is the steadier figure). "cold" closes the ssh ControlPersist masters before every run (first
contact, the usual case for a playbook run by hand); "warm" reuses them. Prints figures only.

    .venv/bin/python benchmarks/discover_vs_ping.py                 # 20 and 50 hosts, 3 rounds, cold
    .venv/bin/python benchmarks/discover_vs_ping.py --hosts 10 --rounds 5 --mode both --forks 10
    .venv/bin/python benchmarks/discover_vs_ping.py --playbook check_pod --hosts 20   # a 2-CPU pod

``--playbook check_pod`` runs playbooks/check_pod.yml with a small Guaranteed pod (2 CPUs, 1Gi):
an admission every host answers quickly, so the figure is the price of shipping, compiling and
importing the admission engine (issue 12's target: within 1.3x of ping).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PING = """---
- name: Ping
  hosts: all
  gather_facts: false
  tasks:
    - name: Ping
      ansible.builtin.ping:
"""


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def load_fleet_tool():
    return _load("numaguard_fleet_tool", os.path.join(REPO, "tests", "fleet", "fleet.py"))


runs = _load("numaguard_playbook_runs", os.path.join(REPO, "tests", "fleet", "playbook_runs.py"))


def run(argv, env):
    """Wall seconds of one run, and its controller CPU seconds (ansible-playbook and its ssh
    children, user + system: what the measured run costs this machine besides the hosts)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc, elapsed = runs.run(argv, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit("benchmark: %s failed (exit %d):\n%s" % (" ".join(argv), proc.returncode, proc.stdout[-3000:]))
    return elapsed, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--hosts", default="20,50", help="comma-separated fleet sizes (default 20,50, issue 24)")
    parser.add_argument("--rounds", type=int, default=3, help="ping/discover pairs per size (default 3)")
    parser.add_argument("--forks", type=int, default=10, help="ansible forks (default 10)")
    parser.add_argument("--mode", choices=("cold", "warm", "both"), default="cold",
                        help="close ssh ControlPersist masters before each run (cold) or not (warm)")
    parser.add_argument("--no-pipelining", action="store_true", help="measure without ANSIBLE_PIPELINING")
    parser.add_argument("--playbook", choices=("discover", "check_pod"), default="discover",
                        help="the playbook measured against ping (default discover)")
    parser.add_argument("--before", default=None,
                        help="a checkout of an earlier version: its playbook runs too, alternating, as 'before'")
    parser.add_argument("--collections", default=None,
                        help="ANSIBLE_COLLECTIONS_PATH to use instead of this checkout (for A/B comparisons)")
    args = parser.parse_args()
    fleet_tool = load_fleet_tool()
    reason = fleet_tool.unavailable()
    if reason:
        raise SystemExit("benchmark: %s" % reason)
    bindir = os.path.dirname(sys.executable)
    playbook_bin = os.path.join(bindir, "ansible-playbook")
    if not os.path.exists(playbook_bin):
        raise SystemExit("benchmark: %s not found; run with the project venv (.venv/bin/python)" % playbook_bin)
    work = tempfile.mkdtemp(prefix="numaguard-bench-")
    try:
        collections = runs.collection_tree(work)
        ping = os.path.join(work, "ping.yml")
        with open(ping, "w") as handle:
            handle.write(PING)
        measured = [os.path.join(REPO, "playbooks", "%s.yml" % args.playbook)]
        if args.playbook == "check_pod":
            pod = runs.write_pod(os.path.join(work, "pod.yaml"), "bench")
            measured += ["-e", "pod_file=%s" % pod]
        env = runs.ansible_env({"ANSIBLE_COLLECTIONS_PATH": args.collections or collections, "ANSIBLE_FORKS": str(args.forks),
                                "ANSIBLE_PIPELINING": "0" if args.no_pipelining else "1"}, bindir)
        variants = [("ping", [ping], env), ("discover", measured, env)]
        if args.before:
            env_before = dict(env, ANSIBLE_COLLECTIONS_PATH=runs.collection_tree(work, args.before, "before"))
            variants.append(("before", [os.path.join(args.before, "playbooks", "%s.yml" % args.playbook)] + measured[1:],
                             env_before))
        modes = ("cold", "warm") if args.mode == "both" else (args.mode,)
        rows = []
        print(args.playbook + ".yml vs ansible.builtin.ping: forks=%d, pipelining=%s, %d round(s), %s, %d CPUs, load %s"
              % (args.forks, "off" if args.no_pipelining else "on", args.rounds, "/".join(modes),
                 os.cpu_count() or 0, " ".join("%.2f" % x for x in os.getloadavg())), flush=True)
        for size in [int(s) for s in args.hosts.split(",") if s.strip()]:
            fleet_dir = os.path.join(work, "fleet%d" % size)
            began = time.monotonic()
            state = fleet_tool.up(fleet_dir, hosts=size, base_port="auto", quiet=True)
            up_time = time.monotonic() - began
            try:
                inventory = state["inventory"]
                for mode in modes:
                    if mode == "warm":  # open the masters once
                        run([playbook_bin, "-i", inventory, ping], env)
                    samples = dict((name, []) for name, _playbook, _env in variants)
                    cpu = dict((name, []) for name, _playbook, _env in variants)
                    for _round in range(args.rounds):
                        for name, playbook, variant_env in variants:
                            if mode == "cold":
                                fleet_tool._close_control_masters(state)
                            wall, used = run([playbook_bin, "-i", inventory] + playbook, variant_env)
                            samples[name].append(wall)
                            cpu[name].append(used)
                    p, d = statistics.median(samples["ping"]), statistics.median(samples["discover"])
                    pc, dc = statistics.median(cpu["ping"]), statistics.median(cpu["discover"])
                    load = " ".join("%.1f" % x for x in os.getloadavg())
                    rows.append((size, mode, p, d, pc, dc, load))
                    print("  %3d hosts %-4s  wall: ping %6.2f s  %s %6.2f s  ratio %.2fx   (ping %s | %s; fleet up %.1f s)"
                          % (size, mode, p, args.playbook, d, d / p, " ".join("%.2f" % x for x in samples["ping"]),
                             " ".join("%.2f" % x for x in samples["discover"]), up_time), flush=True)
                    print("  %3d hosts %-4s  controller CPU: ping %6.2f s  %s %6.2f s  ratio %.2fx   (ping %s | %s; load %s)"
                          % (size, mode, pc, args.playbook, dc, dc / pc, " ".join("%.2f" % x for x in cpu["ping"]),
                             " ".join("%.2f" % x for x in cpu["discover"]), load), flush=True)
                    if "before" in samples:
                        b, bc = statistics.median(samples["before"]), statistics.median(cpu["before"])
                        print("  %3d hosts %-4s  before: %s wall %6.2f s  ratio %.2fx, CPU %6.2f s  ratio %.2fx   (%s)"
                              % (size, mode, args.playbook, b, b / p, bc, bc / pc, " ".join("%.2f" % x for x in samples["before"])),
                              flush=True)
            finally:
                began = time.monotonic()
                fleet_tool.down(fleet_dir, quiet=True)
                print("  %3d hosts: fleet down %.1f s" % (size, time.monotonic() - began), flush=True)
        print("\nhosts  mode  ping_s  %s_s  ratio  ping_cpu_s  %s_cpu_s  cpu_ratio  load" % (args.playbook, args.playbook))
        for size, mode, p, d, pc, dc, load in rows:
            print("%5d  %-4s  %6.2f  %10.2f  %5.2f  %10.2f  %14.2f  %9.2f  %s" % (size, mode, p, d, d / p, pc, dc, dc / pc, load))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
