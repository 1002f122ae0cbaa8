# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""The kubelet's ``cpu_manager_state`` and ``memory_manager_state`` files, byte for byte.

Why: the admission checker must start from the same state the kubelet would restore, refuse
what the kubelet refuses (with the kubelet's words), and be able to write a file the kubelet
accepts after a what-if sequence. The kubelet's checkpoint manager reads a file by JSON-decoding
it into a Go struct and verifying a checksum; it falls back across format versions:

=========================  =======================================================  ==========
file                       versions (newest first)                                  checksum
=========================  =======================================================  ==========
``cpu_manager_state``      V4 (1.37+): V2 fields + ``data`` + ``dataChecksum``      data string
                           V3 (1.36, PodLevelResourceManagers on): V2 + podEntries  legacy
                           V2 (<= 1.36): policyName, defaultCpuSet, entries         legacy
                           V1 (ancient): entries keyed by container id              legacy
``memory_manager_state``   V3 (1.37+): V1 fields + ``data`` + ``dataChecksum``      data string
                           V2 (1.36, gate on): V1 + podEntries                      legacy
                           V1 (<= 1.36): policyName, machineState, entries          legacy
=========================  =======================================================  ==========

"legacy" = FNV-1a 32 over go-spew's rendering of the Go struct (:mod:`.gospew`); "data string"
= FNV-1a 32 over ``"(string)" + data``. Legacy checksum 0 means "no checksum" and is accepted.
A V3/V4 file (``data`` non-empty or ``dataChecksum`` non-zero) never falls back: any error in
it is fatal and its legacy top-level fields are ignored, even when they disagree.

The objects are plain data (frozen dataclasses holding plain dicts/lists) so that the memory and
CPU manager simulators can build their state from them and hand the same shape back for
writing; ``docs/state-files.md`` documents the shapes. ``dump(load(x)) == x`` for every file a
kubelet writes (key order, escaping, ``omitempty`` and NUMA ids sorted as strings included).
Standard library only; Python 3.8+.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.machine_state import Block
from ansible_collections.numaguard.kubelet.plugins.module_utils._io import write_file
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s import gojson, gospew
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_atoi, go_quote

CPU_MANAGER_STATE_FILE = "cpu_manager_state"
MEMORY_MANAGER_STATE_FILE = "memory_manager_state"

#: What a current kubelet (1.37+) writes.
LATEST_CPU_VERSION = 4
LATEST_MEMORY_VERSION = 3
CPU_VERSIONS = (1, 2, 3, 4)
MEMORY_VERSIONS = (1, 2, 3)

#: How a file's legacy ``checksum`` field was made: 0 ("no checksum"), or computed over the struct
#: named ``state.CPUManagerCheckpoint``/``state.MemoryManagerCheckpoint`` (what <= 1.35 writes and
#: every version accepts), or over the versioned name (``...CheckpointV1``, as 1.36 writes V1).
LEGACY_ZERO = "zero"
LEGACY_UNVERSIONED = "unversioned"
LEGACY_VERSIONED = "versioned"
LEGACY_KINDS = (LEGACY_ZERO, LEGACY_UNVERSIONED, LEGACY_VERSIONED)

#: The kubelet's ErrCorruptCheckpoint / CorruptCheckpointError text.
CORRUPTED = "checkpoint is corrupted"

_UINT64_MAX = (1 << 64) - 1
_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)

MEMORY_TABLE_KEYS = ("total", "systemReserved", "allocatable", "reserved", "free")
_TABLE_ALIASES = {"system_reserved": "systemReserved", "total_mem_size": "total"}


class CheckpointError(StateError):
    """A state file the kubelet would refuse to restore (message in the kubelet's words)."""


# --------------------------------------------------------------------------------------------
# Plain-data objects.
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CPUManagerCheckpoint:
    """Content of ``cpu_manager_state``.

    ``entries``: pod UID -> container name -> cpuset string. ``pod_entries``: pod UID -> cpuset
    string (pod-level exclusive CPUs, PodLevelResourceManagers). ``v1_entries``: container id ->
    cpuset of a V1 file that could not be migrated (no container list given). ``checksum_ok``:
    True when a checksum was verified, None when there was none to verify (0).
    ``legacy_checksum_ok`` (V4 only): whether the legacy top-level fields
    would satisfy an older kubelet. ``legacy_checksum_kind``: how the file's legacy ``checksum``
    was made (:data:`LEGACY_KINDS`, None if unknown); ``dump`` reproduces it for the same version.
    """

    policy_name: str
    default_cpu_set: str
    entries: Dict[str, Dict[str, str]] = field(default_factory=dict)
    pod_entries: Dict[str, str] = field(default_factory=dict)
    version: int = LATEST_CPU_VERSION
    checksum_ok: Optional[bool] = None
    legacy_checksum_ok: Optional[bool] = None
    v1_entries: Dict[str, str] = field(default_factory=dict)
    legacy_checksum_kind: Optional[str] = None


