# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""Predict whether the kubelet will accept an existing ``memory_manager_state`` at start-up.

Why: the Static memory manager compares the machine state recorded in the checkpoint with one it
rebuilds from the current topology, the configured reservation and the recorded assignments
(memorymanager/policy_static.go validateState). Any difference (a node's memory shifting a few KiB
after a reboot, a changed reservedMemory, different hugepages) stops the kubelet until the file
is deleted on a drained node. We rebuild the same expected state and name every difference,
so the decision "drain and delete the state file" is made before the restart, not after.

Reading: JSON, keys matched case-insensitively, V1/V2 top-level fields or the V3 ``data`` string
(authoritative when present). Checksums are verified through the checkpoint engine
(``engine/checkpoint.py``) when it is available.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import json
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils.quantity import format_bytes
from ansible_collections.numaguard.kubelet.plugins.module_utils.reserved_flags import MEMORY, go_quote

_FIELDS = ("total", "systemReserved", "allocatable", "reserved", "free")
_UINT64 = 1 << 64


def _finding(rule, severity, message, fix, kubelet_message=None, fatal=False):
    # type: (str, str, str, str, Optional[str], bool) -> Any
    from ansible_collections.numaguard.kubelet.plugins.module_utils.reservation import Finding

    return Finding(rule, severity, message, fix, kubelet_message, fatal)


def _ci(mapping, key, default=None):
    # type: (Mapping[str, Any], str, Any) -> Any
    """Case-insensitive key lookup, as Go's encoding/json matches struct fields."""
    if key in mapping:
        return mapping[key]
    lowered = key.lower()
    for candidate in mapping:
        if isinstance(candidate, str) and candidate.lower() == lowered:
            return mapping[candidate]
    return default


class StateFormatError(ValueError):
    """A memory_manager_state that cannot be read."""


def read_state(text):
    # type: (str) -> Dict[str, Any]
    """Parse a memory_manager_state document into {policy, machine_state, entries, version}."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise StateFormatError("memory_manager_state is not JSON: %s" % exc)
    if not isinstance(doc, dict):
        raise StateFormatError("memory_manager_state must be a JSON object")
    data = _ci(doc, "data")
    version = "v1"
    body = doc
    if data or _ci(doc, "dataChecksum"):
        version = "v3"
        if not isinstance(data, str) or not data:
            raise StateFormatError("could not load v3 checkpoint: failed to deserialize memory manager checkpoint "
                                   "data: unexpected end of JSON input")
        try:
            body = json.loads(data)
        except ValueError as exc:
            raise StateFormatError("could not load v3 checkpoint: failed to deserialize memory manager checkpoint "
                                   "data: %s" % exc)
        if not isinstance(body, dict):
            raise StateFormatError("could not load v3 checkpoint: data is not a JSON object")
    elif _ci(doc, "podEntries"):
        version = "v2"
    machine = _ci(body, "machineState") or {}
    if not isinstance(machine, dict):
        raise StateFormatError("memory_manager_state machineState must be an object")
    nodes = {}  # type: Dict[int, Dict[str, Any]]
    for key, raw in machine.items():
        try:
            node_id = int(key)
        except (TypeError, ValueError):
            raise StateFormatError("memory_manager_state machineState key %r is not a NUMA node id" % (key,))
        if not isinstance(raw, dict):
            raise StateFormatError("memory_manager_state machineState[%s] must be an object" % key)
        memory_map = {}
        for name, table in (_ci(raw, "memoryMap") or {}).items():
            memory_map[name] = dict((f, int(_ci(table, f, 0) or 0)) for f in _FIELDS)
        nodes[node_id] = {"numberOfAssignments": int(_ci(raw, "numberOfAssignments", 0) or 0),
                          "memoryMap": memory_map,
                          "cells": [int(c) for c in (_ci(raw, "cells") or [])]}
    entries = _ci(body, "entries") or {}
    pod_entries = _ci(body, "podEntries") or {}
    return {"policy": _ci(body, "policyName", ""), "machine_state": nodes, "entries": entries,
            "pod_entries": pod_entries, "version": version}


def _verify_checksum(text):
    # type: (str) -> Optional[str]
    """Use the checkpoint engine's reader for checksum verification when it exists."""
    try:
        from ansible_collections.numaguard.kubelet.plugins.module_utils.engine import checkpoint  # type: ignore
    except ImportError:
        return None
    loader = getattr(checkpoint, "load_memory_manager_state", None)
    if loader is None:
        return None
    try:
        result = loader(text)
    except ValueError as exc:
        return str(exc)
    if getattr(result, "checksum_ok", True) is False:
        return "checkpoint is corrupted"
    return None


