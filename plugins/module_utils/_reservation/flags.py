# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""Parsers and formatters for the kubelet's reservation settings, with the kubelet's own rules.

Covers ``--reserved-memory`` (all three spellings: one flag with ``,``-separated types, repeated
flags, and ``;``-separated nodes) and the KubeletConfiguration ``reservedMemory`` list;
``--kube-reserved`` / ``--system-reserved`` (``cpu=500m,memory=1Gi``) and their config maps;
``--eviction-hard`` (``memory.available<500Mi,nodefs.available<10%``) and the ``evictionHard`` map.

Why a faithful copy of the kubelet's parsers rather than a friendlier one: the point of this
collection is to predict whether the kubelet will start. The kubelet does not trim whitespace in
``--reserved-memory`` (``0:memory=1Gi; 1:memory=2Gi`` kills it) but does trim it in
``--kube-reserved`` and ``--eviction-hard``; a flag-parse error message is quoted verbatim
(typos included: "exptected", "quantatity") so users can grep their kubelet logs for it.
Errors raise :class:`ReservationSyntaxError` (a ``ValueError``) naming the option and the value.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_quote
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import (
    InvalidQuantity,
    Quantity,
    parse_object_quantity,
    parse_quantity,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import HUGEPAGES_PREFIX, RESERVABLE_RESOURCES, is_memory_type

#: What kube-reserved / system-reserved may hold (cmd/kubelet/app/server.go parseResourceList).

#: The usage line of the kubelet's --reserved-memory flag errors.
_RESERVED_MEMORY_FORMAT = "expected numaNodeID:type=quantity[,type=quantity...]"

_GO_INT = re.compile(r"^[+-]?[0-9]+$")
_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1


class ReservationSyntaxError(NumaguardError):
    """A reservation setting the kubelet would refuse to parse (message names option and value)."""

    def __init__(self,
                 message: str,
                 option: Optional[str] = None,
                 kubelet_message: Optional[str] = None) -> None:
        super().__init__(message)
        self.option = option
        #: The kubelet's own error text, when the kubelet has one for this case.
        self.kubelet_message = kubelet_message


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
                                     % (option, _typename(values)), option)
    result: List[MemoryReservation] = []
    reset = False
    for value in values:
        if not isinstance(value, str):
            raise ReservationSyntaxError("%s values must be strings, got %s %r"
                                         % (option, _typename(value), value), option)
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
    if not _GO_INT.match(node_text):
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
    """Parse the KubeletConfiguration ``reservedMemory`` list (``numaNode`` + ``limits`` map)."""
    if entries is None:
        return []
    if not isinstance(entries, (list, tuple)):
        raise ReservationSyntaxError("%s must be a list of {numaNode, limits} entries, got %s"
                                     % (option, _typename(entries)), option)
    result = []
    for index, entry in enumerate(entries):
        where = "%s[%d]" % (option, index)
        if not isinstance(entry, dict):
            raise ReservationSyntaxError("%s must be a dict with numaNode and limits, got %s %r"
                                         % (where, _typename(entry), entry), option)
        unknown = sorted(k for k in entry if k not in ("numaNode", "limits"))
        if unknown:
            raise ReservationSyntaxError("%s has unknown key(s) %s (expected numaNode and limits; the "
                                         "kubelet's strict decoding refuses them)" % (where, ", ".join(unknown)), option)
        node = entry.get("numaNode")
        if isinstance(node, str) and _GO_INT.match(node):
            raise ReservationSyntaxError("%s.numaNode must be an integer, got the string %r (quote-less in YAML: "
                                         "numaNode: %s)" % (where, node, node), option)
        if isinstance(node, bool) or not isinstance(node, int):
            raise ReservationSyntaxError("%s.numaNode must be an integer, got %s %r"
                                         % (where, _typename(node), node), option)
        if not _INT32_MIN <= node <= _INT32_MAX:
            raise ReservationSyntaxError("%s.numaNode %d is outside the 32-bit range" % (where, node), option)
        raw_limits = entry.get("limits")
        if raw_limits is None:
            raw_limits = {}
        if not isinstance(raw_limits, dict):
            raise ReservationSyntaxError("%s.limits must be a map of type to quantity, got %s %r"
                                         % (where, _typename(raw_limits), raw_limits), option)
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
                                 "{numaNode, limits} dicts, got %s" % (option, _typename(value)), option)


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


