# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Implicit hint sets: which NUMA masks a provider's hint list holds, described, not listed.

Every hint provider of the kubelet walks all 2^N - 1 masks of its NUMA ids and lists the masks
that fit: 65,535 per resource at 16 nodes, 6.9e10 at 36. A :class:`ThresholdHintSet` holds the
rule instead -- per-node amounts that must add up to a request (free CPUs, devices, free and
allocatable memory per type), nodes a mask must hold or touch, the memory manager's NUMA-group
rules, the size of the preferred masks -- and answers the questions the merge, the allocation
and the explanation ask, without the list:

* ``member(mask)``: 0 (not listed), 1 (listed, not preferred), 2 (listed, preferred);
* ``count()``, ``preferred_count()`` and ``min_size()``: exact, by enumeration up to
  :data:`BRUTE_NODES` ids and by a dynamic programme over capped sums (nodes with equal amounts
  taken together) above, ``None`` when that would exceed its bound;
* ``projects(part, within)``: does some listed mask meet ``within`` in exactly ``part`` (what
  the non-preferred merge needs when the providers' NUMA ids differ);
* ``exists_between(low, high)``: is some listed mask ``m`` with ``low <= m <= high`` (as sets)
  -- the interval query of the ranked non-preferred merge. A set is answered through its
  monotone parts: every set here is a union of an upward-closed family inside a sub-universe
  (the "general" multi-node masks: sums that only grow with the mask, nodes that must be held
  or touched; the widest mask of the interval inside that sub-universe decides) and a few
  explicitly listed masks (single-node masks, memory-manager NUMA groups, masks with this pod's
  reusable memory, the 1.36 device fallback mask over every node), each tested on its own.
  Only uint64 sums that can wrap around (more nodes, less memory) have no such split;
  ``interval_exact()`` says so;
* ``members()``: listed masks by size, then numerically, for explanations and Allocate.

Searches are bounded (:data:`MAX_MASK_VISITS` masks examined); beyond that
:class:`SearchBoundExceeded` names what could not be decided, never a MemoryError.

Only machines with many NUMA nodes need this module: providers, merge and results import it
when they meet a hint set (``implicit``), so that a module run on a small host does not ship
it through Python's compiler.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import heapq
import itertools
import math

try:
    from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import (
    BitMask,
    Compressor,
    bits_of,
    kubelet_order_key,
    mask_value,
    masks_of_size,
    popcount,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import SearchBoundExceeded, TopologyHint, best_first

#: at or below this many NUMA ids a set is answered by walking all its masks (at most 4095)
BRUTE_NODES = 12
#: masks one search may examine before giving up with SearchBoundExceeded
MAX_MASK_VISITS = 400000
#: states of the counting programme before it gives up (the count is then unknown)
DP_STATE_LIMIT = 60000

_UINT64 = 1 << 64


class Need:
    """One amount a mask must reach: sum of per-node ``weights`` (+1 per ``multi`` mask the mask
    touches, + ``bonus`` for exactly that mask) >= ``need``; ``wrap64``: Go uint64 sums."""

    __slots__ = ("weights", "need", "multi", "bonus", "wrap64")

    def __init__(self,
                 weights: Mapping[int, int],
                 need: int,
                 multi: Sequence[int] = (),
                 bonus: Optional[Mapping[int, int]] = None,
                 wrap64: bool = False) -> None:
        self.weights = dict((node, value) for node, value in weights.items() if value)
        self.need = need
        self.multi = tuple(multi)
        self.bonus = dict(bonus or {})
        self.wrap64 = wrap64

    def total(self, mask: int, bits: Sequence[int], with_bonus: bool = True) -> int:
        weights = self.weights
        value = 0
        for node in bits:
            value += weights.get(node, 0)
        for touch in self.multi:
            if mask & touch:
                value += 1
        if with_bonus and self.bonus:
            value += self.bonus.get(mask, 0)
        if self.wrap64:
            value %= _UINT64
        return value


class HintSet:
    """A provider's hints for one resource, as a rule over the masks of ``ids`` (see module doc).

    Subclasses define :meth:`member`; everything else has an exact generic answer by walking
    all masks, used at or below :data:`BRUTE_NODES` ids.
    """

    #: what merge and results test instead of importing this module (it loads only on big machines)
    implicit = True
    #: every preferred hint has this many nodes (None: preference is not by size alone)
    preferred_size: Optional[int] = None

    def __init__(self, ids: Sequence[int]) -> None:
        self.ids = tuple(sorted(ids))
        self.universe = mask_value(self.ids)
        self.expander = Compressor(self.ids)
        self._listed: Optional[List[Tuple[int, int]]] = None

    # -- the rule ----------------------------------------------------------------------------
    def member(self, mask: int) -> int:
        raise NotImplementedError

    # -- small sets: walk every mask ---------------------------------------------------------
    def small(self) -> bool:
        return len(self.ids) <= BRUTE_NODES

    def listed(self) -> List[Tuple[int, int]]:
        """(mask, 1 or 2) of every listed mask in the kubelet's order (small sets only)."""
        if self._listed is None:
            if not self.small():
                raise SearchBoundExceeded("%d NUMA nodes: will not list the %d masks of a hint set"
                                          % (len(self.ids), self.masks_iterated()))
            out = []
            for size in range(1, len(self.ids) + 1):
                for combo in itertools.combinations(self.expander.real_bits, size):
                    mask = sum(combo)
                    flag = self.member(mask)
                    if flag:
                        out.append((mask, flag))
            self._listed = out
        return self._listed

    def hints(self) -> List[TopologyHint]:
        """The literal hint list (kubelet order); small sets only."""
        return [TopologyHint(BitMask.from_value(mask), flag == 2) for mask, flag in self.listed()]

    # -- derived answers ----------------------------------------------------------------------
    def preferred_by_size(self) -> bool:
        """True when exactly the listed masks of ``preferred_size`` nodes are preferred."""
        return self.preferred_size is not None

    def monotone(self) -> bool:
        """A listed mask stays listed when nodes of ``ids`` are added (what the ranked
        non-preferred merge relies on)."""
        return False

    def masks_iterated(self) -> int:
        """Masks the kubelet's provider walks for this resource."""
        return (1 << len(self.ids)) - 1

    def count(self) -> Optional[int]:
        if self.small():
            return len(self.listed())
        return self._count_large(preferred_only=False)

    def preferred_count(self) -> Optional[int]:
        if self.small():
            return sum(1 for _mask, flag in self.listed() if flag == 2)
        return self._count_large(preferred_only=True)

    def min_size(self) -> Optional[int]:
        """Fewest nodes of a listed mask (None: nothing listed)."""
        if self.small():
            listed = self.listed()
            return popcount(listed[0][0]) if listed else None
        return self._min_size_large()

    def fewest_nodes_at_least(self) -> int:
        """A lower bound of :meth:`min_size` that costs no walk (1 when not known cheaply)."""
        return 1

    def is_empty(self) -> bool:
        return self.min_size() is None

    def projects(self, part: int, within: int) -> bool:
        """Some listed mask ``m`` has ``m & within == part``."""
        if self.small():
            return any(mask & within == part for mask, _flag in self.listed())
        return self._projects_large(part, within)

    def exists_between(self, low: int, high: int) -> bool:
        """Some listed mask ``m`` holds every node of ``low`` and none outside ``high``.

        Exact for every set where :meth:`interval_exact` is true (small sets: walked); else
        SearchBoundExceeded.
        """
        if low & ~high or low & ~self.universe:
            return False
        if self.small():
            return any(not low & ~mask and not mask & ~high for mask, _flag in self.listed())
        return self._between_large(low, high & self.universe)

    def interval_exact(self) -> bool:
        """:meth:`exists_between` is answered exactly (no SearchBoundExceeded)."""
        return self.small() or self.monotone()

    def reach(self, size: int) -> int:
        """Nodes some listed mask of at least ``size`` nodes holds, or more (an upper bound: a
        merged mask of ``size`` nodes lies inside every list's reach of that size)."""
        if self.small():
            found = 0
            for mask, _flag in self.listed():
                if popcount(mask) >= size:
                    found |= mask
            return found
        return self.universe

    def members(self, superset_of: int = 0, start_size: int = 1) -> Iterator[Tuple[int, int]]:
        """(mask, flag) of listed masks containing ``superset_of``, by size then numerically.

        Bounded: raises SearchBoundExceeded after :data:`MAX_MASK_VISITS` masks examined.
        """
        if self.small():
            found = [(m, f) for m, f in self.listed() if not superset_of & ~m and popcount(m) >= start_size]
            found.sort(key=lambda item: (popcount(item[0]), item[0]))
            yield from found
            return
        yield from self._walk(self.universe, superset_of, start_size)

    def _walk(self, pool: int, superset_of: int, start_size: int) -> Iterator[Tuple[int, int]]:
        """Listed masks made of ``superset_of`` plus nodes of ``pool``, by size then
        numerically, each tested with :meth:`member` (bounded by :data:`MAX_MASK_VISITS`)."""
        rest = Compressor([node for node in self.ids if (pool >> node) & 1 and not (superset_of >> node) & 1])
        base = popcount(superset_of)
        visits = 0
        for extra in range(max(0, start_size - base), rest.size + 1):
            candidates = masks_of_size(rest, extra) if extra else iter([0])
            for add in candidates:
                visits += 1
                if visits > MAX_MASK_VISITS:
                    raise SearchBoundExceeded(
                        "searching the hints of %d NUMA nodes examined %d masks without an answer"
                        % (len(self.ids), MAX_MASK_VISITS))
                mask = superset_of | add
                if not mask:
                    continue
                flag = self.member(mask)
                if flag:
                    yield mask, flag

    def best(self, superset_of: int = 0) -> Optional[TopologyHint]:
        """The memory manager's ``findBestHint`` over the listed masks containing ``superset_of``:
        preferred first, then narrowest (fewest nodes, numerically smaller)."""
        first = None
        by_size = self.preferred_by_size()
        for mask, flag in self.members(superset_of, self.fewest_nodes_at_least()):
            if flag == 2:
                return TopologyHint(BitMask.from_value(mask), True)
            if first is None:
                first = mask
            if by_size and self.preferred_size is not None and popcount(mask) > self.preferred_size:
                break  # every preferred mask has preferred_size nodes: none can come later
        if first is None:
            return None
        return TopologyHint(BitMask.from_value(first), False)

    def shown(self, limit: int) -> List[Tuple[int, int]]:
        """The best ``limit`` (mask, flag) for results, in the kubelet's order; a bounded walk
        on big sets (what it found when the bound is hit)."""
        if self.small():
            items = sorted(self.listed(), key=best_first)[:limit]
        else:
            preferred: List[Tuple[int, int]] = []
            other: List[Tuple[int, int]] = []
            by_size = self.preferred_by_size()
            try:
                for mask, flag in self.members(start_size=self.min_size() or 1):
                    (preferred if flag == 2 else other).append((mask, flag))
                    if len(preferred) >= limit or (len(preferred) + len(other) >= limit and by_size
                                                   and popcount(mask) > (self.preferred_size or 0)):
                        break
            except SearchBoundExceeded:
                pass
            items = sorted(preferred + other, key=best_first)[:limit]
        items.sort(key=lambda item: kubelet_order_key(item[0]))
        return items

    # -- large sets: subclasses ----------------------------------------------------------------
    def _count_large(self, preferred_only: bool) -> Optional[int]:
        return None

    def _min_size_large(self) -> Optional[int]:
        for mask, _flag in self.members():
            return popcount(mask)
        return None

    def _projects_large(self, part: int, within: int) -> bool:
        raise SearchBoundExceeded("%d NUMA nodes: cannot project this hint set" % len(self.ids))

    def _between_large(self, low: int, high: int) -> bool:
        # ``high`` is inside the universe; an upward-closed set holds a mask of the interval
        # exactly when it holds its widest mask
        if self.monotone():
            return bool(high) and self.member(high) > 0
        raise SearchBoundExceeded("%d NUMA nodes: cannot search this hint set between two masks" % len(self.ids))


class ThresholdHintSet(HintSet):
    """Masks of ``ids`` meeting every :class:`Need`, holding ``required``, touching each of
    ``touching``, and obeying the memory manager's group rules:

    * ``no_single``: nodes that make no single-node hint (already in a multi-node group);
    * ``multi_forbidden``: nodes that join no multi-node hint (single-node allocations);
    * ``groups``: (node bit, group mask): a multi-node hint holding the node must be the group.

    Preferred: ``preferred_size`` nodes, or ``extra_preferred(mask)`` (align-by-socket).
    """

    def __init__(self,
                 ids: Sequence[int],
                 needs: Sequence[Need],
                 preferred_size: Optional[int],
                 required: int = 0,
                 touching: Sequence[int] = (),
                 no_single: int = 0,
                 multi_forbidden: int = 0,
                 groups: Sequence[Tuple[int, int]] = (),
                 extra_preferred: Optional[Callable[[int], bool]] = None) -> None:
        super().__init__(ids)
        self.needs = list(needs)
        self.preferred_size = preferred_size
        self.required = required
        self.touching = tuple(touching)
        self.no_single = no_single
        self.multi_forbidden = multi_forbidden
        self.groups = tuple(groups)
        self.extra_preferred = extra_preferred
        self._cache: Dict[Any, Any] = {}
        self._widest: Dict[int, bool] = {}

    def member(self, mask: int, with_bonus: bool = True) -> int:
        if not mask or mask & ~self.universe or self.required & ~mask:
            return 0
        for touch in self.touching:
            if not mask & touch:
                return 0
        bits = bits_of(mask)
        if len(bits) == 1:
            if mask & self.no_single:
                return 0
        else:
            if mask & self.multi_forbidden:
                return 0
            for bit, group in self.groups:
                if mask & bit and mask != group:
                    return 0
        for need in self.needs:
            if need.total(mask, bits, with_bonus) < need.need:
                return 0
        if len(bits) == self.preferred_size:
            return 2
        if self.extra_preferred is not None and self.extra_preferred(mask):
            return 2
        return 1

    def preferred_by_size(self) -> bool:
        return self.preferred_size is not None and self.extra_preferred is None

    def monotone(self) -> bool:
        # single-node exclusions keep it (supersets are multi-node); group rules, exact-mask
        # bonuses and wrapping uint64 sums do not
        return not (self.multi_forbidden or self.groups or any(need.bonus for need in self.needs)
                    or self._wraps())

    # -- large sets -----------------------------------------------------------------------------
    def _general(self) -> int:
        """Nodes a multi-node mask other than a group mask may hold."""
        found = self._cache.get("general")
        if found is None:
            grouped = 0
            for bit, _group in self.groups:
                grouped |= bit
            found = self._cache["general"] = self.universe & ~self.multi_forbidden & ~grouped
        return found

    def _specials(self) -> List[int]:
        """Multi-node masks the general rule does not decide: group masks and bonus masks."""
        out = set(group for _bit, group in self.groups if group and not group & ~self.universe)
        for need in self.needs:
            out.update(mask for mask in need.bonus if mask and not mask & ~self.universe)
        return sorted(mask for mask in out if popcount(mask) >= 2)

    def _dp_ok(self) -> bool:
        return not self._wraps()

    def _sizes(self) -> Optional[Dict[int, int]]:
        """Number of general multi-node masks (no bonus) meeting every need, by size (>= 2)."""
        key = "sizes"
        if key in self._cache:
            return self._cache[key]
        result = None
        general = self._general()
        if self._dp_ok() and not self.required & ~general:
            result = _count_by_size([n for n in self.ids if (general >> n) & 1], self.needs, self.required,
                                    self.touching)
            if result is not None:
                result = dict((size, count) for size, count in result.items() if size >= 2)
        self._cache[key] = result
        return result

    def _singles(self) -> List[Tuple[int, int]]:
        found = self._cache.get("singles")
        if found is None:
            found = [(1 << node, flag) for node in self.ids for flag in (self.member(1 << node),) if flag]
            self._cache["singles"] = found
        return found

    def interval_exact(self) -> bool:
        return self.small() or not self._wraps()

    def reach(self, size: int) -> int:
        """By parts: the general nodes when their widest mask is listed (every need grows with
        the mask) -- or always when a uint64 sum can wrap --, listed special masks, and the
        listed single-node masks for ``size`` <= 1."""
        if self.small():
            return super().reach(size)
        found = 0
        if size <= 1:
            for mask, _flag in self._singles():
                found |= mask
        general = self._general()
        if popcount(general) >= max(2, size) and (self._wraps() or self.member(general) > 0):
            found |= general
        for mask in self._specials():
            if popcount(mask) >= size and self.member(mask):
                found |= mask
        return found

    def members(self, superset_of: int = 0, start_size: int = 1) -> Iterator[Tuple[int, int]]:
        """As :meth:`HintSet.members`, by parts: a listed multi-node mask is either made of
        :meth:`_general` nodes only (walked over those nodes alone) or is a NUMA-group mask
        (listed explicitly), and single-node masks are listed explicitly; the three streams
        are merged in (size, numeric) order. Nodes in groups or with single-NUMA allocations
        then cost nothing in the walk."""
        if self.small():
            yield from super().members(superset_of, start_size)
            return
        general = self._general()
        explicit: List[Tuple[int, int]] = []
        if start_size <= 1 and popcount(superset_of) <= 1:
            explicit.extend(item for item in self._singles() if not superset_of & ~item[0])
        for mask in self._specials():
            if mask & ~general and not superset_of & ~mask and popcount(mask) >= start_size:
                flag = self.member(mask)
                if flag:
                    explicit.append((mask, flag))
        explicit.sort(key=_size_then_value)
        if superset_of & ~general:
            yield from explicit
            return
        walked = self._walk(general, superset_of, max(2, start_size))
        yield from heapq.merge(explicit, walked, key=_size_then_value)

    def _between_large(self, low: int, high: int) -> bool:
        """The listed masks as monotone parts (see the module doc): the general multi-node
        masks -- upward-closed inside :meth:`_general`, since every need only grows with the
        mask when no uint64 sum wraps --, the listed single-node masks and the special masks
        (NUMA groups, exact-mask bonuses), each tested against the interval."""
        if self._wraps():
            raise SearchBoundExceeded("%d NUMA nodes: memory sums wrap around uint64; cannot search this hint "
                                      "set between two masks" % len(self.ids))
        widest = high & self._general()
        if not low & ~widest and popcount(widest) >= 2:
            # the ranked merge asks about the same widest masks again and again
            known = self._widest
            listed = known.get(widest)
            if listed is None:
                if len(known) > 4096:
                    known.clear()
                listed = known[widest] = self.member(widest) > 0
            if listed:
                return True
        if popcount(low) <= 1:
            for mask, _flag in self._singles():
                if not low & ~mask and not mask & ~high:
                    return True
        specials = self._cache.get("listed specials")
        if specials is None:
            specials = [mask for mask in self._specials() if self.member(mask)]
            self._cache["listed specials"] = specials
        return any(not low & ~mask and not mask & ~high for mask in specials)

    def _count_large(self, preferred_only: bool) -> Optional[int]:
        if preferred_only and self.extra_preferred is not None:
            return None
        sizes = self._sizes()
        if sizes is None:
            return None
        total = 0
        for _mask, flag in self._singles():
            if not preferred_only or flag == 2:
                total += 1
        for size, count in sizes.items():
            if not preferred_only or size == self.preferred_size:
                total += count
        general = self._general()
        for mask in self._specials():
            wanted = (lambda flag: flag == 2) if preferred_only else (lambda flag: flag > 0)
            now = wanted(self.member(mask))
            if not mask & ~general:
                before = wanted(self.member(mask, with_bonus=False))
                total += int(now) - int(before)
            else:
                total += int(now)
        return total

    def fewest_nodes_at_least(self) -> int:
        """From the counting programme (no walk): the listed masks' fewest nodes, 1 when
        single-node masks are listed or the programme is out of bounds."""
        if self.small() or self._singles():
            return 1
        sizes = self._sizes()
        if sizes is None:
            return 1
        found = [size for size, count in sizes.items() if count > 0]
        found.extend(popcount(mask) for mask in self._specials() if self.member(mask))
        return min(found) if found else 1

    def _min_size_large(self) -> Optional[int]:
        if self._singles():
            return 1
        sizes = self._sizes()
        if sizes is None:
            return super()._min_size_large()
        found = [size for size, count in sizes.items() if count > 0]
        found.extend(popcount(mask) for mask in self._specials() if self.member(mask))
        return min(found) if found else None

    def _wraps(self) -> bool:
        """Some uint64 sum could wrap around (then more nodes can mean less memory)."""
        found = self._cache.get("wraps")
        if found is None:
            found = self._cache["wraps"] = self._wraps_now()
        return found

    def _wraps_now(self) -> bool:
        return any(need.wrap64 and sum(need.weights.values()) + max(list(need.bonus.values()) + [0]) >= _UINT64
                   for need in self.needs)

    def _projects_large(self, part: int, within: int) -> bool:
        if part & ~self.universe:
            return False
        if part and self.member(part):
            return True  # nothing added from outside ``within``
        outside = self.universe & ~within
        if not outside:
            return False
        if self._wraps():
            raise SearchBoundExceeded("%d NUMA nodes: memory sums wrap around uint64; cannot project "
                                      "this hint set" % len(self.ids))
        # every need grows with the mask: if any general extension of ``part`` is listed, the
        # widest one is; single-node and group/bonus masks are checked one by one
        widest = part | (outside & self._general())
        if widest != part and self.member(widest):
            return True
        if not part and any(self.member(1 << node) for node in bits_of(outside)):
            return True
        return any(mask & within == part and self.member(mask) for mask in self._specials())


def _size_then_value(item: Tuple[int, int]) -> Tuple[int, int]:
    return popcount(item[0]), item[0]


def _count_by_size(nodes: Sequence[int],
                   needs: Sequence[Need],
                   forced: int,
                   touching: Sequence[int] = ()) -> Optional[Dict[int, int]]:
    """Subsets of ``nodes`` holding ``forced`` and touching each mask of ``touching`` whose sums
    reach every need (per-node amounts plus one per ``multi`` mask touched), by size.

    Dynamic programme over sums capped at the need and the sets of multi masks touched so far;
    nodes alike in every respect go in together with binomial weights. None when the states
    exceed :data:`DP_STATE_LIMIT`.
    """
    if forced & ~mask_value(nodes):
        return {}
    caps = [max(0, need.need) for need in needs]

    def profile(node: int) -> Tuple[Any, ...]:
        bit = 1 << node
        amounts = tuple(need.weights.get(node, 0) for need in needs)
        multis = tuple(sum(1 << k for k, mask in enumerate(need.multi) if mask & bit) for need in needs)
        touches = sum(1 << k for k, mask in enumerate(touching) if mask & bit)
        return amounts, multis, touches

    def add(state: Tuple[Any, ...], prof: Tuple[Any, ...], times: int) -> Tuple[Any, ...]:
        sums, multis, touches = state
        amounts, node_multis, node_touches = prof
        if not times:
            return state
        return (tuple(min(cap, value + times * amount) for cap, value, amount in zip(caps, sums, amounts)),
                tuple(a | b for a, b in zip(multis, node_multis)), touches | node_touches)

    state0: Tuple[Any, ...] = (tuple(0 for _need in needs), tuple(0 for _need in needs), 0)
    size0 = 0
    groups: Dict[Tuple[Any, ...], int] = {}
    for node in nodes:
        if (forced >> node) & 1:
            state0 = add(state0, profile(node), 1)
            size0 += 1
        else:
            key = profile(node)
            groups[key] = groups.get(key, 0) + 1
    states: Dict[Tuple[Any, int], int] = {(state0, size0): 1}
    for prof, amount in groups.items():
        binomials = [math.comb(amount, k) for k in range(amount + 1)]
        nxt: Dict[Tuple[Any, int], int] = {}
        for (state, size), ways in states.items():
            for k in range(amount + 1):
                key = (add(state, prof, k), size + k)
                nxt[key] = nxt.get(key, 0) + ways * binomials[k]
        states = nxt
        if len(states) > DP_STATE_LIMIT:
            return None
    everything = (1 << len(touching)) - 1
    out: Dict[int, int] = {}
    for ((sums, multis, touches), size), ways in states.items():
        if not size or touches != everything:
            continue
        if all(value + popcount(multi) >= cap for value, multi, cap in zip(sums, multis, caps)):
            out[size] = out.get(size, 0) + ways
    return out


class SingleNumaHintSet(HintSet):
    """single-numa-node's filter of a hint set: its preferred one-node hints only."""

    preferred_size = 1
    single_numa = True

    def __init__(self, inner: HintSet) -> None:
        super().__init__(inner.ids)
        self.inner = inner
        self._singles = [1 << node for node in self.ids if inner.member(1 << node) == 2]
        self._listed = [(mask, 2) for mask in self._singles]

    def small(self) -> bool:
        return True  # at most one mask per node: always listed

    def member(self, mask: int) -> int:
        return 2 if mask in self._singles else 0

    def masks_iterated(self) -> int:
        return self.inner.masks_iterated()


class FallbackHintSet(HintSet):
    """A device hint set over the NUMA nodes hosting the resource's devices plus the one
    non-preferred hint spanning every node of the machine (kubelet >= 1.36,
    pkg/kubelet/cm/devicemanager/topology_hints.go generateDeviceTopologyHints: when the
    candidate nodes are fewer than the machine's and some hint was found, a default hint of all
    NUMA nodes is appended, not preferred; kubernetes/kubernetes#138244).

    ``inner``: the hints over the device nodes (non-empty); ``ids``: every node of the machine.
    The kubelet walks only the device nodes' masks (``masks_iterated``) and lists one hint more
    (``count``). Not monotone: a device-node mask plus a node without devices is not listed.
    """

    def __init__(self, inner: HintSet, ids: Sequence[int]) -> None:
        super().__init__(ids)
        self.inner = inner
        self.preferred_size = inner.preferred_size
        #: preferred masks never leave the device nodes (the merge searches them there)
        self.preferred_universe = inner.universe

    def small(self) -> bool:
        return self.inner.small()

    def listed(self) -> List[Tuple[int, int]]:
        if self._listed is None:
            self._listed = list(self.inner.listed()) + [(self.universe, 1)]  # the widest mask comes last
        return self._listed

    def member(self, mask: int) -> int:
        if mask == self.universe:
            return 1
        if mask & ~self.inner.universe:
            return 0
        return self.inner.member(mask)

    def preferred_by_size(self) -> bool:
        return self.inner.preferred_by_size()

    def masks_iterated(self) -> int:
        return self.inner.masks_iterated()

    def count(self) -> Optional[int]:
        inner = self.inner.count()
        return None if inner is None else inner + 1

    def preferred_count(self) -> Optional[int]:
        return self.inner.preferred_count()

    def min_size(self) -> Optional[int]:
        return self.inner.min_size()

    def projects(self, part: int, within: int) -> bool:
        return self.universe & within == part or self.inner.projects(part, within)

    def exists_between(self, low: int, high: int) -> bool:
        """Two parts: the fallback mask (every node) and the inner set over the device nodes."""
        if low & ~high or low & ~self.universe:
            return False
        if not self.universe & ~high:
            return True
        return self.inner.exists_between(low, high & self.inner.universe)

    def interval_exact(self) -> bool:
        return self.inner.interval_exact()

    def reach(self, size: int) -> int:
        return self.universe if popcount(self.universe) >= size else self.inner.reach(size)

    def members(self, superset_of: int = 0, start_size: int = 1) -> Iterator[Tuple[int, int]]:
        if not superset_of & ~self.inner.universe:
            yield from self.inner.members(superset_of, start_size)
        if popcount(self.universe) >= start_size and not superset_of & ~self.universe:
            yield self.universe, 1