def expected_machine_state(topology, reserved_per_node, state):
    # type: (Any, Mapping[int, Mapping[str, int]], Mapping[str, Any]) -> Tuple[Dict[int, Dict[str, Any]], List[str]]
    """The default machine state for this topology and reservation, with the assignments replayed."""
    expected = {}  # type: Dict[int, Dict[str, Any]]
    for node in topology.nodes:
        reserved = reserved_per_node.get(node.id, {})
        memory_map = {}
        huge_total = 0
        for name, pool in node.hugepages.items():
            total = pool.page_size_bytes * pool.total_pages
            huge_total += total
            system = reserved.get(name, 0)
            allocatable = (total - system) % _UINT64
            memory_map[name] = {"total": total, "systemReserved": system, "allocatable": allocatable,
                                "reserved": 0, "free": allocatable}
        system = reserved.get(MEMORY, 0)
        allocatable = (node.memory_total_bytes - system - huge_total) % _UINT64
        memory_map[MEMORY] = {"total": node.memory_total_bytes, "systemReserved": system,
                              "allocatable": allocatable, "reserved": 0, "free": allocatable}
        expected[node.id] = {"numberOfAssignments": 0, "memoryMap": memory_map, "cells": [node.id]}
    problems = []  # type: List[str]
    assignments = []  # type: List[Tuple[str, str, Any]]
    pod_entries = state.get("pod_entries") or {}
    for pod_uid, containers in sorted((state.get("entries") or {}).items()):
        if pod_uid in pod_entries:
            continue
        for container, blocks in sorted((containers or {}).items()):
            assignments.append((pod_uid, container, blocks))
    for pod_uid, entry in sorted(pod_entries.items()):
        assignments.append((pod_uid, "(pod)", _ci(entry or {}, "memoryBlocks") or []))
    for pod_uid, container, blocks in assignments:
        for block in blocks or []:
            size = int(_ci(block, "size", 0) or 0)
            kind = _ci(block, "type", "")
            for node_id in [int(n) for n in (_ci(block, "numaAffinity") or [])]:
                node_state = expected.get(node_id)
                if node_state is None:
                    problems.append("[memorymanager] (pod: %s, container: %s) the memory assignment uses the NUMA "
                                    "that does not exist" % (pod_uid, container))
                    break
                node_state["numberOfAssignments"] += 1
                node_state["cells"] = [int(n) for n in _ci(block, "numaAffinity")]
                table = node_state["memoryMap"].get(kind)
                if table is None:
                    problems.append("[memorymanager] (pod: %s, container: %s) the memory assignment uses memory "
                                    "resource that does not exist" % (pod_uid, container))
                    break
                if size == 0 or table["free"] <= 0:
                    continue
                take = min(size, table["free"])
                table["reserved"] += take
                table["free"] -= take
                size -= take
    return expected, problems


