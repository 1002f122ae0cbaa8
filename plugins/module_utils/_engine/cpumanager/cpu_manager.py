# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The CPU manager as a Topology Manager hint provider: construction from the kubelet config,
state restore and validation, and the provider protocol (hints, allocate, remove).

:func:`new_cpu_manager` does what the kubelet does at start-up (pkg/kubelet/cm/cpumanager/cpu_manager.go NewManager): pick the policy
(``none`` / ``static``), compute the CPU reservation from ``reservedSystemCPUs`` or
kube/system-reserved cpu, parse and validate the policy options, restore the checkpoint and run
``validateState``. Anything the kubelet would refuse to start with raises :class:`StateError`
with the kubelet's text; the result is a stateful in-memory simulator.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import math
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Tuple  # noqa: F401

if TYPE_CHECKING:  # the static policy is imported where it is built: a none-policy run never compiles it (issue 12)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.policy_static import StaticPolicy

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager import cpu_topology as _cpu_topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.state import (
    DEFAULT_CHECKPOINT_PATH,
    POLICY_NONE,
    POLICY_STATIC,
    CPUState,
    restore,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint  # noqa: F401
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import (
    InvalidCPUSet,
    format_cpuset,
    parse_cpuset,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import option_text
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import (
    InvalidQuantity,
    Quantity,
    parse_quantity,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import NEWEST_RELEASED

__all__ = ["CPUManager", "new_cpu_manager", "cpu_reservation"]


def _go_map(options: Mapping[str, Any]) -> str:
    """Go's %v of a map[string]string: ``map[a:b c:d]`` with sorted keys."""
    return "map[%s]" % " ".join("%s:%s" % (k, option_text(options[k])) for k in sorted(options))


def _reserved_quantity(config: Mapping[str, Any], section: str) -> Optional[Quantity]:
    values = config.get(section) or {}
    if not isinstance(values, dict):
        raise StateError("%s must be a mapping of resource quantities, got %r" % (section, values))
    if "cpu" not in values:
        return None
    raw = values["cpu"]
    if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
        raise StateError("%s.cpu: invalid quantity %r" % (section, raw))
    try:
        return parse_quantity(repr(raw) if isinstance(raw, float) else raw)
    except (InvalidQuantity, ValueError) as exc:
        raise StateError("%s.cpu: invalid quantity %r: %s" % (section, raw, exc))


def cpu_reservation(config: Mapping[str, Any]) -> Dict[str, Any]:
    """The node-allocatable cpu reservation the CPU manager starts from (pkg/kubelet/cm/cpumanager/cpu_manager.go).

    Returns ``{"reserved_system_cpus": frozenset, "milli": int or None}``; ``milli`` is None when
    the reservation is zero (the kubelet drops zero entries, so the static policy then cannot
    determine it). With ``reservedSystemCPUs`` the kubelet overwrites the cpu reservation:
    kubeReserved cpu is dropped and systemReserved cpu becomes the size of that set.
    """
    raw_cpus = config.get("reservedSystemCPUs") or ""
    if not isinstance(raw_cpus, str):
        raw_cpus = "%s" % (raw_cpus,)
    try:
        reserved = parse_cpuset(raw_cpus)
    except InvalidCPUSet as exc:
        raise StateError("reservedSystemCPUs: %s" % exc)
    if reserved:
        return {"reserved_system_cpus": reserved, "milli": len(reserved) * 1000}
    total = Quantity.from_int(0)
    for section in ("systemReserved", "kubeReserved"):
        value = _reserved_quantity(config, section)
        if value is not None:
            total = total + value
    milli = total.milli_value()
    return {"reserved_system_cpus": frozenset(), "milli": milli if milli != 0 else None}


class CPUManager:
    """Stateful CPU manager simulator implementing the hint-provider protocol.

    ``policy`` is a :class:`StaticPolicy` or None (the ``none`` policy: no hints, no-op
    allocation). Pinning counters mirror ``cpu_manager_pinning_requests_total`` /
    ``..._errors_total``.
    """

    resource = "cpu"

    def __init__(self,
                 cpu_topology: Any,
                 policy: Optional[StaticPolicy],
                 state: CPUState,
                 checkpoint_path: str = DEFAULT_CHECKPOINT_PATH) -> None:
        self.cpu_topology = cpu_topology
        self.policy = policy
        self._state = state
        self.checkpoint_path = checkpoint_path
        self.pinning_requests = 0
        self.pinning_errors = 0

    @property
    def policy_name(self) -> str:
        return self.policy.name if self.policy is not None else POLICY_NONE

    @property
    def reserved_cpus(self) -> FrozenSet[int]:
        return self.policy.reserved_cpus if self.policy is not None else frozenset()

    # -- provider protocol -------------------------------------------------------------------
    def get_topology_hints(self,
                           pod: Any,
                           container: Any) -> Optional[Mapping[str, Optional[List[TopologyHint]]]]:
        if self.policy is None:
            return None
        return self.policy.container_hints(self._state, pod, _container(pod, container))

    def get_pod_topology_hints(self,
                               pod: Any) -> Optional[Mapping[str, Optional[List[TopologyHint]]]]:
        if self.policy is None:
            return None
        return self.policy.pod_hints(self._state, pod)

    def allocate(self, pod: Any, container: Any, affinity: Optional[TopologyHint]) -> None:
        """Allocate exclusive CPUs; raises :class:`CPUAllocationError` (an AdmissionError)."""
        if self.policy is None:
            return
        container = _container(pod, container)
        counted = (self.policy.guaranteed_cpus(pod, container) > 0
                   and not self.policy.uses_ignored_pod_level_resources(pod))
        if counted:
            self.pinning_requests += 1
        # imported here: a policy is set only under the static policy, which loaded it; none never compiles it
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.policy_static import (
            CPUAllocationError,
        )

        try:
            self.policy.allocate(self._state, pod, container, affinity)
        except CPUAllocationError:
            if counted:
                self.pinning_errors += 1
            raise

    def allocate_pod(self, pod: Any, affinity: Optional[TopologyHint]) -> None:
        """``AllocatePod`` of a pod-level pod (PodLevelResourceManagers, pod scope): the pod
        budget, then its exclusive slices and shared pool. Counters as the kubelet's: one pinning
        request per exclusive container, one error per failed call."""
        if self.policy is None:
            return
        # imported here: as in allocate
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.policy_static import (
            CPUAllocationError,
        )

        try:
            self.policy.allocate_pod(self._state, pod, affinity)
        except CPUAllocationError:
            self.pinning_errors += 1
            raise
        self.pinning_requests += sum(1 for c in pod.all_containers() if self.policy.guaranteed_cpus(pod, c) > 0) \
            if self.policy.pod_guaranteed_cpus(pod) > 0 else 0

    def pod_cpus(self, pod_uid: str) -> Optional[FrozenSet[int]]:
        """The CPU set of a pod-level pod (its budget), None for other pods."""
        return self._state.pod_entries.get(pod_uid)

    def remove(self, pod_uid: str, container_name: str) -> None:
        if self.policy is None:
            return
        self.policy.remove_container(self._state, pod_uid, container_name)

    def remove_pod(self, pod_uid: str) -> None:
        """Release every container of a pod (pod deletion, or GC of a rejected pod)."""
        for name in sorted(self._state.entries.get(pod_uid, {})):
            self.remove(pod_uid, name)

    def remove_stale_state(self, active_pod_uids: Iterable[str]) -> None:
        """``removeStaleState``: forget assignments of pods that are no longer active (pkg/kubelet/cm/cpumanager/cpu_manager.go)."""
        active = set(active_pod_uids)
        for pod_uid in sorted(self._state.entries):
            if pod_uid not in active:
                self.remove_pod(pod_uid)

    # -- views -------------------------------------------------------------------------------
    def assigned_cpus(self, pod_uid: str, container_name: str) -> Optional[FrozenSet[int]]:
        return self._state.get(pod_uid, container_name)

    def default_cpu_set(self) -> FrozenSet[int]:
        return self._state.default_cpu_set

    def state(self) -> Dict[str, Any]:
        """Plain data (policy_name, default_cpu_set, entries, pod_entries) for the checkpoint writer."""
        return self._state.to_plain()

    def to_checkpoint(self, version: Optional[int] = None) -> Any:
        """The state as a :class:`~.checkpoint.CPUManagerCheckpoint` ready to dump."""
        # imported here: only a run that writes a state file compiles its format (20 KB)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.checkpoint import (
            LATEST_CPU_VERSION,
            CPUManagerCheckpoint,
        )
        plain = self._state.to_plain()
        return CPUManagerCheckpoint(policy_name=plain["policy_name"],
                                    default_cpu_set=plain["default_cpu_set"],
                                    entries=plain["entries"], pod_entries=plain["pod_entries"],
                                    version=LATEST_CPU_VERSION if version is None else version)

    def summary(self) -> Dict[str, Any]:
        """What results show about the CPU manager."""
        return {
            "policy": self.policy_name,
            "reserved_cpus": format_cpuset(self.reserved_cpus),
            "default_cpu_set": format_cpuset(self._state.default_cpu_set),
            "options": sorted(self.policy.options.enabled()) if self.policy is not None else [],
            "pinning_requests_total": self.pinning_requests,
            "pinning_errors_total": self.pinning_errors,
        }


def _container(pod: Any, container: Any) -> Any:
    if isinstance(container, str):
        return pod.container(container)
    return container


def new_cpu_manager(topology: Any, config: Mapping[str, Any], checkpoint: Any = None, checkpoint_path: str = DEFAULT_CHECKPOINT_PATH,
                    feature_gates: Optional[Mapping[str, bool]] = None,
                    version: Tuple[int, ...] = NEWEST_RELEASED) -> CPUManager:
    """Build the CPU manager the kubelet would run with ``config`` on ``topology``.

    ``topology`` is a :class:`~...topology.Topology` (or an already discovered
    :class:`~.cpu_topology.CPUTopology`); ``config`` the effective KubeletConfiguration dict;
    ``checkpoint`` the loaded ``cpu_manager_state`` (None for a missing file). Feature gates come
    from ``config["featureGates"]`` unless given; ``version`` is the kubelet release whose option
    maturity applies.
    """
    if config is None:
        config = {}
    gates = dict(config.get("featureGates") or {})
    gates.update(feature_gates or {})
    name = config.get("cpuManagerPolicy") or POLICY_NONE
    options = config.get("cpuManagerPolicyOptions") or {}
    if not isinstance(options, dict):
        raise StateError("cpuManagerPolicyOptions must be a mapping, got %r" % (options,))
    if isinstance(topology, _cpu_topology.CPUTopology):
        topo = topology
    else:
        topo = _cpu_topology.discover(topology)
    if name == POLICY_NONE:
        if options:
            raise StateError("new none policy error: None policy: received unsupported options=%s"
                             % _go_map(options))
        state = restore(checkpoint, POLICY_NONE, checkpoint_path)
        return CPUManager(topo, None, state, checkpoint_path)
    if name != POLICY_STATIC:
        raise StateError('unknown policy: "%s"' % name)
    reservation = cpu_reservation(config)
    if reservation["milli"] is None:
        raise StateError("[cpumanager] unable to determine reserved CPU resources for static policy")
    if reservation["milli"] <= 0:
        raise StateError("[cpumanager] the static policy requires systemreserved.cpu + "
                         "kubereserved.cpu to be greater than zero")
    num_reserved = int(math.ceil(reservation["milli"] / 1000.0))
    # imported here: a run under the none policy never compiles the static policy (issue 12)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.policy_options import (
        StaticPolicyOptions,
    )
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.policy_static import StaticPolicy

    try:
        parsed = StaticPolicyOptions.parse(options, gates, version)
        parsed.validate(topo, config.get("topologyManagerPolicy") or "none")
    except StateError as exc:
        raise StateError("new static policy error: %s" % exc)
    policy = StaticPolicy(topo, num_reserved, reservation["reserved_system_cpus"], parsed, version)
    policy.feature_gates = dict((k, v) for k, v in gates.items() if isinstance(v, bool))
    state = restore(checkpoint, POLICY_STATIC, checkpoint_path)
    policy.validate_state(state)
    return CPUManager(topo, policy, state, checkpoint_path)
