# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Memory Manager's machine state: memory tables per NUMA node, NUMA groups, blocks.

This is the data the kubelet keeps in ``memory_manager_state`` (pkg/kubelet/cm/memorymanager/state/state.go, state/checkpoint.go) and the three
pieces of arithmetic every other part of the memory manager is built from:

* :func:`default_machine_state` -- the state the kubelet builds at start-up from cadvisor's NUMA
  nodes and the per-node ``reservedMemory`` (``getDefaultMachineState``);
* :func:`reserve` -- how an allocation takes memory: greedily, node by node in ascending id
  order, silently leaving a remainder unreserved when the mask has too little free memory
  (``updateMachineState``); every node of the mask gets one more assignment and the mask as its
  NUMA group (``cells``), whether or not memory is taken from it;
* :func:`release` -- the reverse walk (``RemoveContainer``): nodes give back what they hold, in
  the block's order, and a node whose assignment count drops to 0 goes back to its own group.

All sizes are the kubelet's ``uint64``: we reproduce its wrap-around (e.g. reserved memory larger
than a node's memory) instead of inventing an error the kubelet does not raise. The plain-data
form (:func:`machine_state_to_plain`) mirrors the JSON of the state file with int NUMA keys, so
the checkpoint module can write it byte-identically.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Mapping as _MappingABC
from dataclasses import dataclass

try:
    from typing import Any, Dict, List, Mapping, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import INT64_MAX, INT64_MIN
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import MEMORY, hugepage_resource_name

UINT64_MOD = 1 << 64
#: the feature gate under which the state's podEntries are restored and replayed (KEP-5526)
POD_LEVEL_RESOURCE_MANAGERS = "PodLevelResourceManagers"

#: JSON field names of a memory table, in the kubelet's declaration order.
TABLE_FIELDS = ("total", "systemReserved", "allocatable", "reserved", "free")


class MachineStateError(StateError):
    """A machine state (from a state file or a caller) that is not well-formed."""


def u64(value: int) -> int:
    """``value`` as the kubelet's uint64 arithmetic leaves it (wraps modulo 2**64)."""
    return value % UINT64_MOD


class _ComparedByPlainForm:
    """Value equality through ``to_plain()`` (the state file's form); mutable, so unhashable."""

    __slots__ = ()

    def to_plain(self) -> Any:
        raise NotImplementedError

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self.to_plain() == other.to_plain()

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # type: ignore[assignment]


class MemoryTable(_ComparedByPlainForm):
    """One resource type on one NUMA node (bytes): total, systemReserved, allocatable, reserved, free.

    Mutable on purpose: the simulator updates tables in place exactly where the kubelet does.
    """

    __slots__ = ("total", "system_reserved", "allocatable", "reserved", "free")

    def __init__(self,
                 total: int,
                 system_reserved: int,
                 allocatable: int,
                 reserved: int,
                 free: int) -> None:
        self.total = total
        self.system_reserved = system_reserved
        self.allocatable = allocatable
        self.reserved = reserved
        self.free = free

    def copy(self) -> MemoryTable:
        return MemoryTable(self.total, self.system_reserved, self.allocatable, self.reserved, self.free)

    def to_plain(self) -> Dict[str, int]:
        return {"total": self.total, "systemReserved": self.system_reserved,
                "allocatable": self.allocatable, "reserved": self.reserved, "free": self.free}

    def __repr__(self) -> str:
        return "MemoryTable(%s)" % ", ".join("%s=%d" % (k, v) for k, v in self.to_plain().items())


class NUMANodeState(_ComparedByPlainForm):
    """One NUMA node: assignment count, memory tables per resource, and its NUMA group (``cells``).

    ``cells`` is ``None`` when a state file says ``null`` (the kubelet keeps that distinction for
    its checksum); otherwise a list of NUMA ids.
    """

    __slots__ = ("number_of_assignments", "memory_map", "cells")

    def __init__(self,
                 number_of_assignments: int,
                 memory_map: Dict[str, MemoryTable],
                 cells: Optional[List[int]]) -> None:
        self.number_of_assignments = number_of_assignments
        self.memory_map = memory_map
        self.cells = cells

    def copy(self) -> NUMANodeState:
        return NUMANodeState(self.number_of_assignments,
                             dict((name, table.copy()) for name, table in self.memory_map.items()),
                             None if self.cells is None else list(self.cells))

    def to_plain(self) -> Dict[str, Any]:
        return {
            "numberOfAssignments": self.number_of_assignments,
            "memoryMap": dict((name, self.memory_map[name].to_plain()) for name in sorted(self.memory_map)),
            "cells": None if self.cells is None else list(self.cells),
        }

    def __repr__(self) -> str:
        return "NUMANodeState(%r)" % (self.to_plain(),)


