# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The CPU manager's ``static`` policy: exclusive CPUs for integral requests of Guaranteed pods.

Pools (as the kubelet keeps them): SHARED = the state's default cpuset (initially every CPU);
RESERVED = ``reservedSystemCPUs`` or ceil(kube+system reserved cpu) CPUs taken by topology,
never handed out exclusively; ASSIGNABLE = SHARED - RESERVED; per-container EXCLUSIVE sets.

This module holds the policy's decisions (guaranteed CPU counts, hints, allocation, release,
start-up validation) over a :class:`~.state.CPUState`; ``manager.py`` wires it to the Topology
Manager's provider protocol. Spec sections: 2.2 (counts and hints), 4.3 (allocation),
4.6 (release), 6.2 (construction and validateState).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import itertools

try:
    from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.cpu_assignment import (
    PACKED,
    SPREAD,
    CPUShortage,
    TakeError,
    take_packed,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.state import POLICY_STATIC
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import (
    AdmissionError,
    StateError,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import (
    BitMask,
    iterate_bitmask_values,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import HintList, TopologyHint, implicit_for
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import format_cpuset
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.qos import GUARANTEED
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import (
    CPU_SHORTAGE,
    MANAGERS_SIDECAR_AWARE,
    NEWEST_RELEASED,
    SMT_ALIGNMENT_ERROR_BY_CAUSE,
    behaviour,
    kubelet_text,
)

SMT_ALIGNMENT_ERROR = "SMTAlignmentError"


class CPUAllocationError(AdmissionError):
    """An allocation failure of the CPU manager (reason/message as the kubelet reports it)."""


#: Reason of ``admission.EmptyPodSharedPoolError`` (pkg/kubelet/cm/admission/errors.go).
EMPTY_POD_SHARED_POOL_ERROR = "EmptyPodSharedPoolError"


class EmptyPodSharedPoolError(CPUAllocationError):
    """``AllocatePod`` refused a pod-level pod whose exclusive requests leave its shared pool
    empty (or an init container no room); the kubelet reports the text as is, with reason
    ``EmptyPodSharedPoolError`` (pkg/kubelet/cm/cpumanager/policy_static.go validatePodScopeResources)."""

    def __init__(self, text: str) -> None:
        super().__init__(EMPTY_POD_SHARED_POOL_ERROR, text)


class SMTAlignmentError(CPUAllocationError):
    """full-pcpus-only refused the request; the kubelet reports reason ``SMTAlignmentError``.
    ``available_physical`` None: the "not multiple" text (which kubelets print it when is
    :meth:`StaticPolicy.enforce_smt_alignment`'s decision)."""

    def __init__(self,
                 requested: int,
                 cpus_per_core: int,
                 available_physical: Optional[int] = None) -> None:
        if available_physical is None:
            text = ("SMT Alignment Error: requested %d cpus not multiple cpus per core = %d"
                    % (requested, cpus_per_core))
        else:
            text = ("SMT Alignment Error: not enough free physical CPUs: available physical CPUs "
                    "= %d, requested CPUs = %d, CPUs per core = %d"
                    % (available_physical, requested, cpus_per_core))
        super().__init__(SMT_ALIGNMENT_ERROR, text)


def q(value: Any) -> str:
    """Go's %q for the simple strings we print."""
    return '"%s"' % (value,)


class StaticPolicy:
    """The static policy bound to one machine's CPU topology, reserved CPUs and options."""

    name = POLICY_STATIC

    def __init__(self,
                 cpu_topology: Any,
                 num_reserved: int,
                 reserved_cpus: FrozenSet[int],
                 options: Any,
                 version: Tuple[int, ...] = NEWEST_RELEASED) -> None:
        self.topology = cpu_topology
        self.options = options
        #: the kubelet release followed (``_k8s/versions.py``): 1.28 counts and reuses restartable
        #: init containers as regular ones, prints the shortage text without counts (< 1.29) and
        #: the SMT alignment text by free physical CPUs (< 1.32)
        self.version = tuple(version)
        self.sidecar_aware = behaviour(MANAGERS_SIDECAR_AWARE, self.version)
        self.smt_error_by_cause = behaviour(SMT_ALIGNMENT_ERROR_BY_CAUSE, self.version)
        self.cpu_group_size = cpu_topology.cpus_per_core()
        if reserved_cpus:
            reserved = frozenset(reserved_cpus)
        else:
            try:
                reserved = self.take_by_topology(cpu_topology.all_cpus, num_reserved)
            except TakeError:
                reserved = frozenset()
        if len(reserved) != num_reserved:
            raise StateError("new static policy error: [cpumanager] unable to reserve the required "
                             "amount of CPUs (size of %s did not equal %d)"
                             % (format_cpuset(reserved), num_reserved))
        unknown = reserved - cpu_topology.all_cpus
        if unknown:
            raise StateError("new static policy error: [cpumanager] unable to build the reserved "
                             "physical CPUs from the reserved set: unknown CPU ID: %d"
                             % min(unknown))
        self.reserved_cpus: FrozenSet[int] = reserved
        self.reserved_physical_cpus: FrozenSet[int] = cpu_topology.siblings_of(reserved)
        #: podUID -> CPUs of finished regular init containers that later containers may reuse.
        self.cpus_to_reuse: Dict[str, FrozenSet[int]] = {}
        #: the kubelet's feature gates (only PodLevelResourceManagers matters here: pod-level
        #: CPU sets count in validateState)
        self.feature_gates: Dict[str, bool] = {}

    # -- pools -------------------------------------------------------------------------------
    def all_cpus(self) -> FrozenSet[int]:
        """CPUs the state must account for: all, minus reserved with strict-cpu-reservation."""
        cpus = self.topology.all_cpus
        if self.options.strict_cpu_reservation:
            cpus = cpus - self.reserved_cpus
        return cpus

    def available_cpus(self, state: Any) -> FrozenSet[int]:
        return state.default_cpu_set - self.reserved_cpus

    # -- start-up ----------------------------------------------------------------------------
    def validate_state(self, state: Any) -> None:
        """``validateState``: initialise a fresh state or refuse an inconsistent one (pkg/kubelet/cm/cpumanager/policy_static.go)."""
        all_cpus = self.all_cpus()
        default = state.default_cpu_set
        if not default:
            if state.entries:
                raise StateError("default cpuset cannot be empty")
            state.default_cpu_set = all_cpus
            return
        if self.options.strict_cpu_reservation:
            overlap = self.reserved_cpus & default
            if overlap:
                raise StateError("some of strictly reserved cpus: %s are present in defaultCpuSet: %s"
                                 % (q(format_cpuset(overlap)), q(format_cpuset(default))))
        elif not self.reserved_cpus <= default:
            raise StateError("not all reserved cpus: %s are present in defaultCpuSet: %s"
                             % (q(format_cpuset(self.reserved_cpus)), q(format_cpuset(default))))
        for pod_uid in sorted(state.entries):
            for name, cpus in sorted(state.entries[pod_uid].items()):
                if cpus & default:
                    raise StateError("pod: %s, container: %s cpuset: %s overlaps with default "
                                     "cpuset %s" % (pod_uid, name, q(format_cpuset(cpus)),
                                                    q(format_cpuset(default))))
        known = set(default) | state.assigned_cpus()
        if self.feature_gates.get("PodLevelResourceManagers", False):
            for cpus in state.pod_entries.values():
                known |= cpus
        if frozenset(known) != all_cpus:
            raise StateError("current set of available CPUs %s doesn't match with CPUs in state %s"
                             % (q(format_cpuset(all_cpus)), q(format_cpuset(known))))

    # -- counts ------------------------------------------------------------------------------
    @staticmethod
    def uses_ignored_pod_level_resources(pod: Any) -> bool:
        """Pod-level ``spec.resources`` without PodLevelResourceManagers: the policy ignores the pod."""
        gates = getattr(pod, "feature_gates", {}) or {}
        return pod.has_pod_level_resources and not (
            gates.get("PodLevelResourceManagers", False) and gates.get("PodLevelResources", True))

    @staticmethod
    def pod_level_managed(pod: Any) -> bool:
        """Pod-level ``spec.resources`` with PodLevelResourceManagers on: the pod-level path
        (KEP-5526) decides, and a container qualifies for exclusive CPUs only when its cpu and
        memory requests equal its limits (``IsContainerEquivalentQOSGuaranteed``)."""
        gates = getattr(pod, "feature_gates", {}) or {}
        return bool(pod.has_pod_level_resources and gates.get("PodLevelResourceManagers", False)
                    and gates.get("PodLevelResources", True))

    def guaranteed_cpus(self, pod: Any, container: Any) -> int:
        """``guaranteedCPUs``: integral cpu request of a container of a Guaranteed pod, else 0
        (with pod-level resources managed, only for a container whose requests equal its limits)."""
        if pod.qos_class != GUARANTEED:
            return 0
        if self.pod_level_managed(pod) and not container.equivalent_guaranteed():
            return 0
        milli = container.requests.get("cpu", 0)
        if milli % 1000 != 0:
            return 0
        return milli // 1000

    def pod_guaranteed_cpus(self, pod: Any) -> int:
        """``podGuaranteedCPUs``: max(init peak incl. earlier sidecars, apps + sidecars) (before
        1.29: max(largest init container, apps), sidecars counted as init containers); for a
        pod-level managed pod the integral pod-level cpu request (the pod budget)."""
        if self.pod_level_managed(pod):
            if pod.qos_class != GUARANTEED:
                return 0
            milli = pod.pod_level_requests.get("cpu", 0)
            return milli // 1000 if milli % 1000 == 0 else 0
        init_max = 0
        sidecars = 0
        for container in pod.init_containers:
            if "cpu" not in container.requests:
                continue
            count = self.guaranteed_cpus(pod, container)
            if container.restartable and self.sidecar_aware:
                sidecars += count
            elif sidecars + count > init_max:
                init_max = sidecars + count
        apps = sum(self.guaranteed_cpus(pod, c) for c in pod.containers if "cpu" in c.requests)
        return max(init_max, apps + sidecars)

    # -- hints -------------------------------------------------------------------------------
    def topology_hints(self, available: FrozenSet[int], reusable: FrozenSet[int], request: int) -> Any:
        """``generateCPUTopologyHints``: a hint list, or on big machines a hint set (same hints)."""
        ids = self.topology.numa_ids
        if implicit_for(len(ids)):
            return self.hint_set(available, reusable, request)
        return HintList(self.generate_hints(available, reusable, request), (1 << len(ids)) - 1)

    def hint_set(self, available: FrozenSet[int], reusable: FrozenSet[int], request: int) -> Any:
        """The hints of :meth:`generate_hints_literal` as a rule: masks holding every node of a
        reusable CPU whose free CPUs plus the reusable ones reach the request; preferred = the
        fewest nodes whose CPUs (free or not) could hold it."""
        # imported here: machines whose hints are listed never compile the hint sets (33 KB)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hint_sets import Need, ThresholdHintSet
        topo = self.topology
        ids = topo.numa_ids
        walked = (1 << len(ids)) - 1
        free, required = self._per_node(available, reusable)
        totals = sorted((len(topo.cpus_in_numa[n]) for n in ids), reverse=True)
        min_affinity = len(ids)
        running = 0
        for count, total in enumerate(totals, 1):
            running += total
            if running >= request:
                min_affinity = count
                break
        extra = None
        if self.options.align_by_socket:
            def extra(mask: int) -> bool:
                return self._socket_aligned(mask, min_affinity)
        hint_set = ThresholdHintSet(ids, [Need(free, request - len(reusable))], min_affinity, required=required,
                                    extra_preferred=extra)
        if hint_set.is_empty():
            return HintList([], walked)
        return hint_set

    def generate_hints(self,
                       available: FrozenSet[int],
                       reusable: FrozenSet[int],
                       request: int) -> List[TopologyHint]:
        """``generateCPUTopologyHints`` (pkg/kubelet/cm/cpumanager/policy_static.go), with all mask sums computed at once.

        Same result as :meth:`generate_hints_literal` (the per-mask loop), which tests compare.
        """
        # the per-mask table, imported here: machines whose hints stay implicit never need it (issue 12)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.mask_table import (
            hint as interned_hint,
        )
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.mask_table import (
            table_for,
        )

        topo = self.topology
        table = table_for(topo.numa_ids)
        totals = getattr(self, "_totals", None)
        if totals is None:
            totals = self._totals = table.sums([len(topo.cpus_in_numa[n]) for n in table.ids])
        free = dict((n, 0) for n in table.ids)
        for cpu in available:
            info = topo.details.get(cpu)
            node = info.numa_node if info is not None else 0
            if node in free:
                free[node] += 1
        free_sums = table.sums([free[n] for n in table.ids])
        nodes = set()
        for cpu in reusable:
            info = topo.details.get(cpu)
            nodes.add(info.numa_node if info is not None else 0)
        required = table.compact(nodes)
        if len(nodes) != bin(required).count("1"):
            return []  # a reusable CPU on a node without CPUs can never be inside a mask
        min_affinity = table.min_affinity(totals, request)
        selected = table.select(free_sums, request - len(reusable), required, monotone=True)
        if not self.options.align_by_socket:
            return list(itertools.compress(table.all_hints(min_affinity), selected))
        real, count = table.real, table.count
        return [interned_hint(real[m], count[m] == min_affinity
                              or self._socket_aligned(real[m], min_affinity))
                for m in itertools.compress(table.order, selected)]

    def generate_hints_literal(self,
                               available: FrozenSet[int],
                               reusable: FrozenSet[int],
                               request: int) -> List[TopologyHint]:
        """The kubelet's per-mask loop, kept as the reference for :meth:`generate_hints`."""
        topo = self.topology
        numa_ids = topo.numa_ids
        total_per_numa = dict((n, len(topo.cpus_in_numa[n])) for n in numa_ids)
        free_per_numa, reusable_mask = self._per_node(available, reusable)
        min_affinity = len(numa_ids)
        found: List[int] = []
        for mask in iterate_bitmask_values(numa_ids):
            nodes = [n for n in numa_ids if (mask >> n) & 1]
            if sum(total_per_numa[n] for n in nodes) >= request and len(nodes) < min_affinity:
                min_affinity = len(nodes)
            if reusable_mask & ~mask:
                continue
            matching = len(reusable) + sum(free_per_numa.get(n, 0) for n in nodes)
            if matching < request:
                continue
            found.append(mask)
        hints: List[TopologyHint] = []
        for mask in found:
            count = bin(mask).count("1")
            preferred = count == min_affinity
            if self.options.align_by_socket and self._socket_aligned(mask, min_affinity):
                preferred = True
            hints.append(TopologyHint(BitMask.from_value(mask), preferred))
        return hints

    def _per_node(self, available: FrozenSet[int], reusable: FrozenSet[int]) -> Tuple[Dict[int, int], int]:
        """Free CPUs per NUMA node, and the mask of the nodes of the reusable CPUs (a CPU the
        topology does not know counts on node 0, as in the kubelet's CPUDetails lookup)."""
        free: Dict[int, int] = {}
        for cpu in available:
            info = self.topology.details.get(cpu)
            node = info.numa_node if info is not None else 0
            free[node] = free.get(node, 0) + 1
        nodes = 0
        for cpu in reusable:
            info = self.topology.details.get(cpu)
            nodes |= 1 << (info.numa_node if info is not None else 0)
        return free, nodes

    def _socket_aligned(self, mask: int, min_affinity: int) -> bool:
        topo = self.topology
        per_socket = topo.num_numa_nodes // topo.num_sockets if topo.num_sockets else 0
        if per_socket == 0:
            return False
        min_sockets = (min_affinity + per_socket - 1) // per_socket
        nodes = [n for n in range(mask.bit_length()) if (mask >> n) & 1]
        return len(topo.sockets_in_numa_nodes(nodes)) == min_sockets

    def container_hints(self,
                        state: Any,
                        pod: Any,
                        container: Any) -> Optional[Dict[str, List[TopologyHint]]]:
        """``GetTopologyHints`` (pkg/kubelet/cm/cpumanager/policy_static.go)."""
        requested = self.guaranteed_cpus(pod, container)
        if requested == 0 or self.uses_ignored_pod_level_resources(pod):
            return None
        allocated = state.get(pod.uid, container.name)
        if allocated is not None:
            if len(allocated) != requested:
                return {"cpu": []}
            return {"cpu": self.topology_hints(allocated, frozenset(), requested)}
        available = self.available_cpus(state)
        reusable = self.cpus_to_reuse.get(pod.uid, frozenset())
        return {"cpu": self.topology_hints(available, reusable, requested)}

    def pod_hints(self, state: Any, pod: Any) -> Optional[Dict[str, List[TopologyHint]]]:
        """``GetPodTopologyHints`` (pkg/kubelet/cm/cpumanager/policy_static.go)."""
        requested = self.pod_guaranteed_cpus(pod)
        if requested == 0 or self.uses_ignored_pod_level_resources(pod):
            return None
        if self.pod_level_managed(pod) and self.pod_scope_error(pod) is not None:
            # an empty pod shared pool: no hint can satisfy it, the Topology Manager rejects
            return {"cpu": []}
        assigned: set = set()
        for container in pod.all_containers():
            allocated = state.get(pod.uid, container.name)
            if allocated is not None:
                if len(allocated) != self.guaranteed_cpus(pod, container):
                    return {"cpu": []}
                assigned |= allocated
        if len(assigned) == requested:
            return {"cpu": self.topology_hints(frozenset(assigned), frozenset(), requested)}
        available = self.available_cpus(state)
        reusable = self.cpus_to_reuse.get(pod.uid, frozenset()) | frozenset(assigned)
        return {"cpu": self.topology_hints(available, reusable, requested)}

    # -- allocation --------------------------------------------------------------------------
    def take_by_topology(self, available: Iterable[int], count: int) -> FrozenSet[int]:
        """The option-dependent choice of concrete CPUs (pkg/kubelet/cm/cpumanager/cpu_assignment.go); raises TakeError."""
        strategy = SPREAD if self.options.distribute_cpus_across_cores else PACKED
        if self.options.distribute_cpus_across_numa:
            # imported here: only this option runs it (issue 12: fresh-process cost)
            from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.cpu_assignment_distributed import take_distributed

            group = self.cpu_group_size if self.options.full_physical_cpus_only else 1
            return take_distributed(self.topology, available, count, max(group, 1), strategy,
                                    self.options.align_by_socket)
        return take_packed(self.topology, available, count, strategy,
                           self.options.prefer_align_by_uncore_cache)

    def enforce_smt_alignment(self, state: Any, count: int) -> None:
        if not self.options.full_physical_cpus_only:
            return
        group = self.cpu_group_size
        if group and count % group != 0:
            raise SMTAlignmentError(count, group)
        physical = len(state.default_cpu_set - self.reserved_physical_cpus)
        if count > physical:
            if physical == 0 and not self.smt_error_by_cause:
                # before 1.32 the text follows AvailablePhysicalCPUs > 0, not the cause
                raise SMTAlignmentError(count, group)
            raise SMTAlignmentError(count, group, physical)

    def aligned_cpus(self, mask: BitMask, allocatable: FrozenSet[int]) -> FrozenSet[int]:
        topo = self.topology
        nodes = mask.bits()
        if self.options.align_by_socket:
            return allocatable & topo.cpus_in_sockets(topo.sockets_in_numa_nodes(nodes))
        return allocatable & topo.cpus_in_numa_nodes(nodes)

    def allocate_cpus(self,
                      state: Any,
                      count: int,
                      mask: Optional[BitMask],
                      reusable: FrozenSet[int]) -> FrozenSet[int]:
        """``allocateCPUs``: aligned CPUs first, the rest from anywhere; updates the default set."""
        allocatable = self.available_cpus(state) | reusable
        result: FrozenSet[int] = frozenset()
        try:
            if mask is not None:
                aligned = self.aligned_cpus(mask, allocatable)
                result = self.take_by_topology(aligned, min(count, len(aligned)))
            result = result | self.take_by_topology(allocatable - result, count - len(result))
        except TakeError as exc:
            raise CPUAllocationError.unexpected(self.take_error_text(exc))
        state.default_cpu_set = state.default_cpu_set - result
        return result

    def take_error_text(self, error: TakeError) -> str:
        """The text of a failed ``takeByTopology`` as the release prints it."""
        if isinstance(error, CPUShortage):
            return kubelet_text(CPU_SHORTAGE, self.version, requested=error.requested, available=error.available)
        return str(error)

    def update_cpus_to_reuse(self, pod: Any, container: Any, cpus: FrozenSet[int]) -> None:
        """Only the pod being admitted keeps reuse state; init CPUs become reusable (pkg/kubelet/cm/cpumanager/policy_static.go updateCPUsToReuse)."""
        for uid in list(self.cpus_to_reuse):
            if uid != pod.uid:
                del self.cpus_to_reuse[uid]
        current = self.cpus_to_reuse.get(pod.uid, frozenset())
        if container.is_init and not (container.restartable and self.sidecar_aware):
            # before 1.29 every init container's CPUs, a sidecar's included, become reusable
            self.cpus_to_reuse[pod.uid] = current | cpus
        else:
            # app containers and (upstream falls through for) restartable init containers
            self.cpus_to_reuse[pod.uid] = current - cpus

    def allocate(self,
                 state: Any,
                 pod: Any,
                 container: Any,
                 affinity: Optional[TopologyHint]) -> Optional[FrozenSet[int]]:
        """``Allocate`` (pkg/kubelet/cm/cpumanager/policy_static.go); returns the container's exclusive CPUs or None (shared pool)."""
        count = self.guaranteed_cpus(pod, container)
        if count == 0 or self.uses_ignored_pod_level_resources(pod):
            return None
        self.enforce_smt_alignment(state, count)
        existing = state.get(pod.uid, container.name)
        if existing is not None:
            self.update_cpus_to_reuse(pod, container, existing)
            return existing
        mask = affinity.affinity if affinity is not None else None
        cpus = self.allocate_cpus(state, count, mask, self.cpus_to_reuse.get(pod.uid, frozenset()))
        state.set(pod.uid, container.name, cpus)
        self.update_cpus_to_reuse(pod, container, cpus)
        return cpus

    # -- pod-level resources (KEP-5526, PodLevelResourceManagers) -------------------------------
    def pod_scope_error(self, pod: Any) -> Optional[str]:
        """``validatePodScopeResources``: the kubelet's text when the pod budget cannot hold the
        exclusive slices next to the containers that need the pod shared pool, else None.

        Regular init containers run alone: each needs its request (exclusive) or at least one CPU
        (shared) beside the sidecars started before it. Long-running containers (app containers
        and sidecars) that need the shared pool need budget left after every exclusive slice.
        """
        budget = self.pod_guaranteed_cpus(pod)
        sidecar_exclusive = 0
        shared_long_running = False
        for container in pod.init_containers:
            count = self.guaranteed_cpus(pod, container)
            if not container.restartable:
                if count > 0:
                    room = budget - sidecar_exclusive
                    if count > room:
                        return ("pod rejected, largest exclusive init container requests %d cpus, but only %d available"
                                % (count, room))
                elif sidecar_exclusive >= budget:
                    return "pod rejected, pod has shared init containers but no cpus available for them"
                continue
            if count == 0:
                shared_long_running = True
            else:
                sidecar_exclusive += count
        exclusive = sidecar_exclusive
        for container in pod.containers:
            count = self.guaranteed_cpus(pod, container)
            if count == 0:
                shared_long_running = True
            else:
                exclusive += count
        if shared_long_running and exclusive >= budget:
            return ("pod rejected, sum of exclusive container cpu requests equals pod budget, "
                    "leaving no cpus for shared containers")
        return None

    def allocate_pod(self, state: Any, pod: Any, affinity: Optional[TopologyHint]) -> Optional[FrozenSet[int]]:
        """``AllocatePod`` (pkg/kubelet/cm/cpumanager/policy_static.go, PodLevelResourceManagers):
        one CPU set for the pod budget on the Topology Manager's affinity, then exclusive slices
        for the qualifying containers out of it; every other container gets the pod shared pool.

        Regular init containers take their slice from the budget minus the sidecars started
        before them (a shared one gets all of that); app containers take theirs from the budget
        minus every sidecar slice, and what is left is the pod shared pool. Returns the pod's
        CPU set, or None when the pod has no integral budget (it runs in the node's shared pool).
        Raises :class:`EmptyPodSharedPoolError`, :class:`SMTAlignmentError` or
        :class:`CPUAllocationError`.
        """
        budget = self.pod_guaranteed_cpus(pod)
        if budget == 0:
            return None
        error = self.pod_scope_error(pod)
        if error is not None:
            raise EmptyPodSharedPoolError(error)
        self.enforce_smt_alignment(state, budget)
        mask = affinity.affinity if affinity is not None else None
        pod_cpus = self.allocate_cpus(state, budget, mask, frozenset())
        state.pod_entries[pod.uid] = pod_cpus
        slices: Dict[str, FrozenSet[int]] = {}
        sidecar_cpus: FrozenSet[int] = frozenset()
        try:
            for container in pod.init_containers:
                count = self.guaranteed_cpus(pod, container)
                if count > 0:
                    cpus = self.take_by_topology(pod_cpus - sidecar_cpus, count)
                    slices[container.name] = cpus
                    if container.restartable:
                        sidecar_cpus = sidecar_cpus | cpus
                elif not container.restartable:
                    slices[container.name] = pod_cpus - sidecar_cpus
            shared_pool = pod_cpus - sidecar_cpus
            for container in pod.containers:
                count = self.guaranteed_cpus(pod, container)
                if count > 0:
                    cpus = self.take_by_topology(shared_pool, count)
                    slices[container.name] = cpus
                    shared_pool = shared_pool - cpus
        except TakeError as exc:
            raise CPUAllocationError.unexpected(self.take_error_text(exc))
        for container in pod.all_containers():
            state.set(pod.uid, container.name, slices.get(container.name, shared_pool))
        return pod_cpus

    def remove_container(self, state: Any, pod_uid: str, container_name: str) -> FrozenSet[int]:
        """``RemoveContainer`` (pkg/kubelet/cm/cpumanager/policy_static.go): CPUs not held by siblings go back to the default set.

        A pod-level pod (PodLevelResourceManagers) keeps its CPU set until its last container
        is removed; then the whole set goes back."""
        released = state.get(pod_uid, container_name)
        if released is None:
            return frozenset()
        state.delete(pod_uid, container_name)
        pod_cpus = state.pod_entries.get(pod_uid)
        if pod_cpus is not None and self.feature_gates.get("PodLevelResourceManagers", False):
            if state.entries.get(pod_uid):
                return frozenset()
            state.default_cpu_set = state.default_cpu_set | pod_cpus
            del state.pod_entries[pod_uid]
            return pod_cpus
        in_use: set = set()
        for cpus in state.entries.get(pod_uid, {}).values():
            in_use |= cpus
        released = released - frozenset(in_use)
        state.default_cpu_set = state.default_cpu_set | released
        return released
