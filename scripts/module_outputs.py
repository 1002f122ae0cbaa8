# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run every module on every bundled topology and dump the results as JSON (refactoring guard).

Each module runs as Ansible runs it on a host (``python <module>.py <args.json>``), so the dump
does not depend on how the code is laid out inside. Compare two dumps before/after a change:

    python scripts/module_outputs.py > /tmp/before.json
    ... change ...
    python scripts/module_outputs.py > /tmp/after.json && diff /tmp/before.json /tmp/after.json

Paths under the scratch directory are replaced by ``<ROOT>`` so two runs compare equal.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

KUBELET_CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: %s
topologyManagerScope: %s
topologyManagerPolicyOptions: {prefer-closest-numa-nodes: "true"}
reservedSystemCPUs: "0"
kubeReserved: {memory: 1Gi}
systemReserved: {memory: 1Gi}
reservedMemory:
  - numaNode: 0
    limits: {memory: 2148Mi}
"""


def _pod(name, cpu, memory, **extra):
    resources = {"cpu": cpu, "memory": memory}
    resources.update(extra)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "uid": "uid-" + name},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": dict(resources), "limits": dict(resources)}}]}}


PODS = [_pod("small", "2", "1Gi"), _pod("wide", "16", "64Gi"), _pod("huge", "4", "2Gi", **{"hugepages-2Mi": "1Gi"}),
        _pod("burst", "500m", "100Mi"), _pod("giant", "4000", "1Ti")]


def _run(module, args, tree, check_mode=True):
    args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=True, _ansible_remote_tmp=tree,
                _ansible_tmpdir=tree, _ansible_keep_remote_files=False)
    path = os.path.join(tree, "args.json")
    with open(path, "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, handle)
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.dirname(COLL))))
    proc = subprocess.run([sys.executable, os.path.join(COLL, "plugins", "modules", module + ".py"), path],
                          capture_output=True, env=env, cwd=tree, check=False)
    try:
        result = json.loads(proc.stdout.decode())
    except ValueError:
        result = {"unparsed_stdout": proc.stdout.decode(), "stderr": proc.stderr.decode()[-2000:]}
    result.pop("invocation", None)
    text = json.dumps(result, sort_keys=True, indent=1).replace(tree, "<ROOT>")
    return json.loads(text)


def main():
    sys.path.insert(0, os.path.join(COLL, "tests", "fleet"))
    import topologies  # noqa: E402 (the bundled fleet)

    only = sys.argv[1:]
    out = {}
    for name in sorted(topologies.TOPOLOGIES):
        if only and name not in only:
            continue
        scratch = tempfile.mkdtemp(prefix="modout-")
        try:
            tree = os.path.join(scratch, "h")
            topologies.write_tree(name, tree, hostname="h01")
            kubelet = os.path.join(tree, "var", "lib", "kubelet")
            runs = {}
            runs["numa_facts"] = _run("numa_facts", {"root": tree}, scratch)
            for strategy in ("node0", "spread", "proportional"):
                runs["reserved_memory/" + strategy] = _run("reserved_memory", {
                    "root": tree, "kube_reserved": "memory=1Gi", "system_reserved": "memory=1Gi",
                    "memory_manager_policy": "Static", "strategy": strategy, "fail_on_invalid": False}, scratch)
            runs["reserved_memory/explicit-bad"] = _run("reserved_memory", {
                "root": tree, "kube_reserved": "memory=1Gi", "reserved_memory": "0:memory=1.5;9:memory=1Gi",
                "memory_manager_policy": "Static", "fail_on_invalid": False}, scratch)
            with open(os.path.join(tree, "etc", "kubernetes", "kubelet.yaml"), "w") as handle:
                handle.write(KUBELET_CONFIG % ("restricted", "container"))
            runs["kubelet_config/dropin"] = _run("kubelet_config", {
                "settings": {"topologyManagerPolicy": "single-numa-node", "cpuManagerPolicy": "static",
                             "reservedSystemCPUs": "0", "memoryManagerPolicy": "None"},
                "config": os.path.join(tree, "etc", "kubernetes", "kubelet.yaml"),
                "config_dir": os.path.join(tree, "etc", "kubernetes", "kubelet.conf.d"),
                "root_dir": kubelet, "kubelet_version": "1.33.2", "sysfs_root": tree}, scratch)
            runs["kubelet_backup/restore-missing"] = _run("kubelet_backup", {
                "operation": "restore", "backup_dir": os.path.join(scratch, "nope")}, scratch)
            for policy, scope in (("restricted", "container"), ("single-numa-node", "pod"),
                                  ("best-effort", "container"), ("none", "container")):
                with open(os.path.join(kubelet, "config.yaml"), "w") as handle:
                    handle.write(KUBELET_CONFIG % (policy, scope))
                runs["admission_check/%s/%s" % (policy, scope)] = _run("admission_check", {
                    "root": tree, "pod": PODS, "kubelet_config": os.path.join("/var/lib/kubelet/config.yaml"),
                    "return_state": True}, scratch)
            bad_option = {"topologyManagerPolicy": "restricted",
                          "topologyManagerPolicyOptions": {"bad\toption": "1"}}
            runs["admission_check/bad-option"] = _run("admission_check", {
                "root": tree, "pod": PODS[:1], "kubelet_config": bad_option}, scratch)
            out[name] = runs
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    json.dump(out, sys.stdout, sort_keys=True, indent=1)
    sys.stdout.write("\n")


# The collection as Python imports it: <dir>/ansible_collections/numaguard/kubelet -> this checkout.
_LINK_ROOT = tempfile.mkdtemp(prefix="modout-coll-")
COLL = os.path.join(_LINK_ROOT, "ansible_collections", "numaguard", "kubelet")
os.makedirs(os.path.dirname(COLL))
os.symlink(HERE, COLL)

if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(_LINK_ROOT, ignore_errors=True)
