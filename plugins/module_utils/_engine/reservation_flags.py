# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parsers and formatters for the kubelet's reservation maps, with the kubelet's own rules.

Covers ``--kube-reserved`` / ``--system-reserved`` (``cpu=500m,memory=1Gi``) and their config maps
(cmd/kubelet/app/server.go ``parseResourceList``; hugepages only with the ``SystemReservedHugepages``
gate, KEP-6252) and the syntax of ``--eviction-hard`` (``memory.available<500Mi``) and the
``evictionHard`` map (component-base cliflag); the thresholds themselves are ``eviction.py``'s, the
``--reserved-memory`` / ``reservedMemory`` model is ``memorymanager/reserved.py``'s.

Why a faithful copy of the kubelet's parsers rather than a friendlier one: the point of this
collection is to predict whether the kubelet will start. The kubelet does not trim whitespace in
``--reserved-memory`` (``0:memory=1Gi; 1:memory=2Gi`` kills it) but does trim it in
``--kube-reserved`` and ``--eviction-hard``; a flag-parse error message is quoted verbatim
(typos included: "exptected", "quantatity") so users can grep their kubelet logs for it.
Errors raise :class:`ReservationSyntaxError` (a ``ValueError``) naming the option and the value.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Dict, Optional

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_quote
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import (
    InvalidQuantity,
    Quantity,
    parse_quantity,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import HUGEPAGES_PREFIX, RESERVABLE_RESOURCES, is_hugepages


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


# -- --kube-reserved / --system-reserved ----------------------------------------------------------

def parse_resource_map(value: Any, option: str = "kube_reserved", hugepages: bool = False) -> Dict[str, Quantity]:
    """Parse ``cpu=500m,memory=1Gi`` (or a list of such flags, or a dict) as the kubelet does.

    Flag form: pairs split on ``,`` then on the first ``=``, key and value trimmed, empty pairs
    skipped (cliflag.MapStringString). Then cmd/kubelet's parseResourceList: only cpu, memory,
    ephemeral-storage and pid; quantities must parse and not be negative.

    ``hugepages``: the ``SystemReservedHugepages`` gate (KEP-6252, alpha 1.38) is on, so
    ``hugepages-<size>`` keys are accepted too, with a whole number of pages.
    """
    raw = string_map(value, "=", option)
    result: Dict[str, Quantity] = {}
    for key in raw:
        if not reservable(key, hugepages):
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
        if hugepages and is_hugepages(key):
            _check_whole_pages(key, quantity, option)
        result[key] = quantity
    return result


def reservable(name: str, hugepages: bool = False) -> bool:
    """Whether kube/system-reserved may hold ``name`` (``parseResourceList``): cpu, memory,
    ephemeral-storage, pid, and ``hugepages-<size>`` with the ``SystemReservedHugepages`` gate."""
    return name in RESERVABLE_RESOURCES or (hugepages and is_hugepages(name))


def _check_whole_pages(key: str, quantity: Quantity, option: str) -> None:
    """KEP-6252: a hugepages reservation must be a whole number of pages (as pod admission's
    ``IsHugePageResourceValueDivisible``). The kubelet's wording is not known yet (no merged code)."""
    try:
        page = parse_quantity(key[len(HUGEPAGES_PREFIX):]).value()
    except InvalidQuantity:
        page = 0
    if page <= 0:
        raise ReservationSyntaxError("%s: %s is not a hugepages-<page size> resource name" % (option, go_quote(key)),
                                     option)
    numerator, denominator = quantity.as_fraction()
    if numerator % (page * denominator):
        raise ReservationSyntaxError("%s: %s=%s is not a whole number of %s pages (the SystemReservedHugepages "
                                     "proposal, KEP-6252, refuses it at start-up)" % (option, key, quantity, key[len(HUGEPAGES_PREFIX):]),
                                     option)


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
                                             % (option, key, typename(item), item), option)
            result[key] = item if isinstance(item, str) else "%d" % item
        return result
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ReservationSyntaxError("%s must be a flag string such as %s, a list of them, or a dict, got %s"
                                     % (option, _example(separator), typename(value)), option)
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


def typename(value: Any) -> str:
    return "null" if value is None else type(value).__name__
