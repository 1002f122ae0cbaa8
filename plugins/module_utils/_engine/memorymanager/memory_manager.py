# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Building the Memory Manager the way the kubelet does at start-up (pkg/kubelet/cm/memorymanager/memory_manager.go NewManager, Start).

:func:`new_memory_manager` takes the host topology, the effective KubeletConfiguration (plain
camelCase dict) and the restored ``memory_manager_state`` (or None for a fresh node) and returns
the hint provider: :class:`MemoryManagerStatic` or :class:`MemoryManagerNone`. It fails, with the
kubelet's message, exactly where the kubelet would refuse to start:

1. construction: unknown policy; ``BestEffort`` (Windows only); with ``Static``: reservedMemory
   naming a missing NUMA node, reservedMemory totals different from the Node Allocatable
   reservation, values that are not int64, no reserved ``memory`` at all;
2. state restore: the state file's policy differs from the configured one (wrapped in "could
   not restore state from checkpoint: ..., please drain this node and delete ...");
3. ``Static`` start: ``validateState`` (empty machine state with assignments; machine state that
   does not match the replayed assignments).

Pod-level entries (``podEntries``, KEP-5526): restored only with PodLevelResourceManagers on
(``state_checkpoint.go`` restoreState); ``validateState`` then replays a pod's pod-level blocks
instead of its containers' blocks (:func:`.validate_state.restored_assignments`). With the gate
off they are dropped, and the containers' blocks of a pod-level pod usually add up to more than
the machine state holds: the kubelet then refuses to start ("the expected machine state is
different from the real one").
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import os

try:
    from typing import Any, Dict, Mapping, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.memory_drift import (
    drift_tolerance,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.policy_none import (
    POLICY_BEST_EFFORT,
    POLICY_NONE,
    POLICY_STATIC,
    MemoryManagerNone,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.node_allocatable import reservation_from_config
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import ReservationSyntaxError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import InvalidCPUSet, parse_cpuset
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import CPU, MEMORY
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import MEMORY_STATE_GROUP_SUMS, NEWEST_RELEASED, behaviour

# The Static policy, the reserved-memory model, the state's model and validateState are imported
# where they are used: a run under the None policy on a node without a state file compiles none
# of them (issue 12).

STATE_FILE_NAME = "memory_manager_state"
DEFAULT_ROOT_DIR = "/var/lib/kubelet"


class MemoryManagerConfigError(StateError):
    """A memory manager configuration the kubelet refuses to start with."""


def _checkpoint_field(checkpoint: Any, *names: str) -> Any:
    """Read a field from a checkpoint object (attributes) or a plain mapping (any spelling)."""
    for name in names:
        if isinstance(checkpoint, Mapping):
            if name in checkpoint:
                return checkpoint[name]
        elif hasattr(checkpoint, name):
            return getattr(checkpoint, name)
    return None


def _reserved_cpus_count(kubelet_config: Mapping[str, Any]) -> Optional[int]:
    text = kubelet_config.get("reservedSystemCPUs")
    if not text:
        return None
    try:
        return len(parse_cpuset(str(text)))
    except InvalidCPUSet as exc:
        raise MemoryManagerConfigError("reservedSystemCPUs: %s" % exc)


def system_reserved_from_config(topology: Any,
                                kubelet_config: Mapping[str, Any],
                                memory_capacity_bytes: Optional[int] = None,
                                allocatable_reservation: Optional[Mapping[str, Any]] = None,
                                feature_gates: Optional[Mapping[str, Any]] = None) -> Dict[int, Dict[str, int]]:
    """Per-node reserved bytes per type for the Static policy, after the kubelet's checks.

    ``allocatable_reservation`` overrides the Node Allocatable reservation computed from
    systemReserved + kubeReserved + hard eviction (resource name -> Quantity).
    ``memory_capacity_bytes`` is the machine's memory capacity for percentage eviction
    thresholds (the kubelet uses /proc/meminfo MemTotal; default: the sum of the nodes).
    ``feature_gates``: the effective gates (``SystemReservedHugepages``; default: the config's).
    """
    # the reserved-memory model is imported where the Static policy needs it (issue 12)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.reserved import (
        ReservedMemoryError,
        parse_reserved_memory_config,
        require_system_reserved_memory,
        system_reserved_memory,
    )

    node_ids = [node.id for node in topology.nodes]
    try:
        reservations = parse_reserved_memory_config(kubelet_config.get("reservedMemory"))
        if allocatable_reservation is None:
            capacity = memory_capacity_bytes
            if capacity is None:
                capacity = sum(node.memory_total_bytes for node in topology.nodes)
            names = [CPU, MEMORY] + list(topology.hugepage_sizes())
            allocatable_reservation = reservation_from_config(
                kubelet_config, names, capacity, _reserved_cpus_count(kubelet_config), feature_gates)
    except ReservationSyntaxError as exc:
        raise ReservedMemoryError(str(exc))
    system_reserved = system_reserved_memory(node_ids, allocatable_reservation, reservations)
    require_system_reserved_memory(system_reserved)
    return system_reserved


def new_memory_manager(topology: Any, kubelet_config: Mapping[str, Any], checkpoint: Any = None,
                       state_file: Optional[str] = None, feature_gates: Optional[Mapping[str, bool]] = None,
                       memory_capacity_bytes: Optional[int] = None, allocatable_reservation: Optional[Mapping[str, Any]] = None,
                       proc_iomem: Optional[str] = None, version: Tuple[int, ...] = NEWEST_RELEASED) -> Any:
    """The memory manager provider for a node, or :class:`StateError` where the kubelet would not start.

    ``checkpoint``: the restored ``memory_manager_state`` -- an object with ``policy_name``,
    ``machine_state`` and ``entries`` (plain data, int or str NUMA keys), or a mapping with
    those keys (``policyName``/``machineState`` spellings accepted); None for a node without
    the file. ``state_file`` names the file in messages (default:
    ``<rootDir or /var/lib/kubelet>/memory_manager_state``). ``feature_gates`` defaults to the
    config's ``featureGates``. ``proc_iomem``: the host's ``/proc/iomem`` for the
    ``memory-drift-tolerance: auto`` bound (None = unreadable: exact comparison). ``version``: the
    kubelet release whose option table decides the memory manager's policy options (default: the newest
    released kubelet, the one engine default).
    """
    policy = kubelet_config.get("memoryManagerPolicy") or POLICY_NONE
    gates = dict(kubelet_config.get("featureGates") or {})
    gates.update(feature_gates or {})
    if state_file is None:
        state_file = os.path.join(kubelet_config.get("rootDir") or DEFAULT_ROOT_DIR, STATE_FILE_NAME)

    if policy == POLICY_NONE:
        provider = MemoryManagerNone()
    elif policy == POLICY_STATIC:
        system_reserved = system_reserved_from_config(topology, kubelet_config, memory_capacity_bytes,
                                                      allocatable_reservation, gates)
    elif policy == POLICY_BEST_EFFORT:
        raise MemoryManagerConfigError('policy "BestEffort" is not available for platform "linux"')
    else:
        raise MemoryManagerConfigError('unknown policy: "%s"' % (policy,))

    machine_state: Dict[int, Any] = {}
    entries: Dict[str, Any] = {}
    pod_entries: Dict[str, Any] = {}
    pod_level = False
    if checkpoint is not None or policy == POLICY_STATIC:
        # imported here: the None policy without a state file compiles neither (31 KB; issue 12)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.machine_state import (
            POD_LEVEL_RESOURCE_MANAGERS,
            default_machine_state,
            entries_from_plain,
            machine_state_from_plain,
            pod_entries_from_plain,
        )
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.validate_state import (
            check_policy_name,
            restored_assignments,
            validate_state,
        )

        pod_level = bool(gates.get(POD_LEVEL_RESOURCE_MANAGERS))
    if checkpoint is not None:
        stored_policy = _checkpoint_field(checkpoint, "policy_name", "policyName")
        check_policy_name(policy, "" if stored_policy is None else str(stored_policy), state_file)
        machine_state = machine_state_from_plain(_checkpoint_field(checkpoint, "machine_state", "machineState"))
        entries = entries_from_plain(_checkpoint_field(checkpoint, "entries", "Entries"))
        if pod_level:
            # restoreState keeps podEntries only with the gate on (state_checkpoint.go)
            pod_entries = pod_entries_from_plain(_checkpoint_field(checkpoint, "pod_entries", "podEntries") or {})

    tolerance = drift_tolerance(dict(kubelet_config, featureGates=gates), proc_iomem, version)
    if policy == POLICY_NONE:
        return provider
    # imported here: only the Static policy compiles it (50 KB; issue 12)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.static_policy import (
        MemoryManagerStatic,
    )

    default_state = default_machine_state(topology, system_reserved)
    replayed = restored_assignments(entries, pod_entries, pod_level)
    group_sums = behaviour(MEMORY_STATE_GROUP_SUMS, version)
    machine_state = validate_state(machine_state, replayed, default_state, tolerance.bound, group_sums)
    return MemoryManagerStatic(machine_state, entries, feature_gates=gates, pod_entries=pod_entries, version=version)
