# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Static policy's start-up check of ``memory_manager_state`` (``validateState`` in pkg/kubelet/cm/memorymanager/policy_static.go).

Why this matters to users: after a reboot that changes a node's memory by a few KiB, after a
change of reserved memory or of hugepages, the kubelet refuses to start until the state file is
deleted. We run the same check so the admission checker can say so instead of pretending.

The check: an empty machine state is replaced by the default one (unless assignments exist);
otherwise the default state is rebuilt, every stored block is replayed with the same greedy
reservation as Allocate, and the stored state must match it node by node -- assignment counts,
NUMA groups (as sets), the set of memory types, total / systemReserved / allocatable exactly, and
free / reserved **summed over each node's group** (per-node values may differ, release is greedy).
With PodLevelResourceManagers on, a pod-level pod is replayed from its pod blocks (``podEntries``)
instead of its containers' blocks (:func:`restored_assignments`).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Dict, List, Mapping, Optional  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.machine_state import (
    MachineState,
    NUMANodeState,
    clone_machine_state,
    take_free,
    u64,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.memory_drift import drift_refusal

ERR_EMPTY_WITH_ASSIGNMENTS = "[memorymanager] machine state can not be empty when it has memory assignments"
ERR_DIFFERENT = "[memorymanager] the expected machine state is different from the real one"
ERR_NO_NUMA = "[memorymanager] (pod: %s, container: %s) the memory assignment uses the NUMA that does not exist"
ERR_NO_RESOURCE = ("[memorymanager] (pod: %s, container: %s) the memory assignment uses memory resource "
                   "that does not exist")
ERR_POLICY_MISMATCH = '[memorymanager] configured policy "%s" differs from state checkpoint policy "%s"'
RESTORE_WRAP = ("could not restore state from checkpoint: %s, please drain this node and delete the memory "
                'manager checkpoint file "%s" before restarting Kubelet')


class MemoryStateError(StateError):
    """The kubelet would refuse to start with this memory manager state.

    ``detail`` says which comparison failed (the kubelet only logs it at verbosity 0 as
    "Invalid state, please drain node and remove policy state file").
    """

    def __init__(self, message: str, detail: Optional[str] = None) -> None:
        super().__init__(message)
        self.detail = detail


def check_policy_name(configured: str, stored: str, state_file: str) -> None:
    """``restoreState``: the state file's policy must be the configured one."""
    if configured != stored:
        raise MemoryStateError(RESTORE_WRAP % (ERR_POLICY_MISMATCH % (configured, stored), state_file))


def restored_assignments(entries: Mapping[str, Mapping[str, List[Any]]],
                         pod_entries: Optional[Mapping[str, List[Any]]],
                         pod_level: bool) -> Dict[str, Dict[str, List[Any]]]:
    """The blocks ``validateState`` replays: pod UID -> container name -> blocks.

    With PodLevelResourceManagers on, a pod that has container entries *and* non-empty pod-level
    blocks is replayed from its pod blocks (under the container name ``""``, as the kubelet names
    it in its messages) instead of its containers' blocks: the budget was reserved once, its
    containers' blocks are slices of it. A pod entry without container entries is not replayed
    (the kubelet walks the container entries only; kubernetes/kubernetes#141994, still open,
    would refuse such a state). With the gate off the pod entries are not restored at all.
    """
    result: Dict[str, Dict[str, List[Any]]] = {}
    for pod_uid, containers in entries.items():
        pod_blocks = (pod_entries or {}).get(pod_uid) if pod_level else None
        if pod_blocks:
            result[pod_uid] = {"": list(pod_blocks)}
        else:
            result[pod_uid] = dict((name, list(blocks)) for name, blocks in containers.items())
    return result


def expected_machine_state(default_state: Mapping[int, NUMANodeState],
                           assignments: Mapping[str, Mapping[str, List[Any]]],
                           unfitted: Optional[List[str]] = None) -> MachineState:
    """Default state plus every block replayed like ``updateMachineState``.

    Pods and containers are replayed in sorted order (the kubelet iterates Go maps: only states
    that break the group rules could depend on the order). ``unfitted`` collects the blocks the
    machine can no longer hold (the drift tolerance's conservation check).
    """
    expected = clone_machine_state(default_state)
    for pod_uid in sorted(assignments):
        for name in sorted(assignments[pod_uid]):
            for block in assignments[pod_uid][name]:
                remaining = block.size
                for node_id in block.numa_affinity:
                    node = expected.get(node_id)
                    if node is None:
                        raise MemoryStateError(ERR_NO_NUMA % (pod_uid, name),
                                               "NUMA node %d of a block does not exist" % node_id)
                    node.number_of_assignments += 1
                    node.cells = list(block.numa_affinity)
                    table = node.memory_map.get(block.type)
                    if table is None:
                        raise MemoryStateError(ERR_NO_RESOURCE % (pod_uid, name),
                                               "NUMA node %d has no %s" % (node_id, block.type))
                    if remaining:
                        remaining = take_free(table, remaining)
                if remaining and unfitted is not None:
                    unfitted.append("pod %s container %s: %s %d bytes on %s, %d bytes short"
                                    % (pod_uid, name, block.type, block.size, list(block.numa_affinity), remaining))
    return expected


