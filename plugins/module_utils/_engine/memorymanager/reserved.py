# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""The reservation maths the kubelet's Memory Manager does at start-up (pkg/kubelet/cm/memorymanager/
memory_manager.go, pkg/kubelet/cm/node_container_manager_linux.go).

With ``memoryManagerPolicy: Static`` the kubelet refuses to start unless, for every memory type
(``memory`` and each ``hugepages-*``), the ``reservedMemory`` entries summed over all NUMA nodes
equal the Node Allocatable reservation of that type: ``systemReserved + kubeReserved + the
memory.available hard-eviction threshold``. These functions reproduce that check with the
kubelet's wording, so both the admission checker (issue 5) and the reserved-memory planner
(issue 3, ``plugins/module_utils/_reservation/reservation.py``) can use the same code:

* :func:`parse_reserved_memory` -- the ``reservedMemory`` config list to typed entries;
* :func:`total_memory_type_reserved` -- ``getTotalMemoryTypeReserved``: sum per type over all
  entries (a node that does not exist is an error);
* :func:`validate_reserved_memory` -- ``validateReservedMemory``: sums vs Node Allocatable;
* :func:`convert_reserved` -- per-node bytes as the policy uses them (a later entry for the same
  node and type *replaces* the earlier one, while validation *summed* them -- kept as is);
* :func:`system_reserved_memory` -- ``getSystemReservedMemory`` = validate + convert;
* :func:`require_system_reserved_memory` -- the Static policy's "you should specify the system
  reserved memory" check;
* :func:`node_allocatable_reservation` -- the Node Allocatable reservation (cpu, memory,
  hugepages) from a KubeletConfiguration dict; the hard-eviction part comes from the shared
  ``eviction`` module (float32 percentages, defaults, mergeDefaultEvictionSettings).

Quantities keep their formats through sums the way apimachinery does, so error messages print
the same canonical strings as the kubelet ("5220Mi", "1G", "0").
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from collections import namedtuple

