# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Kubernetes ``resource.Quantity`` semantics, exactly, with integers only.

Why our own parser: the Kubernetes Python client's parser goes through ``float``-free but lenient
paths and accepts inputs the API server rejects (``1K``, whitespace). This module follows the
apimachinery grammar and its quirks::

    <quantity>        ::= <signedNumber><suffix>
    <signedNumber>    ::= [+-] <digits> | [+-] <digits> . <digits>? | [+-] . <digits>?
    <suffix>          ::= <binarySI> | <decimalSI> | <decimalExponent>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
    <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
    <decimalExponent> ::= ( e | E ) [+-]? <digits>

A value is kept as an exact rational ``mantissa * 10**exponent`` (two ints), plus how
apimachinery would hold it: an ``int64Amount`` ``(value, scale)`` from its fast parse path, or
an ``inf.Dec`` (``None``) from the slow one. Only ``as_int64`` (``AsInt64``) and
``go_struct`` (Go's ``%v`` of a Quantity, as printed in some kubelet errors) depend on that.
As in apimachinery,
parsing rounds a non-zero value away from zero to a multiple of 1n (10**-9); a BinarySI value
is capped at 2**63-1; a BinarySI value strictly between 0 and 1 becomes DecimalSI.
``value()`` is the kubelet's ``Value()``: base units, rounded away from zero.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"
FORMATS = (DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT)

_MAX_INT64 = (1 << 63) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = _MAX_INT64
_NANO = -9
_MAX_EXPONENT = 4096  # far beyond any real quantity; keeps 10**n cheap

_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXPONENT = dict((exp, suffix) for suffix, exp in _DECIMAL_SUFFIXES.items())
_BINARY_BY_EXPONENT = dict((exp, suffix) for suffix, exp in _BINARY_SUFFIXES.items())

_QUANTITY = re.compile(
    r"""
    ^(?P<sign>[+-]?)            # optional sign
    (?P<int>[0-9]*)             # integer digits (may be empty: ".5")
    (?:\.(?P<frac>[0-9]*))?     # optional fraction (may be empty: "1.")
    (?P<suffix>
        [eE][+-]?[0-9]+         # decimal exponent
      | [KMGTPE]i               # binary SI
      | [numkMGTPE]?            # decimal SI
    )$
    """,
    re.VERBOSE,
)


#: resource.Quantity's splitREString and ErrFormatWrong (apimachinery pkg/api/resource/quantity.go):
#: what the API server answers for a quantity its decoder cannot even split (a fullwidth digit).
SPLIT_RE_STRING = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG = "quantities must match the regular expression '%s'" % SPLIT_RE_STRING
_SPLIT_RE = re.compile(SPLIT_RE_STRING[:-1] + r"\Z")


def format_wrong(text: str) -> bool:
    """Whether ``text`` fails resource.Quantity's first check (ErrFormatWrong)."""
    return _SPLIT_RE.match(text) is None


class InvalidQuantity(NumaguardError):
    """A string that Kubernetes would not accept as a resource quantity."""


def _remove_factors(value, base):
    """Return (value / base**n, n) for the largest n that divides exactly (value != 0)."""
    times = 0
    while value != 0 and value % base == 0:
        value //= base
        times += 1
    return value, times


def _ceil_div_away(numerator, denominator):
    """Divide rounding away from zero (denominator > 0)."""
    quotient, remainder = divmod(abs(numerator), denominator)
    if remainder:
        quotient += 1
    return quotient if numerator >= 0 else -quotient


_NATURAL = object()


def _fits_int64(value):
    return INT64_MIN <= value <= INT64_MAX


def _natural_int64_amount(mantissa, exponent):
    """How Go holds a quantity built from a number (``NewQuantity``/``NewScaledQuantity``)."""
    if not _fits_int64(mantissa):
        return None
    return (int(mantissa), int(exponent)) if mantissa else (0, 0)


def _int64_amount_add(a, b):
    """``int64Amount.Add``: (value, scale) or None where Go overflows into ``inf.Dec``."""
    if b[0] == 0:
        return a
    if a[0] == 0:
        return b
    if a[1] == b[1]:
        value, scale = a[0] + b[0], a[1]
    elif a[1] > b[1]:
        value, scale = a[0] * 10 ** (a[1] - b[1]), b[1]
        if not _fits_int64(value):
            return None
        value += b[0]
    else:
        shifted = b[0] * 10 ** (b[1] - a[1])
        if not _fits_int64(shifted):
            return None
        value, scale = a[0] + shifted, a[1]
    return (value, scale) if _fits_int64(value) else None


def _go_parse_representation(negative, digits_int, digits_frac, suffix):
    """``ParseQuantity``'s fast path: (value, scale) of the ``int64Amount``, or None when it
    takes the slow ``inf.Dec`` path (resource/quantity.go)."""
    num = digits_int.lstrip("0") or "0"
    denom = digits_frac
    if suffix in _BINARY_SUFFIXES:
        exponent = _BINARY_SUFFIXES[suffix]
        if denom:
            return None
        # float32(exponent)*3/10 is exact for the multiples of ten used here
        precision = 15 - len(num) - (exponent * 3 // 10) - 1
        multiplier, scale = 1 << exponent, 0
    else:
        exponent = int(suffix[1:]) if len(suffix) > 1 else _DECIMAL_SUFFIXES[suffix]
        precision = 18 - (len(num) + len(denom))
        multiplier, scale = 1, exponent
    if precision < 0:
        return None
    scale -= len(denom)
    if scale < _NANO:
        return None
    value = int(num + denom) * multiplier
    if not _fits_int64(value):
        return None
    return (-value if negative else value, scale)


class Quantity:
    """An immutable Kubernetes quantity: ``mantissa * 10**exponent`` plus its format."""

    __slots__ = ("_mantissa", "_exponent", "_format", "_go", "_text")

    def __init__(self, mantissa, exponent=0, fmt=DECIMAL_SI, go=_NATURAL):
        if fmt not in FORMATS:
            raise InvalidQuantity("unknown quantity format %r (expected one of %s)" % (fmt, ", ".join(FORMATS)))
        if go is _NATURAL:
            go = _natural_int64_amount(mantissa, exponent)
        if mantissa == 0:
            exponent = 0
        else:
            mantissa, times = _remove_factors(mantissa, 10)
            exponent += times
        object.__setattr__(self, "_mantissa", int(mantissa))
        object.__setattr__(self, "_exponent", int(exponent))
        object.__setattr__(self, "_format", fmt)
        object.__setattr__(self, "_go", go)
        object.__setattr__(self, "_text", None)

    def __setattr__(self, name, value):
        raise AttributeError("Quantity is immutable")

    # construction -------------------------------------------------------------------------
    @classmethod
    def from_int(cls, value, fmt=BINARY_SI):
        """A quantity of ``value`` base units (bytes, cores, ...) in the given format."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidQuantity("quantity value must be an integer, got %r" % (value,))
        return cls(value, 0, fmt)

    @classmethod
    def parse(cls, text):
        return parse_quantity(text)

    # accessors ----------------------------------------------------------------------------
    @property
    def format(self):
        return self._format

    def as_fraction(self):
        """The exact value as (numerator, denominator)."""
        if self._exponent >= 0:
            return self._mantissa * 10 ** self._exponent, 1
        return self._mantissa, 10 ** -self._exponent

    def sign(self):
        return (self._mantissa > 0) - (self._mantissa < 0)

    def is_zero(self):
        return self._mantissa == 0

    def value(self):
        """Base units as an int, rounded away from zero (the kubelet's ``Quantity.Value()``)."""
        numerator, denominator = self.as_fraction()
        return _ceil_div_away(numerator, denominator)

    def as_int64(self):
        """``Quantity.AsInt64``: the value as an int, or None where apimachinery fails.

        It fails by *representation*, not only by value: a quantity parsed through the slow path
        (a binary suffix with a fraction such as ``1.5Gi`` or ``1.0Gi``, more than 18 significant
        digits, a large binary value such as ``1Pi``) is an ``inf.Dec``; one with a negative scale
        (``1.0``, ``1000m``) is an ``int64Amount`` that ``AsInt64`` refuses; a positive scale that
        overflows int64 (``10E``) fails too. The kubelet uses it where a quantity must become
        an exact integer: reservedMemory limits (memory_manager.go ``getSystemReservedMemory``,
        "could not covert a variable of type Quantity to int64") and memory requests.
        """
        if self._go is None:
            return None
        value, scale = self._go
        if scale < 0:
            return None
        value *= 10 ** scale
        return value if INT64_MIN <= value <= INT64_MAX else None

    def written(self):
        """The text this quantity was parsed from (for messages about what the user wrote), else
        the canonical string."""
        return self._text if self._text is not None else canonical_string(self)

    def go_struct(self):
        """Go's ``%v`` of this Quantity value, ``{{1073741824 0} {<nil>}  BinarySI}`` (the cached
        string is empty: the kubelet prints sums and copies), or None for an ``inf.Dec`` (Go
        prints a pointer address there)."""
        if self._go is None:
            return None
        return "{{%d %d} {<nil>}  %s}" % (self._go[0], self._go[1], self._format)

    def milli_value(self):
        """Thousandths of the base unit, rounded away from zero (``MilliValue()``: CPU millicores)."""
        numerator, denominator = self.as_fraction()
        return _ceil_div_away(numerator * 1000, denominator)

    # arithmetic and comparison -----------------------------------------------------------
    def _key(self, other):
        if not isinstance(other, Quantity):
            return NotImplemented
        a_num, a_den = self.as_fraction()
        b_num, b_den = other.as_fraction()
        return a_num * b_den, b_num * a_den

    def _combine(self, other, sign):
        if not isinstance(other, Quantity):
            return NotImplemented
        exponent = min(self._exponent, other._exponent)
        mantissa = (self._mantissa * 10 ** (self._exponent - exponent)
                    + sign * other._mantissa * 10 ** (other._exponent - exponent))
        # apimachinery: the receiver's format wins, unless the receiver is zero.
        fmt = other._format if self.is_zero() else self._format
        go = None
        if self._go is not None and other._go is not None:
            go = _int64_amount_add(self._go, (sign * other._go[0], other._go[1]))
        return Quantity(mantissa, exponent, fmt, go)

    def __add__(self, other):
        return self._combine(other, 1)

    def __sub__(self, other):
        return self._combine(other, -1)

    def __neg__(self):
        go = None if self._go is None else (-self._go[0], self._go[1])
        return Quantity(-self._mantissa, self._exponent, self._format, go)

    def __eq__(self, other):
        key = self._key(other)
        return key if key is NotImplemented else key[0] == key[1]

    def __ne__(self, other):
        key = self._key(other)
        return key if key is NotImplemented else key[0] != key[1]

    def __lt__(self, other):
        key = self._key(other)
        return key if key is NotImplemented else key[0] < key[1]

    def __le__(self, other):
        key = self._key(other)
        return key if key is NotImplemented else key[0] <= key[1]

    def __gt__(self, other):
        key = self._key(other)
        return key if key is NotImplemented else key[0] > key[1]

    def __ge__(self, other):
        key = self._key(other)
        return key if key is NotImplemented else key[0] >= key[1]

    def __hash__(self):
        return hash((self._mantissa, self._exponent))

    def cmp(self, other):
        """-1, 0 or 1, like ``Quantity.Cmp``."""
        left, right = self._key(other)
        return (left > right) - (left < right)

    # formatting ---------------------------------------------------------------------------
    def __str__(self):
        return canonical_string(self)

    def __repr__(self):
        return "Quantity(%r)" % str(self)


def _canonical_decimal(mantissa, exponent, fmt):
    """apimachinery ``AsCanonicalBytes``: exponent a multiple of 3, then the suffix."""
    shift = exponent % 3  # Python's modulo is non-negative: lower the exponent to a multiple of 3
    mantissa *= 10 ** shift
    exponent -= shift
    if fmt == DECIMAL_SI and exponent in _DECIMAL_BY_EXPONENT:
        suffix = _DECIMAL_BY_EXPONENT[exponent]
    else:
        suffix = "e%d" % exponent if exponent else ""
    return "%d%s" % (mantissa, suffix)


def canonical_string(quantity):
    """The string Kubernetes prints for ``quantity`` (``Quantity.String()``)."""
    if quantity.is_zero():
        return "0"
    fmt = quantity.format
    numerator, denominator = quantity.as_fraction()
    if fmt == BINARY_SI:
        if abs(numerator) < 1024 * denominator or numerator % denominator:
            fmt = DECIMAL_SI  # small or fractional: shown in decimal, never rounded
        else:
            integer = numerator // denominator
            sign = -1 if integer < 0 else 1
            amount, times = abs(integer), 0
            while times < 6 and amount % 1024 == 0:
                amount //= 1024
                times += 1
            return "%d%s" % (sign * amount, _BINARY_BY_EXPONENT.get(times * 10, ""))
    return _canonical_decimal(quantity._mantissa, quantity._exponent, fmt)


def parse_quantity(text):
    """Parse a Kubernetes quantity string (or an int) into a :class:`Quantity`."""
    if isinstance(text, Quantity):
        return text
    if isinstance(text, bool):
        raise InvalidQuantity("quantity must be a string or a number, got %r" % (text,))
    if isinstance(text, int):
        text = "%d" % text
    elif isinstance(text, float):
        if math.isnan(text) or math.isinf(text):
            raise InvalidQuantity("quantity %r is not a finite number" % (text,))
        text = repr(text)
    elif not isinstance(text, str):
        raise InvalidQuantity("quantity must be a string or a number, got %r" % (text,))
    if text == "":
        raise InvalidQuantity("quantity '' is empty (expected e.g. '100Mi', '1Gi', '500m')")
    match = _QUANTITY.match(text)
    if not match:
        raise InvalidQuantity(_explain(text))
    digits_int, digits_frac = match.group("int"), match.group("frac") or ""
    suffix = match.group("suffix")
    negative = match.group("sign") == "-"

    mantissa = int((digits_int + digits_frac) or "0")
    exponent = -len(digits_frac)
    fmt = DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        fmt = BINARY_SI
        mantissa <<= _BINARY_SUFFIXES[suffix]
    elif len(suffix) > 1:  # e3, E-3, e+6 (a lone "E" is exa)
        fmt = DECIMAL_EXPONENT
        if abs(int(suffix[1:])) > _MAX_EXPONENT:
            raise InvalidQuantity("quantity %r has an exponent outside the supported range -%d..%d"
                                  % (text, _MAX_EXPONENT, _MAX_EXPONENT))
        exponent += int(suffix[1:])
    else:
        exponent += _DECIMAL_SUFFIXES[suffix]

    # Round a non-zero value away from zero to a whole number of nano units.
    if mantissa and exponent < _NANO:
        mantissa = _ceil_div_away(mantissa, 10 ** (_NANO - exponent))
        exponent = _NANO
    if fmt == BINARY_SI:
        numerator, denominator = Quantity(mantissa, exponent).as_fraction()
        if numerator > _MAX_INT64 * denominator:
            mantissa, exponent = _MAX_INT64, 0
        elif 0 < numerator < denominator:
            fmt = DECIMAL_SI
    go = (0, 0) if text == "0" else _go_parse_representation(negative, digits_int, digits_frac, suffix)
    result = Quantity(-mantissa if negative else mantissa, exponent, fmt, go)
    object.__setattr__(result, "_text", text)
    return result


#: Go's ``unicode.IsSpace`` (what ``strings.TrimSpace`` removes); Python's ``str.strip`` also
#: removes U+001C..U+001F, which Go keeps.
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"


def go_trim_space(text):
    """Go ``strings.TrimSpace``."""
    return text.strip(_GO_SPACE)


def parse_object_quantity(value):
    """A quantity inside a decoded object (KubeletConfiguration ``reservedMemory[].limits``, a
    pod's requests/limits/overhead): ``Quantity.UnmarshalJSON`` trims surrounding whitespace
    before parsing, so ``" 100Mi"`` is accepted there. Flags and the ``kubeReserved``,
    ``systemReserved`` and ``evictionHard`` string maps are parsed untrimmed: use
    :func:`parse_quantity` for those."""
    if isinstance(value, str):
        value = go_trim_space(value)
    return parse_quantity(value)


def _explain(text):
    """Say why ``text`` is not a quantity, naming the offending part where we can."""
    if text != text.strip():
        return "quantity %r has leading or trailing whitespace" % (text,)
    match = re.match(r"^[+-]?[0-9]*(?:\.[0-9]*)?", text)
    rest = text[match.end():]
    if re.match(r"^[A-Za-z]+$", rest):
        return ("quantity %r has an unknown suffix %r (expected one of Ki, Mi, Gi, Ti, Pi, Ei, "
                "n, u, m, k, M, G, T, P, E or an exponent such as e3; suffixes are case-sensitive)"
                % (text, rest))
    return "quantity %r is not a valid Kubernetes quantity (expected e.g. '100Mi', '1.5Gi', '500m', '1e3')" % (text,)


def quantity_bytes(text):
    """``parse_quantity(text).value()``: the base-unit integer (bytes for memory)."""
    return parse_quantity(text).value()


def format_bytes(value):
    """The canonical BinarySI string for an integer number of bytes (5473566720 -> '5220Mi')."""
    return canonical_string(Quantity.from_int(value, BINARY_SI))


_HUMAN_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def human_bytes(value, unit=None):
    """Bytes for humans, the one formatter of reports and screen lines: binary units with one
    decimal, rounded half up in integers (``15.6 GiB``, ``-1.0 MiB``, ``512 B``); ``unit``
    (``"GiB"``, ...) fixes the unit instead of taking the largest that fits; None is ``-``.
    Exact bytes stay in the data; :func:`format_bytes` is the kubelet's quantity text."""
    if value is None:
        return "-"
    value = int(value)
    for name, size in _HUMAN_UNITS:
        if name == unit or (unit is None and abs(value) >= size):
            tenths = (abs(value) * 10 + size // 2) // size
            return "%s%d.%d %s" % ("-" if value < 0 else "", tenths // 10, tenths % 10, name)
    return "%d B" % value