_BLOCK_KEYS = ("numaAffinity", "type", "size")


@dataclass(frozen=True)
class Block(_MappingABC):
    """``state.Block``: ``size`` bytes of ``type`` given on ``numa_affinity`` (as stored).

    Also a read-only mapping in the state file's spelling (``block["numaAffinity"]``, ``"type"``,
    ``"size"``), so code that consumes the JSON shape accepts it unchanged.
    """

    numa_affinity: Tuple[int, ...]
    type: str
    size: int

    def __getitem__(self, key: str) -> Any:
        if key == "numaAffinity":
            return list(self.numa_affinity)
        if key == "type":
            return self.type
        if key == "size":
            return self.size
        raise KeyError(key)

    def __iter__(self) -> Any:
        return iter(_BLOCK_KEYS)

    def __len__(self) -> int:
        return len(_BLOCK_KEYS)

    def to_plain(self) -> Dict[str, Any]:
        """The block in the state file's spelling (for module results)."""
        return {"numaAffinity": list(self.numa_affinity), "type": self.type, "size": self.size}

    def with_size(self, size: int) -> Block:
        return Block(self.numa_affinity, self.type, size)


MachineState = Dict[int, NUMANodeState]
Assignments = Dict[str, Dict[str, List[Block]]]


# ---- construction ----------------------------------------------------------------------------


def default_machine_state(topology: Any,
                          system_reserved: Mapping[int, Mapping[str, int]]) -> MachineState:
    """The machine state the kubelet installs on a node without state (``getDefaultMachineState``).

    ``topology``: anything with ``nodes`` (each ``id``, ``memory_total_bytes`` and ``hugepages``
    mapping to objects with ``page_size_bytes`` and ``total_pages``), i.e. the topology model.
    ``system_reserved``: per-node reserved bytes per resource (from ``reservedMemory``).

    For every hugepage size of a node: total = pages x page size, allocatable = free = total -
    reserved. For ``memory``: total = the node's memory, allocatable = free = total - reserved -
    all hugepages of the node. uint64 wrap-around is kept, as the kubelet keeps it.
    """
    state: MachineState = {}
    for node in topology.nodes:
        reserved_here = system_reserved.get(node.id, {})
        memory_map: Dict[str, MemoryTable] = {}
        hugepages_total = 0
        for pool in node.hugepages.values():
            name = hugepage_resource_name(pool.page_size_bytes)
            total = u64(pool.total_pages * pool.page_size_bytes)
            reserved = reserved_here.get(name, 0)
            allocatable = u64(total - reserved)
            memory_map[name] = MemoryTable(total, reserved, allocatable, 0, allocatable)
            hugepages_total = u64(hugepages_total + total)
        reserved = reserved_here.get(MEMORY, 0)
        total = node.memory_total_bytes
        allocatable = u64(total - reserved - hugepages_total)
        memory_map[MEMORY] = MemoryTable(total, reserved, allocatable, 0, allocatable)
        state[node.id] = NUMANodeState(0, memory_map, [node.id])
    return state


def clone_machine_state(state: Mapping[int, NUMANodeState]) -> MachineState:
    """Deep copy (the kubelet's ``GetMachineState`` hands out clones too)."""
    return dict((node_id, node.copy()) for node_id, node in state.items())


def clone_assignments(assignments: Mapping[str, Mapping[str, List[Block]]]) -> Assignments:
    return dict((pod, dict((name, list(blocks)) for name, blocks in containers.items()))
                for pod, containers in assignments.items())


# ---- the two mutations -----------------------------------------------------------------------


