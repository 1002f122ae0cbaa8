# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The CPU manager's in-memory state: the shared (default) cpuset and per-container assignments.

This is the content of ``cpu_manager_state`` (pkg/kubelet/cm/cpumanager/state/checkpoint.go) without the file format: reading and
writing the file, versions and checksums belong to ``checkpoint.py`` beside this file. Here we accept what
that reader produces (an object with ``policy_name`` / ``default_cpu_set`` / ``entries`` /
``pod_entries`` attributes, or the same as a dict, in snake_case or the file's camelCase), with
cpusets either as kubelet strings (``"0-3,8"``) or as collections of ints, and turn unparsable
sets into the kubelet's start-up errors (pkg/kubelet/cm/cpumanager/policy_static.go validateState).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Dict, FrozenSet, Iterable, Optional  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import (
    InvalidCPUSet,
    format_cpuset,
    parse_cpuset,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_quote

#: the CPU Manager's policy names (the state file's ``policyName``; KubeletConfiguration ``cpuManagerPolicy``)
POLICY_NONE = "none"
POLICY_STATIC = "static"
POLICIES = (POLICY_NONE, POLICY_STATIC)

DEFAULT_CHECKPOINT_PATH = "/var/lib/kubelet/cpu_manager_state"


class CPUState:
    """``policyName`` + ``defaultCpuSet`` + ``entries`` (podUID -> container -> cpuset)."""

    def __init__(self,
                 policy_name: str,
                 default_cpu_set: Iterable[int] = frozenset(),
                 entries: Optional[Dict[str, Dict[str, FrozenSet[int]]]] = None,
                 pod_entries: Optional[Dict[str, FrozenSet[int]]] = None) -> None:
        self.policy_name = policy_name
        self.default_cpu_set: FrozenSet[int] = frozenset(default_cpu_set)
        self.entries: Dict[str, Dict[str, FrozenSet[int]]] = dict(
            (pod, dict(containers)) for pod, containers in (entries or {}).items())
        self.pod_entries: Dict[str, FrozenSet[int]] = dict(pod_entries or {})

    def get(self, pod_uid: str, container_name: str) -> Optional[FrozenSet[int]]:
        return self.entries.get(pod_uid, {}).get(container_name)

    def set(self, pod_uid: str, container_name: str, cpus: Iterable[int]) -> None:
        self.entries.setdefault(pod_uid, {})[container_name] = frozenset(cpus)

    def delete(self, pod_uid: str, container_name: str) -> None:
        containers = self.entries.get(pod_uid)
        if containers is None:
            return
        containers.pop(container_name, None)
        if not containers:
            del self.entries[pod_uid]

    def assigned_cpus(self) -> FrozenSet[int]:
        out: set = set()
        for containers in self.entries.values():
            for cpus in containers.values():
                out |= cpus
        return frozenset(out)

    def copy(self) -> CPUState:
        return CPUState(self.policy_name, self.default_cpu_set, self.entries, self.pod_entries)

    def to_plain(self) -> Dict[str, Any]:
        """Plain data for the checkpoint writer and for results (cpusets as kubelet strings)."""
        return {
            "policy_name": self.policy_name,
            "default_cpu_set": format_cpuset(self.default_cpu_set),
            "entries": dict((pod, dict((name, format_cpuset(cpus))
                                       for name, cpus in sorted(containers.items())))
                            for pod, containers in sorted(self.entries.items())),
            "pod_entries": dict((pod, format_cpuset(cpus))
                                for pod, cpus in sorted(self.pod_entries.items())),
        }


def _field(checkpoint: Any, *names: str) -> Any:
    for name in names:
        if isinstance(checkpoint, dict):
            if name in checkpoint:
                return checkpoint[name]
        elif hasattr(checkpoint, name):
            return getattr(checkpoint, name)
    return None


def _cpus(value: Any, what: str, path: str) -> FrozenSet[int]:
    if value is None:
        return frozenset()
    if isinstance(value, str):
        try:
            return parse_cpuset(value)
        except InvalidCPUSet as exc:
            raise StateError("could not restore state from checkpoint: %s: %s, please drain this "
                             "node and delete the CPU manager checkpoint file %s before "
                             "restarting Kubelet" % (what, exc, go_quote(path)))
    if isinstance(value, (set, frozenset, list, tuple)):
        if all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in value):
            return frozenset(value)
    raise StateError("could not restore state from checkpoint: %s: not a cpuset: %r, please "
                     "drain this node and delete the CPU manager checkpoint file %s before "
                     "restarting Kubelet" % (what, value, go_quote(path)))


def restore(checkpoint: Any, policy_name: str, path: str = DEFAULT_CHECKPOINT_PATH) -> CPUState:
    """Turn a loaded checkpoint (or ``None`` for a missing file) into state for ``policy_name``.

    Raises :class:`StateError` like the kubelet: policy mismatch and unparsable cpusets are
    wrapped in "could not restore state from checkpoint: ..., please drain this node ...".
    """
    if checkpoint is None:
        return CPUState(policy_name)
    stored_policy = _field(checkpoint, "policy_name", "policyName")
    if stored_policy is None:
        stored_policy = ""
    if stored_policy != policy_name:
        raise StateError("could not restore state from checkpoint: configured policy \"%s\" "
                         "differs from state checkpoint policy \"%s\", please drain this node "
                         "and delete the CPU manager checkpoint file %s before restarting Kubelet"
                         % (policy_name, stored_policy, go_quote(path)))
    raw_default = _field(checkpoint, "default_cpu_set", "defaultCpuSet", "defaultCPUSet")
    default = _cpus(raw_default, "could not parse default cpu set %s" % go_quote(_show(raw_default)),
                    path)
    entries: Dict[str, Dict[str, FrozenSet[int]]] = {}
    raw_entries = _field(checkpoint, "entries") or {}
    if not isinstance(raw_entries, dict):
        raise StateError("could not restore state from checkpoint: entries must be a mapping, "
                         "please drain this node and delete the CPU manager checkpoint file %s "
                         "before restarting Kubelet" % go_quote(path))
    for pod_uid, containers in raw_entries.items():
        if not isinstance(containers, dict):
            raise StateError("could not restore state from checkpoint: entries of pod %s must be "
                             "a mapping, please drain this node and delete the CPU manager "
                             "checkpoint file %s before restarting Kubelet"
                             % (go_quote(pod_uid), go_quote(path)))
        for name, cpus in containers.items():
            what = "could not parse cpuset %s for container %s in pod %s" % (
                go_quote(_show(cpus)), go_quote(name), go_quote(pod_uid))
            entries.setdefault(str(pod_uid), {})[str(name)] = _cpus(cpus, what, path)
    pod_entries: Dict[str, FrozenSet[int]] = {}
    raw_pod_entries = _field(checkpoint, "pod_entries", "podEntries") or {}
    if isinstance(raw_pod_entries, dict):
        for pod_uid, entry in raw_pod_entries.items():
            value = _field(entry, "cpu_set", "cpuSet") if isinstance(entry, dict) or hasattr(entry, "cpu_set") else entry
            pod_entries[str(pod_uid)] = _cpus(value, "could not parse pod cpuset %s for pod %s"
                                              % (go_quote(_show(value)), go_quote(pod_uid)), path)
    return CPUState(policy_name, default, entries, pod_entries)


def _show(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return format_cpuset(value)
    except (TypeError, ValueError):
        return repr(value)