@dataclass(frozen=True)
class MemoryManagerCheckpoint:
    """Content of ``memory_manager_state``.

    ``machine_state``: NUMA id (int) -> ``{"numberOfAssignments": int, "memoryMap":
    {resource: {"total", "systemReserved", "allocatable", "reserved", "free"}}, "cells": [int]}``
    (the file's spelling; snake_case keys and objects with ``to_plain()`` are accepted for
    writing).
    ``entries``: pod UID -> container name -> list of :class:`Block`. ``pod_entries``: pod UID ->
    list of :class:`Block` (pod-level ``memoryBlocks``). ``checksum_ok``, ``legacy_checksum_ok``
    and ``legacy_checksum_kind`` as for :class:`CPUManagerCheckpoint`.
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

_S = gojson.string_type()
_RES = gojson.string_type("v1.ResourceName")
_U64 = gojson.uint_type()
_CK = gojson.uint_type("checksum.Checksum")
_INT = gojson.int_type()
_F = gojson.Field

_CPU_ENTRIES_V1 = gojson.map_type(_S, _S)
_CPU_ENTRIES = gojson.map_type(_S, gojson.map_type(_S, _S))
# A pod-level CPU entry is PodEntry{CPUSet cpuset.CPUSet} with its own JSON (un)marshaller that
# writes {"cpuSet": "<cpuset string>"} (omitempty). JSON side: the string. Checksum side: go-spew
# renders the cpuset.CPUSet struct itself, i.e. its unexported ``elems map[int]struct {}``.
_CPU_POD_ENTRY = gojson.struct_type("state.PodEntry", [_F("CPUSet", "cpuSet", _S, True)])
_CPU_POD_ENTRIES = gojson.map_type(_S, _CPU_POD_ENTRY, "state.PodCPUAssignments")
_CPUSET_STRUCT = gojson.struct_type("cpuset.CPUSet", [
    _F("elems", "elems", gojson.map_type(_INT, gojson.struct_type("struct {}", [])))])
_CPU_POD_ENTRIES_SPEW = gojson.map_type(
    _S, gojson.struct_type("state.PodEntry", [_F("CPUSet", "cpuSet", _CPUSET_STRUCT)]), "state.PodCPUAssignments")


def _checkpoint_struct(name: str,
                       state: gojson.Field,
                       entries_type: gojson.GoType,
                       pod_entries: Optional[gojson.GoType] = None,
                       checksum: bool = True,
                       data: bool = False) -> gojson.GoType:
    """A CPU or memory manager checkpoint struct, in the kubelet's field order.

    Why one builder: both managers' checkpoints (every version, and the V4/V3 ``Data``
    payloads) are PolicyName, the manager's own state field (``state``), Entries, then
    optionally PodEntries, Checksum and Data/DataChecksum.
    """
    fields = [_F("PolicyName", "policyName", _S), state, _F("Entries", "entries", entries_type, True)]
    if pod_entries is not None:
        fields.append(_F("PodEntries", "podEntries", pod_entries, True))
    if checksum:
        fields.append(_F("Checksum", "checksum", _CK))
    if data:
        fields += [_F("Data", "data", _S), _F("DataChecksum", "dataChecksum", _CK)]
    return gojson.struct_type(name, fields)


_CPU_STATE = _F("DefaultCPUSet", "defaultCpuSet", _S)


def _cpu_legacy_types(version: int) -> List[gojson.GoType]:
    """The struct a legacy checksum is computed over, under each name a kubelet has used."""
    names = ["state.CPUManagerCheckpoint", "state.CPUManagerCheckpointV%d" % version]
    entries = _CPU_ENTRIES_V1 if version == 1 else _CPU_ENTRIES
    return [_checkpoint_struct(n, _CPU_STATE, entries, pod_entries=_CPU_POD_ENTRIES_SPEW if version == 3 else None)
            for n in names]


def _cpu_json_type(version: int) -> gojson.GoType:
    """The struct a legacy version is decoded into / encoded from (JSON spelling)."""
    entries = _CPU_ENTRIES_V1 if version == 1 else _CPU_ENTRIES
    return _checkpoint_struct("state.CPUManagerCheckpoint", _CPU_STATE, entries,
                              pod_entries=_CPU_POD_ENTRIES if version == 3 else None)


def _cpu_hash_value(value: Dict[str, Any], version: int) -> Dict[str, Any]:
    """The decoded V3 value as go-spew sees it: pod cpusets parsed into cpuset.CPUSet elems."""
    if version != 3:
        return value
    result = dict(value)
    pods = value.get("PodEntries")
    if pods is not None:
        parsed = {}
        for pod, entry in pods.items():
            try:
                cpus = go_parse_cpuset(entry["CPUSet"])
            except ValueError as error:
                raise CheckpointError("could not parse cpuset %s of pod %s in podEntries: %s"
                                      % (go_quote(entry["CPUSet"]), go_quote(pod), error))
            parsed[pod] = {"CPUSet": {"elems": dict((cpu, {}) for cpu in cpus)}}
        result["PodEntries"] = parsed
    return result


_CPU_V4 = _checkpoint_struct("state.CPUManagerCheckpoint", _CPU_STATE, _CPU_ENTRIES, data=True)
_CPU_DATA = _checkpoint_struct("state.CPUManagerCheckpointData", _CPU_STATE, _CPU_ENTRIES,
                               pod_entries=_CPU_POD_ENTRIES, checksum=False)

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
    return [_checkpoint_struct(n, _MEM_STATE, _MEM_ENTRIES, pod_entries=_MEM_POD_ENTRIES if version == 2 else None)
            for n in names]


_MEM_V3 = _checkpoint_struct("state.MemoryManagerCheckpoint", _MEM_STATE, _MEM_ENTRIES, data=True)
_MEM_DATA = _checkpoint_struct("state.MemoryManagerCheckpointData", _MEM_STATE, _MEM_ENTRIES,
                               pod_entries=_MEM_POD_ENTRIES, checksum=False)


# --------------------------------------------------------------------------------------------
# Helpers.
# --------------------------------------------------------------------------------------------

def _legacy_kind(value: Dict[str, Any], types: List[gojson.GoType]) -> Optional[str]:
    """How ``value['Checksum']`` was made (a :data:`LEGACY_KINDS` entry), None if it does not verify."""
    expected = value["Checksum"]
    if expected == 0:
        return LEGACY_ZERO
    probe = dict(value)
    probe["Checksum"] = 0
    for kind, gotype in zip((LEGACY_UNVERSIONED, LEGACY_VERSIONED), types):
        if gospew.object_checksum(probe, gotype) == expected:
            return kind
    return None


def _legacy_checksum(value: Dict[str, Any], kind: str, types: List[gojson.GoType]) -> int:
    """The legacy checksum to write for ``value`` (its Checksum field must be 0)."""
    if kind == LEGACY_ZERO:
        return 0
    return gospew.object_checksum(value, types[0 if kind == LEGACY_UNVERSIONED else 1])


def _resolve_kind(cp: Any, version: int, override: Optional[str], default: str) -> str:
    """The legacy checksum kind to write: explicit, else the file's own (same version), else default."""
    if override is not None:
        if override not in LEGACY_KINDS:
            raise CheckpointError("legacy_checksum must be one of %s, got %r"
                                  % (", ".join("'%s'" % k for k in LEGACY_KINDS), override))
        return override
    if cp.version == version and cp.legacy_checksum_kind in LEGACY_KINDS:
        return cp.legacy_checksum_kind
    return default


