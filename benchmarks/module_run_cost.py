# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""CPU time of one real ``admission_check`` module run (an AnsiballZ payload), and the module_utils it compiles.

What a playbook task pays on a managed host besides ssh: Python starts the AnsiballZ wrapper,
which imports the module and every module_utils it reaches from the zip (no bytecode: each one is
compiled from source) and runs the admission. This script builds that payload the way Ansible
does (an ad hoc ``ansible localhost -c local`` run with ``ANSIBLE_KEEP_REMOTE_FILES``) for this
checkout and, with ``--before``, for an older one, then runs each payload ``--runs`` times,
alternating (so background load hits both alike), and prints the minimum and median CPU time of
the process (user + system), next to ``ansible.builtin.ping``'s payload for the floor, and how
many of the collection's module_utils files a run imports with their source size, and the size of
each AnsiballZ file (what is copied to the host: the zipped module_utils, base64-encoded), the
median's ratio to ping's (issue 24's target: <= 1.4x on a static-policy 16-node host), and what
compiling those sources costs against loading them as cached bytecode (measured in this process).

The node is a bundled fleet topology (``--topology``, default ``big16``: 16 NUMA nodes) written
under a scratch directory; no state files; the pod is Guaranteed (2 CPUs, 1Gi). With
``--kubelet-config static`` (default) the node runs the static CPU and Static memory policies,
restricted, pod scope; with ``none`` it has no kubelet configuration file (the kubelet's default
policies, as the simulated fleet's hosts). ``--run discover`` measures ``numa_facts`` (discover.yml's
task on the hosts) and ``--run status`` ``kubelet_rollout operation=status`` in check mode (apply.yml's
preflight, ``apply.yml --check --diff``) on the same node instead (see :func:`scenario`).
``--python`` runs the payloads with another interpreter (the fleet's hosts use ``/usr/bin/python3``).
A script that prints figures, not a test.

    .venv/bin/python benchmarks/module_run_cost.py [--run admission|discover|status] [--before /path/to/older/checkout]
        [--runs 9] [--kubelet-config static|none] [--python /usr/bin/python3]
"""

from __future__ import annotations

import argparse
import glob
import json
import marshal
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KUBELET_CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: restricted
topologyManagerScope: pod
topologyManagerPolicyOptions: {max-allowable-numa-nodes: "16"}
reservedSystemCPUs: "0"
systemReserved: {memory: 1Gi}
reservedMemory:
  - numaNode: 0
    limits: {memory: 1124Mi}
"""
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bench", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "x", "resources": {
           "requests": {"cpu": "2", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "1Gi"}}}]}}


def _payload(work, name, checkout, module, args, extra=()):
    """Build and keep the AnsiballZ file of ``module`` from ``checkout`` (``extra``: more ``ansible``
    arguments, e.g. ``["--check"]``); returns its path."""
    coll = os.path.join(work, name, "collections", "ansible_collections", "numaguard")
    os.makedirs(coll)
    os.symlink(os.path.abspath(checkout), os.path.join(coll, "kubelet"))
    remote = os.path.join(work, name, "remote")
    os.makedirs(remote)
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, ANSIBLE_KEEP_REMOTE_FILES="1", ANSIBLE_REMOTE_TMP=remote,
               ANSIBLE_COLLECTIONS_PATH=os.path.join(work, name, "collections"),
               ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_LOCALHOST_WARNING="0", ANSIBLE_NOCOLOR="1")
    command = [os.path.join(bindir, "ansible"), "localhost", "-c", "local", "-m", module]
    if args:
        command += ["-a", json.dumps(args)]
    command += list(extra)
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    found = glob.glob(os.path.join(remote, "*", "AnsiballZ_*.py"))
    if done.returncode != 0 or not found:
        raise SystemExit("benchmark: building the %s payload failed:\n%s%s" % (name, done.stdout[-2000:], done.stderr[-2000:]))
    path = os.path.join(work, name, os.path.basename(found[0]))
    shutil.copy(found[0], path)
    return path


