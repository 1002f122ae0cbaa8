# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kubelet's ``memory_manager_state`` file, byte for byte (pkg/kubelet/cm/memorymanager/state:
``checkpoint.go`` for the formats, ``state_checkpoint.go`` for restoreState).

Why: as for ``cpu_manager_state`` (:mod:`..cpumanager.checkpoint`): start from the state the
kubelet would restore, refuse what it refuses, write what it accepts. Versions:

=======  ==========================================================  ===========
version  content                                                     checksum
=======  ==========================================================  ===========
V3       (1.37+) V1 fields + ``data`` + ``dataChecksum``             data string
V2       (1.36, gate on) V1 + podEntries                             legacy
V1       (<= 1.36) policyName, machineState, entries                 legacy
=======  ==========================================================  ===========

The checksums, the error and the struct layout shared with ``cpu_manager_state`` are in
:mod:`..checkpointmanager`. A V3 file never falls back to older versions. ``machine_state``
and the blocks are plain data (:class:`.machine_state.Block`) so that the memory manager
simulator can build its state from them and hand the same shape back for writing;
``docs/state-files.md`` documents the shapes. Standard library only; Python 3.8+.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine import checkpointmanager as cm
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.machine_state import Block
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s import gojson, gospew
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_quote

MEMORY_MANAGER_STATE_FILE = "memory_manager_state"

#: What a current kubelet (1.37+) writes.
LATEST_MEMORY_VERSION = 3
MEMORY_VERSIONS = (1, 2, 3)

_UINT64_MAX = (1 << 64) - 1
_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)

MEMORY_TABLE_KEYS = ("total", "systemReserved", "allocatable", "reserved", "free")
_TABLE_ALIASES = {"system_reserved": "systemReserved", "total_mem_size": "total"}


@dataclass(frozen=True)
class MemoryManagerCheckpoint:
    """Content of ``memory_manager_state``.

    ``machine_state``: NUMA id (int) -> ``{"numberOfAssignments": int, "memoryMap":
    {resource: {"total", "systemReserved", "allocatable", "reserved", "free"}}, "cells": [int]}``
    (the file's spelling; snake_case keys and objects with ``to_plain()`` are accepted for
    writing).
    ``entries``: pod UID -> container name -> list of :class:`Block`. ``pod_entries``: pod UID ->
    list of :class:`Block` (pod-level ``memoryBlocks``). ``checksum_ok``, ``legacy_checksum_ok``
    and ``legacy_checksum_kind`` as for ``CPUManagerCheckpoint`` (:mod:`..cpumanager.checkpoint`).
    """

    policy_name: str
    machine_state: Dict[int, Dict[str, Any]] = field(default_factory=dict)
    entries: Dict[str, Dict[str, List[Block]]] = field(default_factory=dict)
    pod_entries: Dict[str, List[Block]] = field(default_factory=dict)
    version: int = LATEST_MEMORY_VERSION
    checksum_ok: Optional[bool] = None
    legacy_checksum_ok: Optional[bool] = None
    legacy_checksum_kind: Optional[str] = None


# --------------------------------------------------------------------------------------------
# The Go structs (names as go-spew prints them).
# --------------------------------------------------------------------------------------------

_S = cm.STRING
_RES = gojson.string_type("v1.ResourceName")
_U64 = gojson.uint_type()
_INT = gojson.int_type()
_F = gojson.Field

_TABLE = gojson.struct_type("state.MemoryTable", [
    _F("TotalMemSize", "total", _U64), _F("SystemReserved", "systemReserved", _U64),
    _F("Allocatable", "allocatable", _U64), _F("Reserved", "reserved", _U64),
    _F("Free", "free", _U64)])
_NODE = gojson.struct_type("state.NUMANodeState", [
    _F("NumberOfAssignments", "numberOfAssignments", _INT),
    _F("MemoryMap", "memoryMap", gojson.map_type(_RES, gojson.ptr_type(_TABLE))),
    _F("Cells", "cells", gojson.slice_type(_INT))])