def reserve(state: MachineState, numa_affinity: Tuple[int, ...], resource: str, size: int) -> None:
    """Account ``size`` bytes of ``resource`` on the nodes of ``numa_affinity`` (``updateMachineState``).

    Each node (ascending, as given) gets ``numberOfAssignments += 1`` and ``cells =
    numa_affinity``; then, while something remains, a node with free memory gives
    min(free, remaining) from free to reserved. A remainder the mask cannot cover is silently
    not reserved (the kubelet checks capacity before, not here). A node without a table for the
    resource gives nothing (the kubelet would dereference a missing table; this cannot happen
    after its own capacity checks).
    """
    remaining = size
    cells = list(numa_affinity)
    for node_id in numa_affinity:
        node = state[node_id]
        node.number_of_assignments += 1
        node.cells = cells
        table = node.memory_map.get(resource)
        if remaining and table is not None:
            remaining = take_free(table, remaining)


def take_free(table: MemoryTable, remaining: int) -> int:
    """Move min(free, remaining) of ``table`` from free to reserved; return what is still owed.

    The kubelet's greedy step, shared by ``updateMachineState`` and its start-up replay.
    """
    taken = min(max(table.free, 0), remaining)
    if taken:
        table.reserved = u64(table.reserved + taken)
        table.free -= taken
    return remaining - taken


def release(state: MachineState, block: Block) -> None:
    """Give a block's memory back (the release walk of ``RemoveContainer``).

    For each node of the block, in the block's order: one assignment fewer (back to its own
    group ``[id]`` at 0); then up to the remaining size moves from reserved to free on nodes that
    hold reserved memory. Per-node values can drift from where the memory was taken; group
    totals stay right (that is all the kubelet's start-up validation compares).
    """
    remaining = block.size
    for node_id in block.numa_affinity:
        node = state[node_id]
        node.number_of_assignments -= 1
        if node.number_of_assignments == 0:
            node.cells = [node_id]
        if remaining == 0:
            continue
        table = node.memory_map.get(block.type)
        if table is None or table.reserved == 0:
            continue
        if table.reserved < remaining:
            remaining -= table.reserved
            table.free = u64(table.free + table.reserved)
            table.reserved = 0
            continue
        table.free = u64(table.free + remaining)
        table.reserved -= remaining
        remaining = 0


# ---- plain data (the state file's JSON shape, int NUMA keys) ---------------------------------


def machine_state_to_plain(state: Mapping[int, NUMANodeState]) -> Dict[int, Dict[str, Any]]:
    """``{numa_id: {numberOfAssignments, memoryMap: {type: {total, ...}}, cells}}`` (int keys)."""
    return dict((node_id, state[node_id].to_plain()) for node_id in sorted(state))


def entries_to_plain(assignments: Mapping[str, Mapping[str, List[Block]]]) -> Dict[str, Dict[str, List[Dict[str, Any]]]]:
    """``{podUID: {container: [{numaAffinity, type, size}, ...]}}``."""
    return dict((pod, dict((name, [b.to_plain() for b in blocks]) for name, blocks in sorted(containers.items())))
                for pod, containers in sorted(assignments.items()))


