# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fast per-mask sums for hint generation (CPU and device managers).

Hint generation visits every non-empty NUMA mask (2^N - 1 of them: 65535 at 16 nodes) and asks
"how many CPUs / devices are in this mask". Done literally that is N work per mask and a new
hint object per mask, far too slow in Python at 16 nodes. Here:

* masks are enumerated once per set of NUMA ids, in the kubelet's ``IterateBitMasks`` order, as
  *compact* masks (bit j = the j-th NUMA id), with their real mask values alongside;
* additive per-node quantities are summed for all masks at once with the subset-doubling
  recurrence ``sum[m | bit j] = sum[m] + value[j]`` (list comprehensions, no per-mask loop);
* hints are interned: ``TopologyHint`` and ``BitMask`` are immutable, so one object per
  (mask, preferred) is shared by every provider and every call.

The results are identical to the literal enumeration; tests compare both.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import contextlib
import gc
import itertools
import operator

try:
    from typing import Dict, Iterable, List, Sequence, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint, memoise_dicts


@contextlib.contextmanager
def gc_paused():
    """Pause the cyclic garbage collector while building a per-machine table.

    Why: interning 65535 hints (hint, mask, dict, list each) makes the collector run its older
    generations again and again over a growing heap, which cost about 40% of a cold 16-node
    admission. These objects form no reference cycles, so plain reference counting frees
    everything the collector would; the previous setting is restored afterwards.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class MaskTable:
    """All non-empty masks over ``ids`` in kubelet order, with compact/real conversions."""

    def __init__(self, ids: Sequence[int]) -> None:
        self.ids = tuple(ids)
        size = len(self.ids)
        self.position = dict((node, j) for j, node in enumerate(self.ids))
        real = [0]
        count = [0]
        bits: List[Tuple[int, ...]] = [()]
        for _j, node in enumerate(self.ids):
            bit = 1 << node
            real = real + [value | bit for value in real]
            count = count + [value + 1 for value in count]
            single = (node,)
            bits = bits + [ids + single for ids in bits]  # ids ascending: node is the largest yet
        #: compact mask -> real mask value / number of nodes
        self.real: List[int] = real
        self.count: List[int] = count
        #: compact mask -> NUMA ids of the mask, ascending (what results list)
        self.bits: List[Tuple[int, ...]] = bits
        order: List[int] = []
        singles = [1 << j for j in range(size)]
        for width in range(1, size + 1):
            # distinct powers of two: their sum is their union (and sum() runs in C)
            order.extend(map(sum, itertools.combinations(singles, width)))
        #: compact masks in IterateBitMasks order
        self.order: List[int] = order
        self._gather = operator.itemgetter(*order) if len(order) > 1 else (lambda seq: (seq[order[0]],))
        self._all_hints: Dict[int, List[TopologyHint]] = {}
        self._sums: Dict[Tuple[int, ...], List[int]] = {}

    def in_order(self, values: Sequence[int]) -> Tuple[int, ...]:
        """``values`` (indexed by compact mask) rearranged into IterateBitMasks order."""
        return self._gather(values)

    def min_affinity(self, totals: Sequence[int], request: int) -> int:
        """Fewest nodes of a mask whose theoretical capacity covers ``request`` (else all nodes)."""
        count = self.count
        for compact in self.order:
            if totals[compact] >= request:
                return count[compact]
        return len(self.ids)

    def all_hints(self, min_affinity: int) -> List[TopologyHint]:
        """Every mask's interned hint in order, preferred iff it has ``min_affinity`` nodes."""
        cached = self._all_hints.get(min_affinity)
        if cached is None:
            real, count = self.real, self.count
            with gc_paused():
                cached = [hint(real[m], count[m] == min_affinity) for m in self.order]
                memoise_dicts(cached, map(self.bits.__getitem__, self.order))
            self._all_hints[min_affinity] = cached
        return cached

    def select(self,
               free: Sequence[int],
               need: int,
               required: int = 0,
               touching: Sequence[int] = (),
               monotone: bool = False) -> List[bool]:
        """Per mask (in order): ``free[mask] >= need``, all ``required`` nodes in it, and it touches
        every mask of ``touching`` (compact masks).

        ``monotone``: the caller promises ``free`` never decreases when nodes are added to a mask
        (sums of non-negative counts); then, when every single node already holds ``need``, every
        mask does and the per-mask comparison is skipped (the common case on a roomy machine).
        """
        if not required and not touching:
            if monotone and self.ids and min(free[1 << j] for j in range(len(self.ids))) >= need:
                return [True] * len(self.order)
            return [value >= need for value in self._gather(free)]
        ordered = self._gather(free)
        return [value >= need and not required & ~m and all(m & t for t in touching)
                for value, m in zip(ordered, self.order)]

    def compact(self, nodes: Iterable[int]) -> int:
        """Compact mask of the given NUMA ids (ids not in the table are ignored)."""
        value = 0
        for node in nodes:
            j = self.position.get(node)
            if j is not None:
                value |= 1 << j
        return value

    def sums(self, values: Sequence[int]) -> List[int]:
        """For every compact mask, the sum of ``values[j]`` over its nodes (values in id order).

        Cached by the values (the table is shared: callers must not mutate it), so consecutive
        pods on an unchanged machine reuse the 2^N table instead of rebuilding it.
        """
        key = tuple(values)
        out = self._sums.get(key)
        if out is None:
            out = [0]
            for value in key:
                out = out + [x + value for x in out]
            if len(self._sums) >= 16:
                self._sums.clear()
            self._sums[key] = out
        return out


_TABLES: Dict[Tuple[int, ...], MaskTable] = {}
_HINTS: Dict[Tuple[int, bool], TopologyHint] = {}


def table_for(ids: Iterable[int]) -> MaskTable:
    """The (cached) table for a sorted tuple of NUMA ids."""
    key = tuple(sorted(ids))
    table = _TABLES.get(key)
    if table is None:
        if len(_TABLES) > 64:
            _TABLES.clear()
        with gc_paused():
            table = _TABLES[key] = MaskTable(key)
    return table


def hint(real_mask: int, preferred: bool) -> TopologyHint:
    """Interned ``TopologyHint(BitMask(real_mask), preferred)``."""
    key = (real_mask, preferred)
    value = _HINTS.get(key)
    if value is None:
        if len(_HINTS) > 1 << 20:
            _HINTS.clear()
        value = _HINTS[key] = TopologyHint(BitMask.from_value(real_mask), preferred)
    return value