_NODE_MAP = gojson.map_type(_INT, gojson.ptr_type(_NODE), "state.NUMANodeMap")
_BLOCK = gojson.struct_type("state.Block", [
    _F("NUMAAffinity", "numaAffinity", gojson.slice_type(_INT)), _F("Type", "type", _RES),
    _F("Size", "size", _U64)])
_BLOCKS = gojson.slice_type(_BLOCK)
_MEM_ENTRIES = gojson.map_type(_S, gojson.map_type(_S, _BLOCKS), "state.ContainerMemoryAssignments")
_MEM_POD_ENTRY = gojson.struct_type("state.PodEntry", [_F("MemoryBlocks", "memoryBlocks", _BLOCKS, True)])
_MEM_POD_ENTRIES = gojson.map_type(_S, _MEM_POD_ENTRY, "state.PodMemoryAssignments")
_MEM_STATE = _F("MachineState", "machineState", _NODE_MAP)


def _mem_legacy_types(version: int) -> List[gojson.GoType]:
    names = ["state.MemoryManagerCheckpoint", "state.MemoryManagerCheckpointV%d" % version]
    return [cm.checkpoint_struct(n, _MEM_STATE, _MEM_ENTRIES, pod_entries=_MEM_POD_ENTRIES if version == 2 else None)
            for n in names]


_MEM_V3 = cm.checkpoint_struct("state.MemoryManagerCheckpoint", _MEM_STATE, _MEM_ENTRIES, data=True)
_MEM_DATA = cm.checkpoint_struct("state.MemoryManagerCheckpointData", _MEM_STATE, _MEM_ENTRIES,
                                 pod_entries=_MEM_POD_ENTRIES, checksum=False)


# --------------------------------------------------------------------------------------------
# Reading and writing.
# --------------------------------------------------------------------------------------------

def _blocks_plain(blocks: Optional[List[Dict[str, Any]]]) -> List[Block]:
    return [Block(numa_affinity=tuple(b["NUMAAffinity"] or ()), type=b["Type"], size=b["Size"])
            for b in (blocks or [])]


def _mem_plain(value: Dict[str, Any],
               pod_entries: Optional[Dict[str, Any]],
               version: int,
               checksum_ok: Optional[bool],
               legacy_ok: Optional[bool],
               kind: Optional[str]) -> MemoryManagerCheckpoint:
    machine: Dict[int, Dict[str, Any]] = {}
    for node_id, node in (value["MachineState"] or {}).items():
        if node is None:
            raise cm.CheckpointError("machineState entry of NUMA node %d is null" % node_id)
        memory_map = {}
        for resource, table in (node["MemoryMap"] or {}).items():
            if table is None:
                raise cm.CheckpointError("machineState NUMA node %d memoryMap entry %s is null"
                                         % (node_id, go_quote(resource)))
            memory_map[resource] = {"total": table["TotalMemSize"],
                                    "systemReserved": table["SystemReserved"],
                                    "allocatable": table["Allocatable"],
                                    "reserved": table["Reserved"], "free": table["Free"]}
        machine[node_id] = {"numberOfAssignments": node["NumberOfAssignments"],
                            "memoryMap": memory_map, "cells": list(node["Cells"] or [])}
    entries = dict((pod, dict((name, _blocks_plain(blocks)) for name, blocks in (containers or {}).items()))
                   for pod, containers in (value["Entries"] or {}).items())
    pods = dict((pod, _blocks_plain(entry["MemoryBlocks"])) for pod, entry in (pod_entries or {}).items())
    return MemoryManagerCheckpoint(policy_name=value["PolicyName"], machine_state=machine,
                                   entries=entries, pod_entries=pods, version=version,
                                   checksum_ok=checksum_ok, legacy_checksum_ok=legacy_ok,
                                   legacy_checksum_kind=kind)