def _decode(tree: Any,
            gotype: gojson.GoType,
            initial: Dict[str, Any]) -> Tuple[Dict[str, Any], Optional[gojson.GoJSONError]]:
    """Decode an already-parsed tree into ``gotype`` (pre-initialised), keeping the type error."""
    return gojson.decode_tree(tree, gotype, initial)


def _parse(data: Any) -> Any:
    try:
        return gojson.parse(data)
    except gojson.GoJSONError as error:
        raise CheckpointError(str(error))


def _has_key(tree: Any, name: str) -> bool:
    """True when the top-level object has a non-empty object under ``name`` (any case)."""
    if not isinstance(tree, gojson.JSONObject):
        return False
    folded = gojson.fold_name(name)
    for key, value in tree.pairs:
        if gojson.fold_name(key) == folded and isinstance(value, gojson.JSONObject) and value.pairs:
            return True
    return False


# --------------------------------------------------------------------------------------------
# cpu_manager_state
# --------------------------------------------------------------------------------------------

def _cpu_entries_plain(entries: Optional[Dict[str, Any]]) -> Dict[str, Dict[str, str]]:
    return dict((pod, dict(containers or {})) for pod, containers in (entries or {}).items())


def _cpu_pod_entries_plain(pod_entries: Optional[Dict[str, Any]]) -> Dict[str, str]:
    return dict((pod, entry["CPUSet"]) for pod, entry in (pod_entries or {}).items())


def load_cpu_manager_state(data: Any,
                           initial_containers: Optional[Mapping[str, Tuple[str, str]]] = None) -> CPUManagerCheckpoint:
    """Read ``cpu_manager_state`` content (str or bytes) as the kubelet does.

    ``initial_containers`` (container id -> (pod UID, container name)) migrates a V1 file's
    entries the way the kubelet does with the runtime's container list; without it V1 entries
    are kept in ``v1_entries``. Raises :class:`CheckpointError` with the kubelet's message.
    """
    tree = _parse(data)
    top, top_error = _decode(tree, _CPU_V4, {"Entries": {}})
    if top["Data"] or top["DataChecksum"]:
        return _load_cpu_v4(top, top_error)

    # V3 (1.36, gate on) also hashes an empty podEntries map, which the JSON omits: try it last
    candidates = [3, 2, 1] if _has_key(tree, "podEntries") else [2, 1, 3]
    report: Optional[str] = None
    for version in candidates:
        value, error = _decode(tree, _cpu_json_type(version), {"Entries": {}} if version != 3
                               else {"Entries": {}, "PodEntries": {}})
        kind = None
        if error is None:
            try:
                kind = _legacy_kind(_cpu_hash_value(value, version), _cpu_legacy_types(version))
            except CheckpointError as bad_cpuset:
                error = bad_cpuset  # type: ignore
        if error is not None:
            message = str(error)
        elif kind is not None:
            return _cpu_from_legacy(value, version, None if kind == LEGACY_ZERO else True, initial_containers,
                                    kind)
        else:
            message = CORRUPTED
        if version == 2 or report is None:
            report = message
    raise CheckpointError(report or CORRUPTED)


