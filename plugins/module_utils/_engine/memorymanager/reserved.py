# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one reserved-memory model: ``reservedMemory`` / ``--reserved-memory`` entries, their sums, and
the start-up checks of the kubelet's Memory Manager (pkg/kubelet/cm/memorymanager/memory_manager.go).

With ``memoryManagerPolicy: Static`` the kubelet refuses to start unless, for every memory type
(``memory`` and each ``hugepages-*``), the ``reservedMemory`` entries summed over all NUMA nodes
equal the Node Allocatable reservation of that type (``_engine/node_allocatable.py``). The
validator (``_reservation/reservation.py``, the ``reserved_memory`` module and filters), the
engine (``memory_manager.py``) and ``kubelet_config`` all use this file:

* :class:`MemoryReservation` -- one entry (NUMA node + limits as written, duplicates kept);
* :func:`parse_reserved_memory_config` -- the KubeletConfiguration ``reservedMemory`` list;
* :func:`parse_reserved_memory_flag` -- ``--reserved-memory`` (pkg/util/flag ReservedMemoryVar);
* :func:`parse_reserved_memory` -- any of the two forms;
* :func:`total_memory_type_reserved` -- ``getTotalMemoryTypeReserved``, the one sum rule;
* :func:`validate_reserved_memory` -- ``validateReservedMemory``: sums vs Node Allocatable;
* :func:`convert_reserved` -- per-node bytes as the policy uses them (a later entry for the same
  node and type *replaces* the earlier one, while validation *summed* them -- kept as is);
* :func:`system_reserved_memory` -- ``getSystemReservedMemory`` = validate + convert;
* :func:`require_system_reserved_memory` -- the Static policy's "you should specify the system
  reserved memory" check.

