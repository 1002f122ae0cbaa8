# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Predict whether the kubelet will accept an existing ``memory_manager_state`` at start-up.

Why: the Static memory manager compares the machine state recorded in the checkpoint with one it
rebuilds from the current topology, the configured reservation and the recorded assignments
(``validateState``). Any difference -- a node's memory shifting a few KiB after a reboot, a
changed ``reservedMemory``, different hugepages -- stops the kubelet until the file is deleted on
a drained node. This module answers "will it start?" *before* the restart, and lists every
difference with its size, so the operator knows whether the change or the machine moved.

The verdict comes from the admission engine (``_engine/memorymanager/checkpoint.py`` reads every file version
with its checksum rules; ``engine/memorymanager`` rebuilds and compares the state exactly as the
kubelet does), so there is one implementation of the kubelet's rules; this module only adds
the explanation (all differences, not just the first) and the fix.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import format_bytes
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import MEMORY
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.findings import Finding

DEFAULT_STATE_FILE = "/var/lib/kubelet/memory_manager_state"


def _finding(severity: str,
             message: str,
             fix: str,
             kubelet_message: Optional[str] = None,
             fatal: bool = True) -> Any:
    return Finding("state-drift", severity, message, fix, kubelet_message, fatal)


def _assignments(checkpoint: Any) -> Dict[str, Dict[str, List[Any]]]:
    """What validateState replays: container blocks, a pod-level pod's pod blocks instead of its
    containers' (a file holds podEntries only when PodLevelResourceManagers was on)."""
    # imported here: as in predict_state (only a run with a state file)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.validate_state import (
        restored_assignments,
    )

    return restored_assignments(checkpoint.entries, checkpoint.pod_entries, True)


def predict_state(topology: Any,
                  reserved_per_node: Mapping[int, Mapping[str, int]],
                  policy: str,
                  text: str,
                  state_file: Optional[str] = None) -> Tuple[List[Any], Dict[str, Any]]:
    """Findings (an error means: the kubelet will not start with this state) and a summary dict.

    ``reserved_per_node``: node id -> type -> bytes, the reservation the kubelet would apply.
    """
    # The state format and its checks are imported here, when a state is given: kubelet_config and
    # reserved_memory runs without one do not pay for them at start-up.
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.checkpointmanager import CheckpointError
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.checkpoint import (
        load_memory_manager_state,
    )
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.machine_state import (
        default_machine_state,
        machine_state_from_plain,
    )
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.validate_state import (
        RESTORE_WRAP,
        MemoryStateError,
        check_policy_name,
        expected_machine_state,
        validate_state,
    )

    where = state_file or DEFAULT_STATE_FILE
    fix = ("drain the node, stop the kubelet, move %s away (keep it as a backup), start the kubelet, uncordon "
           "(the rollout role's state handling does this)" % where)
    summary: Dict[str, Any] = {"file": state_file, "accepted": True, "differences": []}
    try:
        checkpoint = load_memory_manager_state(text)
    except CheckpointError as exc:
        message = RESTORE_WRAP % (exc, where)
        summary["accepted"] = False
        return [_finding("error", message, fix, message)], summary
    summary.update({"version": checkpoint.version, "policy": checkpoint.policy_name})
    try:
        check_policy_name(policy, checkpoint.policy_name, where)
    except MemoryStateError as exc:
        summary["accepted"] = False
        return [_finding("error", str(exc), fix, str(exc))], summary
    if policy != "Static":
        return [], summary
    try:
        stored = machine_state_from_plain(checkpoint.machine_state)
        default = default_machine_state(topology, reserved_per_node)
        assignments = _assignments(checkpoint)
        validate_state(stored, assignments, default)
    except MemoryStateError as exc:
        summary["accepted"] = False
        differences: List[str] = []
        if exc.detail is not None:
            try:
                differences = list_differences(stored, expected_machine_state(default, assignments))
            except StateError:
                differences = [exc.detail]
        summary["differences"] = differences or ([exc.detail] if exc.detail else [])
        detail = "; ".join(summary["differences"])
        message = "%s%s: the kubelet will refuse to start with %s." % (str(exc), " (%s)" % detail if detail else "", where)
        return [_finding("error", message, fix, str(exc))], summary
    except StateError as exc:
        summary["accepted"] = False
        message = "%s is not a usable memory manager state: %s" % (where, exc)
        return [_finding("error", message, fix, None)], summary
    return [], summary


def list_differences(stored: Mapping[int, Any], expected: Mapping[int, Any]) -> List[str]:
    """Every difference validateState would trip over, readable, with the size of each change."""
    out: List[str] = []
    if set(stored) != set(expected):
        return ["NUMA nodes in the state %s, on the host %s" % (sorted(stored), sorted(expected))]
    for node_id in sorted(expected):
        got, want = stored[node_id], expected[node_id]
        if got.number_of_assignments != want.number_of_assignments:
            out.append("node %d numberOfAssignments %d in the state, %d from its assignments"
                       % (node_id, got.number_of_assignments, want.number_of_assignments))
        if sorted(got.cells or []) != sorted(want.cells or []):
            out.append("node %d cells %s in the state, %s expected" % (node_id, got.cells, want.cells))
        if set(got.memory_map) != set(want.memory_map):
            out.append("node %d memory types %s in the state, %s on the host"
                       % (node_id, sorted(got.memory_map), sorted(want.memory_map)))
            continue
        for name in sorted(want.memory_map):
            g, w = got.memory_map[name], want.memory_map[name]
            changed_input = False
            for label, left, right, why in (
                    ("total", g.total, w.total,
                     "node memory changed, typically by KiBs to MiBs after a reboot or kernel update"
                     if name == MEMORY else "hugepage pool changed"),
                    ("systemReserved", g.system_reserved, w.system_reserved, "reservedMemory changed")):
                if left != right:
                    changed_input = True
                    out.append("node %d %s %s: %d in the state, %d now (%s%s: %s)" % (
                        node_id, name, label, left, right, "+" if right > left else "-",
                        format_bytes(abs(right - left)), why))
            if not changed_input and g.allocatable != w.allocatable:
                out.append("node %d %s allocatable: %d in the state, %d expected"
                           % (node_id, name, g.allocatable, w.allocatable))
    if not out:
        for node_id in sorted(expected):
            for name in sorted(expected[node_id].memory_map):
                got_free = sum(stored[n].memory_map[name].free for n in stored[node_id].cells or [] if n in stored)
                want_free = sum(expected[n].memory_map[name].free for n in stored[node_id].cells or [] if n in expected)
                if got_free != want_free:
                    out.append("group %s %s free: %d in the state, %d from replaying the assignments"
                               % (stored[node_id].cells, name, got_free, want_free))
    return out
