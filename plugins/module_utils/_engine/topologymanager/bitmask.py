# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Topology Manager's NUMA bitmask (pkg/kubelet/cm/topologymanager/bitmask/bitmask.go).

A mask is a set of NUMA ids held in a 64-bit integer: bit ``i`` set means node ``i``. The
kubelet refuses bits outside 0..63, so NUMA ids >= 64 cannot be represented; we keep that
limit and its message. The two orders matter for tie-breaks and are reproduced exactly:

* :meth:`BitMask.is_less_than` is a plain numeric comparison ({1,2}=6 < {0,3}=9), whatever the
  upstream comment says;
* :meth:`BitMask.is_narrower_than` compares the number of nodes first, then numerically.

Hot paths (the merge) work on the raw ``int`` values; :class:`BitMask` is the typed value used
at interfaces and in results.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import itertools

try:
    from typing import Dict, Iterable, Iterator, List, Sequence, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError

MAX_BITS = 64


class InvalidBitMask(NumaguardError):
    """A NUMA id that a kubelet bitmask cannot hold."""


def _popcount(value: int) -> int:
    return bin(value).count("1")


def popcount(value: int) -> int:
    """Number of set bits of a non-negative int (``int.bit_count`` needs Python 3.10)."""
    return _popcount(value)


#: value -> its set bits; results (hint dicts, messages) ask for the bits of the same few
#: thousand masks over and over (65535 of them per resource at 16 NUMA nodes)
_BITS_CACHE: Dict[int, Tuple[int, ...]] = {}


def bits_of(value: int) -> Tuple[int, ...]:
    """Set bit indices of ``value``, ascending (cached: a tuple is immutable, safe to share)."""
    found = _BITS_CACHE.get(value)
    if found is not None:
        return found
    out = []
    rest = value
    while rest > 0:
        low = rest & -rest  # lowest set bit: one step per set bit, not per bit position
        out.append(low.bit_length() - 1)
        rest ^= low
    found = tuple(out)
    if len(_BITS_CACHE) >= 1 << 18:
        _BITS_CACHE.clear()
    _BITS_CACHE[value] = found
    return found


def mask_value(ids: Iterable[int]) -> int:
    """Integer value of the mask holding ``ids``; raises :class:`InvalidBitMask` like the kubelet."""
    value = 0
    for node in ids:
        if isinstance(node, bool) or not isinstance(node, int):
            raise InvalidBitMask("NUMA node id must be an integer, got %r" % (node,))
        if node < 0 or node >= MAX_BITS:
            raise InvalidBitMask("bit number must be in range 0-63 (NUMA node id %d)" % node)
        value |= 1 << node
    return value