def _group_sum(state: Mapping[int, NUMANodeState],
               cells: List[int],
               resource: str) -> Optional[tuple]:
    free = reserved = 0
    for member in cells:
        node = state.get(member)
        table = None if node is None else node.memory_map.get(resource)
        if table is None:
            return None
        free = u64(free + table.free)
        reserved = u64(reserved + table.reserved)
    return free, reserved


def compare_machine_states(stored: Mapping[int, NUMANodeState],
                           expected: Mapping[int, NUMANodeState],
                           group_sums: bool = True) -> Optional[str]:
    """None when equal in the kubelet's sense (``areMachineStatesEqual``), else what differs.

    ``group_sums`` (kubelet 1.32+, ``_k8s/versions.py`` MEMORY_STATE_GROUP_SUMS): free and reserved
    compared as sums over each node's group; False (older kubelets): every node's free and
    reserved exactly (``reflect.DeepEqual`` of the memory table).
    Where the kubelet would crash on a malformed state (a group naming a node or a type that does
    not exist), we report a difference instead.
    """
    if len(stored) != len(expected):
        return "the state has %d NUMA nodes, the machine %d" % (len(stored), len(expected))
    for node_id in sorted(stored):
        mine = stored[node_id]
        theirs = expected.get(node_id)
        if theirs is None:
            return "NUMA node %d of the state does not exist on the machine" % node_id
        if mine.number_of_assignments != theirs.number_of_assignments:
            return ("NUMA node %d: numberOfAssignments is %d, the assignments account for %d"
                    % (node_id, mine.number_of_assignments, theirs.number_of_assignments))
        if sorted(mine.cells or []) != sorted(theirs.cells or []):
            return "NUMA node %d: cells are %s, expected %s" % (node_id, mine.cells, theirs.cells)
        if len(mine.memory_map) != len(theirs.memory_map):
            return ("NUMA node %d: memory types %s, expected %s"
                    % (node_id, sorted(mine.memory_map), sorted(theirs.memory_map)))
        for resource in sorted(mine.memory_map):
            table = mine.memory_map[resource]
            other = theirs.memory_map.get(resource)
            if other is None:
                return "NUMA node %d: memory type %s does not exist on the machine" % (node_id, resource)
            for label, left, right in (("total", table.total, other.total),
                                       ("systemReserved", table.system_reserved, other.system_reserved),
                                       ("allocatable", table.allocatable, other.allocatable)):
                if left != right:
                    return "NUMA node %d %s: %s is %d, expected %d" % (node_id, resource, label, left, right)
            if not group_sums:
                for label, left, right in (("reserved", table.reserved, other.reserved), ("free", table.free, other.free)):
                    if left != right:
                        return "NUMA node %d %s: %s is %d, expected %d" % (node_id, resource, label, left, right)
                continue
            cells = list(mine.cells or [])
            left_sum = _group_sum(stored, cells, resource)
            right_sum = _group_sum(expected, cells, resource)
            if left_sum is None or right_sum is None:
                return "NUMA node %d %s: its group %s names a node or type that does not exist" % (
                    node_id, resource, cells)
            if left_sum[0] != right_sum[0]:
                return ("NUMA node %d %s: free of group %s is %d, expected %d"
                        % (node_id, resource, cells, left_sum[0], right_sum[0]))
            if left_sum[1] != right_sum[1]:
                return ("NUMA node %d %s: reserved of group %s is %d, expected %d"
                        % (node_id, resource, cells, left_sum[1], right_sum[1]))
    return None


def validate_state(machine_state: Mapping[int, NUMANodeState],
                   assignments: Mapping[str, Mapping[str, List[Any]]],
                   default_state: Mapping[int, NUMANodeState],
                   max_drift: int = 0,
                   group_sums: bool = True) -> MachineState:
    """The machine state the kubelet continues with, or :class:`MemoryStateError`.

    Empty machine state: the default one (error when assignments exist). Otherwise the stored
    state, if it matches the replayed expectation; with a drift bound (KEP-6232,
    ``memory_drift.py``) the expectation itself when the difference is a tolerated drift. ``group_sums``: see
    :func:`compare_machine_states`.
    """
    if not machine_state:
        if assignments:
            raise MemoryStateError(ERR_EMPTY_WITH_ASSIGNMENTS)
        return clone_machine_state(default_state)
    unfitted: List[str] = []
    expected = expected_machine_state(default_state, assignments, unfitted)
    difference = compare_machine_states(machine_state, expected, group_sums)
    if difference is not None:
        if max_drift > 0:
            refusal = drift_refusal(machine_state, expected, max_drift, unfitted)
            if refusal is None:
                return expected
            difference = "%s (drift tolerance: %s)" % (difference, refusal)
        raise MemoryStateError(ERR_DIFFERENT, difference)
    return clone_machine_state(machine_state)