def _load_cpu_v4(top: Dict[str, Any],
                 top_error: Optional[gojson.GoJSONError]) -> CPUManagerCheckpoint:
    prefix = "could not load v4 checkpoint, no falling back to previous versions: "
    if top_error is not None:
        raise CheckpointError(prefix + "failed to deserialize cpu manager checkpoint: %s" % top_error)
    try:
        inner = gojson.unmarshal(top["Data"], _CPU_DATA)
    except gojson.GoJSONError as error:
        raise CheckpointError(prefix + "failed to deserialize cpu manager checkpoint data: %s" % error)
    if gospew.string_checksum(top["Data"]) != top["DataChecksum"]:
        raise CheckpointError(prefix + CORRUPTED)
    kind = _legacy_kind(top, _cpu_legacy_types(2))
    return CPUManagerCheckpoint(
        policy_name=inner["PolicyName"], default_cpu_set=inner["DefaultCPUSet"],
        entries=_cpu_entries_plain(inner["Entries"]),
        pod_entries=_cpu_pod_entries_plain(inner["PodEntries"]),
        version=4, checksum_ok=True, legacy_checksum_ok=kind is not None, legacy_checksum_kind=kind)


def _cpu_from_legacy(value: Dict[str, Any],
                     version: int,
                     checksum_ok: Optional[bool],
                     initial_containers: Optional[Mapping[str, Tuple[str, str]]],
                     kind: Optional[str]) -> CPUManagerCheckpoint:
    if version == 1:
        v1_entries = dict(value["Entries"] or {})
        entries: Dict[str, Dict[str, str]] = {}
        if initial_containers is not None:
            for container_id in sorted(v1_entries):
                if container_id not in initial_containers:
                    raise CheckpointError(
                        "error migrating v1 checkpoint state to v2 checkpoint state: containerID "
                        "'%s' not found in initial containers list" % container_id)
                pod_uid, name = initial_containers[container_id]
                entries.setdefault(pod_uid, {})[name] = v1_entries[container_id]
            v1_entries = {}
        return CPUManagerCheckpoint(policy_name=value["PolicyName"],
                                    default_cpu_set=value["DefaultCPUSet"], entries=entries,
                                    version=1, checksum_ok=checksum_ok, v1_entries=v1_entries,
                                    legacy_checksum_kind=kind)
    return CPUManagerCheckpoint(
        policy_name=value["PolicyName"], default_cpu_set=value["DefaultCPUSet"],
        entries=_cpu_entries_plain(value["Entries"]),
        pod_entries=_cpu_pod_entries_plain(value.get("PodEntries")),
        version=version, checksum_ok=checksum_ok, legacy_checksum_kind=kind)


def _check_str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise CheckpointError("%s must be a string, got %r" % (what, value))
    return value


def _go_entries(entries: Any,
                what: str,
                convert: Callable[[Any, str], Any]) -> Dict[str, Dict[str, Any]]:
    """Checked ``entries`` (pod UID -> container name -> ``convert(value, where)``) for dumping.

    Why one function: the CPU (value: a cpuset string) and memory (value: blocks) checkpoints
    nest their container entries the same way; ``what`` names the value in the error.
    """
    if not isinstance(entries, Mapping):
        raise CheckpointError("entries must be a mapping of pod UID to containers, got %r" % (entries,))
    result: Dict[str, Dict[str, Any]] = {}
    for pod, containers in entries.items():
        _check_str(pod, "entries pod UID")
        if not isinstance(containers, Mapping):
            raise CheckpointError("entries[%r] must be a mapping of container name to %s, got %r"
                                  % (pod, what, containers))
        result[pod] = dict((_check_str(name, "entries[%r] container name" % pod),
                            convert(value, "entries[%r][%r]" % (pod, name)))
                           for name, value in containers.items())
    return result


def _pod_cpuset(pod: str, value: Any) -> str:
    """A pod-level cpuset given as a string or as ``{"cpuSet"|"cpu_set": str}``."""
    if isinstance(value, Mapping):
        for key in ("cpuSet", "cpu_set", "CPUSet"):
            if key in value:
                return _check_str(value[key], "pod_entries[%r].%s" % (pod, key))
        raise CheckpointError("pod_entries[%r] has no cpuSet: %r" % (pod, value))
    return _check_str(value, "pod_entries[%r]" % pod)


