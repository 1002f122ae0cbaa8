# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Seeded fuzzing of the modules' inputs and of the pod-file loader (issue 23), shared by the unit
test (a few hundred cases) and ``benchmarks/fuzz_modules.py`` (10,000).

Each case gets its own directory: ``root/`` (a kubelet host's files: main config, drop-ins, state
files, the kubelet directories) and, beside it, ``outside/`` with a sentinel file. Every path a
case gives a module lies inside ``root/`` (some through a symlink or ``..`` that lead to
``outside/``, which the modules must refuse); the host's own ``/etc/kubernetes`` and
``/var/lib/kubelet`` are never named. A case runs a module's ``main()`` in-process and counts:

* ``traceback``: ``main()`` raised anything but SystemExit, printed no JSON result, or printed a
  Python traceback in its message;
* ``outside``: ``outside/`` (or the host's kubelet directories) changed;
* ``half_written``: a temporary file left in ``root/`` (``_io.write_file``'s ``.<name>.*``, a
  ``.partial-*`` backup, a ``.numaguard-restore-*`` copy), or a kubelet configuration file that a
  module wrote and that does not parse back completely.

    python tests/fleet/fuzz_inputs.py COUNT [SEED]     # prints the counts as JSON
"""

from __future__ import absolute_import, division, print_function

import contextlib
import hashlib
import io
import json
import math
import os
import random
import shutil
import sys
import tempfile
from typing import Any, Callable, Dict, List, Sequence, Tuple

HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

#: Values no option and no file should turn into a traceback.
HOSTILE: List[Any] = [
    "", " ", "0", "-1", "0-4294967295", "0-9999999", "4294967295", "1-0", "0,,1", "\x00", "a\x00b", "web\u202eevil",
    "\uff12", "1e309", "nan", "inf", "-0", "1Gi", "100Mi", "1.5Gi", "-1Gi", "1000000000000000000000Ei", "x" * 5000,
    "static", "Static", "none", "None", "single-numa-node", "true", "false", "../../outside", "/", "~",
    True, False, None, 0, -1, 1, 2 ** 31, 2 ** 64, -(2 ** 63) - 1, 1.5, 1e308, float("inf"),
    [], {}, [1, "a"], {"a": 1}, {"cpu": [1]}, {"": ""}, json.loads("[" * 40 + "]" * 40),
]

MANAGED = ("cpuManagerPolicy", "cpuManagerPolicyOptions", "cpuManagerReconcilePeriod", "reservedSystemCPUs",
           "topologyManagerPolicy", "topologyManagerScope", "topologyManagerPolicyOptions", "memoryManagerPolicy",
           "reservedMemory", "kubeReserved", "systemReserved", "evictionHard", "featureGates")

#: Plausible values per field, mixed with the hostile ones.
PLAUSIBLE: Dict[str, List[Any]] = {
    "cpuManagerPolicy": ["none", "static"],
    "cpuManagerPolicyOptions": [{"full-pcpus-only": "true"}, {"distribute-cpus-across-numa": True}],
    "cpuManagerReconcilePeriod": ["10s", "1m"],
    "reservedSystemCPUs": ["0", "0-1", "0,2"],
    "topologyManagerPolicy": ["none", "best-effort", "restricted", "single-numa-node"],
    "topologyManagerScope": ["container", "pod"],
    "topologyManagerPolicyOptions": [{"prefer-closest-numa-nodes": "true"}, {"max-allowable-numa-nodes": "9"}],
    "memoryManagerPolicy": ["None", "Static"],
    "reservedMemory": [[{"numaNode": 0, "limits": {"memory": "1100Mi"}}], [{"numaNode": 1, "limits": {"memory": 5}}]],
    "kubeReserved": [{"cpu": "500m", "memory": "1Gi"}, {"memory": 1}],
    "systemReserved": [{"cpu": "1", "memory": "100Mi"}],
    "evictionHard": [{"memory.available": "100Mi"}, {"memory.available": "5%"}],
    "featureGates": [{"CPUManagerPolicyAlphaOptions": True}, {"MemoryQoS": False}],
}

TOPOLOGY = {"nodes": [
    {"id": 0, "cpus": [0, 1], "memory_total_bytes": 8 << 30, "memory_free_bytes": 8 << 30, "hugepages": {}, "distances": {"0": 10, "1": 21}},
    {"id": 1, "cpus": [2, 3], "memory_total_bytes": 8 << 30, "memory_free_bytes": 8 << 30, "hugepages": {}, "distances": {"0": 21, "1": 10}},
]}


def value(rng: random.Random, field: str = "") -> Any:
    """A plausible value for ``field`` most of the time (so that changes get written too), a
    hostile one otherwise."""
    if field in PLAUSIBLE and rng.random() < 0.8:
        return rng.choice(PLAUSIBLE[field])
    return rng.choice(HOSTILE)


def settings(rng: random.Random) -> Dict[str, Any]:
    fields = rng.sample(MANAGED, rng.randint(1, 3))
    out = dict((f, value(rng, f)) for f in fields)
    if rng.random() < 0.1:
        out["bogus"] = value(rng)
    return out


def _yaml_scalar(item: Any) -> str:
    return json.dumps(item) if not isinstance(item, float) or math.isfinite(item) else "1e999"


def config_text(rng: random.Random) -> bytes:
    """A kubelet configuration file: mostly a header plus fields of any type, sometimes raw garbage."""
    roll = rng.random()
    if roll < 0.1:
        return rng.choice([b"", b"\x00\x01", b"\xff\xfe", b"[" * 3000, b"a: &a [*a]\n", b"{", HEADER.encode() + b"a: \x00\n",
                           HEADER.encode() + b"featureGates: {A: b}\n", b"kind: Pod\n"])
    body = HEADER
    for field in rng.sample(MANAGED, rng.randint(0, 4)):
        body += "%s: %s\n" % (field, _yaml_scalar(value(rng, field)))
    if rng.random() < 0.2:
        body += "staticPodURLHeader: {Authorization: [\"Bearer fuzz-secret\"]}\n"
    return body.encode("utf-8", "surrogateescape")


def pod(rng: random.Random) -> Any:
    """A pod manifest with a hostile value somewhere, or something else entirely."""
    manifest: Dict[str, Any] = {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}
    roll = rng.random()
    if roll < 0.1:
        return value(rng)
    target = rng.choice([("metadata", "name"), ("metadata", "namespace"), ("kind",), ("spec", "containers"),
                         ("spec", "containers", 0, "resources", "limits", "cpu"),
                         ("spec", "containers", 0, "resources", "limits", "memory"),
                         ("spec", "containers", 0, "resources", "requests"), ("spec", "containers", 0, "name"),
                         ("spec", "initContainers"), ("spec", "overhead"), ("metadata",)])
    node: Any = manifest
    for key in target[:-1]:
        node = node[key]
    node[target[-1]] = value(rng)
    return manifest


def pod_file_text(rng: random.Random) -> bytes:
    roll = rng.random()
    if roll < 0.3:
        return json.dumps([pod(rng) for _pod in range(rng.randint(1, 3))], default=str).encode("utf-8", "surrogateescape")
    if roll < 0.6:
        return rng.choice([b"\x00", b"kind: Pod\n\x00", b"\xff", b"[" * 200, b"a: &a [*a]\n", b"---\n" * 50, b"!!python/object:os.system x",
                           b"a: !!binary AAAA\n", b"{a: 1, a: 2}", b"? [1]\n: 2\n", b"- &x [1]\n- *x\n- *y\n"])
    return ("\n---\n".join(json.dumps(pod(rng), default=str) for _pod in range(rng.randint(1, 3)))).encode("utf-8", "surrogateescape")


# -- a case ----------------------------------------------------------------------------------

def _layout(rng: random.Random, root: str, outside: str) -> Dict[str, str]:
    etc = os.path.join(root, "etc", "kubernetes")
    kubelet = os.path.join(root, "var", "lib", "kubelet")
    confd = os.path.join(etc, "kubelet.conf.d")
    for path in (etc, kubelet, confd):
        os.makedirs(path)
    with open(os.path.join(etc, "kubelet-config.yaml"), "wb") as handle:
        handle.write(config_text(rng) if rng.random() < 0.3 else (HEADER + "cpuManagerPolicy: none\n").encode())
    for index in range(rng.choice([0, 0, 1, 2])):
        with open(os.path.join(confd, "%02d-site.conf" % (10 + index)), "wb") as handle:
            handle.write(config_text(rng))
    if rng.random() < 0.3:
        os.symlink(outside, os.path.join(kubelet, "numaguard-backups"))  # a backup root leading out
    state = rng.choice(['{"policyName":"none","defaultCpuSet":"","checksum":1}', "", "{", "[]", "\x00"])
    with open(os.path.join(kubelet, "cpu_manager_state"), "w") as handle:
        handle.write(state)
    return {"etc": etc, "kubelet": kubelet, "confd": confd, "config": os.path.join(etc, "kubelet-config.yaml")}


def _path(rng: random.Random, paths: Dict[str, str], name: str) -> Any:
    roll = rng.random()
    if roll < 0.7:
        return paths[name]
    return rng.choice([paths[name] + "/../../../outside", paths[name] + "/./x", paths[name] + "//y", "", "relative/x",
                       paths[name] + "/\x00", paths[name] + "/" + "n" * 300, value(rng)])


def module_args(rng: random.Random, module: str, paths: Dict[str, str]) -> Dict[str, Any]:
    check_mode = rng.random() < 0.5
    if module == "kubelet_config":
        args = {"settings": settings(rng) if rng.random() < 0.9 else value(rng), "mode": rng.choice(["dropin", "merge"]),
                "config": paths["config"], "config_dir": paths["confd"], "root_dir": paths["kubelet"],
                "kubelet_version": rng.choice(["1.31", "1.35", "1.35", "v1.99", "x"]), "topology": TOPOLOGY,
                "backup": rng.random() < 0.3}
        if rng.random() < 0.3:
            args["path"] = os.path.join(paths["confd"], rng.choice(["50-x.conf", "a.yaml", "../x.conf"]))
    elif module == "kubelet_backup":
        operation = rng.choice(["backup", "restore", "check", "prune"])
        args = {"operation": operation, "kubelet_dirs": [paths["etc"], paths["kubelet"]],
                "backup_root": _path(rng, {"k": os.path.join(paths["kubelet"], "numaguard-backups")}, "k"),
                "copy": [paths["config"]], "move": [os.path.join(paths["kubelet"], "cpu_manager_state")],
                "keep": rng.choice([0, 1, 2, -1, 10 ** 9])}
        if operation == "restore":
            args["backup_dir"] = _path(rng, {"k": os.path.join(paths["kubelet"], "numaguard-backups", "20260101T000000Z")}, "k")
    elif module == "admission_check":
        args = {"pod": [pod(rng) for _pod in range(rng.randint(1, 2))], "topology": TOPOLOGY,
                "kubelet_config": rng.choice([{}, settings(rng), paths["config"], value(rng)]),
                "cpu_manager_state": "", "memory_manager_state": "", "kubelet_version": "1.31"}
        if rng.random() < 0.2:
            args["kubelet_flags"] = {rng.choice(["--reserved-cpus", "--feature-gates", "featureGates", "--kube-reserved"]): value(rng)}
    else:  # reserved_memory
        args = {"topology": TOPOLOGY, "kubelet_config": _path(rng, paths, "config"), "kubelet_config_dir": paths["confd"],
                "memory_manager_policy": rng.choice(["Static", "None", None]), "kube_reserved": value(rng, "kubeReserved"),
                "reserved_memory": value(rng, "reservedMemory"), "reserved_cpus": rng.choice([None, "0", "0-4294967295"]),
                "kubelet_version": "1.31"}
    args = dict((k, v) for k, v in args.items() if v is not None)
    args["_ansible_check_mode"] = check_mode
    args["_ansible_diff"] = rng.random() < 0.5
    return args


def _tree_state(top: str) -> Dict[str, str]:
    state = {}
    for directory, dirs, files in os.walk(top):
        for name in dirs + files:
            path = os.path.join(directory, name)
            if os.path.isfile(path) and not os.path.islink(path):
                with open(path, "rb") as handle:
                    state[path] = hashlib.sha256(handle.read()).hexdigest()
            else:
                state[path] = "link" if os.path.islink(path) else "dir"
    return state


def _half_written(root: str, before: Dict[str, str]) -> List[str]:
    from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import KubeletConfigError, read_config_file

    found = []
    for path, digest in sorted(_tree_state(root).items()):
        name = os.path.basename(path)
        if name.startswith(".partial-") or ".numaguard-restore-" in name or ".numaguard-write-probe" in name:
            found.append(path)
        elif name.startswith(".") and name != ".numaguard-kubelet-backup" and not path.endswith("manifest.json"):
            found.append(path)  # _io.write_file's temporary file
        elif before.get(path) != digest and (name.endswith(".conf") or name.endswith(".yaml")) and "numaguard-backups" not in path \
                and name != "pod.yaml":
            try:
                read_config_file(path)
            except (KubeletConfigError, RecursionError):
                found.append(path)  # written by a module, yet not a complete configuration
    return found


def run_module(module: str, args: Dict[str, Any]) -> Tuple[str, Any]:
    """("ok" | "traceback", parsed result or the exception text) of one in-process run."""
    import importlib

    from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import patch_module_args

    main = importlib.import_module("ansible_collections.numaguard.kubelet.plugins.modules." + module).main
    out = io.StringIO()
    try:
        with patch_module_args(args), contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            main()
    except SystemExit:
        pass
    except BaseException as exc:  # noqa: B036 - a module that raises anything is what we count
        import traceback

        where = traceback.extract_tb(exc.__traceback__)[-1]
        return "traceback", "%s: %s (%s:%d)" % (type(exc).__name__, exc, os.path.basename(where.filename), where.lineno)
    try:
        result = json.loads(out.getvalue())
    except ValueError:
        return "traceback", "no JSON result: %r" % out.getvalue()[:200]
    if "Traceback (most recent call last)" in json.dumps(result):
        return "traceback", result.get("msg")
    return "ok", result


def run_pod_loader(rng: random.Random, root: str) -> Tuple[str, Any]:
    """The pod_file reader of admission_check's action plugin on a fuzzed file."""
    from ansible.errors import AnsibleError

    from ansible_collections.numaguard.kubelet.plugins.action.admission_check import ActionModule

    class _Loader:
        @staticmethod
        def get_real_file(source: str, decrypt: bool = True) -> str:
            return source

    path = os.path.join(root, "pod.yaml")
    with open(path, "wb") as handle:
        handle.write(pod_file_text(rng))
    action = object.__new__(ActionModule)
    action._find_needle = lambda kind, source: source
    action._loader = _Loader()
    try:
        action._read_manifests(path)
    except AnsibleError as exc:
        if path not in str(exc):
            return "traceback", "an error that does not name the file: %s" % exc
    except BaseException as exc:  # noqa: B036
        return "traceback", "%s: %s" % (type(exc).__name__, exc)
    return "ok", None


MODULES = ("kubelet_config", "kubelet_backup", "admission_check", "reserved_memory", "pod_file")


def run_cases(count: int, seed: int = 0, work: str = "", progress: Callable[[int], None] = lambda n: None,
              modules: Sequence[str] = MODULES) -> Dict[str, Any]:
    """Run ``count`` cases (each on one of ``modules``); returns the counts and the first examples
    of each finding."""
    rng = random.Random(seed)
    own = not work
    work = work or tempfile.mkdtemp(prefix="numaguard-fuzz-")
    host_dirs = [d for d in ("/etc/kubernetes", "/var/lib/kubelet") if os.path.isdir(d)]
    host_before = dict((d, _tree_state(d)) for d in host_dirs)
    counts: Dict[str, Any] = {"cases": 0, "traceback": 0, "outside": 0, "half_written": 0, "failed": 0,
                              "per_module": dict((m, 0) for m in modules), "examples": []}
    try:
        for index in range(count):
            case = os.path.join(work, "case%d" % index)
            root, outside = os.path.join(case, "root"), os.path.join(case, "outside")
            os.makedirs(root)
            os.makedirs(outside)
            with open(os.path.join(outside, "sentinel"), "w") as handle:
                handle.write("untouched\n")
            paths = _layout(rng, root, outside)
            before_out = _tree_state(outside)
            before_root = _tree_state(root)
            module = rng.choice(modules)
            counts["per_module"][module] += 1
            if module == "pod_file":
                verdict, detail = run_pod_loader(rng, root)
                args: Dict[str, Any] = {}
            else:
                args = module_args(rng, module, paths)
                verdict, detail = run_module(module, args)
            findings = []
            if verdict == "traceback":
                findings.append(("traceback", detail))
            elif isinstance(detail, dict) and detail.get("failed"):
                counts["failed"] += 1
            if _tree_state(outside) != before_out:
                findings.append(("outside", sorted(set(_tree_state(outside)) ^ set(before_out))))
            half = _half_written(root, before_root)
            if half:
                findings.append(("half_written", half))
            for kind, what in findings:
                counts[kind] += 1
                if len(counts["examples"]) < 10:
                    counts["examples"].append({"case": index, "module": module, "finding": kind, "detail": str(what)[:300],
                                               "args": json.dumps(args, default=str)[:300]})
            counts["cases"] += 1
            shutil.rmtree(case, ignore_errors=True)
            progress(index + 1)
        for directory in host_dirs:
            if _tree_state(directory) != host_before[directory]:
                counts["outside"] += 1
                counts["examples"].append({"finding": "outside", "detail": "the host's %s changed" % directory})
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)
    return counts


def _importable() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(here)), "benchmarks"))
    from _collection import importable  # pylint: disable=import-error

    importable()


if __name__ == "__main__":
    _importable()
    print(json.dumps(run_cases(int(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0), indent=1))
