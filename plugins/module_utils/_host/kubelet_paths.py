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
    """(pid, argv) of every process under ``<root>/proc`` whose program is ``kubelet``."""
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


def locate_kubelet(root: str = "/") -> Dict[str, Any]:
    """Find the kubelet's config file, drop-in dir and root dir (see the module docstring).

    Returns ``config``, ``config_dir``, ``root_dir`` (host paths or None), ``*_exists`` flags,
    ``running``, ``pid``, ``pids`` (all kubelet processes), ``source`` (``cmdline`` when a
    running kubelet's flags were used, else ``default``) and ``flags`` (its NUMA-relevant
    command-line flags).
    """
    processes = find_kubelet_processes(root)
    result: Dict[str, Any] = {
        "running": bool(processes),
        "pid": processes[0][0] if processes else None,
        "pids": [process[0] for process in processes],
        "flags": {},
    }
    if processes:
        pid, argv = processes[0]
        flags = parse_kubelet_cmdline(argv)
        result["flags"] = dict((k, v) for k, v in sorted(flags.items()) if k in VALUE_FLAGS)
        result["source"] = "cmdline"
        # A kubelet started without --config reads no config file at all.
        result["config"] = _absolute(flags["config"], root, pid) if flags.get("config") else None
        result["config_dir"] = _absolute(flags["config-dir"], root, pid) if flags.get("config-dir") else None
        result["root_dir"] = _absolute(flags["root-dir"], root, pid) if flags.get("root-dir") else DEFAULT_ROOT_DIR
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
