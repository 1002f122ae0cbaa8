# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Wall time of playbooks/apply.yml on a 10-host simulated fleet: before vs after the rollout
journal, per-host lock, fleet-wide preflight and health checks (issue 8).

Both collection trees run in the same session against the same fleet, alternately, so machine
load affects both alike: ``--before`` is a checkout without the journal (for example
``git archive <commit> | tar -x -C /tmp/before``), ``--after`` this checkout. Each round resets
every host (main config, ``none`` state files, kubelet restarted), then times one rollout that
resets ``cpu_manager_state`` (stop, back up, write, start, health) with ``--forks 10`` and a batch
of 10 hosts; then times a no-op re-run. Prints one table. Needs root (the fleet).
Run: ``.venv/bin/python benchmarks/rollout_overhead.py --before /tmp/before [--rounds 2]``.
"""

from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "fleet"))

import fake_kubelet  # noqa: E402  (tests/fleet/fake_kubelet.py)
import fleet as fleetlib  # noqa: E402

BIN = os.path.dirname(sys.executable)
MAIN = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: none\n"
        "kubeReserved:\n  cpu: 500m\n  memory: 500Mi\n")
CPU = '{"policyName":"none","defaultCpuSet":"","checksum":1353318690}'
MEMORY = '{"policyName":"None","machineState":{},"checksum":4236770233}'


def collection_path(tree):
    root = tempfile.mkdtemp(prefix="ng-bench-coll-")
    os.makedirs(os.path.join(root, "ansible_collections", "numaguard"))
    os.symlink(os.path.abspath(tree), os.path.join(root, "ansible_collections", "numaguard", "kubelet"))
    return root


def env(collections):
    result = dict(os.environ)
    result.update({"ANSIBLE_COLLECTIONS_PATH": collections, "ANSIBLE_PIPELINING": "1", "ANSIBLE_FORKS": "10",
                   "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_NOCOLOR": "1", "ANSIBLE_RETRY_FILES_ENABLED": "0",
                   "PATH": BIN + os.pathsep + result.get("PATH", "")})
    return result


def reset(state, fake, collections):
    for host in state["hosts"]:
        etc = os.path.join(host["root"], "etc", "kubernetes")
        lib = os.path.join(host["root"], "var", "lib", "kubelet")
        for top in (etc, lib):
            for name in os.listdir(top):
                if name != "fake-kubelet":
                    full = os.path.join(top, name)
                    shutil.rmtree(full) if os.path.isdir(full) and not os.path.islink(full) else os.unlink(full)
        os.makedirs(os.path.join(etc, "kubelet.conf.d"))
        for path, text in ((os.path.join(etc, "kubelet-config.yaml"), MAIN), (os.path.join(lib, "cpu_manager_state"), CPU),
                           (os.path.join(lib, "memory_manager_state"), MEMORY)):
            with open(path, "w") as handle:
                handle.write(text)
    script = ("%s restart --healthz {{ fleet_loopback }}:10248 && for i in $(seq 50); do "
              "/usr/bin/python3 -c \"import urllib.request as u; u.urlopen('http://{{ fleet_loopback }}:10248/healthz', "
              "timeout=2)\" 2>/dev/null && exit 0; sleep 0.1; done; exit 1" % fake)
    subprocess.run([os.path.join(BIN, "ansible"), "all", "-i", state["inventory"], "-m", "ansible.builtin.shell", "-a", script],
                   env=env(collections), capture_output=True, check=True, timeout=600)


def timed(tree, collections, state, extra):
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", state["inventory"], os.path.join(tree, "playbooks", "apply.yml"),
            "-e", "@" + extra, "-e", json.dumps({"kubelet_numa_batch_size": 10,
                                                 "kubelet_numa_settings": {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"}})]
    started = time.time()
    proc = subprocess.run(argv, env=env(collections), capture_output=True, text=True, timeout=1800, check=False)
    elapsed = time.time() - started
    if proc.returncode != 0:
        raise SystemExit("%s failed:\n%s" % (tree, proc.stdout[-3000:]))
    return elapsed


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--before", required=True, help="collection tree without the journal/lock/health checks")
    parser.add_argument("--after", default=REPO)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    fleet_dir = tempfile.mkdtemp(prefix="ng-bench-fleet-")
    state = fleetlib.up(fleet_dir, hosts=10, base_port="auto", quiet=True)
    fake = "/usr/bin/python3 " + os.path.join(REPO, "tests", "fleet", "fake_kubelet.py")
    extra = os.path.join(fleet_dir, "vars.json")
    with open(extra, "w") as handle:
        json.dump(fake_kubelet.role_variables(), handle)
    trees = {"before": args.before, "after": args.after}
    colls = dict((k, collection_path(v)) for k, v in trees.items())
    times = {"before": {"rollout": [], "re-run": []}, "after": {"rollout": [], "re-run": []}}
    try:
        for _round in range(args.rounds):
            for name in ("before", "after"):
                reset(state, fake, colls[name])
                times[name]["rollout"].append(timed(trees[name], colls[name], state, extra))
                times[name]["re-run"].append(timed(trees[name], colls[name], state, extra))
    finally:
        subprocess.run([os.path.join(BIN, "ansible"), "all", "-i", state["inventory"], "-m", "ansible.builtin.command",
                        "-a", fake + " stop"], env=env(colls["after"]), capture_output=True, check=False)
        fleetlib.down(fleet_dir, quiet=True)
        shutil.rmtree(fleet_dir, ignore_errors=True)
        for path in colls.values():
            shutil.rmtree(path, ignore_errors=True)
    load = os.getloadavg()[0]
    print("apply.yml on 10 hosts, batch 10, forks 10, %d rounds (load average %.1f at the end)" % (args.rounds, load))
    print("%-8s %18s %18s %10s" % ("", "before (median s)", "after (median s)", "added"))
    for run in ("rollout", "re-run"):
        before, after = statistics.median(times["before"][run]), statistics.median(times["after"][run])
        print("%-8s %18.1f %18.1f %+9.1f s   (before %s, after %s)" % (
            run, before, after, after - before, ", ".join("%.1f" % t for t in times["before"][run]),
            ", ".join("%.1f" % t for t in times["after"][run])))


if __name__ == "__main__":
    main()
