# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``reservedMemory``: compute it with a strategy, and validate it exactly as the kubelet will.

The kubelet's rule (pkg/kubelet/cm/memorymanager/memory_manager.go validateReservedMemory): for
every memory type (``memory`` and each ``hugepages-<size>``) the sum over NUMA nodes of
``reservedMemory`` must equal the Node Allocatable reservation of that type, which is
systemReserved + kubeReserved + the ``memory.available`` hard eviction threshold
(node_container_manager_linux.go GetNodeAllocatableReservation). The kubelet checks that only at
start-up, stops at the first problem, and never checks that a node's reservation plus its
hugepages fits that node. :func:`validate_reservation` reports every problem at once, in the
kubelet's words where it has some, each with the numbers and a concrete fix.

Public API (also used by the kubelet-config module and role preflight):

* :func:`validate_reservation` -> :class:`ValidationResult`
* :func:`validate_kubelet_config` (same, reading a KubeletConfiguration dict)
* :func:`compute_reservation` / :func:`plan_reservation` (strategies ``node0``, ``spread``,
  ``proportional``, ``reserved_cpus``, ``explicit``)
* :func:`node_allocatable_reservation` (the right-hand side of the equation)
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.eviction import EvictionSettings, effective_eviction_hard
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.policy_none import POLICIES, POLICY_NONE, POLICY_STATIC
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.reserved import (
    MemoryReservation,
    ReservedMemoryError,
    convert_reserved,
    format_reserved_memory_flag,
    memory_type_sum_check,
    parse_reserved_memory,
    require_system_reserved_memory,
    reservations_to_config,
    total_memory_type_reserved,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.node_allocatable import (
    SYSTEM_RESERVED_HUGEPAGES,
    AllocatablePart,
    node_allocatable_capacity_message,
    node_allocatable_reservation,
    node_capacity,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import ReservationSyntaxError, parse_resource_map
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.startup import REFUSES, startup_verdict
from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import (
    InvalidCPUSet,
    format_cpuset,
    parse_cpuset,
    parse_go_cpuset,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_quote
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import (
    InvalidQuantity,
    Quantity,
    format_bytes,
    parse_quantity,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import (
    CPU,
    HUGEPAGES_PREFIX,
    MEMORY,
    is_memory_type,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import NEWEST_RELEASED, KubeletAssumption, gate_enabled
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.node_allocatable_text import part_text
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.findings import (
    ERROR,
    WARNING,
    Finding,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.state_drift import predict_state

STRATEGIES = ("node0", "spread", "proportional", "reserved_cpus", "explicit")
MIB = 1024 * 1024
_UINT64 = 1 << 64


class ReservationError(NumaguardError):
    """A reservation that cannot be computed (e.g. it does not fit the nodes the strategy may use)."""


@dataclass
class ValidationResult:
    """Everything :func:`validate_reservation` found; :meth:`to_dict` is the module's return."""

    valid: bool
    errors: List[Finding]
    warnings: List[Finding]
    reservations: List[MemoryReservation]
    expected: Dict[str, Quantity]
    totals: Dict[str, Dict[str, Any]]
    nodes: List[Dict[str, Any]]
    policy: str
    eviction: Optional[EvictionSettings] = None
    strategy: Optional[str] = None
    state: Optional[Dict[str, Any]] = None
    extra: Dict[str, Any] = field(default_factory=dict)

    @property
    def reserved_memory(self) -> List[Dict[str, Any]]:
        return reservations_to_config(self.reservations)

    @property
    def flag(self) -> str:
        return format_reserved_memory_flag(self.reservations)

    def to_dict(self) -> Dict[str, Any]:
        result = {
            "valid": self.valid,
            "errors": [str(f) for f in self.errors],
            "warnings": [str(f) for f in self.warnings],
            "findings": [f.to_dict() for f in self.errors + self.warnings],
            "reserved_memory": self.reserved_memory,
            "flag": self.flag,
            "totals": self.totals,
            "nodes": self.nodes,
            "memory_manager_policy": self.policy,
            "strategy": self.strategy,
        }
        if self.eviction is not None:
            result["eviction_hard"] = {"effective": dict(self.eviction.effective), "source": self.eviction.source,
                                       "dropped_defaults": list(self.eviction.zeroed_defaults)}
        if self.state is not None:
            result["state"] = self.state
        result.update(self.extra)
        return result


# -- helpers --------------------------------------------------------------------------------------

def _type_order(name: str) -> Tuple[int, int, str]:
    if name == MEMORY:
        return (0, 0, name)
    try:
        size = parse_quantity(name[len(HUGEPAGES_PREFIX):]).value()
    except InvalidQuantity:
        size = -1
    return (1, size, name)


def _join_ids(ids: Sequence[int]) -> str:
    return ", ".join("%d" % i for i in ids) or "none"


def _is_integral(quantity: Quantity) -> bool:
    numerator, denominator = quantity.as_fraction()
    return numerator % denominator == 0


def _hugepage_bytes(node: Any) -> int:
    return sum(pool.page_size_bytes * pool.total_pages for pool in node.hugepages.values())


def _suggest_size(name: str, host_sizes: Sequence[str]) -> str:
    try:
        wanted = parse_quantity(name[len(HUGEPAGES_PREFIX):]).value()
    except InvalidQuantity:
        return ""
    for size in host_sizes:
        if parse_quantity(size[len(HUGEPAGES_PREFIX):]).value() == wanted:
            return " (the kubelet spells this size %s)" % size
    return ""


def _under_none(policy: Any) -> str:
    """The sentence a Static-only finding gets when the policy is not Static ("" under Static)."""
    if policy == POLICY_STATIC:
        return ""
    return (" memoryManagerPolicy is %s, so the kubelet ignores this today, but it will refuse to start once the "
            "policy is switched to Static." % policy)


def reserved_quantity_finding(node_id: int, name: str, quantity: Quantity, policy: Any) -> Optional[Finding]:
    """The finding for one ``reservedMemory`` limit the memory manager cannot use, or None.

    A negative quantity (our check: the kubelet converts it to an unsigned number of bytes), or one
    ``Quantity.AsInt64`` refuses (``convertReserved`` in memory_manager.go: a fraction with a binary
    suffix, a negative scale such as ``1.0`` or ``1000m``, more than 18 significant digits) -- the
    kubelet's "could not covert a variable of type Quantity to int64" (typo kept). Errors under
    Static, warnings otherwise. Shared by :func:`validate_reservation` and ``kubelet_config``'s
    own Static check, so both word it alike.
    """
    static = policy == POLICY_STATIC
    sev = ERROR if static else WARNING
    if quantity.sign() < 0:
        return Finding("reserved-memory-negative", sev,
                       "reservedMemory %s for NUMA node %d is negative (%s); the kubelet converts it to an unsigned "
                       "64-bit number of bytes.%s" % (name, node_id, quantity, _under_none(policy)),
                       "use a positive quantity", None, False)
    if quantity.as_int64() is not None:
        return None
    message = "could not covert a variable of type Quantity to int64"
    canonical = parse_quantity(str(quantity))
    written = (str(quantity) if _is_integral(quantity) and canonical.as_int64() is not None
               else format_bytes(quantity.value()))
    what = ("is not a whole number of bytes" if not _is_integral(quantity) else
            "is written in a form the kubelet holds as a decimal (a fraction with a binary suffix, a "
            "negative scale such as 1.0 or 1000m, or more than 18 significant digits)")
    return Finding("reserved-memory-integer", sev,
                   "reservedMemory %s=%s for NUMA node %d %s: %s.%s"
                   % (name, quantity.written(), node_id, what, message, _under_none(policy)),
                   "use a whole number of bytes, e.g. %s" % written, message, static)


def reserved_numa_node_findings(reservations: Sequence[MemoryReservation], host_ids: Sequence[int],
                                policy: Any) -> List[Finding]:
    """``getTotalMemoryTypeReserved``'s start-up error for each NUMA node the reservation names and the
    host lacks (errors under Static, warnings otherwise); shared with ``kubelet_config``."""
    static = policy == POLICY_STATIC
    found = []
    for node_id in sorted(set(r.numa_node for r in reservations)):
        if node_id not in host_ids:
            message = "the reserved memory configuration references a NUMA node %d that does not exist on this machine" % node_id
            found.append(Finding(
                "reserved-memory-numa-node", ERROR if static else WARNING,
                "%s (host NUMA nodes: %s).%s" % (message, _join_ids(host_ids), _under_none(policy)),
                "move the NUMA node %d reservation to one of %s" % (node_id, _join_ids(host_ids)), message, static))
    return found


def static_needs_reservation(reservations: Sequence[MemoryReservation]) -> Optional[Finding]:
    """``NewPolicyStatic``'s check on ``convertReserved``'s bytes (the one model): no ``memory``
    reserved on any node. None when the reservation passes, or when a limit cannot be converted
    (the kubelet stops at that first; :func:`reserved_quantity_finding` reports it)."""
    try:
        converted = convert_reserved((), reservations)
    except ReservedMemoryError:
        return None  # the kubelet stops at the conversion: nothing more to say (and no fix to give) here
    try:
        require_system_reserved_memory(converted)
    except ReservedMemoryError as exc:
        return Finding("static-needs-reservation", ERROR,
                       "memoryManagerPolicy Static needs a non-empty reservedMemory: %s" % exc,
                       "reserve at least kube-reserved + system-reserved + the hard eviction threshold "
                       "(default memory.available<100Mi), e.g. 0:memory=100Mi", str(exc), True)
    return None


# -- validation -----------------------------------------------------------------------------------

def validate_reservation(topology: Topology, kube_reserved: Any = None, system_reserved: Any = None, eviction_hard: Any = None,
                         reserved_memory: Any = None, memory_manager_policy: Any = POLICY_NONE,
                         merge_default_eviction_settings: bool = False, memory_capacity_bytes: Optional[int] = None,
                         allocatable_ignore_eviction: bool = False, memory_manager_state: Optional[str] = None,
                         state_file: Optional[str] = None, strategy: Optional[str] = None,
                         reserved_cpus: Any = None, kubelet: Any = None) -> ValidationResult:
    """Validate a reservation against a topology; never raises for bad settings, reports them.

    ``kube_reserved``/``system_reserved``: flag string (``cpu=500m,memory=1Gi``) or dict.
    ``eviction_hard``: flag string (``memory.available<500Mi``) or dict; None = kubelet defaults.
    ``reserved_memory``: flag string, list of flag strings, KubeletConfiguration list, or a list
    of :class:`MemoryReservation`. ``memory_capacity_bytes``: the node's memory capacity
    (``/proc/meminfo`` MemTotal) for percentage thresholds; default: sum of the NUMA nodes.
    ``memory_manager_state``: content of an existing ``memory_manager_state`` to predict whether
    the kubelet will accept it with this configuration (``state_file`` names it in messages).
    ``reserved_cpus``: ``reservedSystemCPUs`` (it replaces the cpu of kube/system-reserved in the
    Node Allocatable capacity check). ``kubelet``: the ``_k8s.versions.KubeletAssumption`` whose
    wording and gates apply (default: the newest released kubelet).
    """
    found = _Found(memory_manager_policy if memory_manager_policy is not None else POLICY_NONE)
    policy = found.policy
    capacity = memory_capacity_bytes if memory_capacity_bytes is not None else topology.memory_total_bytes()

    # SystemReservedHugepages (KEP-6252): kube/system-reserved may hold hugepages, which then count
    # in the Node Allocatable reservation, so a hugepages reservedMemory entry can balance.
    hugepages_reservable = (kubelet.enabled(SYSTEM_RESERVED_HUGEPAGES) if kubelet is not None
                            else gate_enabled(SYSTEM_RESERVED_HUGEPAGES, NEWEST_RELEASED))

    # 1. parse every input; a syntax error is fatal at kubelet start-up (flag/config parsing).
    kube = _parse_map(kube_reserved, "kube_reserved", found.errors, hugepages_reservable)
    system = _parse_map(system_reserved, "system_reserved", found.errors, hugepages_reservable)
    eviction = _parse_eviction(eviction_hard, merge_default_eviction_settings, found.errors)
    # a reservation the kubelet cannot parse stops it there: no sum or emptiness check of what was not read
    reservations, unparsed = _parse_reservations(reserved_memory, found.errors)
    _check_policy_name(policy, found.errors)

    # 2. KubeletConfiguration validation (validation_reserved_memory.go): fatal for every policy.
    _check_config_entries(reservations, found)
    # 3. Memory manager start-up (Static): NUMA ids, per-type sums, non-empty reservation.
    _check_node_ids_and_sizes(topology, reservations, found)

    inputs_ok = kube is not None and system is not None and eviction is not None
    allocatable: Dict[str, Quantity] = {}
    addends: Dict[str, List[AllocatablePart]] = {}
    if kube is not None and system is not None and eviction is not None:
        allocatable, addends = node_allocatable_reservation(system, kube, eviction, capacity, _reserved_names(kube, system),
                                                            _reserved_cpus_count(reserved_cpus), allocatable_ignore_eviction)
        _append(found.errors, _node_allocatable_capacity(topology, allocatable, capacity, kubelet))
    expected: Dict[str, Quantity] = dict((n, q) for n, q in allocatable.items() if is_memory_type(n))

    sums = _Sums(reservations, expected, addends, hugepages_reservable, eviction,
                 check=inputs_ok and not unparsed, host_ids=topology.node_ids())
    totals = _sum_totals(sums, found)

    if found.static and not unparsed:
        _append(found.errors, static_needs_reservation(reservations))
    startup = None
    if inputs_ok and not unparsed and policy in POLICIES and not allocatable_ignore_eviction and _validates(found.errors):
        config = startup_config(kube_reserved, system_reserved, eviction_hard, merge_default_eviction_settings,
                                reservations, policy, reserved_cpus)
        startup = _kubelet_startup(topology, config, kubelet, capacity, found.errors)

    # 4. Our own checks: per-node capacity (the kubelet subtracts unsigned), memory-only nodes.
    per_node = _bytes_per_node(reservations)
    nodes = [_node_row(node, per_node.get(node.id, {}), found) for node in topology.nodes]

    if eviction is not None and eviction.zeroed_defaults:
        found.warnings.append(_eviction_defaults_dropped(eviction))

    state = None
    if memory_manager_state is not None:
        state_findings, state = predict_state(topology, per_node, policy, memory_manager_state, state_file)
        for state_finding in state_findings:
            found.add(state_finding)

    return ValidationResult(valid=not found.errors, errors=found.errors, warnings=found.warnings, reservations=reservations,
                            expected=expected, totals=totals, nodes=nodes, policy=str(policy), eviction=eviction,
                            strategy=strategy, state=state,
                            extra={"memory_capacity_bytes": capacity, "kubelet_startup": startup})


def startup_config(kube_reserved: Any, system_reserved: Any, eviction_hard: Any, merge_default_eviction_settings: bool,
                   reservations: Sequence[MemoryReservation], policy: Any, reserved_cpus: Any) -> Dict[str, Any]:
    """The KubeletConfiguration fields a reservation sets, as the kubelet's start-up reads them
    (unset ones left out: the kubelet's defaults)."""
    config: Dict[str, Any] = {"memoryManagerPolicy": policy, "reservedMemory": reservations_to_config(reservations),
                              "mergeDefaultEvictionSettings": bool(merge_default_eviction_settings)}
    for name, value in (("kubeReserved", kube_reserved), ("systemReserved", system_reserved),
                        ("evictionHard", eviction_hard), ("reservedSystemCPUs", reserved_cpus)):
        if value is not None:
            config[name] = value
    return config


def _kubelet_startup(topology: Topology, config: Mapping[str, Any], kubelet: Any, capacity: int,
                     errors: List[Finding]) -> Dict[str, Any]:
    """``startup_verdict`` (the engine's one start-up path) on the reservation's configuration; a
    refusal no error quotes yet is added to ``errors``. Returns the verdict."""
    assumed = kubelet or KubeletAssumption.resolve()
    startup = _STARTUP_VERDICTS.verdict(topology, config, assumed, capacity)
    _append(errors, _startup_finding(startup, errors))
    return startup


class _StartupVerdicts:
    """``startup_verdict`` once per (topology, configuration, kubelet release and gates, capacity):
    recommend's search and a property test validate the same reservation on the same machine many
    times, and each verdict builds every manager. A value the key cannot spell exactly (anything but
    YAML's scalars, lists and mappings, in their order) is never looked up."""

    _SCALARS = (str, int, float, bool, type(None))
    _LIMIT = 256

    def __init__(self) -> None:
        self.verdicts: Dict[Any, Dict[str, Any]] = {}

    def _frozen(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            return ("map",) + tuple((self._frozen(k), self._frozen(v)) for k, v in value.items())
        if isinstance(value, (list, tuple)):
            return ("seq",) + tuple(self._frozen(v) for v in value)
        if isinstance(value, self._SCALARS):
            return (type(value).__name__, repr(value))
        raise TypeError(type(value).__name__)

    def verdict(self, topology: Topology, config: Mapping[str, Any], kubelet: Any, capacity: int) -> Dict[str, Any]:
        try:
            key: Any = (topology, self._frozen(config), self._frozen(kubelet.version), self._frozen(kubelet.gates), capacity)
            hash(key)
        except TypeError:
            key = None
        found = self.verdicts.get(key) if key is not None else None
        if found is None:
            found = startup_verdict(topology, config, kubelet, memory_capacity_bytes=capacity)
            if key is not None:
                if len(self.verdicts) >= self._LIMIT:
                    self.verdicts.clear()
                self.verdicts[key] = found
        return dict(found)


_STARTUP_VERDICTS = _StartupVerdicts()


def _startup_finding(startup: Mapping[str, Any], errors: Sequence[Finding]) -> Optional[Finding]:
    """The kubelet's own refusal (``startup_verdict``) as a finding when no error found already
    quotes it: the verdict is the engine's, the findings add the numbers and the fixes."""
    message = startup["message"]
    if startup["verdict"] != REFUSES or any(f.kubelet_message and (f.kubelet_message in message or message in f.kubelet_message)
                                            for f in errors):
        return None
    return Finding("kubelet-startup", ERROR, "the kubelet refuses to start (%s manager): %s" % (startup["manager"], message),
                   "change the setting the kubelet's message names", message, True)


#: KubeletConfiguration validation (validation_reserved_memory.go): the kubelet exits before it builds a manager
_CONFIG_VALIDATION = frozenset(("reserved-memory-type", "reserved-memory-zero", "reserved-memory-duplicate"))


def _validates(errors: Sequence[Finding]) -> bool:
    """Whether the configuration passes the kubelet's validation, so that it reaches its managers."""
    return not any(f.fatal and f.rule in _CONFIG_VALIDATION for f in errors)


def _bytes_per_node(reservations: Sequence[MemoryReservation]) -> Dict[int, Dict[str, int]]:
    """Bytes reserved per NUMA node and type (convertReserved: later entries overwrite earlier ones)."""
    per_node: Dict[int, Dict[str, int]] = {}
    for reservation in reservations:
        for name, quantity in reservation.limits_map().items():
            per_node.setdefault(reservation.numa_node, {})[name] = quantity.value()
    return per_node


def _append(findings: List[Finding], finding: Optional[Finding]) -> None:
    if finding is not None:
        findings.append(finding)


def _reserved_names(kube: Mapping[str, Quantity], system: Mapping[str, Quantity]) -> List[str]:
    """The resources of the Node Allocatable reservation: cpu, memory and the hugepages reserved."""
    return [CPU, MEMORY] + sorted(set(n for n in list(kube) + list(system) if n.startswith(HUGEPAGES_PREFIX)))


class _Found:
    """The findings of one validation, and where a rule the memory manager enforces only under
    Static goes: an error under Static, a warning under None (it bites on a switch)."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.static = policy == POLICY_STATIC
        self.sev = ERROR if self.static else WARNING
        self.under_none = _under_none(policy)
        self.errors: List[Finding] = []
        self.warnings: List[Finding] = []

    def static_rule(self, finding: Finding) -> None:
        (self.errors if self.static else self.warnings).append(finding)

    def add(self, finding: Finding) -> None:
        """A finding whose severity is already decided."""
        (self.errors if finding.severity == ERROR else self.warnings).append(finding)


def _parse_eviction(eviction_hard: Any, merge_defaults: bool, errors: List[Finding]) -> Optional[EvictionSettings]:
    try:
        return effective_eviction_hard(eviction_hard, merge_defaults, "eviction_hard")
    except ReservationSyntaxError as exc:
        errors.append(Finding("eviction-hard-syntax", ERROR, str(exc), "fix the evictionHard value; the kubelet "
                              "refuses to start with it", exc.kubelet_message, True))
        return None


def _parse_reservations(reserved_memory: Any, errors: List[Finding]) -> Tuple[List[MemoryReservation], bool]:
    """The reservations, and whether the kubelet could not parse them (then there are none)."""
    if reserved_memory is None:
        return [], False
    if isinstance(reserved_memory, list) and all(isinstance(r, MemoryReservation) for r in reserved_memory):
        return list(reserved_memory), False
    try:
        return parse_reserved_memory(reserved_memory, "reserved_memory"), False
    except ReservationSyntaxError as exc:
        fix = ("write each NUMA node as <id>:<type>=<quantity>[,<type>=<quantity>], nodes separated by ';' "
               "and no spaces, e.g. 0:memory=3Gi;1:memory=2148Mi")
        if isinstance(reserved_memory, str):
            # a string is the flag's form; a KubeletConfiguration (kubelet_numa_settings) takes only a list
            fix += (" (the --reserved-memory flag's form; in a KubeletConfiguration such as kubelet_numa_settings "
                    "reservedMemory is a list, e.g. [{numaNode: 0, limits: {memory: 3Gi}}])")
        errors.append(Finding("reserved-memory-syntax", ERROR, str(exc), fix, exc.kubelet_message, True))
        return [], True


def _check_policy_name(policy: Any, errors: List[Finding]) -> None:
    if policy in POLICIES:
        return
    message = "unknown policy: %s" % go_quote(str(policy))
    fix = "use None or Static (case-sensitive)"
    for known in POLICIES:
        if str(policy).lower() == known.lower():
            fix = "policy names are case-sensitive: write %s" % known
    if str(policy) == "BestEffort":
        fix = "BestEffort exists only for Windows nodes; use None or Static"
    errors.append(Finding("memory-manager-policy", ERROR, "memoryManagerPolicy %s: %s" % (go_quote(str(policy)), message),
                          fix, message, True))


def _check_config_entries(reservations: Sequence[MemoryReservation], found: _Found) -> None:
    """validation_reserved_memory.go: each entry's types, zeros and duplicates (fatal for every
    policy), and each quantity as the kubelet converts it."""
    errors = found.errors
    seen: Dict[int, Dict[str, bool]] = {}
    for reservation in reservations:
        node_id = reservation.numa_node
        for name in reservation.duplicate_types():
            errors.append(Finding(
                "reserved-memory-duplicate", ERROR,
                "reservedMemory entry for NUMA node %d lists %s more than once; the kubelet silently keeps "
                "only the last value (%s)." % (node_id, go_quote(name), reservation.limits_map()[name]),
                "write each type once per NUMA node", None, False))
        for name, quantity in reservation.limits_map().items():
            if not is_memory_type(name):
                message = ("invalid configuration: the limit type %s for NUMA node %d is not supported, only "
                           "[memory hugepages-<HugePageSize>] is accepted" % (go_quote(name), node_id))
                errors.append(Finding("reserved-memory-type", ERROR, message,
                                      "remove %s from NUMA node %d; only memory (and, pointlessly, hugepages) can be "
                                      "reserved per NUMA node" % (name, node_id), message, True))
            if quantity.is_zero():
                message = ("invalid configuration: reserved memory may not be zero for NUMA node %d and resource %s"
                           % (node_id, go_quote(name)))
                errors.append(Finding("reserved-memory-zero", ERROR, message,
                                      "drop the %s entry of NUMA node %d instead of writing 0" % (name, node_id),
                                      message, True))
            if name in seen.setdefault(node_id, {}):
                message = ("invalid configuration: the reserved memory has a duplicate value for NUMA node %d and "
                           "resource %s" % (node_id, go_quote(name)))
                errors.append(Finding("reserved-memory-duplicate", ERROR, message,
                                      "merge the %s entries of NUMA node %d into one" % (name, node_id), message, True))
            seen[node_id][name] = True
            finding = reserved_quantity_finding(node_id, name, quantity, found.policy)
            if finding is not None:
                found.add(finding)


def _check_node_ids_and_sizes(topology: Topology, reservations: Sequence[MemoryReservation], found: _Found) -> None:
    """The memory manager's start-up: every NUMA node and hugepage size named exists on the host."""
    host_sizes = topology.hugepage_sizes()
    for finding in reserved_numa_node_findings(reservations, topology.node_ids(), found.policy):
        found.static_rule(finding)
    for reservation in reservations:
        for name in reservation.limits_map():
            if name.startswith(HUGEPAGES_PREFIX) and name not in host_sizes:
                found.static_rule(Finding(
                    "reserved-memory-hugepage-size", found.sev,
                    "reservedMemory for NUMA node %d names %s, which is not a hugepage size of this host "
                    "(host sizes: %s)%s.%s" % (reservation.numa_node, name, ", ".join(host_sizes) or "none",
                                               _suggest_size(name, host_sizes), found.under_none),
                    "remove %s from reservedMemory" % name, None, found.static))


@dataclass
class _Sums:
    """What the per-type sum rule compares: the reservations against Node Allocatable."""

    reservations: Sequence[MemoryReservation]
    expected: Mapping[str, Quantity]
    addends: Mapping[str, List[AllocatablePart]]
    hugepages_reservable: bool
    eviction: Optional[EvictionSettings]
    check: bool  # the inputs parsed: the kubelet gets as far as the sums
    host_ids: Sequence[int]


def _sum_totals(sums: _Sums, found: _Found) -> Dict[str, Dict[str, Any]]:
    """``validateReservedMemory`` per memory type: the totals (with the equation) and a finding per
    type that does not balance."""
    by_type: Dict[str, List[Tuple[int, Quantity]]] = {}
    for reservation in sums.reservations:
        for name, quantity in reservation.limits_map().items():
            if is_memory_type(name):
                by_type.setdefault(name, []).append((reservation.numa_node, quantity))
    types = sorted(set(by_type) | set(sums.expected), key=_type_order)
    if MEMORY not in types:
        types.insert(0, MEMORY)
    totals: Dict[str, Dict[str, Any]] = {}
    reserved_sums = total_memory_type_reserved(sums.reservations)  # getTotalMemoryTypeReserved, the one sum rule
    for name in types:
        entries = by_type.get(name, [])
        # validateReservedMemory's comparison and message, the engine's one
        reserved_total, wanted, sum_message = memory_type_sum_check(name, reserved_sums.get(name), sums.expected.get(name))
        balanced = sum_message is None
        left_side = " + ".join("%s (node %d)" % (q, n) for n, q in entries) or "nothing"
        if name == MEMORY or sums.hugepages_reservable:
            right = " + ".join("%s %s" % (part_text(p), p.quantity) for p in sums.addends.get(name, [])) or "nothing"
        else:
            right = "nothing (kube-reserved and system-reserved cannot hold hugepages)"
        equation = "%s: reservedMemory %s = %s; Node Allocatable %s = %s: %s" % (
            name, left_side, reserved_total, right, wanted, "balanced" if balanced else "NOT balanced")
        totals[name] = {
            "reserved": str(reserved_total), "reserved_bytes": reserved_total.value(),
            "node_allocatable": str(wanted), "node_allocatable_bytes": wanted.value(),
            "per_node": dict(("%d" % n, str(q)) for n, q in entries),
            "balanced": balanced, "difference_bytes": wanted.value() - reserved_total.value(),
            "equation": equation,
        }
        if name == MEMORY or (sums.hugepages_reservable and sums.addends.get(name)):
            totals[name]["parts"] = dict((p.label, str(p.quantity)) for p in sums.addends.get(name, []))
        if sum_message is None or not sums.check:
            continue
        if not found.static and not sums.reservations:
            # the kubelet checks the sums only under Static (memory_manager.go NewManager: policy None never
            # calls getSystemReservedMemory): with nothing written there is nothing to warn about
            continue
        rule, detail, fix = _sum_finding_text(sums, name, reserved_total, wanted)
        found.static_rule(Finding(rule, found.sev, "%s (%s; %s).%s" % (sum_message, equation, detail, found.under_none),
                                  fix, sum_message, found.static))
    return totals


def _sum_finding_text(sums: _Sums, name: str, reserved_total: Quantity, wanted: Quantity) -> Tuple[str, str, str]:
    """(rule, detail, fix) of a memory type whose sum does not balance."""
    diff = wanted.value() - reserved_total.value()
    if name.startswith(HUGEPAGES_PREFIX) and sums.hugepages_reservable:
        detail = ("with the SystemReservedHugepages feature gate, Node Allocatable for %s is kube-reserved + "
                  "system-reserved (eviction never holds hugepages): reservedMemory sums to %d bytes, Node "
                  "Allocatable to %d bytes" % (name, reserved_total.value(), wanted.value()))
        fix = ("make the %s entries of reservedMemory sum to %s, or change %s in kubeReserved/systemReserved"
               % (name, wanted, name))
        return "reserved-memory-sum", detail, fix
    if name.startswith(HUGEPAGES_PREFIX):
        detail = ("kube-reserved and system-reserved cannot hold hugepages (the kubelet accepts only cpu, memory, "
                  "ephemeral-storage and pid there), so Node Allocatable for %s is always 0 and a hugepages entry "
                  "in reservedMemory can never balance" % name)
        fix = ("remove %s from reservedMemory; keep pods off those hugepages by not pre-allocating them on that "
               "node instead" % name)
        return "reserved-memory-hugepages", detail, fix
    detail = ("reservedMemory sums to %d bytes, Node Allocatable to %d bytes: %s %s"
              % (reserved_total.value(), wanted.value(), format_bytes(abs(diff)),
                 "short" if diff > 0 else "too much"))
    return "reserved-memory-sum", detail, _sum_fix(sums.reservations, diff, wanted, sums.host_ids, sums.eviction)


def _node_row(node: Any, reserved: Mapping[str, int], found: _Found) -> Dict[str, Any]:
    """One NUMA node of the result, with our own checks on it: its reservation plus hugepages fits
    it (the kubelet subtracts unsigned) and a memory-only node's reservation."""
    huge = _hugepage_bytes(node)
    mem = reserved.get(MEMORY, 0)
    left = node.memory_total_bytes - mem - huge
    under_none = found.under_none
    if left < 0:
        excess = mem + huge - node.memory_total_bytes  # -left, spelled so that pylint 2.x (core 2.16) sees an int
        found.static_rule(Finding(
            "node-capacity", found.sev,
            "NUMA node %d: reserved memory %s + hugepages %s = %s exceeds the node's memory %s by %s; the kubelet "
            "computes allocatable = total - reserved - hugepages in unsigned 64-bit arithmetic and would start "
            "with a wrapped-around allocatable of %d bytes instead of refusing.%s"
            % (node.id, format_bytes(mem), format_bytes(huge), format_bytes(mem + huge),
               format_bytes(node.memory_total_bytes), format_bytes(excess), left % _UINT64, under_none),
            "move %s of the reservation to another NUMA node (strategy spread or proportional does this), or "
            "pre-allocate fewer hugepages on node %d" % (format_bytes(excess), node.id), None, False))
    for name, value in sorted(reserved.items()):
        if name.startswith(HUGEPAGES_PREFIX) and name in node.hugepages:
            pool = node.hugepages[name]
            pool_bytes = pool.page_size_bytes * pool.total_pages
            if value > pool_bytes:
                found.static_rule(Finding(
                    "node-capacity", found.sev,
                    "NUMA node %d: reserved %s %s exceeds the node's %s pool of %s (%d pages); the kubelet would "
                    "compute a wrapped-around allocatable.%s" % (node.id, name, format_bytes(value), name,
                                                                 format_bytes(pool_bytes), pool.total_pages, under_none),
                    "remove %s from reservedMemory" % name, None, False))
    if reserved and node.memory_only:
        found.warnings.append(Finding(
            "memory-only-node", WARNING,
            "NUMA node %d has no CPUs (memory-only, e.g. CXL or HBM) but gets reservedMemory %s; the kubelet "
            "allows it, but system daemons and the kubelet rarely allocate there, so the reservation may not "
            "protect them." % (node.id, ",".join("%s=%s" % (k, format_bytes(v)) for k, v in sorted(reserved.items()))),
            "prefer NUMA nodes with CPUs (strategy node0 or reserved_cpus)", None, False))
    return {
        "id": node.id, "cpus": format_cpuset(node.cpus), "memory_only": node.memory_only,
        "memory_total_bytes": node.memory_total_bytes, "hugepages_bytes": huge,
        "reserved": dict((k, format_bytes(v) if v >= 0 else "%d" % v) for k, v in sorted(reserved.items())),
        "reserved_memory_bytes": mem,
        "guaranteed_memory_bytes": left,
        "guaranteed_memory": format_bytes(left) if left >= 0 else "-" + format_bytes(-left),
    }


def _eviction_defaults_dropped(eviction: EvictionSettings) -> Finding:
    dropped = list(eviction.zeroed_defaults)
    memory_note = ""
    if "memory.available" in dropped:
        memory_note = (" In particular memory.available is unset, so the memory hard-eviction threshold is 0 and "
                       "reservedMemory must NOT include the usual 100Mi.")
    return Finding(
        "eviction-defaults-dropped", WARNING,
        "evictionHard sets only %s and mergeDefaultEvictionSettings is false, so the kubelet drops its defaults "
        "for %s (they become 0).%s" % (
            ", ".join(sorted(eviction.effective)) or "nothing", ", ".join(dropped), memory_note),
        "list every signal you want in evictionHard (defaults: memory.available<100Mi, nodefs.available<10%, "
        "nodefs.inodesFree<5%, imagefs.available<15%, imagefs.inodesFree<5%) or set "
        "mergeDefaultEvictionSettings: true", None, False)


def _reserved_cpus_count(reserved_cpus: Any) -> Optional[int]:
    """The number of ``reservedSystemCPUs`` (kubelet cpuset syntax), None when unset, empty or
    invalid (reported by the reservedSystemCPUs check)."""
    if reserved_cpus in (None, ""):
        return None
    try:
        return len(parse_go_cpuset(str(reserved_cpus))) or None
    except InvalidCPUSet:
        return None


def _node_allocatable_capacity(topology: Topology, reservation: Mapping[str, Quantity], memory_capacity_bytes: int,
                               kubelet: Any) -> Optional[Finding]:
    """The Node Allocatable capacity check (cpu, memory, and hugepages held by kube/system-reserved)
    as a Finding (fatal, every policy)."""
    version = kubelet.version if kubelet is not None else NEWEST_RELEASED
    cpu_count = sum(len(node.cpus) for node in topology.nodes)
    capacity = node_capacity(topology, memory_capacity_bytes, reservation)
    message = node_allocatable_capacity_message(capacity, reservation, version)
    if message is None:
        return None
    over = []
    for name in sorted(reservation):
        if name in capacity and reservation[name] > capacity[name]:
            if name == CPU:
                over.append("%s: reserved %s > capacity %d CPUs" % (name, reservation[name], cpu_count))
            else:
                over.append("%s: reserved %s > capacity %s" % (name, format_bytes(reservation[name].value()),
                                                               format_bytes(capacity[name].value())))
    return Finding("node-allocatable-capacity", ERROR,
                   "kube-reserved + system-reserved + the hard eviction threshold exceed the node's capacity (%s); "
                   "the kubelet refuses to start: %s" % ("; ".join(over), message),
                   "lower kubeReserved/systemReserved (or the memory.available eviction threshold, or "
                   "reservedSystemCPUs) so that they fit the node", message, True)


def _parse_map(value: Any, option: str, errors: List[Finding], hugepages: bool = False) -> Optional[Dict[str, Quantity]]:
    try:
        return parse_resource_map(value, option, hugepages)
    except ReservationSyntaxError as exc:
        errors.append(Finding(option.replace("_", "-") + "-syntax", ERROR, str(exc),
                              "%s accepts only cpu, memory, ephemeral-storage and pid with non-negative quantities, "
                              "e.g. cpu=500m,memory=1Gi" % option, exc.kubelet_message, True))
        return None


def _sum_fix(reservations: Sequence[MemoryReservation],
             diff: int,
             wanted: Quantity,
             host_ids: Sequence[int],
             eviction: Optional[EvictionSettings]) -> str:
    """A concrete corrected ``memory`` reservation: keep the user's split on existing nodes and
    adjust the lowest node by what is missing (or put everything there if that cannot work)."""
    hint = ""
    threshold = None if eviction is None else eviction.memory_threshold()
    if threshold is not None and diff > 0:
        hint = " (did you forget the hard eviction threshold %s<%s?)" % (threshold.signal, threshold.text)
    action = "add %s" % format_bytes(diff) if diff > 0 else "remove %s" % format_bytes(-diff)
    if wanted.is_zero():
        return "%s: remove the memory entries from reservedMemory%s" % (action, hint)
    current: Dict[int, int] = {}
    for reservation in reservations:
        limits = reservation.limits_map()
        if MEMORY in limits and reservation.numa_node in host_ids and limits[MEMORY].sign() > 0:
            current[reservation.numa_node] = limits[MEMORY].value()
    target = wanted.value()
    if current:
        lowest = min(current)
        current[lowest] += target - sum(current.values())
        if current[lowest] <= 0:
            current = {}
    if not current:
        current = {(host_ids[0] if host_ids else 0): target}
    fixed = [MemoryReservation(node, ((MEMORY, parse_quantity(format_bytes(current[node]))),))
             for node in sorted(current)]
    return ("%s%s, e.g. --reserved-memory %s (or let a strategy compute it)"
            % (action, hint, format_reserved_memory_flag(fixed)))


# -- strategies -----------------------------------------------------------------------------------

def compute_reservation(topology: Topology,
                        total_bytes: int,
                        strategy: str,
                        reserved_cpus: Any = None,
                        split_unit: int = MIB) -> List[MemoryReservation]:
    """Split ``total_bytes`` of ``memory`` over NUMA nodes; the sum is exact by construction.

    ``split_unit`` (default 1Mi) keeps per-node values round: the total is split in whole units
    and any sub-unit rest goes to the lowest node with room (so ``spread`` of 100Mi over three
    nodes is 34Mi/33Mi/33Mi; with ``split_unit=1`` it is 34952534/34952533/34952533 bytes). Nodes
    never get more than their memory minus their hugepages; what does not fit spills to the other
    nodes the strategy may use (``spread``, ``proportional``, ``reserved_cpus``), or raises
    :class:`ReservationError`.
    """
    if strategy not in STRATEGIES or strategy == "explicit":
        raise ReservationError("unknown strategy %r (expected one of %s)"
                               % (strategy, ", ".join(s for s in STRATEGIES if s != "explicit")))
    if isinstance(split_unit, bool) or not isinstance(split_unit, int) or split_unit < 1:
        raise ReservationError("split_unit must be a positive number of bytes, got %r" % (split_unit,))
    if total_bytes < 0:
        raise ReservationError("cannot reserve a negative amount of memory (%d bytes)" % total_bytes)
    room = dict((n.id, max(0, n.memory_total_bytes - _hugepage_bytes(n))) for n in topology.nodes)
    with_memory = [n for n in topology.nodes if n.memory_total_bytes > 0]
    if not with_memory:
        raise ReservationError("no NUMA node of this host reports any memory")
    if strategy == "node0":
        weights = {with_memory[0].id: 1}
    elif strategy == "spread":
        weights = dict((n.id, 1) for n in with_memory)
    elif strategy == "proportional":
        weights = dict((n.id, n.memory_total_bytes) for n in with_memory)
    else:
        weights = _reserved_cpu_weights(topology, reserved_cpus)
    shares = _distribute(total_bytes, weights, room, split_unit, strategy)
    return [MemoryReservation(node, ((MEMORY, parse_quantity(format_bytes(shares[node]))),))
            for node in sorted(shares) if shares[node] > 0]


def _reserved_cpu_weights(topology: Topology, reserved_cpus: Any) -> Dict[int, int]:
    if reserved_cpus is None or reserved_cpus == "":
        raise ReservationError("strategy reserved_cpus needs reservedSystemCPUs (option reserved_cpus or the "
                               "kubelet configuration's reservedSystemCPUs), e.g. 0-1")
    try:
        cpus = parse_cpuset(reserved_cpus) if isinstance(reserved_cpus, str) else frozenset(int(c) for c in reserved_cpus)
    except (InvalidCPUSet, TypeError, ValueError) as exc:
        raise ReservationError("reserved_cpus %r is not a CPU list: %s" % (reserved_cpus, exc))
    online = set(topology.online_cpus())
    missing = sorted(cpus - online)
    if missing:
        raise ReservationError("reservedSystemCPUs %s includes CPUs that are not online on this host: %s "
                               "(online: %s)" % (format_cpuset(cpus), format_cpuset(missing), format_cpuset(online)))
    weights = {}
    for node in topology.nodes:
        count = len(cpus.intersection(node.cpus))
        if count and node.memory_total_bytes > 0:
            weights[node.id] = count
    if not weights:
        raise ReservationError("reservedSystemCPUs %s are on no NUMA node with memory" % format_cpuset(cpus))
    return weights


def _distribute(total: int,
                weights: Dict[int, int],
                room: Dict[int, int],
                unit: int,
                strategy: str) -> Dict[int, int]:
    """Water-fill ``total`` bytes over ``weights`` in whole ``unit``s, capped by ``room``."""
    alloc = dict((node, 0) for node in weights)
    units, rest = divmod(total, unit)
    active = sorted(node for node in weights if room[node] >= unit)
    while units > 0 and active:
        weight_sum = sum(weights[n] for n in active)
        share = dict((n, units * weights[n] // weight_sum) for n in active)
        share[active[0]] += units - sum(share.values())  # the remainder goes to the lowest node
        clamped = False
        for n in active:
            fits = (room[n] - alloc[n]) // unit
            if share[n] > fits:
                share[n] = fits
                clamped = True
        for n in active:
            alloc[n] += share[n] * unit
            units -= share[n]
        active = [n for n in active if room[n] - alloc[n] >= unit]
        if not clamped:
            break
    rest += units * unit
    for n in sorted(weights):
        if rest == 0:
            break
        take = min(rest, room[n] - alloc[n])
        alloc[n] += take
        rest -= take
    if rest:
        raise ReservationError(
            "strategy %s cannot place %s: NUMA node(s) %s have only %s of memory left after hugepages"
            % (strategy, format_bytes(total), _join_ids(sorted(weights)), format_bytes(sum(room[n] for n in weights))))
    return alloc


def plan_reservation(topology: Topology, strategy: Optional[str] = None, kube_reserved: Any = None, system_reserved: Any = None, eviction_hard: Any = None,
                     reserved_memory: Any = None, memory_manager_policy: Any = POLICY_STATIC, merge_default_eviction_settings: bool = False,
                     memory_capacity_bytes: Optional[int] = None, allocatable_ignore_eviction: bool = False, reserved_cpus: Any = None,
                     split_unit: int = MIB, memory_manager_state: Optional[str] = None, state_file: Optional[str] = None,
                     kubelet: Any = None) -> ValidationResult:
    """Compute a reservation with ``strategy`` (or take ``reserved_memory``), then validate it.

    With ``strategy`` None or ``explicit`` the given ``reserved_memory`` is validated as is. A
    strategy needs valid kube/system/eviction settings to know the total; when they are invalid,
    or the strategy cannot place the total, the result is invalid with the reason in ``errors``.
    """
    common = dict(kube_reserved=kube_reserved, system_reserved=system_reserved, eviction_hard=eviction_hard,
                  memory_manager_policy=memory_manager_policy,
                  merge_default_eviction_settings=merge_default_eviction_settings,
                  memory_capacity_bytes=memory_capacity_bytes, allocatable_ignore_eviction=allocatable_ignore_eviction,
                  memory_manager_state=memory_manager_state, state_file=state_file,
                  reserved_cpus=reserved_cpus, kubelet=kubelet)
    if strategy is None or strategy == "explicit":
        if strategy == "explicit" and reserved_memory is None:
            result = validate_reservation(topology, reserved_memory=None, strategy=strategy, **common)
            result.errors.insert(0, Finding("strategy", ERROR, "strategy explicit needs reserved_memory",
                                            "give reserved_memory, or pick node0, spread, proportional or reserved_cpus"))
            result.valid = False
            return result
        return validate_reservation(topology, reserved_memory=reserved_memory, strategy=strategy, **common)
    probe = validate_reservation(topology, reserved_memory=[], strategy=strategy, **common)
    input_errors = [f for f in probe.errors if f.rule.endswith("-syntax") or f.rule == "memory-manager-policy"]
    if input_errors:
        probe.errors = input_errors
        probe.valid = False
        return probe
    total = probe.expected.get(MEMORY)
    try:
        computed = compute_reservation(topology, 0 if total is None else total.value(), strategy, reserved_cpus,
                                       split_unit)
    except ReservationError as exc:
        probe.errors = [Finding("strategy", ERROR, "strategy %s: %s" % (strategy, exc),
                                "pick another strategy (spread and proportional use every node with memory) or "
                                "lower kube-reserved/system-reserved", None, False)]
        probe.valid = False
        return probe
    return validate_reservation(topology, reserved_memory=computed, strategy=strategy, **common)


# -- KubeletConfiguration ---------------------------------------------------------------------------

def settings_from_kubelet_config(config: Mapping[str, Any]) -> Dict[str, Any]:
    """Pick the reservation-related fields out of a KubeletConfiguration dict (camelCase)."""
    if not isinstance(config, Mapping):
        raise ReservationSyntaxError("KubeletConfiguration must be a dict, got %s" % type(config).__name__)
    return {
        "kube_reserved": config.get("kubeReserved"),
        "system_reserved": config.get("systemReserved"),
        "eviction_hard": config.get("evictionHard"),
        "reserved_memory": config.get("reservedMemory"),
        "memory_manager_policy": config.get("memoryManagerPolicy") or None,
        "merge_default_eviction_settings": bool(config.get("mergeDefaultEvictionSettings", False)),
        "reserved_cpus": config.get("reservedSystemCPUs") or None,
    }


def validate_kubelet_config(topology: Topology,
                            config: Mapping[str, Any],
                            **overrides: Any) -> ValidationResult:
    """:func:`validate_reservation` on the fields of a KubeletConfiguration dict (overrides win)."""
    settings = settings_from_kubelet_config(config)
    settings.update(overrides)
    return validate_reservation(topology, **settings)


def reservation_validator(effective: Mapping[str, Any], topology: Optional[Topology],
                          kubelet: Any = None) -> Tuple[List[str], List[str]]:
    """The ``reservation_validator`` of ``_kubelet_config.settings.validate_settings``: the
    reserved-memory validation (docs/reserved-memory.md) and the Node Allocatable capacity check
    of an effective KubeletConfiguration dict, as (errors, warnings) prefixed with the field to
    fix. The rollout's preflight (kubelet_config) and the recommendation (``_recommend``) share it."""
    if topology is None:
        return [], []
    result = validate_reservation(
        topology,
        kube_reserved=effective.get("kubeReserved") or {},
        system_reserved=effective.get("systemReserved") or {},
        eviction_hard=effective.get("evictionHard"),
        reserved_memory=effective.get("reservedMemory") or [],
        memory_manager_policy=effective.get("memoryManagerPolicy", "None"),
        merge_default_eviction_settings=bool(effective.get("mergeDefaultEvictionSettings")),
        reserved_cpus=effective.get("reservedSystemCPUs") or None,
        kubelet=kubelet,
    )

    def field(finding: Finding) -> str:
        return "kubeReserved/systemReserved/evictionHard" if finding.rule == "node-allocatable-capacity" else "reservedMemory"

    return (["%s: %s" % (field(f), f) for f in result.errors],
            ["%s: %s" % (field(f), f) for f in result.warnings])


def reservation_errors(effective: Mapping[str, Any], topology: Topology) -> List[str]:
    """Adapter for ``kubelet_settings.validate_settings(reservation_validator=...)``: the error
    strings of :func:`validate_kubelet_config` for an effective KubeletConfiguration dict."""
    return [str(f) for f in validate_kubelet_config(topology, effective).errors]


# -- one entry point for the module, the filter and the playbook ---------------------------------------

_SETTING_KEYS = ("kube_reserved", "system_reserved", "eviction_hard", "reserved_memory", "memory_manager_policy",
                 "merge_default_eviction_settings", "reserved_cpus")


def topology_from_any(value: Any) -> Tuple[Topology, Optional[int]]:
    """A Topology plus the node memory capacity, from a Topology, a ``numa_topology`` fact dict,
    ``{"numa_topology": ...}`` or a saved ``numa_facts`` result ``{"ansible_facts": {...}}``.

    The capacity is ``system.memory_total_bytes`` (``/proc/meminfo`` MemTotal, what the kubelet
    uses for percentage thresholds) when the facts have it, else None (sum of the nodes is used).
    """
    if isinstance(value, Topology):
        return value, None
    if isinstance(value, Mapping) and isinstance(value.get("ansible_facts"), Mapping):
        value = value["ansible_facts"]
    if isinstance(value, Mapping) and isinstance(value.get("numa_topology"), Mapping):
        value = value["numa_topology"]
    if not isinstance(value, Mapping):
        raise ReservationError("topology must be a numa_topology fact dict, got %s" % type(value).__name__)
    # Only the nodes matter for reservations; per-CPU details are left out so that a quirk in them
    # (e.g. die -1 on POWER) cannot stop a memory check. CPU ids still come from the node CPU lists.
    topology = Topology.from_facts(dict((k, v) for k, v in value.items() if k != "cpus"))
    capacity = None
    system = value.get("system") if isinstance(value, Mapping) else None
    if isinstance(system, Mapping):
        raw = system.get("memory_total_bytes")
        if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0:
            capacity = raw
    return topology, capacity


def evaluate(topology: Any, kubelet_config: Optional[Mapping[str, Any]] = None, strategy: Optional[str] = None,
             split_unit: Any = MIB, memory_capacity_bytes: Any = None, allocatable_ignore_eviction: bool = False,
             memory_manager_state: Optional[str] = None, state_file: Optional[str] = None,
             kubelet: Any = None, **settings: Any) -> ValidationResult:
    """Resolve settings (explicit ones win over ``kubelet_config``), then compute and/or validate.

    ``topology`` may be anything :func:`topology_from_any` accepts. ``settings`` are the keys of
    :data:`_SETTING_KEYS`; a value of None means "not given". ``split_unit`` and
    ``memory_capacity_bytes`` may be quantities (``1Mi``) or ints.
    """
    unknown = sorted(k for k in settings if k not in _SETTING_KEYS)
    if unknown:
        raise TypeError("unknown setting(s): %s" % ", ".join(unknown))
    topo, facts_capacity = topology_from_any(topology)
    resolved = settings_from_kubelet_config(kubelet_config) if kubelet_config is not None else {}
    if kubelet_config is not None and strategy not in (None, "explicit") and settings.get("reserved_memory") is None:
        resolved["reserved_memory"] = None  # a strategy replaces the configured reservation
    for key, value in settings.items():
        if value is not None:
            resolved[key] = value
    if strategy not in (None, "explicit") and settings.get("reserved_memory") is not None:
        raise ReservationError("give either reserved_memory (to validate) or a computing strategy (%s), not both"
                               % strategy)
    if strategy is not None and strategy not in STRATEGIES:
        raise ReservationError("unknown strategy %r (expected one of %s)" % (strategy, ", ".join(STRATEGIES)))
    unit = _bytes_option(split_unit, "split_unit")
    capacity = _bytes_option(memory_capacity_bytes, "memory_capacity") if memory_capacity_bytes is not None else facts_capacity
    policy = resolved.get("memory_manager_policy")
    if policy is None:
        policy = POLICY_STATIC if strategy not in (None, "explicit") else POLICY_NONE
    return plan_reservation(
        topo, strategy=strategy, kube_reserved=resolved.get("kube_reserved"),
        system_reserved=resolved.get("system_reserved"), eviction_hard=resolved.get("eviction_hard"),
        reserved_memory=resolved.get("reserved_memory"), memory_manager_policy=policy,
        merge_default_eviction_settings=bool(resolved.get("merge_default_eviction_settings")),
        memory_capacity_bytes=capacity, allocatable_ignore_eviction=allocatable_ignore_eviction,
        reserved_cpus=resolved.get("reserved_cpus"), split_unit=unit,
        memory_manager_state=memory_manager_state, state_file=state_file, kubelet=kubelet)


def _bytes_option(value: Any, option: str) -> int:
    try:
        result = parse_quantity(value).value()
    except InvalidQuantity as exc:
        raise ReservationError("%s: %s" % (option, exc))
    if result < 1:
        raise ReservationError("%s must be at least 1 byte, got %r" % (option, value))
    return result
