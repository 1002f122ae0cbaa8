# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Where a host's kubelet keeps its configuration and state, and what its state files say.

The running kubelet is the authority: its ``--config``, ``--config-dir`` and ``--root-dir``
flags (read from ``/proc/<pid>/cmdline``) say which files it actually uses, and a config file
that no running kubelet reads is a trap (editing it changes nothing). Only when no kubelet runs
do we fall back to the locations kubeadm and the common distributions use.

Paths in the result are host paths (as the kubelet sees them), not prefixed with ``root``; use
:func:`under_root` to open them in a snapshot.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import errno
import json
import os
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._io import read_file_if_exists

DEFAULT_ROOT_DIR = "/var/lib/kubelet"

#: Config file locations, most common first: kubeadm, then kubespray/hand-made installs, EKS.
DEFAULT_CONFIGS = (
    "/var/lib/kubelet/config.yaml",
    "/etc/kubernetes/kubelet-config.yaml",
    "/etc/kubernetes/kubelet/config.yaml",
    "/etc/kubernetes/kubelet/kubelet-config.json",
)

#: Drop-in directory locations (``--config-dir``, KEP-3983) seen in the wild.
DEFAULT_CONFIG_DIRS = (
    "/etc/kubernetes/kubelet.conf.d",
    "/var/lib/kubelet/config.d",
)

#: Flags that take a value and that we report (``--flag value`` form needs to know them).
VALUE_FLAGS = ("config", "config-dir", "root-dir", "kubeconfig", "cpu-manager-policy",
               "cpu-manager-policy-options", "cpu-manager-reconcile-period",
               "memory-manager-policy", "topology-manager-policy", "topology-manager-scope",
               "topology-manager-policy-options",
               "reserved-memory", "reserved-cpus", "kube-reserved", "system-reserved",
               "eviction-hard", "feature-gates")

STATE_FILES = ("cpu_manager_state", "memory_manager_state")


class KubeletPathsError(NumaguardError):
    """A kubelet command line or state file location that cannot be interpreted."""


def under_root(root: str, path: str) -> str:
    """The location of host path ``path`` inside a tree rooted at ``root``."""
    return os.path.join(root, path.lstrip("/")) if root not in ("", "/") else path


def parse_kubelet_cmdline(argv: List[str]) -> Dict[str, str]:
    """Return {flag name: value} from a kubelet argv (``--x=y``, ``--x y`` for known flags).

    Like pflag, a later occurrence of a flag overrides an earlier one; bare boolean flags map to
    ``"true"``.
    """
    flags: Dict[str, str] = {}
    index = 1
    while index < len(argv):
        arg = argv[index]
        index += 1
        if not arg.startswith("--") or arg == "--":
            continue
        name, sep, value = arg[2:].partition("=")
        if not sep:
            if name in VALUE_FLAGS and index < len(argv):
                value = argv[index]
                index += 1
            else:
                value = "true"
        flags[name] = value
    return flags


def _read_cmdline(path: str) -> Optional[List[str]]:
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError:
        return None  # the process exited while we scanned, or is not ours to read
    if not raw:
        return None  # kernel threads and zombies have an empty cmdline
    return [part.decode("utf-8", "replace") for part in raw.rstrip(b"\x00").split(b"\x00")]


def _is_kubelet(argv: List[str]) -> bool:
    return os.path.basename(argv[0]) == "kubelet"


def find_kubelet_processes(root: str = "/") -> List[Tuple[int, List[str]]]:
    """(pid, argv) of every process under ``<root>/proc`` whose program (``argv[0]``) is ``kubelet``:
    candidates, not yet trusted (see :func:`distrust`)."""
    proc = os.path.join(root, "proc")
    try:
        entries = os.listdir(proc)
    except OSError:
        return []
    found = []
    for entry in entries:
        if not entry.isdigit():
            continue
        argv = _read_cmdline(os.path.join(proc, entry, "cmdline"))
        if argv and _is_kubelet(argv):
            found.append((int(entry), argv))
    return sorted(found)


