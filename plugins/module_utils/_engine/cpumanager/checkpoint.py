# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kubelet's ``cpu_manager_state`` file, byte for byte (pkg/kubelet/cm/cpumanager/state:
``checkpoint.go`` for the formats, ``state_checkpoint.go`` for restoreState).

Why: the admission checker must start from the same state the kubelet would restore, refuse
what the kubelet refuses (with the kubelet's words), and be able to write a file the kubelet
accepts after a what-if sequence. The kubelet JSON-decodes the file into a Go struct, verifies
a checksum and falls back across format versions:

=======  ===================================================  ===========
version  content                                              checksum
=======  ===================================================  ===========
V4       (1.37+) V2 fields + ``data`` + ``dataChecksum``      data string
V3       (1.36, PodLevelResourceManagers on) V2 + podEntries  legacy
V2       (<= 1.36) policyName, defaultCpuSet, entries         legacy
V1       (ancient) entries keyed by container id              legacy
=======  ===================================================  ===========

The checksums, the error and the struct layout shared with ``memory_manager_state`` are in
:mod:`..checkpointmanager`. A V4 file (``data`` non-empty or ``dataChecksum`` non-zero) never
falls back: any error in it is fatal and its legacy top-level fields are ignored, even when they
disagree. ``dump(load(x)) == x`` for every file a kubelet writes; ``docs/state-files.md``
documents the shapes. Standard library only; Python 3.8+.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine import checkpointmanager as cm
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s import gojson, gospew
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_atoi, go_quote

CPU_MANAGER_STATE_FILE = "cpu_manager_state"

#: What a current kubelet (1.37+) writes.
LATEST_CPU_VERSION = 4
CPU_VERSIONS = (1, 2, 3, 4)


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


# --------------------------------------------------------------------------------------------
# The Go structs (names as go-spew prints them).
# --------------------------------------------------------------------------------------------

_S = cm.STRING
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

_CPU_STATE = _F("DefaultCPUSet", "defaultCpuSet", _S)


def _cpu_legacy_types(version: int) -> List[gojson.GoType]:
    """The struct a legacy checksum is computed over, under each name a kubelet has used."""
    names = ["state.CPUManagerCheckpoint", "state.CPUManagerCheckpointV%d" % version]
    entries = _CPU_ENTRIES_V1 if version == 1 else _CPU_ENTRIES
    return [cm.checkpoint_struct(n, _CPU_STATE, entries, pod_entries=_CPU_POD_ENTRIES_SPEW if version == 3 else None)
            for n in names]


def _cpu_json_type(version: int) -> gojson.GoType:
    """The struct a legacy version is decoded into / encoded from (JSON spelling)."""
    entries = _CPU_ENTRIES_V1 if version == 1 else _CPU_ENTRIES
    return cm.checkpoint_struct("state.CPUManagerCheckpoint", _CPU_STATE, entries,
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
                raise cm.CheckpointError("could not parse cpuset %s of pod %s in podEntries: %s"
                                         % (go_quote(entry["CPUSet"]), go_quote(pod), error))
            parsed[pod] = {"CPUSet": {"elems": dict((cpu, {}) for cpu in cpus)}}
        result["PodEntries"] = parsed
    return result


_CPU_V4 = cm.checkpoint_struct("state.CPUManagerCheckpoint", _CPU_STATE, _CPU_ENTRIES, data=True)
_CPU_DATA = cm.checkpoint_struct("state.CPUManagerCheckpointData", _CPU_STATE, _CPU_ENTRIES,
                                 pod_entries=_CPU_POD_ENTRIES, checksum=False)


# --------------------------------------------------------------------------------------------
# Reading and writing.
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
    tree = cm.parse(data)
    top, top_error = cm.decode(tree, _CPU_V4, {"Entries": {}})
    if top["Data"] or top["DataChecksum"]:
        return _load_cpu_v4(top, top_error)

    # V3 (1.36, gate on) also hashes an empty podEntries map, which the JSON omits: try it last
    candidates = [3, 2, 1] if cm.has_key(tree, "podEntries") else [2, 1, 3]
    report: Optional[str] = None
    for version in candidates:
        value, decode_error = cm.decode(tree, _cpu_json_type(version), {"Entries": {}} if version != 3
                                        else {"Entries": {}, "PodEntries": {}})
        error: Optional[Exception] = decode_error
        kind = None
        if error is None:
            try:
                kind = cm.legacy_kind(_cpu_hash_value(value, version), _cpu_legacy_types(version))
            except cm.CheckpointError as bad_cpuset:
                error = bad_cpuset
        if error is not None:
            message = str(error)
        elif kind is not None:
            return _cpu_from_legacy(value, version, None if kind == cm.LEGACY_ZERO else True, initial_containers,
                                    kind)
        else:
            message = cm.CORRUPTED
        if version == 2 or report is None:
            report = message
    raise cm.CheckpointError(report or cm.CORRUPTED)


def _load_cpu_v4(top: Dict[str, Any],
                 top_error: Optional[gojson.GoJSONError]) -> CPUManagerCheckpoint:
    inner = cm.load_data(top, top_error, _CPU_DATA, "could not load v4 checkpoint, no falling back to previous versions: ",
                         "cpu manager")
    kind = cm.legacy_kind(top, _cpu_legacy_types(2))
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
                    raise cm.CheckpointError(
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


def _pod_cpuset(pod: str, value: Any) -> str:
    """A pod-level cpuset given as a string or as ``{"cpuSet"|"cpu_set": str}``."""
    if isinstance(value, Mapping):
        for key in ("cpuSet", "cpu_set", "CPUSet"):
            if key in value:
                return cm.check_str(value[key], "pod_entries[%r].%s" % (pod, key))
        raise cm.CheckpointError("pod_entries[%r] has no cpuSet: %r" % (pod, value))
    return cm.check_str(value, "pod_entries[%r]" % pod)


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
            raise cm.CheckpointError("v4_legacy_checksum must be 'zero' or 'v2', got %r" % (v4_legacy_checksum,))
        legacy_checksum = cm.LEGACY_ZERO if v4_legacy_checksum == "zero" else cm.LEGACY_UNVERSIONED
    version = cp.version if version is None else version
    if version not in CPU_VERSIONS:
        raise cm.CheckpointError("unsupported cpu_manager_state version %r (supported: %s)"
                                 % (version, ", ".join(str(v) for v in CPU_VERSIONS)))
    policy = cm.check_str(cp.policy_name, "policy_name")
    default = cm.check_str(cp.default_cpu_set, "default_cpu_set")
    entries = cm.go_entries(cp.entries, "cpuset", cm.check_str)
    pod_entries = dict((cm.check_str(pod, "pod_entries pod UID"), {"CPUSet": _pod_cpuset(pod, cpus)})
                       for pod, cpus in (cp.pod_entries or {}).items())
    if version in (1, 2) and pod_entries:
        raise cm.CheckpointError("cpu_manager_state version %d cannot hold podEntries (%d pods); "
                                 "write version 3 or 4" % (version, len(pod_entries)))
    if version == 1:
        if entries:
            raise cm.CheckpointError("cpu_manager_state version 1 keys entries by container id: "
                                     "put them in v1_entries, not entries")
        v1 = dict((cm.check_str(k, "v1_entries container id"), cm.check_str(v, "v1_entries[%r]" % k))
                  for k, v in (cp.v1_entries or {}).items())
        value = {"PolicyName": policy, "DefaultCPUSet": default, "Entries": v1, "Checksum": 0}
        types = _cpu_legacy_types(1)
        kind = cm.resolve_kind(cp, 1, legacy_checksum, cm.LEGACY_UNVERSIONED)
        value["Checksum"] = cm.make_legacy_checksum(value, kind, types)
        return gojson.marshal(value, types[0])
    if cp.v1_entries:
        raise cm.CheckpointError("v1_entries (container id keyed) can only be written as version 1; "
                                 "migrate them to entries first")
    legacy = {"PolicyName": policy, "DefaultCPUSet": default, "Entries": entries, "Checksum": 0}
    if version == 3:
        legacy["PodEntries"] = pod_entries
        kind = cm.resolve_kind(cp, 3, legacy_checksum, cm.LEGACY_UNVERSIONED)
        legacy["Checksum"] = cm.make_legacy_checksum(_cpu_hash_value(legacy, 3), kind, _cpu_legacy_types(3))
        return gojson.marshal(legacy, _cpu_json_type(3))
    v2_types = _cpu_legacy_types(2)
    if version == 2:
        kind = cm.resolve_kind(cp, 2, legacy_checksum, cm.LEGACY_UNVERSIONED)
        legacy["Checksum"] = cm.make_legacy_checksum(legacy, kind, v2_types)
        return gojson.marshal(legacy, v2_types[0])
    kind = cm.resolve_kind(cp, 4, legacy_checksum, cm.LEGACY_ZERO)
    legacy["Checksum"] = cm.make_legacy_checksum(legacy, kind, v2_types)
    data = gojson.marshal({"PolicyName": policy, "DefaultCPUSet": default, "Entries": entries,
                           "PodEntries": pod_entries}, _CPU_DATA)
    legacy["Data"] = data
    legacy["DataChecksum"] = gospew.string_checksum(data)
    return gojson.marshal(legacy, _CPU_V4)


# --------------------------------------------------------------------------------------------
# What the kubelet does with the file at start-up (restoreState).
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
            raise cm.CheckpointError("error migrating v1 checkpoint state to v2 checkpoint state: "
                                     "containerID '%s' not found in initial containers list" % first)
        if cp.policy_name != policy_name:
            raise cm.CheckpointError("configured policy %s differs from state checkpoint policy %s"
                                     % (go_quote(policy_name), go_quote(cp.policy_name)))
        try:
            go_parse_cpuset(cp.default_cpu_set)
        except ValueError as error:
            raise cm.CheckpointError("could not parse default cpu set %s: %s"
                                     % (go_quote(cp.default_cpu_set), error))
        for pod in sorted(cp.entries):
            for name in sorted(cp.entries[pod]):
                cpus = cp.entries[pod][name]
                try:
                    go_parse_cpuset(cpus)
                except ValueError as error:
                    raise cm.CheckpointError("could not parse cpuset %s for container %s in pod %s: %s"
                                             % (go_quote(cpus), go_quote(name), go_quote(pod), error))
    except cm.CheckpointError as error:
        raise cm.restore_error(str(error), "CPU manager", path)
    return cp


def checkpoint_to_dict(cp: CPUManagerCheckpoint) -> Dict[str, Any]:
    """A JSON-ready dict of a checkpoint object (for module results)."""
    return {"policy_name": cp.policy_name, "default_cpu_set": cp.default_cpu_set,
            "entries": _cpu_entries_plain(cp.entries), "pod_entries": dict(cp.pod_entries),
            "version": cp.version, "checksum_ok": cp.checksum_ok,
            "legacy_checksum_ok": cp.legacy_checksum_ok, "v1_entries": dict(cp.v1_entries),
            "legacy_checksum_kind": cp.legacy_checksum_kind}