def _cpu_ms(path, python):
    """CPU ms of one run of a payload (user + system of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([python, path], capture_output=True, cwd=os.path.dirname(path), check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or b'"failed": true' in done.stdout:
        raise SystemExit("benchmark: %s failed:\n%s" % (path, (done.stdout + done.stderr).decode()[-2000:]))
    return (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000.0


def _compiled(path, checkout, python):
    """(files, bytes, compile ms, unmarshal ms) of the collection's modules one run of the payload
    imports. The two times are measured here, in this process, on the same sources: compiling
    them (what every module run does: zipimport caches no bytecode) and loading the same code
    from marshalled bytecode (what a run would pay were the bytecode cached on the host)."""
    done = subprocess.run([python, "-X", "importtime", path], capture_output=True, text=True,
                          cwd=os.path.dirname(path), check=False)
    prefix = "ansible_collections.numaguard.kubelet."
    files, size, compiling, loading = 0, 0, 0.0, 0.0
    for line in done.stderr.splitlines():
        name = line.rsplit("|", 1)[-1].strip()
        if not name.startswith(prefix):
            continue
        source = os.path.join(checkout, *name[len(prefix):].split(".")) + ".py"
        if os.path.isfile(source):
            files += 1
            size += os.path.getsize(source)
            with open(source, "rb") as handle:
                text = handle.read()
            began = time.process_time()
            code = compile(text, source, "exec", dont_inherit=True)
            compiling += time.process_time() - began
            data = marshal.dumps(code)
            began = time.process_time()
            marshal.loads(data)
            loading += time.process_time() - began
    return files, size, compiling * 1000.0, loading * 1000.0


def scenario(run, tree, kubelet_config="static"):
    """(module, args, extra ``ansible`` arguments) of one of the measured runs on the node under
    ``tree`` (``benchmarks/import_closure.py`` uses the same runs): ``admission`` (admission_check,
    a Guaranteed pod of 2 CPUs and 1Gi; with ``kubelet_config`` "static" the node runs the static
    policies, with "none" it has no configuration file), ``discover`` (numa_facts as discover.yml
    runs it) or ``status`` (kubelet_rollout operation=status in check mode, as apply.yml's
    preflight runs it; the static configuration is on the node)."""
    kubelet = os.path.join(tree, "var", "lib", "kubelet")
    os.makedirs(kubelet, exist_ok=True)
    config = os.path.join(kubelet, "config.yaml")
    if run != "admission" or kubelet_config == "static":
        with open(config, "w") as handle:
            handle.write(KUBELET_CONFIG)
    if run == "admission":
        check = {"root": tree, "pod": [POD]}
        if kubelet_config == "static":
            check["kubelet_config"] = "/var/lib/kubelet/config.yaml"
        return "numaguard.kubelet.admission_check", check, []
    if run == "discover":
        return "numaguard.kubelet.numa_facts", {"root": tree}, []
    if run == "status":
        state = os.path.join(kubelet, "numaguard-backups")
        return "numaguard.kubelet.kubelet_rollout", {
            "operation": "status", "state_dir": state, "settings": {"topologyManagerScope": "pod"},
            "config": config, "root_dir": kubelet, "sysfs_root": tree, "kubelet_dirs": [kubelet]}, ["--check", "--diff"]
    raise ValueError("unknown run %r" % (run,))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--before", default="", help="a checkout of an earlier version, run alternately as 'before'")
    parser.add_argument("--runs", type=int, default=9, help="runs of each payload (default 9)")
    parser.add_argument("--topology", default="big16", help="bundled fleet topology of the node (default big16)")
    parser.add_argument("--run", choices=("admission", "discover", "status"), default="admission",
                        help="admission: admission_check (default); discover: numa_facts; status: kubelet_rollout status --check")
    parser.add_argument("--kubelet-config", choices=("static", "none"), default="static",
                        help="static: static CPU + Static memory policies (default); none: no configuration file")
    parser.add_argument("--python", default=sys.executable, help="interpreter running the payloads (default: this one)")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(REPO, "tests", "fleet"))
    import topologies  # noqa: E402 (the bundled fleet)

    work = tempfile.mkdtemp(prefix="numaguard-modrun-")
    try:
        tree = os.path.join(work, "tree")
        topologies.write_tree(args.topology, tree, hostname="h01")
        module, check, extra = scenario(args.run, tree, args.kubelet_config)
        payloads = [("ping", _payload(work, "ping", REPO, "ansible.builtin.ping", {}), None)]
        if args.before:
            payloads.append(("before", _payload(work, "before", args.before, module, check, extra), args.before))
        payloads.append(("this", _payload(work, "this", REPO, module, check, extra), REPO))
        samples = dict((name, []) for name, _path, _checkout in payloads)
        for _round in range(args.runs):
            for name, path, _checkout in payloads:
                samples[name].append(_cpu_ms(path, args.python))
        print("%s AnsiballZ payload, %s, kubelet config %s, %d runs each, %s, load average %s, "
              "no bytecode cached (zipimport compiles every imported file from source; PYTHONDONTWRITEBYTECODE=%s)"
              % (module.rsplit(".", 1)[-1], args.topology, args.kubelet_config if args.run == "admission" else "static",
                 args.runs, args.python,
                 " ".join("%.1f" % x for x in os.getloadavg()), os.environ.get("PYTHONDONTWRITEBYTECODE", "")))
        print("%-8s %8s %9s %8s %10s  %s" % ("payload", "min ms", "median ms", "x ping", "payload KB",
                                             "collection modules imported (source; compile ms / unmarshal ms here)"))
        floor = sorted(samples["ping"])[len(samples["ping"]) // 2]
        for name, path, checkout in payloads:
            values = sorted(samples[name])
            compiled = "-"
            if checkout:
                files, size, compiling, loading = _compiled(path, checkout, args.python)
                compiled = "%d files, %d KB; %.0f ms / %.1f ms" % (files, size // 1024, compiling, loading)
            median = values[len(values) // 2]
            print("%-8s %8.1f %9.1f %7.2fx %10d  %s" % (name, values[0], median, median / floor,
                                                        os.path.getsize(path) // 1024, compiled))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