def load_memory_manager_state(data: Any) -> MemoryManagerCheckpoint:
    """Read ``memory_manager_state`` content (str or bytes) as the kubelet does.

    Raises :class:`CheckpointError` with the kubelet's message ("checkpoint is corrupted",
    "could not load v3 checkpoint: ...", Go's JSON errors).
    """
    tree = cm.parse(data)
    top, top_error = cm.decode(tree, _MEM_V3, {"Entries": {}, "MachineState": {}})
    if top["Data"] or top["DataChecksum"]:
        inner = cm.load_data(top, top_error, _MEM_DATA, "could not load v3 checkpoint: ", "memory manager")
        kind = cm.legacy_kind(top, _mem_legacy_types(1))
        return _mem_plain(inner, inner["PodEntries"], 3, True, kind is not None, kind)

    candidates = [2, 1] if cm.has_key(tree, "podEntries") else [1, 2]
    report: Optional[str] = None
    for version in candidates:
        types = _mem_legacy_types(version)
        initial: Dict[str, Any] = {"Entries": {}, "MachineState": {}}
        if version == 2:
            initial["PodEntries"] = {}
        value, error = cm.decode(tree, types[0], initial)
        kind = cm.legacy_kind(value, types) if error is None else None
        if error is not None:
            message = str(error)
        elif kind is not None:
            return _mem_plain(value, value.get("PodEntries"), version,
                              None if kind == cm.LEGACY_ZERO else True, None, kind)
        else:
            message = cm.CORRUPTED
        if report is None:
            report = message
    raise cm.CheckpointError(report or cm.CORRUPTED)