def dump_cpu_manager_state(cp: CPUManagerCheckpoint,
                           version: Optional[int] = None,
                           v4_legacy_checksum: Optional[str] = None,
                           legacy_checksum: Optional[str] = None) -> str:
    """Serialise ``cp`` exactly as the kubelet writes ``cpu_manager_state`` in ``version``.

    ``version`` defaults to ``cp.version``. The legacy ``checksum`` field is made as in the file
    ``cp`` was read from when the version is the same (see ``legacy_checksum_kind``), else as
    the kubelet writes it: V1/V2 computed over ``state.CPUManagerCheckpoint``; V4 (which carries
    the V2 fields at top level for older kubelets) 0, "no checksum", accepted by every older
    reader. ``legacy_checksum`` ('zero' | 'unversioned' | 'versioned') overrides;
    ``v4_legacy_checksum='v2'`` is the older spelling of 'unversioned'. V3 is what 1.36 writes
    with PodLevelResourceManagers on (V2 + ``podEntries``).
    """
    if v4_legacy_checksum is not None:
        if v4_legacy_checksum not in ("zero", "v2"):
            raise CheckpointError("v4_legacy_checksum must be 'zero' or 'v2', got %r" % (v4_legacy_checksum,))
        legacy_checksum = LEGACY_ZERO if v4_legacy_checksum == "zero" else LEGACY_UNVERSIONED
    version = cp.version if version is None else version
    if version not in CPU_VERSIONS:
        raise CheckpointError("unsupported cpu_manager_state version %r (supported: %s)"
                              % (version, ", ".join(str(v) for v in CPU_VERSIONS)))
    policy = _check_str(cp.policy_name, "policy_name")
    default = _check_str(cp.default_cpu_set, "default_cpu_set")
    entries = _go_entries(cp.entries, "cpuset", _check_str)
    pod_entries = dict((_check_str(pod, "pod_entries pod UID"), {"CPUSet": _pod_cpuset(pod, cpus)})
                       for pod, cpus in (cp.pod_entries or {}).items())
    if version in (1, 2) and pod_entries:
        raise CheckpointError("cpu_manager_state version %d cannot hold podEntries (%d pods); "
                              "write version 3 or 4" % (version, len(pod_entries)))
    if version == 1:
        if entries:
            raise CheckpointError("cpu_manager_state version 1 keys entries by container id: "
                                  "put them in v1_entries, not entries")
        v1 = dict((_check_str(k, "v1_entries container id"), _check_str(v, "v1_entries[%r]" % k))
                  for k, v in (cp.v1_entries or {}).items())
        value = {"PolicyName": policy, "DefaultCPUSet": default, "Entries": v1, "Checksum": 0}
        types = _cpu_legacy_types(1)
        kind = _resolve_kind(cp, 1, legacy_checksum, LEGACY_UNVERSIONED)
        value["Checksum"] = _legacy_checksum(value, kind, types)
        return gojson.marshal(value, types[0])
    if cp.v1_entries:
        raise CheckpointError("v1_entries (container id keyed) can only be written as version 1; "
                              "migrate them to entries first")
    legacy = {"PolicyName": policy, "DefaultCPUSet": default, "Entries": entries, "Checksum": 0}
    if version == 3:
        legacy["PodEntries"] = pod_entries
        kind = _resolve_kind(cp, 3, legacy_checksum, LEGACY_UNVERSIONED)
        legacy["Checksum"] = _legacy_checksum(_cpu_hash_value(legacy, 3), kind, _cpu_legacy_types(3))
        return gojson.marshal(legacy, _cpu_json_type(3))
    v2_types = _cpu_legacy_types(2)
    if version == 2:
        kind = _resolve_kind(cp, 2, legacy_checksum, LEGACY_UNVERSIONED)
        legacy["Checksum"] = _legacy_checksum(legacy, kind, v2_types)
        return gojson.marshal(legacy, v2_types[0])
    kind = _resolve_kind(cp, 4, legacy_checksum, LEGACY_ZERO)
    legacy["Checksum"] = _legacy_checksum(legacy, kind, v2_types)
    data = gojson.marshal({"PolicyName": policy, "DefaultCPUSet": default, "Entries": entries,
                           "PodEntries": pod_entries}, _CPU_DATA)
    legacy["Data"] = data
    legacy["DataChecksum"] = gospew.string_checksum(data)
    return gojson.marshal(legacy, _CPU_V4)


