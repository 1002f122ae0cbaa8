# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Hard eviction thresholds as the kubelet parses them, and the memory they hold back.

The memory hard-eviction threshold is part of the Node Allocatable reservation, so it must be
part of ``reservedMemory`` too. Three kubelet behaviours make it easy to get wrong, and this
module reproduces each of them:

* defaults: with no ``evictionHard`` at all the kubelet uses ``memory.available<100Mi`` (plus disk
  signals); once any signal is set, the unset ones are absent (effectively 0) unless
  ``mergeDefaultEvictionSettings`` is true;
* percentages are parsed to a 32-bit float and divided by 100 in float32, then multiplied with
  the memory capacity in float64 and truncated: 5% of 10Gi reserves 536870920 bytes, not
  536870912 (pkg/kubelet/eviction/helpers.go parsePercentage, evictionapi.GetThresholdQuantity);
  we do that arithmetic with exact rationals and explicit IEEE rounding, so it is bit-exact;
* ``0%`` and ``100%`` (exactly those strings) are ignored, a quantity must be positive.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

if TYPE_CHECKING:  # imported where a percentage is parsed: fractions costs a fresh process ~7 ms (issue 12)
    from fractions import Fraction

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import (
    ReservationSyntaxError,
    parse_eviction_map,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_quote
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import (
    BINARY_SI,
    InvalidQuantity,
    Quantity,
    parse_quantity,
)

MEMORY_AVAILABLE = "memory.available"

#: The kubelet's Linux default evictionHard (pkg/kubelet/apis/config/v1beta1 defaults_linux.go).
DEFAULT_EVICTION_HARD = {
    "memory.available": "100Mi",
    "nodefs.available": "10%",
    "nodefs.inodesFree": "5%",
    "imagefs.available": "15%",
    "imagefs.inodesFree": "5%",
}

#: Every signal the eviction manager knows (signalToResource in helpers.go).
SIGNALS = (
    "memory.available",
    "allocatableMemory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "containerfs.available",
    "containerfs.inodesFree",
    "pid.available",
)

_GO_FLOAT = re.compile(r"^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$")
_GO_SPECIAL = re.compile(r"^[+-]?(?:inf|infinity|nan)$", re.IGNORECASE)


class EvictionError(ReservationSyntaxError):
    """An ``evictionHard`` setting the kubelet refuses at start-up."""


@dataclass(frozen=True)
class Threshold:
    """One parsed hard threshold: a quantity, or a float32 fraction of capacity (0..1)."""

    signal: str
    text: str
    quantity: Optional[Quantity] = None
    percentage: Optional[Fraction] = None  # exact value of the kubelet's float32

    def bytes_of(self, capacity_bytes: int) -> Quantity:
        """The threshold as a quantity, for a resource of ``capacity_bytes`` (GetThresholdQuantity)."""
        if self.quantity is not None:
            return self.quantity
        if self.percentage is None:
            raise ValueError("threshold %s has neither a quantity nor a percentage" % self.signal)
        # int64(float64(capacity.Value()) * float64(percentage)): one IEEE double product, truncated.
        value = int(float(capacity_bytes) * float(self.percentage))
        return Quantity.from_int(value, BINARY_SI)


def round_float32(value: Fraction) -> Fraction:
    """Round an exact rational to the nearest IEEE float32 (ties to even); overflow -> ValueError."""
    from fractions import Fraction  # here: see the TYPE_CHECKING import (~7 ms per fresh process)

    if value == 0:
        return Fraction(0)
    sign = -1 if value < 0 else 1
    magnitude = abs(value)
    exponent = magnitude.numerator.bit_length() - magnitude.denominator.bit_length()
    if Fraction(2) ** exponent > magnitude:
        exponent -= 1
    # now 2**exponent <= magnitude < 2**(exponent+1)
    ulp = max(exponent - 23, -149)
    scaled = magnitude / (Fraction(2) ** ulp)
    whole = scaled.numerator // scaled.denominator
    rest = scaled - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    result = whole * Fraction(2) ** ulp
    if result >= Fraction(2) ** 128:
        raise ValueError("out of range")
    return sign * result


def parse_float32(text: str) -> Fraction:
    """``strconv.ParseFloat(text, 32)`` for decimal input; raises ValueError with Go's wording."""
    from fractions import Fraction  # here: see the TYPE_CHECKING import (~7 ms per fresh process)

    if _GO_SPECIAL.match(text):
        lowered = text.lstrip("+-").lower()
        if lowered == "nan":
            raise ValueError("NaN")
        raise OverflowError("infinite")
    if not _GO_FLOAT.match(text):
        raise ValueError('strconv.ParseFloat: parsing %s: invalid syntax' % go_quote(text))
    try:
        return round_float32(Fraction(text))
    except ValueError:
        raise ValueError('strconv.ParseFloat: parsing %s: value out of range' % go_quote(text))


def parse_threshold(signal: str, value: str, option: str = "evictionHard") -> Optional[Threshold]:
    """One ``signal: value`` statement as parseThresholdStatement; None when the kubelet ignores it."""
    if signal not in SIGNALS:
        message = "unsupported eviction signal %s" % signal
        raise EvictionError("%s: %s (known signals: %s)" % (option, message, ", ".join(SIGNALS)), option, message)
    if value.endswith("%"):
        if value in ("0%", "100%"):
            return None
        try:
            parsed = parse_float32(value.rstrip("%"))
        except OverflowError:
            message = "eviction percentage threshold %s must be <= 100%%: %s" % (signal, value)
            raise EvictionError("%s: %s" % (option, message), option, message)
        except ValueError as exc:
            if str(exc) == "NaN":
                raise EvictionError("%s: %s<%s is NaN; the kubelet accepts it and computes a meaningless "
                                    "threshold, use a number between 0 and 100" % (option, signal, value), option)
            raise EvictionError("%s: %s<%s: %s" % (option, signal, value, exc), option, str(exc))
        percentage = round_float32(parsed / 100)
        if percentage < 0:
            message = "eviction percentage threshold %s must be >= 0%%: %s" % (signal, value)
            raise EvictionError("%s: %s" % (option, message), option, message)
        if percentage > 1:
            message = "eviction percentage threshold %s must be <= 100%%: %s" % (signal, value)
            raise EvictionError("%s: %s" % (option, message), option, message)
        return Threshold(signal=signal, text=value, percentage=percentage)
    try:
        quantity = parse_quantity(value)
    except InvalidQuantity as exc:
        raise EvictionError("%s: %s<%s: %s" % (option, signal, value, exc), option)
    if quantity.sign() <= 0:
        message = "eviction threshold %s must be positive: %s" % (signal, quantity)
        raise EvictionError("%s: %s" % (option, message), option, message)
    return Threshold(signal=signal, text=value, quantity=quantity)


@dataclass(frozen=True)
class EvictionSettings:
    """The effective hard thresholds and how they came about (for messages and warnings)."""

    effective: Dict[str, str]           # signal -> value string, after defaulting/merging
    thresholds: Tuple[Threshold, ...]   # parsed, ignored ones (0%/100%) left out
    source: str                         # 'default' | 'configured' | 'merged'
    zeroed_defaults: Tuple[str, ...]    # default signals that the configuration drops (the trap)

    def memory_threshold(self) -> Optional[Threshold]:
        for threshold in self.thresholds:
            if threshold.signal == MEMORY_AVAILABLE:
                return threshold
        return None

    def memory_reservation(self, capacity_bytes: int) -> Optional[Quantity]:
        """The Node Allocatable memory held back for hard eviction (hardEvictionReservation)."""
        threshold = self.memory_threshold()
        return None if threshold is None else threshold.bytes_of(capacity_bytes)


def effective_eviction_hard(eviction_hard: Any = None,
                            merge_defaults: bool = False,
                            option: str = "eviction_hard") -> EvictionSettings:
    """Resolve ``evictionHard`` like the kubelet: None -> defaults; a map -> only its signals,
    unless ``mergeDefaultEvictionSettings`` fills the missing defaults back in.

    An explicitly empty map (``evictionHard: {}``) is *not* None: the kubelet then has no hard
    thresholds at all.
    """
    if eviction_hard is None:
        effective = dict(DEFAULT_EVICTION_HARD)
        source = "default"
        zeroed: Tuple[str, ...] = ()
    else:
        given = parse_eviction_map(eviction_hard, option)
        effective = dict(given)
        if merge_defaults:
            for signal, value in DEFAULT_EVICTION_HARD.items():
                effective.setdefault(signal, value)
            source = "merged"
            zeroed = ()
        else:
            source = "configured"
            zeroed = tuple(s for s in DEFAULT_EVICTION_HARD if s not in given)
    thresholds: List[Threshold] = []
    for signal in sorted(effective):
        parsed = parse_threshold(signal, effective[signal], option)
        if parsed is not None:
            thresholds.append(parsed)
    return EvictionSettings(effective=effective, thresholds=tuple(thresholds), source=source,
                            zeroed_defaults=zeroed)
