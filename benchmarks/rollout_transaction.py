# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/apply.yml against a hand-written rollout (benchmarks/handwritten_rollout.yml: copy the
drop-in, restart, wait for /healthz) on a 10-host simulated fleet, batch 2, rounds interleaved so
machine load affects both alike; then ``apply.yml --check --diff`` against ``discover.yml`` on the
same hosts (issue 22). Prints the wall times, their ratios and the task results per host (ok /
skipped / changed from the recap). Each round resets every host (main config, ``none`` state files,
kubelet restarted) and rolls out a Topology Manager scope change (restart only, so both do the same work
on the host). Needs root (the fleet).
Besides the wall times: the controller's CPU (user + system of ansible-playbook and its children,
the task workers and ssh clients; the modules run on the fleet's hosts and are not counted), the
load average, and whether the collection's plugins had bytecode cached (``__pycache__`` next to
them; with ``PYTHONDONTWRITEBYTECODE=1`` set none is written, and every task worker compiles the
action plugins it loads). ``--check-only`` times only ``apply.yml --check --diff`` against
``discover.yml`` (the machine is shared: few rounds).
Run: ``.venv/bin/python benchmarks/rollout_transaction.py [--rounds 3] [--hosts 10] [--batch 2] [--tree DIR] [--check-only]``.
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from rollout_overhead import BIN, collection_path, env, fake_kubelet, fleetlib, reset  # noqa: E402  (benchmarks/rollout_overhead.py)

SETTINGS = {"topologyManagerScope": "pod"}  # valid on every bundled machine class, restart only
DROPIN = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ntopologyManagerScope: pod\n"


def recap(output):
    """Per host of the PLAY RECAP: ok, changed, skipped, failed, rescued."""
    counts = {}
    for line in output.split("PLAY RECAP", 1)[-1].splitlines():
        match = re.match(r"^(\S+)\s+:\s+(.*)$", line)
        if match:
            counts[match.group(1)] = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", match.group(2)))
    return counts


def controller_cpu():
    """CPU seconds (user + system) of the children this process has reaped so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv, collections):
    """Wall seconds, controller CPU seconds and the recap of one playbook run."""
    started, cpu = time.time(), controller_cpu()
    proc = subprocess.run(argv, env=env(collections), capture_output=True, text=True, timeout=3600, check=False)
    elapsed, used = time.time() - started, controller_cpu() - cpu
    if proc.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (" ".join(argv[:3]), proc.stdout[-3000:]))
    return elapsed, used, recap(proc.stdout)


def bytecode_cached(tree):
    """Whether the collection's action plugin has its bytecode cached for this interpreter."""
    import importlib.util

    source = os.path.join(tree, "plugins", "action", "kubelet_rollout.py")
    return os.path.exists(importlib.util.cache_from_source(source))


def spread(values):
    return "%.1f (%s)" % (statistics.median(values), ", ".join("%.1f" % v for v in values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--tree", default=REPO, help="collection tree whose apply.yml runs (default this checkout)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--hosts", type=int, default=10)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--check-only", action="store_true", help="only apply.yml --check --diff against discover.yml")
    args = parser.parse_args()
    fleet_dir = tempfile.mkdtemp(prefix="ng-bench-fleet-")
    state = fleetlib.up(fleet_dir, hosts=args.hosts, base_port="auto", quiet=True)
    fake = "/usr/bin/python3 " + os.path.join(REPO, "tests", "fleet", "fake_kubelet.py")
    extra = os.path.join(fleet_dir, "vars.json")
    with open(extra, "w") as handle:
        json.dump(dict(fake_kubelet.role_variables(), kubelet_numa_settings=SETTINGS, kubelet_numa_batch_size=args.batch,
                       handwritten_batch=args.batch, handwritten_dropin=DROPIN), handle)
    collections = collection_path(args.tree)
    playbook = os.path.join(BIN, "ansible-playbook")
    runs = {
        "apply.yml": [playbook, "-i", state["inventory"], os.path.join(args.tree, "playbooks", "apply.yml"), "-e", "@" + extra],
        "hand-written": [playbook, "-i", state["inventory"], os.path.join(HERE, "handwritten_rollout.yml"), "-e", "@" + extra],
        "apply.yml --check --diff": [playbook, "-i", state["inventory"], os.path.join(args.tree, "playbooks", "apply.yml"),
                                     "-e", "@" + extra, "--check", "--diff"],
        "discover.yml": [playbook, "-i", state["inventory"], os.path.join(args.tree, "playbooks", "discover.yml")],
    }
    if args.check_only:
        del runs["apply.yml"], runs["hand-written"]
    times = dict((name, []) for name in runs)
    cpu = dict((name, []) for name in runs)
    counts = {}
    try:
        for _round in range(args.rounds):
            for pair in (("apply.yml", "hand-written"), ("apply.yml --check --diff", "discover.yml")):
                for name in pair:
                    if name not in runs:
                        continue
                    if name != "discover.yml":  # discover.yml reads what the check-mode run left: the same hosts
                        reset(state, fake, collections)
                    elapsed, used, counts[name] = timed(runs[name], collections)
                    times[name].append(elapsed)
                    cpu[name].append(used)
    finally:
        subprocess.run([os.path.join(BIN, "ansible"), "all", "-i", state["inventory"], "-m", "ansible.builtin.command",
                        "-a", fake + " stop"], env=env(collections), capture_output=True, check=False)
        fleetlib.down(fleet_dir, quiet=True)
        shutil.rmtree(fleet_dir, ignore_errors=True)
        shutil.rmtree(collections, ignore_errors=True)
    print("%d hosts, batch %d, %d interleaved rounds; load average %s at the end (%d CPUs); PYTHONDONTWRITEBYTECODE=%s; "
          "bytecode cached: %s" % (args.hosts, args.batch, args.rounds, " ".join("%.1f" % x for x in os.getloadavg()),
                                   os.cpu_count() or 0, os.environ.get("PYTHONDONTWRITEBYTECODE", ""),
                                   "yes" if bytecode_cached(args.tree) else "no"))
    for name in runs:
        print("%-26s median %s s wall, controller CPU %s s" % (name, spread(times[name]), spread(cpu[name])))
    for slow, fast in (("apply.yml", "hand-written"), ("apply.yml --check --diff", "discover.yml")):
        if slow in runs:
            print("%-40s %.2fx wall, %.2fx controller CPU" % (
                "%s / %s:" % (slow, fast), statistics.median(times[slow]) / statistics.median(times[fast]),
                statistics.median(cpu[slow]) / statistics.median(cpu[fast])))
    for name in runs:
        per_host = counts.get(name, {})
        targets = dict((h, c) for h, c in per_host.items() if h != "localhost")
        print("%-26s task results per host (last round): ok %s, skipped %s, changed %s" % (
            name, "/".join(sorted(set(str(c.get("ok", 0)) for c in targets.values()))) or "-",
            "/".join(sorted(set(str(c.get("skipped", 0)) for c in targets.values()))) or "-",
            "/".join(sorted(set(str(c.get("changed", 0)) for c in targets.values()))) or "-"))
        for host, c in sorted(per_host.items()):
            print("    %-12s ok=%d skipped=%d changed=%d" % (host, c.get("ok", 0), c.get("skipped", 0), c.get("changed", 0)))


if __name__ == "__main__":
    main()