# --------------------------------------------------------------------------------------------
# memory_manager_state
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
            raise CheckpointError("machineState entry of NUMA node %d is null" % node_id)
        memory_map = {}
        for resource, table in (node["MemoryMap"] or {}).items():
            if table is None:
                raise CheckpointError("machineState NUMA node %d memoryMap entry %s is null"
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
    tree = _parse(data)
    top, top_error = _decode(tree, _MEM_V3, {"Entries": {}, "MachineState": {}})
    if top["Data"] or top["DataChecksum"]:
        prefix = "could not load v3 checkpoint: "
        if top_error is not None:
            raise CheckpointError(prefix + "failed to deserialize memory manager checkpoint: %s" % top_error)
        try:
            inner = gojson.unmarshal(top["Data"], _MEM_DATA)
        except gojson.GoJSONError as error:
            raise CheckpointError(prefix + "failed to deserialize memory manager checkpoint data: %s"
                                  % error)
        if gospew.string_checksum(top["Data"]) != top["DataChecksum"]:
            raise CheckpointError(prefix + CORRUPTED)
        kind = _legacy_kind(top, _mem_legacy_types(1))
        return _mem_plain(inner, inner["PodEntries"], 3, True, kind is not None, kind)

    candidates = [2, 1] if _has_key(tree, "podEntries") else [1, 2]
    report: Optional[str] = None
    for version in candidates:
        types = _mem_legacy_types(version)
        initial: Dict[str, Any] = {"Entries": {}, "MachineState": {}}
        if version == 2:
            initial["PodEntries"] = {}
        value, error = _decode(tree, types[0], initial)
        kind = _legacy_kind(value, types) if error is None else None
        if error is not None:
            message = str(error)
        elif kind is not None:
            return _mem_plain(value, value.get("PodEntries"), version,
                              None if kind == LEGACY_ZERO else True, None, kind)
        else:
            message = CORRUPTED
        if report is None:
            report = message
    raise CheckpointError(report or CORRUPTED)


def _uint(value: Any, what: str, limit: int = _UINT64_MAX, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= limit:
        raise CheckpointError("%s must be an integer between %d and %d, got %r" % (what, low, limit, value))
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
        raise CheckpointError("%s must be a Block or a mapping, got %r" % (what, block))
    if affinity is None or isinstance(affinity, (str, bytes)):
        raise CheckpointError("%s numa_affinity must be a list of NUMA ids, got %r" % (what, affinity))
    return {"NUMAAffinity": [_numa_id(n, "%s numa_affinity" % what) for n in affinity],
            "Type": _check_str(rtype, "%s type" % what), "Size": _uint(size, "%s size" % what)}


def _go_blocks(blocks: Any, what: str) -> List[Dict[str, Any]]:
    if blocks is None or isinstance(blocks, (str, bytes, Mapping)):
        raise CheckpointError("%s must be a list of blocks, got %r" % (what, blocks))
    return [_go_block(b, "%s[%d]" % (what, i)) for i, b in enumerate(blocks)]


def _node_get(node: Mapping[str, Any], snake: str, camel: str, what: str) -> Any:
    if snake in node:
        return node[snake]
    if camel in node:
        return node[camel]
    raise CheckpointError("%s has no %s" % (what, snake))


def _go_machine_state(machine_state: Any) -> Dict[int, Dict[str, Any]]:
    if not isinstance(machine_state, Mapping):
        raise CheckpointError("machine_state must be a mapping of NUMA id to node state, got %r"
                              % (machine_state,))
    result: Dict[int, Dict[str, Any]] = {}
    for key, node in machine_state.items():
        node_id = _numa_id(key, "machine_state NUMA id")
        what = "machine_state[%d]" % node_id
        if hasattr(node, "to_plain"):
            node = node.to_plain()
        if not isinstance(node, Mapping):
            raise CheckpointError("%s must be a mapping, got %r" % (what, node))
        memory_map = _node_get(node, "memory_map", "memoryMap", what)
        if not isinstance(memory_map, Mapping):
            raise CheckpointError("%s memory_map must be a mapping, got %r" % (what, memory_map))
        tables = {}
        for resource, table in memory_map.items():
            twhat = "%s memory_map[%r]" % (what, resource)
            _check_str(resource, "%s memory_map key" % what)
            if hasattr(table, "to_plain"):
                table = table.to_plain()
            if not isinstance(table, Mapping):
                raise CheckpointError("%s must be a mapping, got %r" % (twhat, table))
            normal = dict((_TABLE_ALIASES.get(k, k), v) for k, v in table.items())
            missing = [k for k in MEMORY_TABLE_KEYS if k not in normal]
            if missing:
                raise CheckpointError("%s has no %s" % (twhat, ", ".join(missing)))
            tables[resource] = {"TotalMemSize": _uint(normal["total"], twhat + " total"),
                                "SystemReserved": _uint(normal["systemReserved"], twhat + " systemReserved"),
                                "Allocatable": _uint(normal["allocatable"], twhat + " allocatable"),
                                "Reserved": _uint(normal["reserved"], twhat + " reserved"),
                                "Free": _uint(normal["free"], twhat + " free")}
        cells = _node_get(node, "cells", "cells", what)
        if cells is None or isinstance(cells, (str, bytes, Mapping)):
            raise CheckpointError("%s cells must be a list of NUMA ids, got %r" % (what, cells))
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
        raise CheckpointError("unsupported memory_manager_state version %r (supported: %s)"
                              % (version, ", ".join(str(v) for v in MEMORY_VERSIONS)))
    policy = _check_str(cp.policy_name, "policy_name")
    machine = _go_machine_state(cp.machine_state)
    entries = _go_entries(cp.entries, "blocks", _go_blocks)
    if not isinstance(cp.pod_entries or {}, Mapping):
        raise CheckpointError("pod_entries must be a mapping of pod UID to blocks, got %r" % (cp.pod_entries,))
    # memoryBlocks is omitempty: an empty list reads back as nil, so it is written as nil (else
    # the legacy checksum, which tells nil from empty, would not verify on reading).
    pods = dict((_check_str(pod, "pod_entries pod UID"),
                 {"MemoryBlocks": _go_blocks(blocks, "pod_entries[%r]" % pod) or None})
                for pod, blocks in (cp.pod_entries or {}).items())
    if version == 1 and pods:
        raise CheckpointError("memory_manager_state version 1 cannot hold podEntries (%d pods); "
                              "write version 2 or 3" % len(pods))
    value = {"PolicyName": policy, "MachineState": machine, "Entries": entries, "Checksum": 0}
    kind = _resolve_kind(cp, version, legacy_checksum, LEGACY_UNVERSIONED)
    if version == 2:
        value["PodEntries"] = pods
        types = _mem_legacy_types(2)
        value["Checksum"] = _legacy_checksum(value, kind, types)
        return gojson.marshal(value, types[0])
    types = _mem_legacy_types(1)
    value["Checksum"] = _legacy_checksum(value, kind, types)
    if version == 1:
        return gojson.marshal(value, types[0])
    data = gojson.marshal({"PolicyName": policy, "MachineState": machine, "Entries": entries,
                           "PodEntries": pods}, _MEM_DATA)
    value["Data"] = data
    value["DataChecksum"] = gospew.string_checksum(data)
    return gojson.marshal(value, _MEM_V3)


# --------------------------------------------------------------------------------------------
# What the kubelet does at start-up with the files (restoreState), and a summary for discovery.
# --------------------------------------------------------------------------------------------

def go_parse_cpuset(text: str) -> frozenset:
    """k8s.io/utils/cpuset.Parse: the kubelet's strict reading of a cpuset in a state file.

    Stricter than :func:`...cpuset.parse_cpuset` (no whitespace) and with Go's error text, e.g.
    ``strconv.Atoi: parsing "1.3": invalid syntax``; raises ValueError.
    """
    if text == "":
        return frozenset()
    cpus = set()
    for part in text.split(","):
        bounds = part.split("-", 1)
        if len(bounds) == 1:
            cpus.add(go_atoi(bounds[0]))
            continue
        start, end = go_atoi(bounds[0]), go_atoi(bounds[1])
        if start > end:
            raise ValueError("invalid range %s (%d > %d)" % (go_quote(part), start, end))
        cpus.update(range(start, end + 1))
    return frozenset(cpus)


def _restore_wrap(message: str, manager: str, path: str) -> CheckpointError:
    return CheckpointError(
        "could not restore state from checkpoint: %s, please drain this node and delete the %s "
        "checkpoint file %s before restarting Kubelet" % (message, manager, go_quote(path)))


def restore_cpu_manager_state(data: Any,
                              policy_name: str,
                              path: str,
                              initial_containers: Optional[Mapping[str, Tuple[str, str]]] = None) -> Optional[CPUManagerCheckpoint]:
    """The CPU manager's restoreState: load, migrate, check policy and cpusets.

    ``data`` None means the file is absent (the kubelet then writes a fresh state; None is
    returned). Errors carry the kubelet's full start-up message ("could not restore state from
    checkpoint: ..., please drain this node and delete the CPU manager checkpoint file ...").
    """
    if data is None:
        return None
    try:
        cp = load_cpu_manager_state(data, initial_containers=initial_containers)
        if cp.version == 1 and cp.v1_entries:
            first = sorted(cp.v1_entries)[0]
            raise CheckpointError("error migrating v1 checkpoint state to v2 checkpoint state: "
                                  "containerID '%s' not found in initial containers list" % first)
        if cp.policy_name != policy_name:
            raise CheckpointError("configured policy %s differs from state checkpoint policy %s"
                                  % (go_quote(policy_name), go_quote(cp.policy_name)))
        try:
            go_parse_cpuset(cp.default_cpu_set)
        except ValueError as error:
            raise CheckpointError("could not parse default cpu set %s: %s"
                                  % (go_quote(cp.default_cpu_set), error))
        for pod in sorted(cp.entries):
            for name in sorted(cp.entries[pod]):
                cpus = cp.entries[pod][name]
                try:
                    go_parse_cpuset(cpus)
                except ValueError as error:
                    raise CheckpointError("could not parse cpuset %s for container %s in pod %s: %s"
                                          % (go_quote(cpus), go_quote(name), go_quote(pod), error))
    except CheckpointError as error:
        raise _restore_wrap(str(error), "CPU manager", path)
    return cp


def restore_memory_manager_state(data: Any,
                                 policy_name: str,
                                 path: str) -> Optional[MemoryManagerCheckpoint]:
    """The memory manager's restoreState: load and check the policy (None = absent file)."""
    if data is None:
        return None
    try:
        cp = load_memory_manager_state(data)
        if cp.policy_name != policy_name:
            raise CheckpointError("[memorymanager] configured policy %s differs from state "
                                  "checkpoint policy %s" % (go_quote(policy_name), go_quote(cp.policy_name)))
    except CheckpointError as error:
        raise _restore_wrap(str(error), "memory manager", path)
    return cp


def _kind_of(path: str, kind: Optional[str], text: str) -> str:
    if kind in ("cpu", "memory"):
        return kind
    base = os.path.basename(path)
    if base == CPU_MANAGER_STATE_FILE:
        return "cpu"
    if base == MEMORY_MANAGER_STATE_FILE:
        return "memory"
    return "memory" if re.search(r'"machinestate"', text, re.IGNORECASE) else "cpu"


def summarize_state_file(path: str, kind: Optional[str] = None) -> Dict[str, Any]:
    """Summarise a state file for discovery; never raises for a bad or missing file.

    Returns ``present``, ``kind`` ('cpu'|'memory'), ``policy_name``, ``version``,
    ``checksum_ok`` (True verified, None nothing to verify, False corrupt), ``error`` (the
    kubelet's message, or the I/O problem), ``entries`` (container assignments) and
    ``pod_entries`` counts. ``kind`` defaults from the file name, else from the content.
    """
    summary: Dict[str, Any] = {
        "path": path, "present": False, "kind": kind, "policy_name": None, "version": None,
        "checksum_ok": None, "legacy_checksum_ok": None, "error": None, "entries": 0,
        "pod_entries": 0}
    if kind is not None and kind not in ("cpu", "memory"):
        summary["error"] = "kind must be 'cpu' or 'memory', got %r" % (kind,)
        return summary
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as error:
        if getattr(error, "errno", None) == 2 and not os.path.lexists(path):
            summary["kind"] = _kind_of(path, kind, "")
            return summary
        summary["present"] = os.path.lexists(path)
        summary["kind"] = _kind_of(path, kind, "")
        summary["error"] = "cannot read %s: %s" % (path, getattr(error, "strerror", None) or error)
        return summary
    summary["present"] = True
    text = gojson.to_text(raw)
    summary["kind"] = _kind_of(path, kind, text)
    try:
        if summary["kind"] == "cpu":
            cpu = load_cpu_manager_state(raw)
            summary["policy_name"], summary["version"] = cpu.policy_name, cpu.version
            summary["checksum_ok"], summary["legacy_checksum_ok"] = cpu.checksum_ok, cpu.legacy_checksum_ok
            summary["entries"] = sum(len(c) for c in cpu.entries.values()) + len(cpu.v1_entries)
            summary["pod_entries"] = len(cpu.pod_entries)
        else:
            mem = load_memory_manager_state(raw)
            summary["policy_name"], summary["version"] = mem.policy_name, mem.version
            summary["checksum_ok"], summary["legacy_checksum_ok"] = mem.checksum_ok, mem.legacy_checksum_ok
            summary["entries"] = sum(len(c) for c in mem.entries.values())
            summary["pod_entries"] = len(mem.pod_entries)
    except CheckpointError as error:
        summary["error"] = str(error)
        summary["checksum_ok"] = False if CORRUPTED in str(error) else None
    return summary


def write_state_file(path: str, content: str, mode: Optional[int] = None) -> None:
    """Write ``content`` to ``path`` durably (:func:`..._io.write_file`), as the kubelet's file store
    does: a reader never sees a half-written file. ``mode`` defaults to the existing file's mode,
    else 0o644."""
    write_file(path, content.encode("utf-8", "surrogatepass"), mode)


def checkpoint_to_dict(cp: Any) -> Dict[str, Any]:
    """A JSON-ready dict of a checkpoint object (for module results); NUMA ids as ints."""
    if isinstance(cp, CPUManagerCheckpoint):
        return {"policy_name": cp.policy_name, "default_cpu_set": cp.default_cpu_set,
                "entries": _cpu_entries_plain(cp.entries), "pod_entries": dict(cp.pod_entries),
                "version": cp.version, "checksum_ok": cp.checksum_ok,
                "legacy_checksum_ok": cp.legacy_checksum_ok, "v1_entries": dict(cp.v1_entries),
                "legacy_checksum_kind": cp.legacy_checksum_kind}
    if isinstance(cp, MemoryManagerCheckpoint):
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
    raise TypeError("not a checkpoint: %r" % (cp,))