# -- --kube-reserved / --system-reserved ----------------------------------------------------------

def parse_resource_map(value: Any, option: str = "kube_reserved") -> Dict[str, Quantity]:
    """Parse ``cpu=500m,memory=1Gi`` (or a list of such flags, or a dict) as the kubelet does.

    Flag form: pairs split on ``,`` then on the first ``=``, key and value trimmed, empty pairs
    skipped (cliflag.MapStringString). Then cmd/kubelet's parseResourceList: only cpu, memory,
    ephemeral-storage and pid; quantities must parse and not be negative.
    """
    raw = string_map(value, "=", option)
    result: Dict[str, Quantity] = {}
    for key in raw:
        if key not in RESERVABLE_RESOURCES:
            message = "cannot reserve %s resource" % go_quote(key)
            extra = ""
            if key.startswith(HUGEPAGES_PREFIX):
                extra = (" (hugepages cannot be held back by kube-reserved/system-reserved; that is why a "
                         "hugepages entry in reservedMemory can never balance)")
            raise ReservationSyntaxError("%s: %s%s; allowed: %s" % (option, message, extra, ", ".join(RESERVABLE_RESOURCES)),
                                         option, message)
        text = raw[key]
        try:
            quantity = _quantity_value(text)
        except InvalidQuantity as exc:
            message = "failed to parse quantity %s for %s resource" % (go_quote(str(text)), go_quote(key))
            raise ReservationSyntaxError("%s: %s: %s" % (option, message, exc), option, message)
        if quantity.sign() < 0:
            message = "resource quantity for %s cannot be negative: %s" % (go_quote(key), text)
            raise ReservationSyntaxError("%s: %s" % (option, message), option, message)
        result[key] = quantity
    return result


def format_resource_map(resources: Any) -> str:
    """``cpu=500m,memory=1Gi`` with keys sorted and canonical quantities."""
    if isinstance(resources, dict):
        resources = dict((k, str(v) if isinstance(v, Quantity) else v) for k, v in resources.items())
    parsed = parse_resource_map(resources)
    return ",".join("%s=%s" % (key, parsed[key]) for key in sorted(parsed))


# -- --eviction-hard ----------------------------------------------------------------------------

def parse_eviction_map(value: Any, option: str = "eviction_hard") -> Dict[str, str]:
    """``memory.available<500Mi,nodefs.available<10%`` (or a list of flags, or a dict) -> dict.

    Only the syntax is checked here (cliflag.LangleSeparatedMapStringString: split on ``,``, then
    on the first ``<``, trimmed); signal names and values are the eviction module's business.
    """
    return string_map(value, "<", option)


def format_eviction_map(thresholds: Dict[str, Any]) -> str:
    """``memory.available<100Mi,nodefs.available<10%`` with signals sorted."""
    return ",".join("%s<%s" % (key, thresholds[key]) for key in sorted(thresholds))


def string_map(value: Any, separator: str, option: str) -> Dict[str, str]:
    """A map option given as a flag string (``k=v,k2=v2``), a list of such flags, or a dict."""
    if value is None:
        return {}
    if isinstance(value, dict):
        result = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ReservationSyntaxError("%s: key %r must be a string" % (option, key), option)
            if isinstance(item, bool) or item is None or not isinstance(item, (str, int)):
                raise ReservationSyntaxError("%s: value of %s must be a string, got %s %r"
                                             % (option, key, _typename(item), item), option)
            result[key] = item if isinstance(item, str) else "%d" % item
        return result
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ReservationSyntaxError("%s must be a flag string such as %s, a list of them, or a dict, got %s"
                                     % (option, _example(separator), _typename(value)), option)
    result = {}
    for flag in value:
        for pair in flag.split(","):
            if not pair:
                continue
            if separator not in pair:
                message = "malformed pair, expect string%sstring" % separator
                raise ReservationSyntaxError("%s: %s, got %s (e.g. %s)" % (option, message, go_quote(pair), _example(separator)),
                                             option, message)
            key, item = pair.split(separator, 1)
            result[key.strip()] = item.strip()
    return result


def _example(separator: str) -> str:
    return "'memory.available<500Mi'" if separator == "<" else "'cpu=500m,memory=1Gi'"


def _quantity_value(value: Any) -> Quantity:
    if isinstance(value, Quantity):
        return value
    return parse_quantity(value)


def _typename(value: Any) -> str:
    return "null" if value is None else type(value).__name__