def _where_int(value: Any, where: str, lower: int = 0, upper: int = UINT64_MOD - 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise MachineStateError("%s must be an integer, got %r" % (where, value))
    if value < lower or value > upper:
        raise MachineStateError("%s must be between %d and %d, got %d" % (where, lower, upper, value))
    return value


def _node_key(key: Any, where: str) -> int:
    if isinstance(key, str) and key.lstrip("-").isdigit():
        key = int(key)
    return _where_int(key, "%s key %r" % (where, key), -(1 << 31), (1 << 31) - 1)


def _int_list(value: Any, where: str) -> Optional[List[int]]:
    if value is None:
        return None
    if not isinstance(value, (list, tuple)):
        raise MachineStateError("%s must be a list of NUMA ids, got %r" % (where, value))
    return [_where_int(item, "%s[%d]" % (where, index), INT64_MIN, INT64_MAX)
            for index, item in enumerate(value)]


def _mapping(value: Any, where: str) -> Mapping[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise MachineStateError("%s must be a mapping, got %r" % (where, value))
    return value


def _field(raw: Mapping[str, Any], name: str, where: str) -> Any:
    """Case-insensitive field lookup, like Go's encoding/json; absent -> None."""
    if name in raw:
        return raw[name]
    lowered = name.lower()
    for key in raw:
        if isinstance(key, str) and key.lower() == lowered:
            return raw[key]
    return None


def machine_state_from_plain(plain: Any, where: str = "machineState") -> MachineState:
    """Inverse of :func:`machine_state_to_plain`; NUMA keys may be ints or decimal strings.

    Raises :class:`MachineStateError` naming the bad field.
    """
    state: MachineState = {}
    for key, raw in _mapping(plain, where).items():
        node_id = _node_key(key, where)
        node_where = "%s[%d]" % (where, node_id)
        if node_id in state:
            raise MachineStateError("%s: NUMA node %d appears twice" % (where, node_id))
        if raw is None:
            raise MachineStateError("%s must be a mapping, got null" % node_where)
        raw = _mapping(raw, node_where)
        count = _field(raw, "numberOfAssignments", node_where)
        count = 0 if count is None else _where_int(count, node_where + ".numberOfAssignments",
                                                   INT64_MIN, INT64_MAX)
        memory_map: Dict[str, MemoryTable] = {}
        map_where = node_where + ".memoryMap"
        for name, table in _mapping(_field(raw, "memoryMap", node_where), map_where).items():
            if not isinstance(name, str) or not name:
                raise MachineStateError("%s has a resource name that is not a string: %r" % (map_where, name))
            table_where = "%s[%s]" % (map_where, name)
            table = _mapping(table, table_where)
            values = []
            for field_name in TABLE_FIELDS:
                value = _field(table, field_name, table_where)
                values.append(0 if value is None else _where_int(value, "%s.%s" % (table_where, field_name)))
            memory_map[name] = MemoryTable(*values)
        cells = _int_list(_field(raw, "cells", node_where), node_where + ".cells")
        state[node_id] = NUMANodeState(count, memory_map, cells)
    return state


def block_from_plain(raw: Any, where: str) -> Block:
    raw = _mapping(raw, where)
    affinity = _int_list(_field(raw, "numaAffinity", where), where + ".numaAffinity")
    kind = _field(raw, "type", where)
    if not isinstance(kind, str):
        raise MachineStateError("%s.type must be a resource name string, got %r" % (where, kind))
    size = _field(raw, "size", where)
    size = 0 if size is None else _where_int(size, where + ".size")
    return Block(tuple(affinity or ()), kind, size)


def entries_from_plain(plain: Any, where: str = "entries") -> Assignments:
    """Inverse of :func:`entries_to_plain`. Raises :class:`MachineStateError` naming the field."""
    assignments: Assignments = {}
    for pod_uid, containers in _mapping(plain, where).items():
        pod_where = "%s[%s]" % (where, pod_uid)
        if not isinstance(pod_uid, str):
            raise MachineStateError("%s: pod UID must be a string, got %r" % (where, pod_uid))
        per_pod: Dict[str, List[Block]] = {}
        for name, blocks in _mapping(containers, pod_where).items():
            container_where = "%s[%s]" % (pod_where, name)
            if not isinstance(name, str):
                raise MachineStateError("%s: container name must be a string, got %r" % (pod_where, name))
            if blocks is None:
                blocks = []
            if not isinstance(blocks, (list, tuple)):
                raise MachineStateError("%s must be a list of memory blocks, got %r" % (container_where, blocks))
            per_pod[name] = [block_from_plain(b, "%s[%d]" % (container_where, i)) for i, b in enumerate(blocks)]
        assignments[pod_uid] = per_pod
    return assignments


def pod_entries_from_plain(plain: Any, where: str = "pod_entries") -> Dict[str, List[Block]]:
    """Pod UID -> pod-level blocks, from the checkpoint's ``pod_entries`` (lists of blocks) or the
    file's ``podEntries`` spelling (``{"memoryBlocks": [...]}``). Raises :class:`MachineStateError`."""
    wrapped: Dict[str, Any] = {}
    for pod_uid, value in _mapping(plain, where).items():
        if isinstance(value, _MappingABC):
            value = value.get("memoryBlocks", value.get("memory_blocks"))
        wrapped[pod_uid] = {"memoryBlocks": value}
    return dict((pod_uid, per_pod["memoryBlocks"]) for pod_uid, per_pod in entries_from_plain(wrapped, where).items())