def predict_state(topology, reserved_per_node, policy, text, state_file=None):
    # type: (Any, Mapping[int, Mapping[str, int]], str, str, Optional[str]) -> Tuple[List[Any], Dict[str, Any]]
    """Findings (errors mean: the kubelet will not start with this state) and a summary dict."""
    where = state_file or "memory_manager_state"
    delete_fix = ("drain the node, stop the kubelet, move %s away (keep it as a backup), start the kubelet, "
                  "uncordon (the rollout role's state handling does exactly this)" % where)
    summary = {"file": state_file, "accepted": True, "differences": []}  # type: Dict[str, Any]
    try:
        state = read_state(text)
    except StateFormatError as exc:
        message = ("could not restore state from checkpoint: %s, please drain this node and delete the memory manager "
                   "checkpoint file %s before restarting Kubelet" % (exc, go_quote(where)))
        summary["accepted"] = False
        return [_finding("state-drift", "error", message, delete_fix, message, True)], summary
    summary.update({"version": state["version"], "policy": state["policy"]})
    corrupt = _verify_checksum(text)
    if corrupt:
        message = ("could not restore state from checkpoint: %s, please drain this node and delete the memory manager "
                   "checkpoint file %s before restarting Kubelet" % (corrupt, go_quote(where)))
        summary["accepted"] = False
        return [_finding("state-drift", "error", message, delete_fix, message, True)], summary
    if state["policy"] != policy:
        inner = "[memorymanager] configured policy %s differs from state checkpoint policy %s" % (
            go_quote(policy), go_quote(state["policy"]))
        message = ("could not restore state from checkpoint: %s, please drain this node and delete the memory manager "
                   "checkpoint file %s before restarting Kubelet" % (inner, go_quote(where)))
        summary["accepted"] = False
        return [_finding("state-drift", "error", message, delete_fix, message, True)], summary
    if policy != "Static":
        return [], summary
    machine = state["machine_state"]
    has_assignments = bool(state["entries"]) or bool(state["pod_entries"])
    if not machine:
        if has_assignments:
            message = "[memorymanager] machine state can not be empty when it has memory assignments"
            summary["accepted"] = False
            return [_finding("state-drift", "error", message, delete_fix, message, True)], summary
        return [], summary
    expected, problems = expected_machine_state(topology, reserved_per_node, state)
    findings = []
    for problem in problems:
        summary["accepted"] = False
        findings.append(_finding("state-drift", "error", problem, delete_fix, problem, True))
    if problems:
        return findings, summary
    differences = _compare(machine, expected)
    summary["differences"] = differences
    if differences:
        summary["accepted"] = False
        message = "[memorymanager] the expected machine state is different from the real one"
        findings.append(_finding(
            "state-drift", "error",
            "%s: the kubelet will refuse to start with %s (%s)." % (message, where, "; ".join(differences)),
            delete_fix, message, True))
    return findings, summary


def _compare(stored, expected):
    # type: (Mapping[int, Any], Mapping[int, Any]) -> List[str]
    """validateState's comparison, one readable line per difference."""
    out = []  # type: List[str]
    if set(stored) != set(expected):
        out.append("NUMA nodes in state %s, on host %s" % (sorted(stored), sorted(expected)))
        return out
    for node_id in sorted(expected):
        got, want = stored[node_id], expected[node_id]
        if got["numberOfAssignments"] != want["numberOfAssignments"]:
            out.append("node %d numberOfAssignments %d in state, %d from the assignments"
                       % (node_id, got["numberOfAssignments"], want["numberOfAssignments"]))
        if set(got["cells"]) != set(want["cells"]):
            out.append("node %d cells %s in state, %s expected" % (node_id, got["cells"], want["cells"]))
        if set(got["memoryMap"]) != set(want["memoryMap"]):
            out.append("node %d memory types %s in state, %s on host" % (
                node_id, sorted(got["memoryMap"]), sorted(want["memoryMap"])))
            continue
        for name in sorted(want["memoryMap"]):
            g, w = got["memoryMap"][name], want["memoryMap"][name]
            for fld in ("total", "systemReserved", "allocatable"):
                if g[fld] != w[fld]:
                    delta = w[fld] - g[fld]
                    why = ""
                    if fld == "total" and name == MEMORY:
                        why = " (node memory changed, typically a few KiB to MiB after a reboot or kernel update)"
                    elif fld == "total":
                        why = " (hugepage pool changed)"
                    elif fld == "systemReserved":
                        why = " (reservedMemory changed)"
                    out.append("node %d %s %s: %d in state, %d now (%s%s)%s" % (
                        node_id, name, fld, g[fld], w[fld], "+" if delta > 0 else "-", format_bytes(abs(delta)), why))
    for node_id in sorted(expected):
        group = expected[node_id]["cells"]
        for name in sorted(expected[node_id]["memoryMap"]):
            for fld in ("free", "reserved"):
                got_sum = sum(stored[n]["memoryMap"].get(name, {}).get(fld, 0) for n in group if n in stored)
                want_sum = sum(expected[n]["memoryMap"][name][fld] for n in group if n in expected)
                if got_sum != want_sum:
                    line = "group %s %s %s: %d in state, %d expected" % (group, name, fld, got_sum, want_sum)
                    if line not in out:
                        out.append(line)
    return out