def _uint(value: Any, what: str, limit: int = _UINT64_MAX, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= limit:
        raise cm.CheckpointError("%s must be an integer between %d and %d, got %r" % (what, low, limit, value))
    return value


def _numa_id(key: Any, what: str) -> int:
    if isinstance(key, str) and re.match(r"^-?[0-9]+$", key):
        key = int(key)
    return _uint(key, what, _INT64_MAX, _INT64_MIN)


def _go_block(block: Any, what: str) -> Dict[str, Any]:
    if all(hasattr(block, name) for name in ("numa_affinity", "type", "size")):
        affinity, rtype, size = block.numa_affinity, block.type, block.size
    elif isinstance(block, Mapping):
        affinity = block.get("numa_affinity", block.get("numaAffinity"))
        rtype, size = block.get("type"), block.get("size")
    else:
        raise cm.CheckpointError("%s must be a Block or a mapping, got %r" % (what, block))
    if affinity is None or isinstance(affinity, (str, bytes)):
        raise cm.CheckpointError("%s numa_affinity must be a list of NUMA ids, got %r" % (what, affinity))
    return {"NUMAAffinity": [_numa_id(n, "%s numa_affinity" % what) for n in affinity],
            "Type": cm.check_str(rtype, "%s type" % what), "Size": _uint(size, "%s size" % what)}


def _go_blocks(blocks: Any, what: str) -> List[Dict[str, Any]]:
    if blocks is None or isinstance(blocks, (str, bytes, Mapping)):
        raise cm.CheckpointError("%s must be a list of blocks, got %r" % (what, blocks))
    return [_go_block(b, "%s[%d]" % (what, i)) for i, b in enumerate(blocks)]


def _node_get(node: Mapping[str, Any], snake: str, camel: str, what: str) -> Any:
    if snake in node:
        return node[snake]
    if camel in node:
        return node[camel]
    raise cm.CheckpointError("%s has no %s" % (what, snake))


def _go_machine_state(machine_state: Any) -> Dict[int, Dict[str, Any]]:
    if not isinstance(machine_state, Mapping):
        raise cm.CheckpointError("machine_state must be a mapping of NUMA id to node state, got %r"
                                 % (machine_state,))
    result: Dict[int, Dict[str, Any]] = {}
    for key, node in machine_state.items():
        node_id = _numa_id(key, "machine_state NUMA id")
        what = "machine_state[%d]" % node_id
        if hasattr(node, "to_plain"):
            node = node.to_plain()
        if not isinstance(node, Mapping):
            raise cm.CheckpointError("%s must be a mapping, got %r" % (what, node))
        memory_map = _node_get(node, "memory_map", "memoryMap", what)
        if not isinstance(memory_map, Mapping):
            raise cm.CheckpointError("%s memory_map must be a mapping, got %r" % (what, memory_map))
        tables = {}
        for resource, table in memory_map.items():
            twhat = "%s memory_map[%r]" % (what, resource)
            cm.check_str(resource, "%s memory_map key" % what)
            if hasattr(table, "to_plain"):
                table = table.to_plain()
            if not isinstance(table, Mapping):
                raise cm.CheckpointError("%s must be a mapping, got %r" % (twhat, table))
            normal = dict((_TABLE_ALIASES.get(k, k), v) for k, v in table.items())
            missing = [k for k in MEMORY_TABLE_KEYS if k not in normal]
            if missing:
                raise cm.CheckpointError("%s has no %s" % (twhat, ", ".join(missing)))
            tables[resource] = {"TotalMemSize": _uint(normal["total"], twhat + " total"),
                                "SystemReserved": _uint(normal["systemReserved"], twhat + " systemReserved"),
                                "Allocatable": _uint(normal["allocatable"], twhat + " allocatable"),
                                "Reserved": _uint(normal["reserved"], twhat + " reserved"),
                                "Free": _uint(normal["free"], twhat + " free")}
        cells = _node_get(node, "cells", "cells", what)
        if cells is None or isinstance(cells, (str, bytes, Mapping)):
            raise cm.CheckpointError("%s cells must be a list of NUMA ids, got %r" % (what, cells))
        result[node_id] = {
            "NumberOfAssignments": _uint(_node_get(node, "number_of_assignments", "numberOfAssignments", what),
                                         what + " number_of_assignments", _INT64_MAX, _INT64_MIN),
            "MemoryMap": tables, "Cells": [_numa_id(c, what + " cells") for c in cells]}
    return result


def dump_memory_manager_state(cp: MemoryManagerCheckpoint,
                              version: Optional[int] = None,
                              legacy_checksum: Optional[str] = None) -> str:
    """Serialise ``cp`` exactly as the kubelet writes ``memory_manager_state`` in ``version``.

    ``version`` defaults to ``cp.version``. V3 keeps the V1 fields at top level with their
    legacy checksum (what older kubelets verify) and adds ``data``/``dataChecksum``. The legacy
    checksum is made as in the file ``cp`` was read from when the version is the same, else over
    the struct named ``state.MemoryManagerCheckpoint``; ``legacy_checksum`` ('zero' |
    'unversioned' | 'versioned') overrides.
    """
    version = cp.version if version is None else version
    if version not in MEMORY_VERSIONS:
        raise cm.CheckpointError("unsupported memory_manager_state version %r (supported: %s)"
                                 % (version, ", ".join(str(v) for v in MEMORY_VERSIONS)))
    policy = cm.check_str(cp.policy_name, "policy_name")
    machine = _go_machine_state(cp.machine_state)
    entries = cm.go_entries(cp.entries, "blocks", _go_blocks)
    if not isinstance(cp.pod_entries or {}, Mapping):
        raise cm.CheckpointError("pod_entries must be a mapping of pod UID to blocks, got %r" % (cp.pod_entries,))
    # memoryBlocks is omitempty: an empty list reads back as nil, so it is written as nil (else
    # the legacy checksum, which tells nil from empty, would not verify on reading).
    pods = dict((cm.check_str(pod, "pod_entries pod UID"),
                 {"MemoryBlocks": _go_blocks(blocks, "pod_entries[%r]" % pod) or None})
                for pod, blocks in (cp.pod_entries or {}).items())
    if version == 1 and pods:
        raise cm.CheckpointError("memory_manager_state version 1 cannot hold podEntries (%d pods); "
                                 "write version 2 or 3" % len(pods))
    value = {"PolicyName": policy, "MachineState": machine, "Entries": entries, "Checksum": 0}
    kind = cm.resolve_kind(cp, version, legacy_checksum, cm.LEGACY_UNVERSIONED)
    if version == 2:
        value["PodEntries"] = pods
        types = _mem_legacy_types(2)
        value["Checksum"] = cm.make_legacy_checksum(value, kind, types)
        return gojson.marshal(value, types[0])
    types = _mem_legacy_types(1)
    value["Checksum"] = cm.make_legacy_checksum(value, kind, types)
    if version == 1:
        return gojson.marshal(value, types[0])
    data = gojson.marshal({"PolicyName": policy, "MachineState": machine, "Entries": entries,
                           "PodEntries": pods}, _MEM_DATA)
    value["Data"] = data
    value["DataChecksum"] = gospew.string_checksum(data)
    return gojson.marshal(value, _MEM_V3)


# --------------------------------------------------------------------------------------------
# What the kubelet does with the file at start-up (restoreState).
# --------------------------------------------------------------------------------------------

def restore_memory_manager_state(data: Any,
                                 policy_name: str,
                                 path: str) -> Optional[MemoryManagerCheckpoint]:
    """The memory manager's restoreState: load and check the policy (None = absent file)."""
    if data is None:
        return None
    try:
        cp = load_memory_manager_state(data)
        if cp.policy_name != policy_name:
            raise cm.CheckpointError("[memorymanager] configured policy %s differs from state "
                                     "checkpoint policy %s" % (go_quote(policy_name), go_quote(cp.policy_name)))
    except cm.CheckpointError as error:
        raise cm.restore_error(str(error), "memory manager", path)
    return cp


def checkpoint_to_dict(cp: MemoryManagerCheckpoint) -> Dict[str, Any]:
    """A JSON-ready dict of a checkpoint object (for module results); NUMA ids as ints."""
    return {"policy_name": cp.policy_name,
            "machine_state": dict((node_id, {
                "numberOfAssignments": node["numberOfAssignments"],
                "memoryMap": dict((res, dict(table)) for res, table in node["memoryMap"].items()),
                "cells": list(node["cells"])}) for node_id, node in cp.machine_state.items()),
            "entries": dict((pod, dict((name, [b.to_plain() for b in blocks])
                                       for name, blocks in containers.items()))
                            for pod, containers in cp.entries.items()),
            "pod_entries": dict((pod, [b.to_plain() for b in blocks])
                                for pod, blocks in cp.pod_entries.items()),
            "version": cp.version, "checksum_ok": cp.checksum_ok,
            "legacy_checksum_ok": cp.legacy_checksum_ok, "legacy_checksum_kind": cp.legacy_checksum_kind}


def checkpoint_from_state(plain: Mapping[str, Any]) -> MemoryManagerCheckpoint:
    """A memory manager's plain ``state()`` (blocks as ``numaAffinity``/``type``/``size`` dicts) as
    a checkpoint object, for :func:`dump_memory_manager_state`."""

    def blocks_of(blocks: Any) -> List[Block]:
        return [Block(numa_affinity=tuple(b["numaAffinity"]), type=b["type"], size=b["size"]) for b in blocks]

    entries = dict((pod, dict((name, blocks_of(blocks)) for name, blocks in containers.items()))
                   for pod, containers in plain["entries"].items())
    pod_entries = dict((pod, blocks_of(blocks)) for pod, blocks in (plain.get("pod_entries") or {}).items())
    return MemoryManagerCheckpoint(policy_name=plain["policy_name"], machine_state=plain["machine_state"],
                                   entries=entries, pod_entries=pod_entries)
