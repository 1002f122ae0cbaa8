# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Memory Manager ``Static`` policy as a stateful simulator (pkg/kubelet/cm/memorymanager/policy_static.go).

:class:`MemoryManagerStatic` is a Topology Manager hint provider: it answers hints for a
container (container scope) or a pod (pod scope), allocates memory blocks for a container once
the Topology Manager has chosen an affinity, and releases them. It holds the same data as the
kubelet: the machine state, the container assignments and the (in-memory only) reusable memory of
init containers, and it reproduces the kubelet's rules exactly, including the surprising ones:

* only Guaranteed pods get hints and blocks; pods that use pod-level ``.spec.resources`` are
  ignored unless the gate PodLevelResourceManagers is on (alpha 1.36, beta but off by default
  in 1.37, kubernetes/kubernetes#141209); with it, pod scope allocates the pod budget once (:meth:`allocate_pod`: exclusive
  blocks for containers whose requests equal their limits, the rest as the pod shared pool) and
  a container qualifies for exclusive memory only when its requests equal its limits; a pod
  whose pod-level blocks were restored from the state file is admitted again as its kubelet
  release does it (``_k8s/versions.py``): 1.36 and 1.37 regenerate the pod hint from its first
  container's blocks, 1.38 from its pod blocks (kubernetes/kubernetes#141070); ``AllocatePod``
  reserves the budget again in 1.36 (#140906), keeps the restored allocation in 1.38 (#141077)
  and is refused as not simulated for 1.37 (no source says which of the two 1.37.0 does);
* hints: every NUMA mask whose *allocatable* memory could hold the request decides what is
  "preferred" (the smallest such size), but a mask is offered only if its *free* memory (plus
  this pod's reusable init-container memory for exactly that mask) holds the request and it
  respects the NUMA-group rules: a node already in a multi-node group serves no single-node
  mask, and a node used by single-node allocations or by another group joins no multi-node mask;
* when no mask fits, the answer is an empty map -- "no preference" for the Topology Manager --
  and the failure surfaces in Allocate as an UnexpectedAdmissionError (upstream #128708);
* Allocate widens a Topology Manager mask that is too small (restricted/best-effort merges can
  narrow memory's hint), re-checks the group rule for multi-node masks only (1.32+; older
  kubelets let the blocks span nodes that hold other allocations), reserves greedily
  in ascending node order, and rewrites earlier init containers' block sizes so that the sizes of
  a pod's blocks add up to what is really reserved (they can become 0).

The pinning counters are those of ``memory_manager_pinning_requests_total`` and
``memory_manager_pinning_errors_total``: one request per Allocate call of a Guaranteed pod
(including containers that already had blocks), one error per failed call.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type


try:
    from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import AdmissionError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.machine_state import (
    MEMORY,
    POD_LEVEL_RESOURCE_MANAGERS,
    Block,
    clone_assignments,
    clone_machine_state,
    entries_to_plain,
    machine_state_to_plain,
    release,
    reserve,
    u64,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.policy_none import POLICY_STATIC, PinningCounters
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import (
    BitMask,
    InvalidBitMask,
    mask_value,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import (
    ZERO_HINT,
    EmptyHintMap,
    HintList,
    TopologyHint,
    implicit_for,
    is_hint_set,
    memoise_dicts,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import INT64_MAX, INT64_MIN, parse_quantity
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import is_memory_type
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import (
    MANAGERS_SIDECAR_AWARE,
    MEMORY_ALLOCATE_NUMA_GROUP_RULE,
    MEMORY_ALLOCATE_POD_KEEPS_RESTORED,
    MEMORY_POD_HINTS_FROM_POD_BLOCKS,
    NEWEST_RELEASED,
    behaviour,
    behaviour_confirmed,
    format_version,
)

GUARANTEED = "Guaranteed"
_UINT64_MOD = 1 << 64

ERR_INT64 = "[memorymanager] failed to represent quantity as int64"
ERR_DEFAULT_AFFINITY = ("[memorymanager] failed to get the default NUMA affinity, "
                        "no NUMA nodes with enough memory is available")
ERR_DEFAULT_PREFERRED = "[memorymanager] failed to find the default preferred hint"
ERR_EXTEND = "[memorymanager] failed to find NUMA nodes to extend the current topology hint"
ERR_EXTENDED_PREFERRED = "[memorymanager] failed to find the extended preferred hint"
ERR_GROUP_RULE = "[memorymanager] preferred hint violates NUMA node allocation"

HintMap = Dict[str, List[TopologyHint]]


class MemoryAllocationError(AdmissionError):
    """Allocate failed: the kubelet rejects the pod with UnexpectedAdmissionError.

    ``error`` is the memory manager's own error text; ``message`` the kubelet's wrapped message.
    """

    def __init__(self, error: str, reason: Optional[str] = None) -> None:
        if reason is None:
            wrapped = AdmissionError.unexpected(error)
            super().__init__(wrapped.reason, wrapped.message)
        else:  # a typed admission error: the reason and the text as they are
            super().__init__(reason, error)
        self.error = error


class EmptyPodSharedPoolError(MemoryAllocationError):
    """``AllocatePod`` refused a pod-level pod whose exclusive requests leave its shared pool
    empty: reason ``EmptyPodSharedPoolError``, the memory manager's text as the message."""

    def __init__(self, error: str) -> None:
        super().__init__(error, "EmptyPodSharedPoolError")


class UnsupportedPod(NumaguardError):
    """A pod the simulator cannot decide for (the kubelet path is not reproduced), named clearly."""


class MissingMemoryTable(UnsupportedPod):
    """A requested memory type with no table on a NUMA node: the kubelet would crash there."""


class _RequestError(Exception):
    """A request the memory manager cannot represent (only ever converted to a kubelet error)."""


# ---- requests (getRequestedResources) ----------------------------------------------------------


def _as_int64(amount: Any) -> Optional[int]:
    """``Quantity.AsInt64`` on a quantity, or a plain int checked against the int64 range.

    A pod reaches the kubelet through the API server, which stores quantities in canonical form
    (``1.5Gi`` becomes ``1536Mi``), so AsInt64 sees the canonical re-parse, not the manifest text.
    """
    if isinstance(amount, int) and not isinstance(amount, bool):
        return amount if INT64_MIN <= amount <= INT64_MAX else None
    return parse_quantity(str(amount)).as_int64()


def container_requested_resources(container: Any) -> Dict[str, int]:
    """Memory and hugepages **requests** of a container, bytes (zero values kept).

    Raises :class:`_RequestError` when a value is not an integer within int64 (the kubelet's
    "failed to represent quantity as int64").
    """
    quantities = getattr(container, "request_quantities", None) or container.requests
    result: Dict[str, int] = {}
    for name, amount in quantities.items():
        if not is_memory_type(name):
            continue
        value = _as_int64(amount)
        if value is None:
            raise _RequestError(ERR_INT64)
        result[name] = u64(value)
    return result


def pod_level_requested_resources(pod: Any) -> Dict[str, int]:
    """The pod budget of a pod-level managed pod: its ``spec.resources`` memory and hugepages
    requests above zero, bytes (``getPodRequestedResources`` with PodLevelResourceManagers)."""
    result: Dict[str, int] = {}
    for name, amount in (pod.pod_requests_quantities or {}).items():
        if not is_memory_type(name):
            continue
        value = _as_int64(amount)
        if value is None:
            raise _RequestError(ERR_INT64)
        if value > 0:
            result[name] = value
    return result


def pod_requested_resources(pod: Any, sidecar_aware: bool = True) -> Dict[str, int]:
    """The pod-scope request per type: max(app sum + sidecars, each regular init + earlier sidecars);
    ``sidecar_aware`` False (kubelets before 1.29): max(largest init container, app sum), restartable
    init containers counted as regular ones.

    Only types requested by app containers are kept (a type only init containers ask for is
    dropped, as in the kubelet).
    """
    init_max: Dict[str, int] = {}
    sidecars: Dict[str, int] = {}
    for container in pod.init_containers:
        for name, value in container_requested_resources(container).items():
            init_max.setdefault(name, 0)
            if container.restartable and sidecar_aware:
                sidecars[name] = u64(sidecars.get(name, 0) + value)
            elif u64(sidecars.get(name, 0) + value) > init_max[name]:
                init_max[name] = u64(sidecars.get(name, 0) + value)
    apps: Dict[str, int] = {}
    for container in pod.containers:
        for name, value in container_requested_resources(container).items():
            apps[name] = u64(apps.get(name, 0) + value)
    result: Dict[str, int] = {}
    for name in apps:
        long_running = u64(apps[name] + sidecars.get(name, 0))
        result[name] = max(long_running, init_max.get(name, 0))
    return result


# ---- mask enumeration helpers ----------------------------------------------------------------

_SUMS_CACHE: Dict[Tuple[int, ...], List[int]] = {}


def _subset_sums(values: Sequence[int]) -> List[int]:
    """uint64 sum of ``values[i]`` over the set bits i of every positional mask (index = mask).

    Cached by the values themselves (callers never mutate the list): consecutive pods and
    containers mostly see the same free memory per node, so the 2^N table is reused until a
    node's value changes.
    """
    key = tuple(values)
    sums = _SUMS_CACHE.get(key)
    if sums is None:
        sums = _compute_subset_sums(key)
        if len(_SUMS_CACHE) >= 16:
            _SUMS_CACHE.clear()
        _SUMS_CACHE[key] = sums
    return sums


def _compute_subset_sums(values: Sequence[int]) -> List[int]:
    sums = [0]
    if sum(values) < _UINT64_MOD:
        for value in values:
            sums += [total + value for total in sums]
    else:  # only with wrapped-around tables: keep Go's uint64 arithmetic
        for value in values:
            sums += [(total + value) % _UINT64_MOD for total in sums]
    return sums


def _mask_tables(node_ids: Tuple[int, ...]) -> Tuple[List[int], List[int], List[int]]:
    """(positional masks in kubelet order, size by positional mask, real mask value by positional mask).

    ``node_ids`` is sorted, so positional masks (bit i = i-th smallest id) are exactly the compact
    masks of the mask table the CPU and device managers use: one shared, cached table per machine.
    """
    # imported here: implicit hint sets never need it (issue 12)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.mask_table import table_for

    table = table_for(node_ids)
    return table.order, table.count, table.real


_HINT_TABLE_CACHE: Dict[Tuple[Tuple[int, ...], int], List[Any]] = {}


def _hint_table(node_ids: Tuple[int, ...], min_size: int) -> List[Any]:
    """Interned hint by positional mask (index 0 unused): preferred iff the mask has ``min_size``
    nodes. Turning 65535 candidates into hints is then one C-level lookup each."""
    # imported here: implicit hint sets never need the table (issue 12)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.mask_table import gc_paused, table_for
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.mask_table import hint as interned_hint

    key = (node_ids, min_size)
    table = _HINT_TABLE_CACHE.get(key)
    if table is None:
        _order, size_of, real = _mask_tables(node_ids)
        with gc_paused():
            table = [None] + [interned_hint(real[pm], size_of[pm] == min_size) for pm in range(1, len(real))]
            # positional masks are the mask table's compact masks (bit i = i-th smallest id)
            memoise_dicts(table[1:], table_for(node_ids).bits[1:])
        if len(_HINT_TABLE_CACHE) >= 32:
            _HINT_TABLE_CACHE.clear()
        _HINT_TABLE_CACHE[key] = table
    return table


#: allocatable never changes after start-up, and the keys hold the values: safe to share
#: between simulators (and cheap to reuse across pods)
_ALLOC_CACHE: Dict[Any, List[int]] = {}
_FIT_CACHE: Dict[Any, List[int]] = {}


def _positional(value: int, position: Mapping[int, int]) -> Optional[int]:
    """Real mask value -> positional mask (None when it names a node outside ``position``)."""
    result = 0
    node = 0
    while value:
        if value & 1:
            if node not in position:
                return None
            result |= 1 << position[node]
        value >>= 1
        node += 1
    return result


def _free(node, name):
    table = node.memory_map.get(name)
    return 0 if table is None else table.free


def _allocatable(node, name):
    table = node.memory_map.get(name)
    return 0 if table is None else table.allocatable


def _mask(hint: TopologyHint) -> BitMask:
    """The NUMA mask of a memory hint: the memory manager's own hints, and the hint it decides
    on once a nil affinity was replaced by the default hint, always carry one."""
    if hint.affinity is None:
        raise MemoryAllocationError(ERR_DEFAULT_AFFINITY)
    return hint.affinity


def find_best_hint(hints: Sequence[TopologyHint]) -> Optional[TopologyHint]:
    """``findBestHint``: first hint, then preferred over not, then narrower (fewer nodes, smaller)."""
    best: Optional[TopologyHint] = None
    for hint in hints:
        if best is None:
            best = hint
            continue
        if hint.preferred and not best.preferred:
            best = hint
            continue
        if hint.preferred == best.preferred and _mask(hint).is_narrower_than(_mask(best)):
            best = hint
    return best


def _group_rules(state: Mapping[int, Any],
                 node_ids: Sequence[int],
                 bit_of: Callable[[int], int]) -> Tuple[int, int, List[Tuple[int, int]]]:
    """The NUMA-group rules of ``calculateHints`` as masks (a node's bit given by ``bit_of``):

    * nodes whose cells hold more than one node: no single-node mask;
    * nodes with assignments in a one-node group: no multi-node mask;
    * (bit, group) for nodes with assignments in a multi-node group: a multi-node mask holding
      the node must be exactly the group (-1, equal to no mask, for a group naming a node twice
      or a node the state does not have).
    """
    in_group = 0
    single_used = 0
    groups: List[Tuple[int, int]] = []
    for node_id in node_ids:
        node = state[node_id]
        bit = bit_of(node_id)
        cells = node.cells or []
        if len(cells) > 1:
            in_group |= bit
        if node.number_of_assignments > 0:
            if len(cells) == 1:
                single_used |= bit
            else:
                ordered = sorted(cells)
                group = -1
                if len(set(ordered)) == len(ordered) and all(c in state for c in ordered):
                    group = 0
                    for cell in ordered:
                        group |= bit_of(cell)
                groups.append((bit, group))
    return in_group, single_used, groups


def _best_of(hints: Any, superset_of: int = 0) -> Optional[TopologyHint]:
    """:func:`find_best_hint` over the hints (list or hint set) whose mask contains ``superset_of``."""
    if is_hint_set(hints):
        return hints.best(superset_of)
    return find_best_hint([h for h in hints if not superset_of & ~h.affinity.value])


class MemoryManagerStatic:
    """The Static policy provider: hints, Allocate, release, on an in-memory machine state.

    ``machine_state``: NUMA id -> :class:`NUMANodeState` (already validated, e.g. by
    :func:`...memorymanager.memory_manager.new_memory_manager`); ``entries``: pod UID -> container
    -> blocks; ``pod_entries``: pod UID -> the pod budget's blocks of pod-level pods (restored
    from the state file; only kept with PodLevelResourceManagers on, as the kubelet restores
    them). All are copied. ``feature_gates``: only PodLevelResourceManagers matters here.
    ``version``: the kubelet release (default: the newest released kubelet, the one engine default); it decides how a pod whose
    pod-level blocks were restored is admitted again (``_k8s/versions.py``).
    """

    policy_name = POLICY_STATIC
    #: provider name shown in admission results
    name = "memory"

    def __init__(self,
                 machine_state: Mapping[int, Any],
                 entries: Optional[Mapping[str, Mapping[str, List[Block]]]] = None,
                 feature_gates: Optional[Mapping[str, bool]] = None,
                 pod_entries: Optional[Mapping[str, Sequence[Block]]] = None,
                 version: Tuple[int, ...] = NEWEST_RELEASED) -> None:
        self._state = clone_machine_state(machine_state)
        self._entries = clone_assignments(entries or {})
        self._reusable: Dict[str, Dict[int, Dict[str, int]]] = {}
        self._gates = dict(feature_gates or {})
        #: pod UID -> the pod budget's blocks of pod-level pods (the checkpoint's podEntries)
        self._pod_entries: Dict[str, List[Block]] = {}
        if self._gates.get(POD_LEVEL_RESOURCE_MANAGERS):
            self._pod_entries = dict((str(uid), list(blocks)) for uid, blocks in (pod_entries or {}).items())
        self._version = tuple(version)
        #: 1.29+: restartable init containers are sidecars (summed, never reused); 1.28 treats them
        #: as regular init containers (``_k8s/versions.py`` MANAGERS_SIDECAR_AWARE)
        self._sidecar_aware = behaviour(MANAGERS_SIDECAR_AWARE, self._version)
        #: 1.32+: Allocate refuses a multi-NUMA affinity that breaks the NUMA-group rule
        self._allocate_group_rule = behaviour(MEMORY_ALLOCATE_NUMA_GROUP_RULE, self._version)
        self.counters = PinningCounters()
        self._alloc_cache = _ALLOC_CACHE
        self._fit_cache = _FIT_CACHE

    # ---- read access ---------------------------------------------------------------------
    def machine_state(self):
        """A deep copy of the machine state (NUMA id -> NUMANodeState)."""
        return clone_machine_state(self._state)

    def assignments(self):
        """A copy of the container assignments (pod UID -> container -> [Block])."""
        return clone_assignments(self._entries)

    def blocks(self, pod_uid: str, container_name: str) -> Optional[List[Block]]:
        """The container's blocks (None when it has none in state)."""
        blocks = self._entries.get(pod_uid, {}).get(container_name)
        return None if blocks is None else list(blocks)

    def state(self) -> Dict[str, Any]:
        """Plain data in the state file's shape: policy name, machine state (int keys), entries."""
        return {
            "policy_name": self.policy_name,
            "machine_state": machine_state_to_plain(self._state),
            "entries": entries_to_plain(self._entries),
            "pod_entries": dict((uid, [b.to_plain() for b in blocks]) for uid, blocks in sorted(self._pod_entries.items())),
        }

    def checkpoint(self):
        """The state as ``engine.checkpoint.MemoryManagerCheckpoint`` (for ``dump_memory_manager_state``)."""
        # imported here: only a run that writes a state file compiles its format (20 KB)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.checkpoint import (
            checkpoint_from_state,
        )

        return checkpoint_from_state(self.state())

    def memory_map(self) -> Dict[int, Dict[str, Dict[str, int]]]:
        """Per NUMA node, per type: total, systemReserved, allocatable, reserved, free."""
        return dict((node_id, dict((name, table.to_plain()) for name, table in sorted(node.memory_map.items())))
                    for node_id, node in sorted(self._state.items()))

    def reusable_memory(self) -> Dict[str, Dict[Tuple[int, ...], Dict[str, int]]]:
        """The init-container reusable memory bookkeeping (pod -> NUMA ids -> type -> bytes)."""
        return dict((pod, dict((BitMask.from_value(key).bits(), dict(per)) for key, per in masks.items()))
                    for pod, masks in self._reusable.items())

    # ---- provider protocol ---------------------------------------------------------------
    def _ignores_pod_level(self, pod: Any) -> bool:
        """True when the pod uses pod-level resources and the kubelet ignores it (gate off)."""
        return bool(getattr(pod, "has_pod_level_resources", False)) and not self._gates.get(POD_LEVEL_RESOURCE_MANAGERS)

    def pod_level_managed(self, pod: Any) -> bool:
        """Pod-level ``spec.resources`` with PodLevelResourceManagers on (KEP-5526)."""
        return bool(getattr(pod, "has_pod_level_resources", False)) and bool(self._gates.get(POD_LEVEL_RESOURCE_MANAGERS))

    def container_requests(self, pod: Any, container: Any) -> Dict[str, int]:
        """``getContainerRequestedResources``: nothing for a container of a pod-level managed pod
        whose cpu and memory requests do not equal its limits (it uses the pod shared pool)."""
        if self.pod_level_managed(pod) and not container.equivalent_guaranteed():
            return {}
        return container_requested_resources(container)

    def pod_requests(self, pod: Any) -> Dict[str, int]:
        """``getPodRequestedResources``: the pod budget for a pod-level managed pod."""
        if self.pod_level_managed(pod):
            return pod_level_requested_resources(pod)
        return pod_requested_resources(pod, self._sidecar_aware)

    def pod_scope_error(self, pod: Any) -> Optional[str]:
        """``validatePodScopeResources`` (pkg/kubelet/cm/memorymanager/policy_static.go): the
        kubelet's text when the pod budget cannot hold the exclusive blocks next to the
        containers that need the pod shared pool, else None. Types are checked in sorted order
        (the kubelet walks a Go map: with two failing types its pick is random)."""
        budget = self.pod_requests(pod)
        sidecars: Dict[str, int] = {}
        shared_long_running = False
        for container in pod.init_containers:
            requests = self.container_requests(pod, container)
            if not container.restartable:
                if requests:
                    for name in sorted(budget):
                        room = budget[name] - sidecars.get(name, 0)
                        if requests.get(name, 0) > room:
                            return ("pod rejected, largest exclusive init container requests %d of %s, but only %d available"
                                    % (requests.get(name, 0), name, u64(room)))
                else:
                    for name in sorted(budget):
                        if sidecars.get(name, 0) >= budget[name]:
                            return "pod rejected, pod has shared init containers but no %s available for them" % name
                continue
            if not requests:
                shared_long_running = True
                continue
            for name, value in requests.items():
                sidecars[name] = sidecars.get(name, 0) + value
        exclusive = dict(sidecars)
        for container in pod.containers:
            requests = self.container_requests(pod, container)
            if not requests:
                shared_long_running = True
                continue
            for name, value in requests.items():
                exclusive[name] = exclusive.get(name, 0) + value
        if shared_long_running:
            for name in sorted(budget):
                if exclusive.get(name, 0) >= budget[name]:
                    return ("pod rejected, sum of exclusive container %s requests equals pod budget, "
                            "leaving no memory for shared containers" % name)
        return None

    def get_topology_hints(self, pod: Any, container: Any) -> Optional[HintMap]:
        """Container-scope hints (``GetTopologyHints``)."""
        if pod.qos_class != GUARANTEED:
            return None
        try:
            requested = self.container_requests(pod, container)
        except _RequestError:
            return None
        if self._ignores_pod_level(pod):
            return None
        blocks = self._entries.get(pod.uid, {}).get(container.name)
        if blocks is not None:
            return self._regenerate(blocks, requested)
        return self.topology_hints(pod.uid, requested)

    def get_pod_topology_hints(self, pod: Any) -> Optional[HintMap]:
        """Pod-scope hints (``GetPodTopologyHints``)."""
        if pod.qos_class != GUARANTEED:
            return None
        try:
            requested = self.pod_requests(pod)
        except _RequestError:
            return None
        if self._ignores_pod_level(pod):
            return None
        if self.pod_level_managed(pod) and self.pod_scope_error(pod) is not None:
            # an empty pod shared pool: no hint can satisfy it, the Topology Manager rejects
            return dict((name, []) for name in requested)
        if not requested:
            return None
        pod_blocks = self._pod_entries.get(pod.uid) if self.pod_level_managed(pod) else None
        if pod_blocks is not None and behaviour(MEMORY_POD_HINTS_FROM_POD_BLOCKS, self._version):
            # kubernetes/kubernetes#141070 (1.38): the pod budget's blocks give the hint back
            return self._regenerate(pod_blocks, requested)
        for container in tuple(pod.init_containers) + tuple(pod.containers):
            blocks = self._entries.get(pod.uid, {}).get(container.name)
            if blocks is not None:
                return self._regenerate(blocks, requested)
        return self.topology_hints(pod.uid, requested)

    def allocate(self, pod: Any, container: Any, affinity: Optional[TopologyHint]) -> None:
        """Allocate the container's memory on ``affinity`` (the Topology Manager's stored hint).

        Raises :class:`MemoryAllocationError` (UnexpectedAdmissionError) when the kubelet's
        Allocate fails; the state is then unchanged, as in the kubelet.
        """
        if pod.qos_class != GUARANTEED:
            return
        if self._ignores_pod_level(pod):
            return
        self.counters.requests += 1
        try:
            self._allocate(pod, container, ZERO_HINT if affinity is None else affinity)
        except MemoryAllocationError:
            self.counters.errors += 1
            raise

    def allocate_pod(self, pod: Any, affinity: Optional[TopologyHint]) -> None:
        """``AllocatePod`` (PodLevelResourceManagers, pod scope): the pod budget reserved once on
        the affinity (widened like Allocate), then split: an exclusive block set per qualifying
        container, regular init containers that do not qualify get the budget minus the sidecars
        started before them, every other container the pod shared pool (what the exclusive
        blocks leave). Raises :class:`EmptyPodSharedPoolError` or :class:`MemoryAllocationError`;
        the state is then unchanged."""
        if pod.qos_class != GUARANTEED or not self.pod_level_managed(pod):
            return
        try:
            budget = self.pod_requests(pod)
        except _RequestError:
            return  # the kubelet logs and admits without memory pinning
        if pod.uid in self._pod_entries:
            if not behaviour_confirmed(MEMORY_ALLOCATE_POD_KEEPS_RESTORED, self._version):
                raise UnsupportedPod(
                    "pod %s/%s already holds pod-level memory blocks (podEntries, e.g. restored from "
                    "memory_manager_state): admitting it again is not simulated for kubelet %s: no source says whether "
                    "that release keeps a restored pod-level allocation (kubernetes/kubernetes#141077, "
                    "kubelet 1.38) or reserves the pod budget a second time (kubelet 1.36)"
                    % (pod.namespace, pod.name, format_version(self._version[:2])))
            if behaviour(MEMORY_ALLOCATE_POD_KEEPS_RESTORED, self._version):
                return  # kubernetes/kubernetes#141077: the restored allocation stays as it is
        self.counters.requests += 1
        try:
            self._allocate_pod(pod, budget, ZERO_HINT if affinity is None else affinity)
        except MemoryAllocationError:
            self.counters.errors += 1
            raise
        # the kubelet also counts one pinning request per init container and per app container
        # with exclusive blocks while it partitions the budget
        self.counters.requests += len(pod.init_containers) + sum(
            1 for c in pod.containers if self.container_requests(pod, c))

    def _allocate_pod(self, pod: Any, budget: Mapping[str, int], hint: TopologyHint) -> None:
        error = self.pod_scope_error(pod)
        if error is not None:
            raise EmptyPodSharedPoolError(error)
        best = self._widen(pod, budget, hint, "pod %s/%s" % (pod.namespace, pod.name))
        bits = _mask(best).bits()
        exclusive: Dict[str, List[Block]] = {}
        sidecars: Dict[str, int] = {}
        for container in pod.init_containers:
            try:
                requests = self.container_requests(pod, container)
            except _RequestError as exc:
                raise MemoryAllocationError(str(exc))
            if not requests:
                if not container.restartable:
                    exclusive[container.name] = [Block(bits, name, budget[name] - sidecars.get(name, 0))
                                                 for name in sorted(budget) if budget[name] - sidecars.get(name, 0) > 0]
                continue
            exclusive[container.name] = [Block(bits, name, size) for name, size in sorted(requests.items()) if size > 0]
            if container.restartable:
                for name, size in requests.items():
                    sidecars[name] = sidecars.get(name, 0) + size
        pool = dict((name, budget[name] - sidecars.get(name, 0)) for name in budget)
        for container in pod.containers:
            try:
                requests = self.container_requests(pod, container)
            except _RequestError as exc:
                raise MemoryAllocationError(str(exc))
            if not requests:
                continue
            blocks = []
            for name, size in sorted(requests.items()):
                if size > 0:
                    blocks.append(Block(bits, name, size))
                    pool[name] = pool.get(name, 0) - size
            exclusive[container.name] = blocks
        shared = [Block(bits, name, size) for name, size in sorted(pool.items()) if size > 0]
        self._pod_entries[pod.uid] = [Block(bits, name, budget[name]) for name in sorted(budget)]
        for name in sorted(budget):
            reserve(self._state, bits, name, budget[name])
        per_pod = self._entries.setdefault(pod.uid, {})
        for container in pod.all_containers():
            per_pod[container.name] = list(exclusive.get(container.name, shared))

    def _widen(self, pod: Any, requested: Mapping[str, int], hint: TopologyHint, who: str) -> TopologyHint:
        """The affinity Allocate and AllocatePod work on: the default hint for a nil affinity, a
        wider one when the free memory under it is too small, refused when it breaks the
        NUMA-group rule. ``who`` names the pod or container in the hugepages-only refusal."""
        best = hint
        if best.affinity is None:
            hints = self.topology_hints(pod.uid, requested)
            if not hints:
                raise MemoryAllocationError(ERR_DEFAULT_AFFINITY)
            default = _best_of(hints.get(MEMORY, []))
            if default is None:
                raise UnsupportedPod(
                    "%s requests hugepages but no memory in a Guaranteed pod; the kubelet's memory "
                    "manager has no default affinity for it (it would dereference a nil NUMA mask)" % who)
            if not default.preferred and best.preferred:
                raise MemoryAllocationError(ERR_DEFAULT_PREFERRED)
            best = default
        for node_id in _mask(best).bits():
            self._node(node_id)
        if not self._satisfies(_mask(best), requested):
            hints = self.topology_hints(pod.uid, requested)
            extended = _best_of(hints.get(MEMORY, []), _mask(best).value)
            if extended is None:
                raise MemoryAllocationError(ERR_EXTEND)
            if not extended.preferred and best.preferred:
                raise MemoryAllocationError(ERR_EXTENDED_PREFERRED)
            best = extended
        if self._allocate_group_rule and self._violates_groups(_mask(best)):
            # before 1.32 (kubernetes/kubernetes#123443) the blocks simply span the nodes
            raise MemoryAllocationError(ERR_GROUP_RULE)
        return best

    def pod_blocks(self, pod_uid: str) -> Optional[List[Block]]:
        """The pod budget's blocks of a pod-level pod (None for other pods)."""
        blocks = self._pod_entries.get(pod_uid)
        return None if blocks is None else list(blocks)

    def remove(self, pod_uid: str, container_name: str) -> None:
        """Release a container's blocks (``RemoveContainer``); no-op when it has none. A pod-level
        pod's budget is released with its last container."""
        per_pod = self._entries.get(pod_uid)
        if per_pod is None or container_name not in per_pod:
            return
        blocks = per_pod.pop(container_name)
        if not per_pod:
            del self._entries[pod_uid]
        pod_blocks = self._pod_entries.get(pod_uid) if self._gates.get(POD_LEVEL_RESOURCE_MANAGERS) else None
        if pod_blocks is not None:
            if per_pod:
                return
            del self._pod_entries[pod_uid]
            blocks = pod_blocks
        for block in blocks:
            release(self._state, block)

    def remove_pod(self, pod_uid: str) -> None:
        """Release every container of a pod (container names in sorted order)."""
        for name in sorted(self._entries.get(pod_uid, {})):
            self.remove(pod_uid, name)

    def remove_stale_state(self, active: Mapping[str, Sequence[str]]) -> None:
        """``removeStaleState``: release containers not in ``active`` (pod UID -> container names)."""
        for pod_uid in sorted(self._entries):
            keep = set(active.get(pod_uid, ()))
            for name in sorted(self._entries.get(pod_uid, {})):
                if name not in keep:
                    self.remove(pod_uid, name)

    # ---- hints -----------------------------------------------------------------------------
    def _hint(self, value: int, preferred: bool) -> TopologyHint:
        """Hints are immutable: one object per (mask, preferred), shared by every provider."""
        # imported here: implicit hint sets never need the table (issue 12)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.mask_table import hint as interned_hint

        return interned_hint(value, preferred)

    def _regenerate(self,
                    blocks: Sequence[Block],
                    requested: Mapping[str, int]) -> Optional[HintMap]:
        """``regenerateHints``: the stored blocks as preferred hints, or None on any mismatch."""
        hints: HintMap = dict((name, []) for name in requested)
        if len(blocks) != len(requested):
            return None
        for block in blocks:
            if block.type not in requested or block.size != requested[block.type]:
                return None
            try:
                value = mask_value(block.numa_affinity)
            except InvalidBitMask:
                return None
            hints[block.type].append(self._hint(value, True))
        return hints

    def topology_hints(self, pod_uid: str, requested: Mapping[str, int]) -> Dict[str, Any]:
        """``calculateHints``: hint lists, or on big machines one hint set shared by every
        requested type (the kubelet gives every type the same masks); remembers the masks walked."""
        node_ids = tuple(sorted(self._state))
        if not requested or not node_ids:
            return {}
        walked = (1 << len(node_ids)) - 1
        if implicit_for(len(node_ids)):
            hints: Dict[str, Any] = self.hint_sets(pod_uid, requested)
        else:
            hints = dict((name, HintList(value, walked))
                         for name, value in self.calculate_hints(pod_uid, requested).items())
        if not hints:
            return EmptyHintMap(dict((name, walked) for name in requested))
        return hints

    def hint_sets(self, pod_uid: str, requested: Mapping[str, int]) -> Dict[str, Any]:
        """The masks of :meth:`calculate_hints` as one rule: allocatable and free (plus this pod's
        reusable memory on exactly that mask) reach every request, uint64 sums, NUMA-group rules;
        preferred = the fewest nodes whose allocatable holds the request. Empty map: none fit."""
        # imported here: machines whose hints are listed never compile the hint sets (33 KB)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hint_sets import Need, ThresholdHintSet
        state = self._state
        node_ids = tuple(sorted(state))
        names = sorted(requested)
        self._require_tables(node_ids, names)
        allocatable = [Need(dict((n, _allocatable(state[n], name)) for n in node_ids), requested[name], wrap64=True)
                       for name in names]
        min_size = ThresholdHintSet(node_ids, allocatable, None).min_size()
        if min_size is None:
            return {}
        reusable = self._reusable.get(pod_uid, {})
        free = [Need(dict((n, _free(state[n], name)) for n in node_ids), requested[name],
                     bonus=dict((mask, per.get(name, 0)) for mask, per in reusable.items() if per.get(name, 0)),
                     wrap64=True)
                for name in names]
        in_group, single_used, groups = _group_rules(state, node_ids, lambda node_id: 1 << node_id)
        hint_set = ThresholdHintSet(node_ids, allocatable + free, min_size, no_single=in_group,
                                    multi_forbidden=single_used, groups=groups)
        if hint_set.is_empty():
            return {}
        return dict((name, hint_set) for name in names)

    def calculate_hints(self, pod_uid: str, requested: Mapping[str, int]) -> HintMap:
        """``calculateHints`` on the current machine state (empty map when nothing fits).

        Same answer as the kubelet's loop over every mask, computed as successive filters over
        the masks in the kubelet's order (subset sums per resource, positional masks), so that
        16 NUMA nodes (65535 masks) stay fast.
        """
        state = self._state
        node_ids = tuple(sorted(state))
        count = len(node_ids)
        if not requested or not count:
            return {}
        names = sorted(requested)
        self._require_tables(node_ids, names)
        order, size_of, _real = _mask_tables(node_ids)
        position = dict((node_id, index) for index, node_id in enumerate(node_ids))

        # 1. masks whose allocatable memory holds every request; they define "preferred"
        candidates = self._fitting_allocatable(node_ids, order, requested, names)
        if not candidates:
            return {}
        min_size = size_of[candidates[0]]   # masks come by size: the first is the smallest

        # 2. NUMA-group rules
        in_group, single_used, grouped = _group_rules(state, node_ids, lambda node_id: 1 << position[node_id])
        if in_group:
            candidates = [pm for pm in candidates if size_of[pm] != 1 or not pm & in_group]
        if single_used:
            candidates = [pm for pm in candidates if size_of[pm] == 1 or not pm & single_used]
        for bit, required in grouped:
            candidates = [pm for pm in candidates if size_of[pm] == 1 or not pm & bit or pm == required]

        # 3. free memory, plus this pod's reusable init-container memory on exactly that mask
        reusable = self._reusable.get(pod_uid, {})
        for name in names:
            wanted = requested[name]
            free = [_free(state[node_id], name) for node_id in node_ids]
            extra = dict((pm, per.get(name, 0)) for pm, per in
                         ((_positional(value, position), per) for value, per in reusable.items())
                         if pm is not None)
            if any(extra.values()):
                sums = _subset_sums(free)
                candidates = [pm for pm in candidates if u64(sums[pm] + extra.get(pm, 0)) >= wanted]
            elif min(free) >= wanted and sum(free) < _UINT64_MOD:
                # every node alone holds the request and no sum wraps around (uint64): every mask
                # holds it, the filter would keep every candidate
                continue
            else:
                sums = _subset_sums(free)
                candidates = [pm for pm in candidates if sums[pm] >= wanted]
        if not candidates:
            return {}
        hints = list(map(_hint_table(node_ids, min_size).__getitem__, candidates))
        return dict((name, list(hints)) for name in names)

    def _fitting_allocatable(self,
                             node_ids: Tuple[int, ...],
                             order: List[int],
                             requested: Mapping[str, int],
                             names: List[str]) -> List[int]:
        """Masks (positional, kubelet order) whose allocatable holds the request; cached, since
        allocatable never changes after start-up."""
        key = (node_ids, tuple((name, requested[name]) for name in names),
               tuple(tuple(_allocatable(self._state[n], name) for n in node_ids) for name in names))
        found = self._fit_cache.get(key)
        if found is not None:
            return found
        candidates = order
        for name in names:
            wanted = requested[name]
            sums = self._allocatable_sums(node_ids, name)
            candidates = [pm for pm in candidates if sums[pm] >= wanted]
        if len(self._fit_cache) > 64:
            self._fit_cache.clear()
        self._fit_cache[key] = candidates
        return candidates

    def _allocatable_sums(self, node_ids: Tuple[int, ...], name: str) -> List[int]:
        """Subset sums of allocatable (constant after start-up), cached per node list and type."""
        values = tuple(_allocatable(self._state[node_id], name) for node_id in node_ids)
        key = (node_ids, name, values)
        sums = self._alloc_cache.get(key)
        if sums is None:
            sums = _subset_sums(values)
            self._alloc_cache[key] = sums
        return sums

    # ---- allocation -------------------------------------------------------------------------
    def _reusable_for(self, pod_uid: str, value: int, name: str) -> int:
        return self._reusable.get(pod_uid, {}).get(value, {}).get(name, 0)

    def _require_tables(self, node_ids: Sequence[int], names: Sequence[str]) -> None:
        """The kubelet reads every requested type's table on every node it looks at; a missing table
        is a nil dereference there (the kubelet crashes). Refuse clearly instead of guessing."""
        for name in names:
            missing = [node_id for node_id in node_ids if name not in self._node(node_id).memory_map]
            if missing:
                raise MissingMemoryTable(
                    'the pod requests "%s", which NUMA node(s) %s of this machine do not have (no such '
                    "hugepage pool): the kubelet's memory manager would dereference a missing memory "
                    "table and crash; the scheduler normally keeps such pods off the node"
                    % (name, ", ".join(str(n) for n in missing)))

    def _satisfies(self, mask: BitMask, requested: Mapping[str, int]) -> bool:
        """``isAffinitySatisfyRequest``: the mask's free memory (no reuse) covers every request."""
        self._require_tables(mask.bits(), sorted(requested))
        for name, size in requested.items():
            free = 0
            for node_id in mask.bits():
                table = self._node(node_id).memory_map.get(name)
                free += 0 if table is None else table.free
            if u64(free) < size:
                return False
        return True

    def _node(self, node_id):
        node = self._state.get(node_id)
        if node is None:
            raise UnsupportedPod("the topology affinity names NUMA node %d, which the memory manager's "
                                 "machine state does not have (nodes: %s)"
                                 % (node_id, ", ".join(str(n) for n in sorted(self._state))))
        return node

    def _violates_groups(self, mask: BitMask) -> bool:
        """``isAffinityViolatingNUMAAllocations``: only multi-node masks are checked."""
        bits = mask.bits()
        if len(bits) == 1:
            return False
        for node_id in bits:
            node = self._node(node_id)
            if node.number_of_assignments == 0:
                continue
            cells = node.cells or []
            if len(cells) == 1:
                return True
            if sorted(cells) != list(bits):
                return True
        return False

    def _allocate(self, pod: Any, container: Any, hint: TopologyHint) -> None:
        existing = self._entries.get(pod.uid, {}).get(container.name)
        if existing is not None:
            self._update_reusable(pod, container, existing)
            return
        try:
            requested = container_requested_resources(container)
        except _RequestError as exc:
            raise MemoryAllocationError(str(exc))
        best = self._widen(pod, requested, hint, "container %r of pod %s/%s" % (container.name, pod.namespace, pod.name))

        bits = _mask(best).bits()
        value = _mask(best).value
        new_blocks: List[Block] = []
        for name in sorted(requested):
            size = requested[name]
            new_blocks.append(Block(bits, name, size))
            reusable = self._reusable_for(pod.uid, value, name)
            reserve(self._state, bits, name, 0 if reusable >= size else size - reusable)
        self._update_reusable(pod, container, new_blocks)
        self._entries.setdefault(pod.uid, {})[container.name] = new_blocks
        self._rewrite_init_blocks(pod, container, new_blocks)

    def _update_reusable(self, pod: Any, container: Any, blocks: Sequence[Block]) -> None:
        """``updatePodReusableMemory`` (pkg/kubelet/cm/memorymanager/policy_static.go): other pods' entries are dropped first."""
        for uid in list(self._reusable):
            if uid != pod.uid:
                del self._reusable[uid]
        regular_init = False
        for init in pod.init_containers:
            if init.name == container.name:
                regular_init = not (init.restartable and self._sidecar_aware)
                break
        if regular_init:
            per_pod = self._reusable.setdefault(pod.uid, {})
            for block in blocks:
                per_mask = per_pod.setdefault(mask_value(block.numa_affinity), {})
                if block.size > per_mask.get(block.type, 0):
                    per_mask[block.type] = block.size
            return
        for block in blocks:
            key = mask_value(block.numa_affinity)
            current = self._reusable_for(pod.uid, key, block.type)
            if current != 0:
                self._reusable[pod.uid][key][block.type] = 0 if block.size >= current else current - block.size

    def _rewrite_init_blocks(self, pod: Any, container: Any, new_blocks: Sequence[Block]) -> None:
        """``updateInitContainersMemoryBlocks``: earlier regular init containers' blocks shrink."""
        per_pod = self._entries.setdefault(pod.uid, {})
        for new_block in new_blocks:
            remaining = new_block.size
            new_key = mask_value(new_block.numa_affinity)
            for init in pod.init_containers:
                if init.name == container.name:
                    break
                if remaining == 0:
                    break
                if init.restartable and self._sidecar_aware:
                    continue
                blocks = per_pod.get(init.name)
                if not blocks:
                    continue
                blocks = list(blocks)
                for index, block in enumerate(blocks):
                    if block.size == 0 or block.type != new_block.type:
                        continue
                    try:
                        same = mask_value(block.numa_affinity) == new_key
                    except InvalidBitMask:
                        same = False
                    if not same:
                        continue
                    if block.size > remaining:
                        blocks[index] = block.with_size(block.size - remaining)
                        remaining = 0
                    else:
                        remaining -= block.size
                        blocks[index] = block.with_size(0)
                per_pod[init.name] = blocks