try:
    from typing import Any, Dict, Iterable, List, Mapping, Optional  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import (
    DECIMAL_SI,
    InvalidQuantity,
    Quantity,
    go_trim_space,
    parse_quantity,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import CPU, MEMORY, is_memory_type
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.eviction import effective_eviction_hard

#: One ``reservedMemory`` entry: NUMA node id and resource name -> Quantity.
MemoryReservation = namedtuple("MemoryReservation", ("numa_node", "limits"))


class ReservedMemoryError(StateError):
    """A ``reservedMemory`` / reservation setting the kubelet refuses to start with."""


def _zero(fmt: str = DECIMAL_SI) -> Quantity:
    return Quantity(0, 0, fmt)


def _as_quantity(value: Any, where: str) -> Quantity:
    if isinstance(value, bool) or value is None:
        raise ReservedMemoryError("%s: %r is not a quantity" % (where, value))
    try:
        return parse_quantity(value)
    except InvalidQuantity as exc:
        raise ReservedMemoryError("%s: %s" % (where, exc))


def parse_reserved_memory(value: Any, where: str = "reservedMemory") -> List[MemoryReservation]:
    """The KubeletConfiguration ``reservedMemory`` list -> :class:`MemoryReservation` entries.

    Accepts ``[{"numaNode": 0, "limits": {"memory": "1Gi", "hugepages-2Mi": "0"}}, ...]`` (None
    means no entries). Raises :class:`ReservedMemoryError` naming the entry and field.
    """
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise ReservedMemoryError("%s must be a list of {numaNode, limits} entries, got %r" % (where, value))
    entries = []
    for index, raw in enumerate(value):
        entry_where = "%s[%d]" % (where, index)
        if isinstance(raw, MemoryReservation):
            entries.append(raw)
            continue
        if not isinstance(raw, Mapping):
            raise ReservedMemoryError("%s must be a mapping with numaNode and limits, got %r" % (entry_where, raw))
        unknown = sorted(str(k) for k in raw if k not in ("numaNode", "limits"))
        if unknown:
            raise ReservedMemoryError("%s has unknown field(s) %s (expected numaNode, limits)"
                                      % (entry_where, ", ".join(unknown)))
        node = raw.get("numaNode", 0)
        if isinstance(node, str) and node.strip().lstrip("-").isdigit():
            node = int(node)
        if isinstance(node, bool) or not isinstance(node, int) or not -(1 << 31) <= node < (1 << 31):
            raise ReservedMemoryError("%s.numaNode must be an integer NUMA node id, got %r" % (entry_where, node))
        limits_raw = raw.get("limits")
        if limits_raw is None:
            limits_raw = {}
        if not isinstance(limits_raw, Mapping):
            raise ReservedMemoryError("%s.limits must be a mapping of resource name to quantity, got %r"
                                      % (entry_where, limits_raw))
        limits: Dict[str, Quantity] = {}
        for name, amount in limits_raw.items():
            if not isinstance(name, str) or not name:
                raise ReservedMemoryError("%s.limits: resource name must be a string, got %r" % (entry_where, name))
            # a decoded object: Quantity.UnmarshalJSON trims whitespace, as _reservation/flags.py does
            limits[name] = _as_quantity(go_trim_space(amount) if isinstance(amount, str) else amount,
                                        "%s.limits.%s" % (entry_where, name))
        entries.append(MemoryReservation(node, limits))
    return entries


def total_memory_type_reserved(node_ids: Iterable[int],
                               reservations: Iterable[MemoryReservation]) -> Dict[str, Quantity]:
    """``getTotalMemoryTypeReserved``: per resource name, the sum over every entry.

    The later entry is the receiver of the addition, as in the kubelet, so the sum keeps the
    format of the last non-zero entry (that decides how the error message prints it).
    """
    known = set(node_ids)
    totals: Dict[str, Quantity] = {}
    for entry in reservations:
        if entry.numa_node not in known:
            raise ReservedMemoryError(
                "the reserved memory configuration references a NUMA node %d that does not exist on this machine"
                % entry.numa_node)
        for name, amount in entry.limits.items():
            totals[name] = amount + totals[name] if name in totals else amount
    return totals


def validate_reserved_memory(node_ids: Iterable[int],
                             node_allocatable_reservation: Mapping[str, Quantity],
                             reservations: Iterable[MemoryReservation]) -> None:
    """``validateReservedMemory``: Σ reservedMemory[type] == Node Allocatable reservation[type].

    Checked for every type named in ``reservedMemory`` (whatever it is) and every memory/hugepages
    type of the Node Allocatable reservation. Raises :class:`ReservedMemoryError` with the
    kubelet's message on the first mismatch (types in sorted order; the kubelet's order is Go map
    order, so with several mismatches it may name another one first).
    """
    totals = total_memory_type_reserved(node_ids, reservations)
    types = set(totals)
    types.update(name for name in node_allocatable_reservation if is_memory_type(name))
    for name in sorted(types):
        allocatable = _zero()
        if name in node_allocatable_reservation:
            allocatable = allocatable + node_allocatable_reservation[name]
        reserved = _zero()
        if name in totals:
            reserved = reserved + totals[name]
        if allocatable != reserved:
            raise ReservedMemoryError(
                'the total amount "%s" of type "%s" is not equal to the value "%s" determined by Node Allocatable feature'
                % (reserved, name, allocatable))


def convert_reserved(node_ids: Iterable[int],
                     reservations: Iterable[MemoryReservation]) -> Dict[int, Dict[str, int]]:
    """``convertReserved``: per node, per type, bytes as uint64; a later entry replaces an earlier one."""
    converted: Dict[int, Dict[str, int]] = dict((node_id, {}) for node_id in node_ids)
    for entry in reservations:
        for name, amount in entry.limits.items():
            value = amount.as_int64()
            if value is None:
                raise ReservedMemoryError("could not covert a variable of type Quantity to int64")
            converted.setdefault(entry.numa_node, {})[name] = value % (1 << 64)
    return converted


def system_reserved_memory(node_ids: Iterable[int],
                           node_allocatable_reservation: Mapping[str, Quantity],
                           reservations: Iterable[MemoryReservation]) -> Dict[int, Dict[str, int]]:
    """``getSystemReservedMemory``: validate, then convert to per-node bytes."""
    node_ids = list(node_ids)
    reservations = list(reservations)
    validate_reserved_memory(node_ids, node_allocatable_reservation, reservations)
    return convert_reserved(node_ids, reservations)


def require_system_reserved_memory(system_reserved: Mapping[int, Mapping[str, int]]) -> None:
    """The Static policy refuses to start when no node reserves any ``memory``."""
    total = 0
    for per_node in system_reserved.values():
        total = (total + per_node.get(MEMORY, 0)) % (1 << 64)
    if total <= 0:
        raise ReservedMemoryError("[memorymanager] you should specify the system reserved memory")


# ---- Node Allocatable reservation -----------------------------------------------------------


def _quantities(mapping: Any, where: str) -> Dict[str, Quantity]:
    if not mapping:
        return {}
    if not isinstance(mapping, Mapping):
        raise ReservedMemoryError("%s must be a mapping of resource name to quantity, got %r" % (where, mapping))
    return dict((name, _as_quantity(value, "%s.%s" % (where, name))) for name, value in mapping.items())


def node_allocatable_reservation(kubelet_config: Mapping[str, Any],
                                 resource_names: Iterable[str],
                                 memory_capacity_bytes: int,
                                 reserved_cpus_count: Optional[int] = None) -> Dict[str, Quantity]:
    """``GetNodeAllocatableReservation`` for the given capacity resources (cpu, memory, hugepages-*).

    Per resource: systemReserved + kubeReserved + hard-eviction reservation (memory only here),
    kept only when non-zero. ``evictionHard`` absent from the config means the kubelet default
    (``memory.available: 100Mi``); a partial map drops the other defaults unless
    ``mergeDefaultEvictionSettings`` is true. With ``reservedSystemCPUs`` the cpu reservation is the number
    of those CPUs (pass ``reserved_cpus_count``) and kubeReserved cpu is ignored.
    """
    system = _quantities(kubelet_config.get("systemReserved"), "systemReserved")
    kube = _quantities(kubelet_config.get("kubeReserved"), "kubeReserved")
    if reserved_cpus_count is not None:
        system[CPU] = Quantity.from_int(reserved_cpus_count, DECIMAL_SI)
        kube.pop(CPU, None)
    try:
        settings = effective_eviction_hard(kubelet_config.get("evictionHard"),
                                           bool(kubelet_config.get("mergeDefaultEvictionSettings")),
                                           option="evictionHard")
    except ValueError as exc:
        raise ReservedMemoryError(str(exc))
    eviction = settings.memory_reservation(memory_capacity_bytes)
    result: Dict[str, Quantity] = {}
    for name in resource_names:
        total = _zero()
        for part in (system.get(name), kube.get(name), eviction if name == MEMORY else None):
            if part is not None:
                total = total + part
        if not total.is_zero():
            result[name] = total
    return result
