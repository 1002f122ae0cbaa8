# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Boot drift report: would the Static memory manager start with its state file on the machine as
it is now (``memory_drift.py`` holds the KEP-6232 tolerance rule; this file sits above
``memory_manager.py`` and ``validate_state.py``, which it drives, so nothing imports back)."""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.machine_state import (
    MEMORY,
    NUMANodeState,
    default_machine_state,
    entries_from_plain,
    machine_state_from_plain,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.memory_drift import (
    DriftOptionError,
    drift_tolerance,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.memory_manager import system_reserved_from_config
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.validate_state import MemoryStateError, validate_state
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import format_bytes
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import NEWEST_RELEASED


def _rows(stored: Mapping[int, NUMANodeState], current: Mapping[int, NUMANodeState], bound: int) -> List[Dict[str, Any]]:
    rows = []
    for node_id in sorted(set(stored) | set(current)):
        was, now = stored.get(node_id), current.get(node_id)
        for name in sorted(set(was.memory_map if was else {}) | set(now.memory_map if now else {})):
            before = was.memory_map.get(name) if was else None
            after = now.memory_map.get(name) if now else None
            row: Dict[str, Any] = {"numa_node": node_id, "type": name,
                                   "state_total": None if before is None else before.total,
                                   "machine_total": None if after is None else after.total,
                                   "difference": None, "within_bound": False}
            if before is None or after is None:
                row["difference_human"] = "missing in the %s" % ("state file" if before is None else "machine")
            else:
                difference = after.total - before.total
                row["difference"] = difference
                row["difference_human"] = ("+" if difference >= 0 else "-") + format_bytes(abs(difference))
                row["within_bound"] = name == MEMORY and bound > 0 and abs(difference) <= bound
            rows.append(row)
    return rows


def boot_drift(topology: Any, kubelet_config: Mapping[str, Any], checkpoint: Any,
               proc_iomem: Optional[str] = None, memory_capacity_bytes: Optional[int] = None,
               version: Tuple[int, ...] = NEWEST_RELEASED) -> Dict[str, Any]:
    """Would the Static memory manager start with ``checkpoint`` on the machine as it is now?

    ``topology``: the machine now (sysfs); ``checkpoint``: the restored ``memory_manager_state``
    (None: no file). Returns ``checked`` (false with a ``reason`` when there is nothing to
    compare), ``nodes`` (per node and type: ``state_total``, ``machine_total``, ``difference``
    bytes and ``difference_human``, ``within_bound``), ``memory_sum_difference`` (over nodes; 0
    for a pure KASLR move), ``tolerance``, ``starts``, ``how`` (``exact``, ``tolerated`` =
    re-baselined, ``refused``), ``message`` / ``detail`` (the kubelet's error and what differs),
    and ``starts_without_tolerance``. ``version``: the kubelet release deciding the policy options
    (default: the newest released, like every engine default).
    """
    policy = kubelet_config.get("memoryManagerPolicy") or "None"
    if policy != "Static":
        return {"checked": False, "reason": "memory manager policy %s keeps no machine state" % policy}
    if checkpoint is None:
        return {"checked": False, "reason": "no memory_manager_state: the kubelet starts fresh"}
    stored = machine_state_from_plain(getattr(checkpoint, "machine_state", None) or {})
    if not stored:
        return {"checked": False, "reason": "the state file has no machine state: the kubelet builds a fresh one"}
    entries = entries_from_plain(getattr(checkpoint, "entries", None) or {})
    try:
        tolerance = drift_tolerance(kubelet_config, proc_iomem, version)
    except DriftOptionError as exc:
        return {"checked": False, "reason": "the kubelet does not start: %s" % exc, "starts": False,
                "how": "refused", "message": str(exc), "detail": None, "starts_without_tolerance": None}
    system_reserved = system_reserved_from_config(topology, kubelet_config, memory_capacity_bytes)
    current = default_machine_state(topology, system_reserved)
    report: Dict[str, Any] = {"checked": True, "nodes": _rows(stored, current, tolerance.bound),
                              "tolerance": tolerance.to_dict()}
    report["memory_sum_difference"] = sum(row["difference"] for row in report["nodes"]
                                          if row["type"] == MEMORY and row["difference"] is not None)
    try:
        validate_state(stored, entries, current)
        report.update({"starts": True, "how": "exact", "message": None, "detail": None,
                       "starts_without_tolerance": True})
        return report
    except MemoryStateError as exc:
        report.update({"starts": False, "how": "refused", "message": str(exc), "detail": exc.detail,
                       "starts_without_tolerance": False})
    if tolerance.bound:
        try:
            validate_state(stored, entries, current, tolerance.bound)
            report.update({"starts": True, "how": "tolerated", "message": None})
        except MemoryStateError as exc:
            report["detail"] = exc.detail
    return report