Quantities keep their formats through sums the way apimachinery does, so error messages print
the same canonical strings as the kubelet ("5220Mi", "1G", "0"). Syntax errors raise
:class:`ReservationSyntaxError` (naming the option and the value); start-up failures raise
:class:`ReservedMemoryError` (a ``StateError``).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import ReservationSyntaxError, typename
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_atoi, go_quote
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import (
    DECIMAL_SI,
    InvalidQuantity,
    Quantity,
    parse_object_quantity,
    parse_quantity,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import MEMORY, is_memory_type

#: The usage line of the kubelet's --reserved-memory flag errors.
_RESERVED_MEMORY_FORMAT = "expected numaNodeID:type=quantity[,type=quantity...]"

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


def _is_go_int(text: str) -> bool:
    """Whether Go's ``strconv.Atoi`` takes ``text`` (``gostrconv.go_atoi``, the one home)."""
    try:
        go_atoi(text)
    except ValueError:
        return False
    return True


class ReservedMemoryError(StateError):
    """A ``reservedMemory`` / reservation setting the kubelet refuses to start with."""


def _zero(fmt: str = DECIMAL_SI) -> Quantity:
    return Quantity(0, 0, fmt)


@dataclass(frozen=True)
class MemoryReservation:
    """One ``reservedMemory`` entry: a NUMA node and its limits, in the order written.

    ``limits`` keeps every ``type=quantity`` pair as written, duplicates included, because the
    kubelet's flag parser silently keeps the last of ``0:memory=1Gi,memory=2Gi`` and we want to
    warn about that; :meth:`limits_map` gives the kubelet's last-wins view.
    """

    numa_node: int
    limits: Tuple[Tuple[str, Quantity], ...]

    def limits_map(self) -> Dict[str, Quantity]:
        result: Dict[str, Quantity] = {}
        for name, quantity in self.limits:
            result[name] = quantity
        return result

    def duplicate_types(self) -> Tuple[str, ...]:
        seen, dups = set(), []
        for name, _quantity in self.limits:
            if name in seen and name not in dups:
                dups.append(name)
            seen.add(name)
        return tuple(dups)

    def to_config(self) -> Dict[str, Any]:
        """The KubeletConfiguration form ``{numaNode, limits: {type: canonical quantity}}``."""
        limits = self.limits_map()
        return {"numaNode": self.numa_node,
                "limits": dict((name, str(limits[name])) for name in sorted(limits))}


# -- --reserved-memory ------------------------------------------------------------------------

def parse_reserved_memory_flag(values: Any,
                               option: str = "--reserved-memory") -> List[MemoryReservation]:
    """Parse one ``--reserved-memory`` value or a list of them (the flag repeated), as the kubelet.

    ``'0:memory=1Gi,hugepages-1Gi=2Gi'``, ``['0:memory=1Gi', '1:memory=2Gi']`` and
    ``'0:memory=1Gi;1:memory=2Gi'`` are all accepted; nothing is trimmed, exactly as the kubelet.
    An empty value resets the flag (the kubelet then refuses any later repetition).
    """
    if isinstance(values, str):
        values = [values]
    if not isinstance(values, (list, tuple)):
        raise ReservationSyntaxError("%s must be a string or a list of strings, got %s"
                                     % (option, typename(values)), option)
    result: List[MemoryReservation] = []
    reset = False
    for value in values:
        if not isinstance(value, str):
            raise ReservationSyntaxError("%s values must be strings, got %s %r"
                                         % (option, typename(value), value), option)
        if reset:
            message = "no target (nil pointer to *[]MemoryReservation"
            raise ReservationSyntaxError(
                "%s: an empty value earlier on the command line disables every later %s flag; "
                "the kubelet fails with: %s" % (option, option, message), option, message)
        if value == "":
            reset = True
            result = []
            continue
        for reservation in value.split(";"):
            result.append(_parse_one_node(reservation, option))
    return result


def _parse_one_node(reservation: str, option: str) -> MemoryReservation:
    try:
        return _parse_one_node_strict(reservation, option)
    except ReservationSyntaxError as exc:
        if reservation != reservation.strip() or " " in reservation:
            raise ReservationSyntaxError("%s (in %s: the kubelet does not trim spaces in --reserved-memory)"
                                         % (exc, go_quote(reservation)), option, exc.kubelet_message)
        raise


def _parse_one_node_strict(reservation: str, option: str) -> MemoryReservation:
    parts = reservation.split(":")
    if len(parts) != 2:
        message = "the reserved memory has incorrect format, %s, got %s" % (_RESERVED_MEMORY_FORMAT, reservation)
        raise ReservationSyntaxError("%s: %s" % (option, message), option, message)
    node_text, types_text = parts
    if not _is_go_int(node_text):
        message = "failed to convert the NUMA node ID, exptected integer, got %s" % node_text
        raise ReservationSyntaxError("%s: %s" % (option, message), option, message)
    node = int(node_text)
    if not _INT32_MIN <= node <= _INT32_MAX:
        raise ReservationSyntaxError("%s: NUMA node ID %s is outside the 32-bit range the kubelet stores "
                                     "(it would silently wrap around)" % (option, node_text), option)
    limits: List[Tuple[str, Quantity]] = []
    for type_text in types_text.split(","):
        pair = type_text.split("=")
        if len(pair) != 2:
            message = "the reserved limit has incorrect value, expected type=quantatity, got %s" % type_text
            raise ReservationSyntaxError("%s: %s" % (option, message), option, message)
        name, quantity_text = pair
        if not is_memory_type(name):
            message = "memory type conversion error, unknown type: %s" % go_quote(name)
            raise ReservationSyntaxError("%s: %s (only memory and hugepages-<size> can be reserved per NUMA node)"
                                         % (option, message), option, message)
        try:
            quantity = parse_quantity(quantity_text)
        except InvalidQuantity as exc:
            message = "failed to parse the quantatity, expected quantatity, got %s" % quantity_text
            raise ReservationSyntaxError("%s: %s (%s)" % (option, message, exc), option, message)
        limits.append((name, quantity))
    return MemoryReservation(numa_node=node, limits=tuple(limits))


def parse_reserved_memory_config(entries: Any,
                                 option: str = "reservedMemory") -> List[MemoryReservation]:
    """Parse the KubeletConfiguration ``reservedMemory`` list (``numaNode`` + ``limits`` map).

    As the kubelet's strict decoding: unknown keys and a quoted ``numaNode`` are refused, a missing
    (or null) ``numaNode`` is node 0 (Go's zero value), quantities are whitespace-trimmed
    (``Quantity.UnmarshalJSON``). Entries that are already :class:`MemoryReservation` are kept.
    """
    if entries is None:
        return []
    if not isinstance(entries, (list, tuple)):
        raise ReservationSyntaxError("%s must be a list of {numaNode, limits} entries, got %s"
                                     % (option, typename(entries)), option)
    result = []
    for index, entry in enumerate(entries):
        where = "%s[%d]" % (option, index)
        if isinstance(entry, MemoryReservation):
            result.append(entry)
            continue
        if not isinstance(entry, Mapping):
            raise ReservationSyntaxError("%s must be a dict with numaNode and limits, got %s %r"
                                         % (where, typename(entry), entry), option)
        unknown = sorted(k for k in entry if k not in ("numaNode", "limits"))
        if unknown:
            raise ReservationSyntaxError("%s has unknown key(s) %s (expected numaNode and limits; the "
                                         "kubelet's strict decoding refuses them)" % (where, ", ".join(unknown)), option)
        node = entry.get("numaNode")
        if node is None:
            node = 0
        if isinstance(node, str) and _is_go_int(node):
            raise ReservationSyntaxError("%s.numaNode must be an integer, got the string %r (quote-less in YAML: "
                                         "numaNode: %s)" % (where, node, node), option)
        if isinstance(node, bool) or not isinstance(node, int):
            raise ReservationSyntaxError("%s.numaNode must be an integer, got %s %r"
                                         % (where, typename(node), node), option)
        if not _INT32_MIN <= node <= _INT32_MAX:
            raise ReservationSyntaxError("%s.numaNode %d is outside the 32-bit range" % (where, node), option)
        raw_limits = entry.get("limits")
        if raw_limits is None:
            raw_limits = {}
        if not isinstance(raw_limits, Mapping):
            raise ReservationSyntaxError("%s.limits must be a map of type to quantity, got %s %r"
                                         % (where, typename(raw_limits), raw_limits), option)
        limits = []
        for name in raw_limits:
            if not isinstance(name, str):
                raise ReservationSyntaxError("%s.limits key %r must be a string" % (where, name), option)
            try:
                raw_value = raw_limits[name]
                # decoded object: Quantity.UnmarshalJSON trims whitespace (flags do not)
                quantity = raw_value if isinstance(raw_value, Quantity) else parse_object_quantity(raw_value)
            except InvalidQuantity as exc:
                raise ReservationSyntaxError("%s.limits.%s: %s" % (where, name, exc), option)
            limits.append((name, quantity))
        result.append(MemoryReservation(numa_node=node, limits=tuple(limits)))
    return result


def parse_reserved_memory(value: Any, option: str = "reserved_memory") -> List[MemoryReservation]:
    """Accept any of the forms: flag string, list of flag strings, or the config list of dicts."""
    if value is None:
        return []
    if isinstance(value, str):
        return parse_reserved_memory_flag(value, option)
    if isinstance(value, (list, tuple)):
        if all(isinstance(v, str) for v in value):
            return parse_reserved_memory_flag(list(value), option)
        if all(isinstance(v, dict) for v in value):
            return parse_reserved_memory_config(list(value), option)
        raise ReservationSyntaxError("%s must be a flag string, a list of flag strings, or a list of "
                                     "{numaNode, limits} dicts, not a mixture" % option, option)
    if isinstance(value, MemoryReservation):
        return [value]
    raise ReservationSyntaxError("%s must be a flag string, a list of flag strings, or a list of "
                                 "{numaNode, limits} dicts, got %s" % (option, typename(value)), option)


def format_reserved_memory_flag(reservations: Sequence[MemoryReservation]) -> str:
    """The single-flag ``;`` form, entries in the given order, types sorted (``0:memory=3Gi;1:...``)."""
    parts = []
    for reservation in reservations:
        limits = reservation.limits_map()
        parts.append("%d:%s" % (reservation.numa_node,
                                ",".join("%s=%s" % (name, limits[name]) for name in sorted(limits))))
    return ";".join(parts)


def reservations_to_config(reservations: Sequence[MemoryReservation]) -> List[Dict[str, Any]]:
    """The KubeletConfiguration ``reservedMemory`` list with canonical quantity strings."""
    return [r.to_config() for r in reservations]


def total_memory_type_reserved(reservations: Iterable[MemoryReservation],
                               node_ids: Optional[Iterable[int]] = None) -> Dict[str, Quantity]:
    """``getTotalMemoryTypeReserved``: per resource name, the sum over every entry (each entry's
    last value of a type, as the kubelet's map holds it).

    The later entry is the receiver of the addition, as in the kubelet, so the sum keeps the
    format of the last non-zero entry (that decides how the error message prints it). With
    ``node_ids`` an entry for a node not among them is the kubelet's start-up error.
    """
    known = None if node_ids is None else set(node_ids)
    totals: Dict[str, Quantity] = {}
    for entry in reservations:
        if known is not None and entry.numa_node not in known:
            raise ReservedMemoryError(
                "the reserved memory configuration references a NUMA node %d that does not exist on this machine"
                % entry.numa_node)
        for name, amount in entry.limits_map().items():
            totals[name] = amount + totals[name] if name in totals else amount
    return totals


def memory_type_sum_check(name: str, reserved: Optional[Quantity],
                          allocatable: Optional[Quantity]) -> Tuple[Quantity, Quantity, Optional[str]]:
    """``validateReservedMemory``'s comparison for one type: (reservedMemory sum, Node Allocatable
    reservation, None when they are equal else the kubelet's message). Either side may be None
    (nothing of that type); both come back added to a zero, as the kubelet prints them."""
    reserved_total = _zero() + reserved if reserved is not None else _zero()
    wanted = _zero() + allocatable if allocatable is not None else _zero()
    if reserved_total == wanted:
        return reserved_total, wanted, None
    return reserved_total, wanted, (
        'the total amount "%s" of type "%s" is not equal to the value "%s" determined by Node Allocatable feature'
        % (reserved_total, name, wanted))


def validate_reserved_memory(node_ids: Iterable[int],
                             node_allocatable_reservation: Mapping[str, Quantity],
                             reservations: Iterable[MemoryReservation]) -> None:
    """``validateReservedMemory``: Σ reservedMemory[type] == Node Allocatable reservation[type].

    Checked for every type named in ``reservedMemory`` (whatever it is) and every memory/hugepages
    type of the Node Allocatable reservation. Raises :class:`ReservedMemoryError` with the
    kubelet's message on the first mismatch (types in sorted order; the kubelet's order is Go map
    order, so with several mismatches it may name another one first).
    """
    totals = total_memory_type_reserved(reservations, node_ids)
    types = set(totals)
    types.update(name for name in node_allocatable_reservation if is_memory_type(name))
    for name in sorted(types):
        message = memory_type_sum_check(name, totals.get(name), node_allocatable_reservation.get(name))[2]
        if message is not None:
            raise ReservedMemoryError(message)


def convert_reserved(node_ids: Iterable[int],
                     reservations: Iterable[MemoryReservation]) -> Dict[int, Dict[str, int]]:
    """``convertReserved``: per node, per type, bytes as uint64; a later entry replaces an earlier one."""
    converted: Dict[int, Dict[str, int]] = dict((node_id, {}) for node_id in node_ids)
    for entry in reservations:
        for name, amount in entry.limits_map().items():
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