class BitMask:
    """Immutable set of NUMA node ids (0..63), ordered and compared like the kubelet's mask.

    ``BitMask(0, 2)`` and ``BitMask.from_ids([0, 2])`` build {0, 2};
    ``BitMask.from_value(5)`` builds it from the integer.
    """

    __slots__ = ("_value",)

    _value: int

    def __init__(self, *ids: int) -> None:
        object.__setattr__(self, "_value", mask_value(ids))

    @classmethod
    def from_ids(cls, ids: Iterable[int]) -> BitMask:
        """Mask of the given NUMA ids (any iterable)."""
        return cls.from_value(mask_value(ids))

    @classmethod
    def from_value(cls, value: int) -> BitMask:
        """Mask whose integer value is ``value`` (0 <= value < 2**64)."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidBitMask("bitmask value must be an integer, got %r" % (value,))
        if value < 0 or value >> MAX_BITS:
            raise InvalidBitMask("bit number must be in range 0-63 (mask value %d)" % value)
        mask = cls.__new__(cls)
        object.__setattr__(mask, "_value", value)
        return mask

    def __setattr__(self, name, value):
        raise AttributeError("BitMask is immutable")

    @property
    def value(self) -> int:
        """The mask as a non-negative integer (bit i = NUMA node i)."""
        return self._value

    def bits(self) -> Tuple[int, ...]:
        """NUMA ids in the mask, ascending."""
        return bits_of(self._value)

    def count(self) -> int:
        """Number of NUMA nodes in the mask."""
        return _popcount(self._value)

    def is_empty(self) -> bool:
        return self._value == 0

    def is_set(self, node: int) -> bool:
        return node >= 0 and bool((self._value >> node) & 1)

    def and_(self, *others: BitMask) -> BitMask:
        """Intersection with every mask of ``others``."""
        value = self._value
        for other in others:
            value &= other._value
        return BitMask.from_value(value)

    def or_(self, *others: BitMask) -> BitMask:
        """Union with every mask of ``others``."""
        value = self._value
        for other in others:
            value |= other._value
        return BitMask.from_value(value)

    def is_less_than(self, other: BitMask) -> bool:
        """Numeric comparison of the integer values (the kubelet's actual rule)."""
        return self._value < other._value

    def is_narrower_than(self, other: BitMask) -> bool:
        """Fewer nodes, or as many nodes and numerically smaller."""
        mine, theirs = self.count(), other.count()
        if mine != theirs:
            return mine < theirs
        return self._value < other._value

    def is_subset_of(self, other: BitMask) -> bool:
        return self._value & ~other._value == 0

    def __eq__(self, other):
        if isinstance(other, BitMask):
            return self._value == other._value
        return NotImplemented

    def __ne__(self, other):
        result = self.__eq__(other)
        if result is NotImplemented:
            return result
        return not result

    def __hash__(self):
        return hash(("BitMask", self._value))

    def __iter__(self):
        return iter(self.bits())

    def __len__(self):
        return self.count()

    def __repr__(self) -> str:
        return "BitMask(%s)" % ", ".join(str(b) for b in self.bits())

    def __str__(self) -> str:
        return "[%s]" % ",".join(str(b) for b in self.bits())


def iterate_bitmask_values(ids: Sequence[int]) -> Iterator[int]:
    """Integer masks of every non-empty subset of ``ids`` in the kubelet's order.

    First all subsets of one node, then of two, ...; within a size, lexicographic order of index
    combinations of ``ids`` as given (sorted ids give {0},{1},{2},{0,1},{0,2},{1,2},{0,1,2}).
    """
    ids = list(ids)
    single = [mask_value([node]) for node in ids]
    for size in range(1, len(ids) + 1):
        for combination in itertools.combinations(single, size):
            value = 0
            for bit in combination:
                value |= bit
            yield value


def iterate_bitmasks(ids: Sequence[int]) -> Iterator[BitMask]:
    """:func:`iterate_bitmask_values` as :class:`BitMask` objects."""
    for value in iterate_bitmask_values(ids):
        yield BitMask.from_value(value)


class Compressor:
    """Masks over some NUMA ids (possibly sparse: 0,1,2,33,34) to compact masks (bit j = the
    j-th id) and back, a byte at a time through lookup tables."""

    def __init__(self, ids: Sequence[int]) -> None:
        self.nodes = tuple(ids)
        self.size = len(self.nodes)
        self.dense = all(node == index for index, node in enumerate(self.nodes))
        self.real_bits = [1 << node for node in self.nodes]
        self._expand: List[List[int]] = []
        self._compress: List[List[int]] = []
        if not self.dense:
            self._expand, self._compress = _byte_tables(self.nodes)

    def expand(self, compact: int) -> int:
        return compact if self.dense else _through_tables(compact, self._expand)

    def compress(self, real: int) -> int:
        return real & ((1 << self.size) - 1) if self.dense else _through_tables(real, self._compress)


_TABLES: Dict[Tuple[int, ...], Tuple[List[List[int]], List[List[int]]]] = {}


def _byte_tables(nodes: Tuple[int, ...]) -> Tuple[List[List[int]], List[List[int]]]:
    """(compact -> real, real -> compact) lookup tables per byte, cached per id tuple (the
    searches build many compressors over the same ids)."""
    found = _TABLES.get(nodes)
    if found is not None:
        return found
    real_bits = [1 << node for node in nodes]
    position = dict((node, j) for j, node in enumerate(nodes))
    expand = []
    for k in range((len(nodes) + 7) // 8):
        chunk = real_bits[8 * k:8 * k + 8]
        table = [0] * (1 << len(chunk))
        for byte in range(1, len(table)):
            low = byte & -byte
            table[byte] = table[byte ^ low] | chunk[low.bit_length() - 1]
        expand.append(table)
    compress = []
    for k in range((max(nodes) >> 3) + 1 if nodes else 0):
        table = [0] * 256
        for byte in range(1, 256):
            low = byte & -byte
            bit = position.get(8 * k + low.bit_length() - 1)
            table[byte] = table[byte ^ low] | (0 if bit is None else 1 << bit)
        compress.append(table)
    if len(_TABLES) >= 256:
        _TABLES.clear()
    _TABLES[nodes] = (expand, compress)
    return expand, compress


def _through_tables(value: int, tables: Sequence[Sequence[int]]) -> int:
    """OR of ``tables[k][byte k of value]`` over the bytes of ``value`` (bytes past the tables:
    no ids there)."""
    out = 0
    k = 0
    while value and k < len(tables):
        out |= tables[k][value & 0xFF]
        value >>= 8
        k += 1
    return out


def masks_of_size(expander: Compressor, size: int) -> Iterator[int]:
    """Real masks over the expander's ids with ``size`` nodes, numerically ascending (Gosper)."""
    count = expander.size
    if size <= 0 or size > count:
        return
    compact = (1 << size) - 1
    limit = 1 << count
    expand = expander.expand
    while compact < limit:
        yield expand(compact)
        low = compact & -compact
        ripple = compact + low
        compact = ripple | (((ripple ^ compact) // low) >> 2)


def kubelet_order_key(mask: int) -> Tuple[int, Tuple[int, ...]]:
    """IterateBitMasks order over sorted ids: by size, then lexicographically by NUMA ids."""
    bits = bits_of(mask)
    return (len(bits), bits)