def _uids(status_path: str) -> Optional[Tuple[int, ...]]:
    """(real, effective, saved, filesystem) uid from a ``/proc/<pid>/status`` file, or None."""
    try:
        with open(status_path, "rb") as handle:
            text = handle.read(1 << 16).decode("ascii", "replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("Uid:"):
            try:
                return tuple(int(field) for field in line[4:].split())
            except ValueError:
                return None
    return None


def distrust(root: str, pid: int) -> Optional[str]:
    """Why the process ``pid`` under ``<root>/proc`` must not be taken for the kubelet, or None.

    Anyone can start a process called ``kubelet``; only one running as root (real and effective
    uid 0, from the kernel's ``status``) whose executable (the ``exe`` link; `` (deleted)`` after
    the binary was replaced by an upgrade) is named ``kubelet`` decides where the kubelet's files
    are. A process whose ``status`` or ``exe`` cannot be read (another user's, without privileges)
    cannot be checked, so it is not trusted either."""
    base = os.path.join(root, "proc", "%d" % pid)
    uids = _uids(os.path.join(base, "status"))
    if not uids:
        return "its owner cannot be read (no uid in %s)" % os.path.join(base, "status")
    if uids[0] != 0 or (len(uids) > 1 and uids[1] != 0):
        return "runs as uid %d, not root" % (uids[0] if uids[0] != 0 else uids[1])
    try:
        exe = os.readlink(os.path.join(base, "exe"))
    except OSError as exc:
        return "its executable cannot be read (%s %s)" % (
            "no" if exc.errno == errno.ENOENT else exc.strerror or "cannot read", os.path.join(base, "exe"))
    if exe.endswith(" (deleted)"):
        exe = exe[: -len(" (deleted)")]
    if os.path.basename(exe) != "kubelet":
        return "its executable %s is not a kubelet binary" % exe
    return None


def _absolute(path: str, root: str, pid: int) -> str:
    """Resolve a flag path relative to the kubelet's working directory (as the kubelet does)."""
    if os.path.isabs(path):
        return os.path.normpath(path)
    try:
        cwd = os.readlink(os.path.join(root, "proc", "%d" % pid, "cwd"))
    except OSError:
        cwd = "/"
    return os.path.normpath(os.path.join(cwd, path))


def _first_existing(root: str, candidates: Tuple[str, ...], want_dir: bool) -> Optional[str]:
    for candidate in candidates:
        path = under_root(root, candidate)
        if (os.path.isdir(path) if want_dir else os.path.isfile(path)):
            return candidate
    return None


def kubelet_process(root: str, pid: int, argv: List[str]) -> Dict[str, Any]:
    """``pid``, its NUMA-relevant ``flags`` and the ``config``, ``config_dir``, ``root_dir`` it uses."""
    flags = parse_kubelet_cmdline(argv)
    return {
        "pid": pid,
        "flags": dict((k, v) for k, v in sorted(flags.items()) if k in VALUE_FLAGS),
        # A kubelet started without --config reads no config file at all.
        "config": _absolute(flags["config"], root, pid) if flags.get("config") else None,
        "config_dir": _absolute(flags["config-dir"], root, pid) if flags.get("config-dir") else None,
        "root_dir": _absolute(flags["root-dir"], root, pid) if flags.get("root-dir") else DEFAULT_ROOT_DIR,
    }


def locate_kubelet(root: str = "/") -> Dict[str, Any]:
    """Find the kubelet's config file, drop-in dir and root dir (see the module docstring).

    Returns ``config``, ``config_dir``, ``root_dir`` (host paths or None), ``*_exists`` flags,
    ``running``, ``pid``, ``pids`` (all trusted kubelet processes: see :func:`distrust`),
    ``ignored`` (``pid`` and ``reason`` of each process called kubelet that is not trusted),
    ``source`` (``cmdline`` when a running kubelet's flags were used, else ``default``) and
    ``flags`` (its NUMA-relevant command-line flags). Trusted kubelets that disagree on the
    three paths raise :class:`KubeletPathsError` naming them and how to pin the paths.
    """
    processes = []
    ignored = []
    for pid, argv in find_kubelet_processes(root):
        reason = distrust(root, pid)
        if reason is None:
            processes.append(kubelet_process(root, pid, argv))
        else:
            ignored.append({"pid": pid, "reason": reason})
    paths = set((p["config"], p["config_dir"], p["root_dir"]) for p in processes)
    if len(paths) > 1:
        raise KubeletPathsError(
            "%d kubelets run as root and disagree on their files: %s; refusing to guess which one is the node's "
            "kubelet: pin the paths (kubelet_config: options config, config_dir and root_dir; admission_check and "
            "reserved_memory: kubelet_config and the state-file options; the kubelet_numa role: kubelet_numa_kubelet_config, "
            "kubelet_numa_kubelet_config_dir, kubelet_numa_kubelet_root_dir) or stop the stray kubelet"
            % (len(processes), ", ".join("pid %d (config %s, config-dir %s, root-dir %s)" % (
                p["pid"], p["config"] or "none", p["config_dir"] or "none", p["root_dir"]) for p in processes)))
    result: Dict[str, Any] = {
        "running": bool(processes),
        "pid": processes[0]["pid"] if processes else None,
        "pids": [process["pid"] for process in processes],
        "ignored": ignored,
        "flags": {},
    }
    if processes:
        result["flags"] = processes[0]["flags"]
        result["source"] = "cmdline"
        for key in ("config", "config_dir", "root_dir"):
            result[key] = processes[0][key]
    else:
        result["source"] = "default"
        result["config"] = _first_existing(root, DEFAULT_CONFIGS, want_dir=False)
        result["config_dir"] = _first_existing(root, DEFAULT_CONFIG_DIRS, want_dir=True)
        result["root_dir"] = DEFAULT_ROOT_DIR
    result["config_exists"] = bool(result["config"]) and os.path.isfile(under_root(root, result["config"]))
    result["config_dir_exists"] = bool(result["config_dir"]) and os.path.isdir(under_root(root, result["config_dir"]))
    result["root_dir_exists"] = os.path.isdir(under_root(root, result["root_dir"]))
    return result


def read_state_text(root: str, root_dir: str, name: str) -> Tuple[str, Optional[str]]:
    """(host path, content or None when absent) of state file ``name`` in the kubelet root dir."""
    if name not in STATE_FILES:
        raise KubeletPathsError("unknown kubelet state file %r (known: %s)" % (name, ", ".join(STATE_FILES)))
    path = os.path.join(root_dir, name)
    try:
        raw = read_file_if_exists(under_root(root, path))
    except OSError as exc:
        raise KubeletPathsError("%s: cannot read: %s" % (under_root(root, path), exc.strerror or exc))
    return path, None if raw is None else raw.decode("utf-8", "replace")


def peek_policy_name(text: str) -> Optional[str]:
    """The ``policyName`` of a state file, read leniently (key match is case-insensitive, as
    Go's encoding/json does); None when the document is not a JSON object."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    for key, value in doc.items():
        if key.lower() == "policyname" and isinstance(value, str):
            return value
    return None


def state_file_summary(root: str, root_dir: str, name: str) -> Dict[str, Any]:
    """``path``, ``present``, ``policy_name``, ``version``, ``valid``, ``checksum_ok``,
    ``checksum_error`` of one kubelet state file (``cpu_manager_state`` or ``memory_manager_state``)."""
    path, text = read_state_text(root, root_dir, name)
    summary: Dict[str, Any] = {
        "path": path, "present": text is not None, "policy_name": None, "version": None,
        "valid": None, "checksum_ok": None, "checksum_error": None}
    if text is None:
        return summary
    summary["policy_name"] = peek_policy_name(text)
    summary.update(verify_state(name, text))
    return summary


def verify_state(name: str, text: str) -> Dict[str, Any]:
    """Load a state file's content as the kubelet would and report the verdict.

    ``valid``: the kubelet would restore it; ``checksum_ok``: True when a checksum was verified,
    False when the kubelet refuses the file (``checksum_error`` has the kubelet's message, e.g.
    "checkpoint is corrupted"), None when the file carries no checksum to verify;
    ``version``: the format version found (``v1``..``v4``).
    """
    # Imported here, not at the top: only a run that finds a state file pays for its format.
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.checkpointmanager import CheckpointError
    try:
        if name == "cpu_manager_state":
            from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.checkpoint import load_cpu_manager_state
            checkpoint: Any = load_cpu_manager_state(text)
        else:
            from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.checkpoint import load_memory_manager_state
            checkpoint = load_memory_manager_state(text)
    except CheckpointError as exc:
        return {"valid": False, "checksum_ok": False, "checksum_error": str(exc), "version": None}
    verdict: Dict[str, Any] = {
        "valid": True, "checksum_ok": checkpoint.checksum_ok, "checksum_error": None,
        "version": "v%d" % checkpoint.version,
        "policy_name": checkpoint.policy_name}
    if checkpoint.checksum_ok is None:
        if name == "cpu_manager_state" and checkpoint.version == 3:
            verdict["checksum_error"] = ("not verified: the v3 legacy checksum hashes Go-internal data "
                                         "that cannot be reproduced; the kubelet accepts the file")
        else:
            verdict["checksum_error"] = "not verified: the file has checksum 0 (no checksum), which the kubelet accepts"
    return verdict


def kubelet_facts(root: str = "/") -> Dict[str, Any]:
    """:func:`locate_kubelet` plus a summary of each state file in the kubelet root dir."""
    facts = locate_kubelet(root)
    facts["state_files"] = dict((name, state_file_summary(root, facts["root_dir"], name))
                                for name in STATE_FILES)
    return facts
