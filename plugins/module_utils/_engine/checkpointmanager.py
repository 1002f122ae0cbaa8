# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the CPU and memory manager state files share: the checkpoint error, the legacy checksum
and the struct layout (pkg/kubelet/checkpointmanager: ``checksum/checksum.go``,
``errors/errors.go``).

Each manager's own file format lives next to its manager, as in the kubelet's
``pkg/kubelet/cm/<manager>/state/checkpoint.go``: :mod:`.cpumanager.checkpoint`
(``cpu_manager_state`` V1-V4) and :mod:`.memorymanager.checkpoint` (``memory_manager_state``
V1-V3); ``docs/state-files.md`` describes both. This module holds the pieces both use.

"legacy" checksum = FNV-1a 32 over go-spew's rendering of the Go struct (:mod:`..._k8s.gospew`)
with its ``Checksum`` field 0; a legacy checksum of 0 means "no checksum" and is accepted.
"data string" checksum (V4 CPU, V3 memory) = FNV-1a 32 over ``"(string)" + data``.
Standard library only; Python 3.8+.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections.abc import Mapping
from typing import Any, Callable, Dict, List, Optional, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._io import write_file
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s import gojson, gospew
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_quote

#: How a file's legacy ``checksum`` field was made: 0 ("no checksum"), or computed over the struct
#: named ``state.CPUManagerCheckpoint``/``state.MemoryManagerCheckpoint`` (what <= 1.35 writes and
#: every version accepts), or over the versioned name (``...CheckpointV1``, as 1.36 writes V1).
LEGACY_ZERO = "zero"
LEGACY_UNVERSIONED = "unversioned"
LEGACY_VERSIONED = "versioned"
LEGACY_KINDS = (LEGACY_ZERO, LEGACY_UNVERSIONED, LEGACY_VERSIONED)

#: The kubelet's ErrCorruptCheckpoint / CorruptCheckpointError text.
CORRUPTED = "checkpoint is corrupted"

STRING = gojson.string_type()
_CHECKSUM = gojson.uint_type("checksum.Checksum")
_F = gojson.Field


class CheckpointError(StateError):
    """A state file the kubelet would refuse to restore (message in the kubelet's words)."""


def checkpoint_struct(name: str,
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
    fields = [_F("PolicyName", "policyName", STRING), state, _F("Entries", "entries", entries_type, True)]
    if pod_entries is not None:
        fields.append(_F("PodEntries", "podEntries", pod_entries, True))
    if checksum:
        fields.append(_F("Checksum", "checksum", _CHECKSUM))
    if data:
        fields += [_F("Data", "data", STRING), _F("DataChecksum", "dataChecksum", _CHECKSUM)]
    return gojson.struct_type(name, fields)


def legacy_kind(value: Dict[str, Any], types: List[gojson.GoType]) -> Optional[str]:
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


def make_legacy_checksum(value: Dict[str, Any], kind: str, types: List[gojson.GoType]) -> int:
    """The legacy checksum to write for ``value`` (its Checksum field must be 0)."""
    if kind == LEGACY_ZERO:
        return 0
    return gospew.object_checksum(value, types[0 if kind == LEGACY_UNVERSIONED else 1])


def resolve_kind(cp: Any, version: int, override: Optional[str], default: str) -> str:
    """The legacy checksum kind to write: explicit, else the file's own (same version), else default."""
    if override is not None:
        if override not in LEGACY_KINDS:
            raise CheckpointError("legacy_checksum must be one of %s, got %r"
                                  % (", ".join("'%s'" % k for k in LEGACY_KINDS), override))
        return override
    if cp.version == version and cp.legacy_checksum_kind in LEGACY_KINDS:
        return cp.legacy_checksum_kind
    return default


def decode(tree: Any,
           gotype: gojson.GoType,
           initial: Dict[str, Any]) -> Tuple[Dict[str, Any], Optional[gojson.GoJSONError]]:
    """Decode an already-parsed tree into ``gotype`` (pre-initialised), keeping the type error."""
    return gojson.decode_tree(tree, gotype, initial)


def parse(data: Any) -> Any:
    """The JSON tree of a state file's content (str or bytes); Go's syntax errors."""
    try:
        return gojson.parse(data)
    except gojson.GoJSONError as error:
        raise CheckpointError(str(error))


def has_key(tree: Any, name: str) -> bool:
    """True when the top-level object has a non-empty object under ``name`` (any case)."""
    if not isinstance(tree, gojson.JSONObject):
        return False
    folded = gojson.fold_name(name)
    for key, value in tree.pairs:
        if gojson.fold_name(key) == folded and isinstance(value, gojson.JSONObject) and value.pairs:
            return True
    return False


def load_data(top: Dict[str, Any],
              top_error: Optional[gojson.GoJSONError],
              data_type: gojson.GoType,
              prefix: str,
              manager: str) -> Dict[str, Any]:
    """The ``data`` payload of a V4 CPU / V3 memory file decoded into ``data_type``, its data
    checksum verified; ``top`` is the file decoded with ``top_error``. Such a file never falls
    back to an older version: every error is fatal, worded as the kubelet words it
    (``prefix``, then "failed to deserialize <manager> checkpoint[ data]: ..." or the corruption)."""
    if top_error is not None:
        raise CheckpointError(prefix + "failed to deserialize %s checkpoint: %s" % (manager, top_error))
    try:
        inner = gojson.unmarshal(top["Data"], data_type)
    except gojson.GoJSONError as error:
        raise CheckpointError(prefix + "failed to deserialize %s checkpoint data: %s" % (manager, error))
    if gospew.string_checksum(top["Data"]) != top["DataChecksum"]:
        raise CheckpointError(prefix + CORRUPTED)
    return inner


def check_str(value: Any, what: str) -> str:
    if not isinstance(value, str):
        raise CheckpointError("%s must be a string, got %r" % (what, value))
    return value


def go_entries(entries: Any,
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
        check_str(pod, "entries pod UID")
        if not isinstance(containers, Mapping):
            raise CheckpointError("entries[%r] must be a mapping of container name to %s, got %r"
                                  % (pod, what, containers))
        result[pod] = dict((check_str(name, "entries[%r] container name" % pod),
                            convert(value, "entries[%r][%r]" % (pod, name)))
                           for name, value in containers.items())
    return result


def restore_error(message: str, manager: str, path: str) -> CheckpointError:
    """The error a manager's restoreState fails the kubelet's start-up with."""
    return CheckpointError(
        "could not restore state from checkpoint: %s, please drain this node and delete the %s "
        "checkpoint file %s before restarting Kubelet" % (message, manager, go_quote(path)))


def write_state_file(path: str, content: str, mode: Optional[int] = None) -> None:
    """Write ``content`` to ``path`` durably (:func:`..._io.write_file`), as the kubelet's file store
    does: a reader never sees a half-written file. ``mode`` defaults to the existing file's mode,
    else 0o644."""
    write_file(path, content.encode("utf-8", "surrogatepass"), mode)
