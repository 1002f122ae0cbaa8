# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Merging provider hints into one NUMA affinity (pkg/kubelet/cm/topologymanager/policy.go).

Two implementations with the same result:

* :func:`merge_exhaustive` does what the kubelet does: every permutation of the hint lists (the
  Cartesian product, first list outermost) is merged and compared with the running best by the
  kubelet's sequential rules. It is the reference, and hopeless beyond a few NUMA nodes
  (255^4 ~ 4.2e9 permutations at 8 nodes with four resources).
* :func:`merge_fast` uses the fact that the kubelet's choice does not depend on the order in
  which permutations are seen: the result is the maximum of a strict total order over the *set*
  of merged hints that some permutation can produce (HintMerger.compare in pkg/kubelet/cm/topologymanager/policy.go). That set is computed without
  enumerating permutations:

  - a *preferred* merged hint needs every hint preferred and every non-nil mask equal, so its
    masks are exactly the masks ``m`` such that every list holds a preferred ``m`` or a
    preferred nil hint (plain set intersections);
  - only if no preferred merged hint exists do we need every achievable AND of one mask per
    list. With ``c_i(X)`` = number of masks of list i that contain X (a superset-sum, "zeta",
    transform), the number of permutations whose AND is exactly Z is the Moebius inversion of
    ``prod_i c_i``; Z is achievable iff that number is positive. That costs O(k * N * 2^N)
    (N NUMA nodes, k lists) instead of prod |L_i|.

  The non-preferred ranking is then: count == B first, then counts just below B (larger
  first), then counts above B (smaller first); ties by the closest/narrowest rule.

Masks are handled as ints internally; NUMA ids are compressed to positions 0..N-1 of the
machine's sorted ids for the transform so that sparse ids (0,1,2,33,34) cost 2^5, not 2^35. The
transforms run on packed big ints (one C-level shift/and/add over all 2^N fields per NUMA node)
and fall back to Python lists when the counts could overflow 64-bit fields.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import array
import functools
import itertools
import operator
import sys
import time

try:
    from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, cast  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask, Compressor, bits_of, masks_of_size, popcount
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import SearchBoundExceeded, TopologyHint, is_hint_set
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import NUMAInfo, TopologyManagerError

DONT_CARE = TopologyHint(None, True)
CANNOT_SATISFY = TopologyHint(None, False)


def filter_providers_hints(providers_hints: Sequence[Optional[Dict[str, Optional[List[TopologyHint]]]]]) -> List[List[TopologyHint]]:
    """Flatten provider maps into hint lists with the nil / empty meanings of filterProvidersHints (pkg/kubelet/cm/topologymanager/policy.go).

    Resource keys are taken in sorted order; the kubelet uses Go's random map order, which does
    not change the merge result, only the order of lists in logs.
    """
    lists: List[List[TopologyHint]] = []
    for hints in providers_hints:
        if not hints:
            lists.append([DONT_CARE])
            continue
        for resource in sorted(hints):
            value = hints[resource]
            if value is None:
                lists.append([DONT_CARE])
            elif is_hint_set(value):
                lists.append(value)  # providers hand over non-empty sets only
            elif len(value) == 0:
                lists.append([CANNOT_SATISFY])
            else:
                lists.append(list(value))
    return lists


def filter_single_numa_hints(lists: Sequence[Sequence[TopologyHint]]) -> List[List[TopologyHint]]:
    """single-numa-node: keep only preferred nil hints and preferred one-node hints."""
    out: List[Any] = []
    for hints in lists:
        if is_hint_set(hints):
            # imported here: a hint set exists only once hint_sets is loaded; listed hints never compile it
            from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hint_sets import SingleNumaHintSet
            single = SingleNumaHintSet(cast(Any, hints))
            out.append(single if single.listed() else [])
            continue
        out.append([h for h in hints if h.preferred and (h.affinity is None or h.affinity.count() == 1)])
    return out


def best_non_preferred_affinity_count(lists: Sequence[Sequence[TopologyHint]]) -> int:
    """B: the largest, over the lists, of the node count of the list's narrowest non-nil mask."""
    best = 0
    for hints in lists:
        narrowest: Optional[int] = None
        if is_hint_set(hints):
            narrowest = cast(Any, hints).min_size()
            if narrowest is not None and narrowest > best:
                best = narrowest
            continue
        for hint in hints:
            if hint.affinity is None:
                continue
            count = hint.affinity.count()
            if narrowest is None or count < narrowest:
                narrowest = count
        if narrowest is not None and narrowest > best:
            best = narrowest
    return best


class _Comparer:
    """The kubelet's sequential "is the candidate better than the current best" rules."""

    def __init__(self, numa_info: NUMAInfo, best_count: int, prefer_closest: bool) -> None:
        self.numa_info = numa_info
        self.best_count = best_count
        self.prefer_closest = prefer_closest

    def compare_masks(self, current: int, candidate: int) -> int:
        if current == candidate:
            return current
        if self.prefer_closest:
            return self.numa_info.closest(current, candidate)
        return self.numa_info.narrowest(current, candidate)

    def better(self,
               current: Optional[Tuple[int, bool]],
               candidate: Tuple[int, bool]) -> Optional[Tuple[int, bool]]:
        """Return the new best of (mask, preferred) pairs; ``current`` None = nothing yet."""
        mask, preferred = candidate
        if mask == 0:
            return current
        if current is None:
            return candidate
        cur_mask, cur_pref = current
        if preferred and not cur_pref:
            return candidate
        if cur_pref and not preferred:
            return current
        if cur_pref and preferred:
            return current if self.compare_masks(cur_mask, mask) == cur_mask else candidate
        b = self.best_count
        c, d = popcount(cur_mask), popcount(mask)
        if c > b:
            return current if self.compare_masks(cur_mask, mask) == cur_mask else candidate
        if c == b:
            if d != b:
                return current
            return current if self.compare_masks(cur_mask, mask) == cur_mask else candidate
        if d > b:
            return current
        if d == b:
            return candidate
        if d > c:
            return candidate
        if d < c:
            return current
        return current if self.compare_masks(cur_mask, mask) == cur_mask else candidate


def _to_hint(mask: int, preferred: bool) -> TopologyHint:
    return TopologyHint(BitMask.from_value(mask), preferred)


#: permutations a bounded literal walk replays at most (prefer-closest-numa-nodes on sparse NUMA ids)
MAX_WALK_PERMUTATIONS = 2000000


def merge_exhaustive(lists: Sequence[Sequence[TopologyHint]],
                     numa_info: NUMAInfo,
                     prefer_closest: bool = False,
                     bounded: bool = False) -> TopologyHint:
    """The kubelet's HintMerger, literally: every permutation, sequential best-so-far rules.

    ``bounded``: past :data:`MAX_WALK_PERMUTATIONS` raise SearchBoundExceeded instead of walking.
    Raises KubeletPanic where the kubelet's walk panics (numa_info.py)."""
    if bounded:
        size = 1
        for hints in lists:
            size *= MAX_WALK_PERMUTATIONS + 1 if is_hint_set(hints) else max(len(hints), 1)
        if size > MAX_WALK_PERMUTATIONS:
            raise SearchBoundExceeded(
                "prefer-closest-numa-nodes on sparse NUMA ids: whether the kubelet panics depends on the order of "
                "its merge, and its %s permutations are more than %d to replay"
                % ("many" if size > MAX_WALK_PERMUTATIONS ** 2 else size, MAX_WALK_PERMUTATIONS))
    lists = [cast(Any, hints).hints() if is_hint_set(hints) else hints for hints in lists]
    default = numa_info.default_mask
    comparer = _Comparer(numa_info, best_non_preferred_affinity_count(lists), prefer_closest)
    best: List[Optional[Tuple[int, bool]]] = [None]
    count = len(lists)

    def visit(index: int, mask: int, first: Optional[int], preferred: bool) -> None:
        if index == count:
            best[0] = comparer.better(best[0], (mask, preferred))
            return
        for hint in lists[index]:
            pref = preferred and hint.preferred
            if hint.affinity is None:
                visit(index + 1, mask, first, pref)
                continue
            value = hint.affinity.value
            if first is None:
                visit(index + 1, mask & value, value, pref)
            else:
                visit(index + 1, mask & value, first, pref and value == first)

    visit(0, default, None, True)
    if best[0] is None:
        return TopologyHint(BitMask.from_value(default), False)
    return _to_hint(best[0][0], best[0][1])


# ---------------------------------------------------------------------------------------------
# fast exact merge


def _preferred_key(numa_info: NUMAInfo, prefer_closest: bool) -> Callable[[int], Tuple]:
    if prefer_closest:
        return lambda m: (popcount(m), numa_info.average_distance(m), m)
    return lambda m: (popcount(m), m)


def _achievable_preferred(lists: Sequence[Sequence[TopologyHint]], default: int) -> List[int]:
    """Merged masks (non-empty) of all permutations that merge to a *preferred* hint."""
    common: Optional[set] = None
    all_have_nil = True
    union: set = set()
    for hints in lists:
        # a plain loop that skips non-preferred hints at once measured faster than building
        # attribute lists (lists hold up to 2^N - 1 hints, few of them preferred)
        masks = set()
        has_nil = False
        for hint in hints:
            if not hint.preferred:
                continue
            affinity = hint.affinity
            if affinity is None:
                has_nil = True
            else:
                masks.add(affinity._value)  # pylint: disable=protected-access
        union |= masks
        if has_nil:
            continue
        all_have_nil = False
        common = masks if common is None else (common & masks)
        if not common:
            return []
    if common is None:
        # every list can contribute a preferred nil hint: any preferred mask of any list works
        # together with nil hints elsewhere, and all-nil merges to the default mask.
        candidates = union
    else:
        candidates = common
    out = set(m & default for m in candidates)
    if all_have_nil:
        out.add(default)
    out.discard(0)
    return sorted(out)


def _superset_sums(values: List[int], size: int) -> List[int]:
    """In place: values[X] = sum of values[Y] over Y superset of X (zeta transform)."""
    return _superset_transform(values, size, operator.add)


def _superset_inverse(values: List[int], size: int) -> List[int]:
    """In place inverse of :func:`_superset_sums` (Moebius inversion)."""
    return _superset_transform(values, size, operator.sub)


def _superset_transform(values: List[int],
                        size: int,
                        combine: Callable[[int, int], int]) -> List[int]:
    """values[X] = combine(values[X], values[X | bit]) for every bit in turn, in place."""
    total = 1 << size
    for bit in range(size):
        step = 1 << bit
        block = step << 1
        if step <= total // block:
            # few long strided slices: indices with this bit clear, grouped by low residue
            for residue in range(step):
                low = values[residue:total:block]
                high = values[residue + step:total:block]
                values[residue:total:block] = list(map(combine, low, high))
        else:
            for start in range(0, total, block):
                mid = start + step
                values[start:mid] = list(map(combine, values[start:mid], values[mid:mid + step]))
    return values


_POPCOUNTS: Dict[int, List[int]] = {}


def _popcount_table(size: int) -> List[int]:
    """popcount of every index below 2**size (cached per size)."""
    table = _POPCOUNTS.get(size)
    if table is None:
        table = [0] * (1 << size)
        for index in range(1, 1 << size):
            table[index] = table[index >> 1] + (index & 1)
        _POPCOUNTS[size] = table
    return table


#: Above this many NUMA nodes the 2^N tables of the exact non-preferred search are refused.
MAX_FAST_MERGE_NODES = 20

_FIELD_MASKS: Dict[Tuple[int, int, int], int] = {}
_PACKED_OK = array.array("I").itemsize == 4 and array.array("Q").itemsize == 8


def _field_mask(size: int, width: int, bit: int) -> int:
    """Packed int whose ``width``-byte fields are all ones where the field index has ``bit`` clear."""
    key = (size, width, bit)
    mask = _FIELD_MASKS.get(key)
    if mask is None:
        step = 1 << bit
        pattern = b"\xff" * (width * step) + b"\x00" * (width * step)
        mask = int.from_bytes(pattern * ((1 << size) // (2 * step)), "little")
        _FIELD_MASKS[key] = mask
    return mask


def _packed_superset_sums(packed: int, size: int, width: int) -> int:
    """Zeta transform on a packed int (``width``-byte little-endian fields, none may overflow)."""
    for bit in range(size):
        packed += (packed >> (8 * width << bit)) & _field_mask(size, width, bit)
    return packed


def _packed_superset_inverse(packed: int, size: int, width: int) -> int:
    """Moebius inversion on a packed int. Every intermediate field is a count of combinations
    (never negative), so the field-wise subtraction never borrows across fields."""
    for bit in range(size):
        packed -= (packed >> (8 * width << bit)) & _field_mask(size, width, bit)
    return packed


def _to_array(packed: int, typecode: str, count: int) -> array.array:
    values = array.array(typecode)
    values.frombytes(packed.to_bytes(values.itemsize * count, "little"))
    if sys.byteorder != "little":  # pragma: no cover - big-endian hosts
        values.byteswap()
    return values


def _from_array(values: array.array) -> int:
    if sys.byteorder != "little":  # pragma: no cover - big-endian hosts
        values = array.array(values.typecode, values)
        values.byteswap()
    return int.from_bytes(values.tobytes(), "little")


def _achievable_ands(masks_per_list: Sequence[set],
                     default: int,
                     compressor: Compressor) -> List[int]:
    """Every non-empty AND (with the default mask) of one mask per list, as compressed masks.

    ``masks_per_list`` holds, per hint list, the set of its masks with nil hints already
    replaced by the default mask. The transforms run on packed ints (one C-level shift/and/add
    per NUMA node) whenever the number of combinations fits 64-bit fields, else on lists.
    """
    size = compressor.size
    if size > MAX_FAST_MERGE_NODES:
        raise TopologyManagerError("%d NUMA nodes: the exact merge needs 2^%d tables, more than this "
                                   "simulator supports (%d nodes)" % (size, size, MAX_FAST_MERGE_NODES))
    total = 1 << size
    presents: List[frozenset] = []
    for masks in masks_per_list:
        if compressor.dense:
            # dense ids: default is 2^N - 1, so "no bit outside default" <=> numerically <= default
            if masks and max(masks) > default:
                present = frozenset(m & default for m in masks)
            else:
                present = frozenset(masks)
        else:
            present = frozenset(compressor.compress(m & default) for m in masks)
        presents.append(present)
    if not presents:
        return [total - 1] if total > 1 else []
    bound = 1
    for present in presents:
        bound *= len(present)
    packed = _PACKED_OK and bound < (1 << 64)
    cache: Dict[frozenset, Any] = {}
    product: Any = None
    for present in presents:
        sums = cache.get(present)
        if sums is None:
            if packed:
                indicator = array.array("I", [0]) * total
                for _unused in map(indicator.__setitem__, present, itertools.repeat(1)):
                    pass
                sums = _to_array(_packed_superset_sums(_from_array(indicator), size, 4), "I", total)
            else:
                values = [0] * total
                for _unused in map(values.__setitem__, present, itertools.repeat(1)):
                    pass
                sums = _superset_sums(values, size)
            cache[present] = sums
        product = list(sums) if product is None else list(map(operator.mul, product, sums))
    counts: Any
    if packed:
        counts = _to_array(_packed_superset_inverse(_from_array(array.array("Q", product)), size, 8), "Q", total)
    else:
        counts = _superset_inverse(product, size)
    counts[0] = 0
    return list(itertools.compress(range(total), counts))


_AFFINITY = operator.attrgetter("affinity")
_PREFERRED = operator.attrgetter("preferred")
_VALUE = operator.attrgetter("_value")  # BitMask slot (the property costs a call)
_NOT_NONE = functools.partial(operator.is_not, None)
_IS_NONE = functools.partial(operator.is_, None)


def merge_fast(lists: Sequence[Sequence[TopologyHint]],
               numa_info: NUMAInfo,
               prefer_closest: bool = False,
               search_seconds: Optional[float] = None) -> TopologyHint:
    """Same result as :func:`merge_exhaustive`, without enumerating permutations.

    ``search_seconds``: CPU time the search for a non-preferred result may take (default
    :data:`MAX_SEARCH_SECONDS`); past it NoPreferredMerge."""
    if any(is_hint_set(hints) for hints in lists):
        return merge_implicit(lists, numa_info, prefer_closest, search_seconds)
    default = numa_info.default_mask
    if any(len(hints) == 0 for hints in lists):
        return TopologyHint(BitMask.from_value(default), False)
    preferred = _achievable_preferred(lists, default)
    if preferred:
        key = _preferred_key(numa_info, prefer_closest)
        return _to_hint(min(preferred, key=key), True)
    if len(numa_info.nodes) > MAX_FAST_MERGE_NODES:
        # the transform's 2^N tables are out of reach: search in rank order (e.g. every
        # provider said "cannot satisfy" on a 24-node machine)
        return _implicit_non_preferred(lists, numa_info, prefer_closest, search_seconds)
    # no preferred merged hint: rank every achievable AND (all of them are non-preferred)
    masks_per_list = []
    best_count = 0
    for hints in lists:
        affinities = list(map(_AFFINITY, hints))
        masks = set(map(_VALUE, filter(_NOT_NONE, affinities)))
        if masks:
            narrowest = min(masks, key=popcount) if len(masks) < 64 else _min_popcount(masks)
            best_count = max(best_count, popcount(narrowest))
        if any(map(_IS_NONE, affinities)):
            masks.add(default)
        masks_per_list.append(masks)
    compressor = Compressor(numa_info.nodes)
    achieved = _achievable_ands(masks_per_list, default, compressor)
    if not achieved:
        return TopologyHint(BitMask.from_value(default), False)
    return _to_hint(_rank_non_preferred(achieved, compressor, best_count, numa_info, prefer_closest), False)


def _rank_non_preferred(achieved: List[int],
                        compressor: Compressor,
                        best_count: int,
                        numa_info: NUMAInfo,
                        prefer_closest: bool) -> int:
    """The kubelet's best among achievable non-preferred merged masks (compressed indices):
    count B first, then just below B (larger first), then above B (smaller first); ties by
    the closest/narrowest rule."""
    counts = _popcount_table(compressor.size)
    present = set(counts[index] for index in achieved)
    equal = [d for d in present if d == best_count]
    below = [d for d in present if d < best_count]
    if equal:
        chosen = best_count
    elif below:
        chosen = max(below)
    else:
        chosen = min(present)
    finalists = [compressor.expand(index) for index in achieved if counts[index] == chosen]
    if prefer_closest:
        return min(finalists, key=lambda m: (numa_info.average_distance(m), m))
    return min(finalists)


def _min_popcount(masks: set) -> int:
    """A mask of ``masks`` with the fewest bits (cheap path for big sets: bin().count in C)."""
    best = 0  # masks is never empty here: the first mask replaces it
    best_count = 65
    for mask in masks:
        count = bin(mask).count("1")
        if count < best_count:
            best, best_count = mask, count
            if count == 1:
                break
    return best


# ---------------------------------------------------------------------------------------------
# merge over implicit hint sets (big machines)


def merge_implicit(lists: Sequence[Any],
                   numa_info: NUMAInfo,
                   prefer_closest: bool = False,
                   search_seconds: Optional[float] = None) -> TopologyHint:
    """Same result as :func:`merge_exhaustive` when some lists are hint sets (``hint_sets``).

    The preferred result is searched directly, masks in the comparator's order (fewest nodes,
    then numerically or by average distance), each checked against every list. Only when no
    preferred result exists are the achievable ANDs needed: they are computed over the NUMA
    nodes every list can reach (the projections of each set), at most
    :data:`MAX_FAST_MERGE_NODES` of them.
    """
    default = numa_info.default_mask
    if not any(is_hint_set(hints) for hints in lists):
        return merge_fast(lists, numa_info, prefer_closest, search_seconds)
    if any(not is_hint_set(hints) and len(hints) == 0 for hints in lists):
        return TopologyHint(BitMask.from_value(default), False)
    preferred = _implicit_preferred(lists, numa_info, prefer_closest)
    if preferred is not None:
        return _to_hint(preferred, True)
    return _implicit_non_preferred(lists, numa_info, prefer_closest, search_seconds)


def _implicit_preferred(lists: Sequence[Any], numa_info: NUMAInfo, prefer_closest: bool) -> Optional[int]:
    # imported here: only hint sets come here (hint_sets is loaded then); listed-hint merges never compile it
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hint_sets import MAX_MASK_VISITS
    default = numa_info.default_mask
    sets = [hints for hints in lists if is_hint_set(hints)]
    key = _preferred_key(numa_info, prefer_closest)
    common: Optional[set] = None
    for hints in lists:
        if is_hint_set(hints):
            continue
        if any(h.preferred and h.affinity is None for h in hints):
            continue  # a preferred "don't care" goes with any mask
        masks = set(h.affinity.value for h in hints if h.preferred)
        common = masks if common is None else (common & masks)
    if common is not None:
        found = set(m & default for m in common if all(s.member(m) == 2 for s in sets))
        found.discard(0)
        return min(found, key=key) if found else None
    within = default
    for hint_set in sets:
        within &= getattr(hint_set, "preferred_universe", hint_set.universe)
    if all(s.preferred_by_size() for s in sets):
        sizes = sorted(set(s.preferred_size for s in sets))
        if len(sizes) != 1:
            return None  # a preferred merge needs one mask preferred by every resource
    else:
        sizes = list(range(1, popcount(within) + 1))

    def reachable(size: int) -> int:
        # a preferred mask of ``size`` nodes is a listed mask of that size of every set: the
        # nodes no set's masks of that size reach (grouped, single-used) are left out at once
        found = within
        for hint_set in sets:
            found &= hint_set.reach(size)
        return found

    if prefer_closest:
        budget = [MAX_MASK_VISITS]
        clock = Deadline()  # one time budget for every size
        for size in sizes:
            best = closest_member(numa_info, reachable(size), size, lambda m: all(s.member(m) == 2 for s in sets),
                                  budget, MAX_MASK_VISITS, "the search for the preferred merged hint", deadline=clock)
            if best is not None:
                return best
        return None
    visits = 0
    clock = Deadline()
    for size in sizes:
        for mask in masks_of_size(Compressor(bits_of(reachable(size))), size):
            visits += 1
            if visits > MAX_MASK_VISITS:
                raise SearchBoundExceeded(
                    "the search for the preferred merged hint examined %d masks of %d NUMA nodes without "
                    "an answer" % (MAX_MASK_VISITS, popcount(within)))
            if clock.over():
                raise SearchBoundExceeded(
                    "the search for the preferred merged hint ran out of its time budget (%g s CPU) after %d masks "
                    "of %d NUMA nodes; none of fewer than %d nodes is preferred by every resource"
                    % (clock.limit, visits, popcount(within), size))
            if all(s.member(mask) == 2 for s in sets):
                return mask
    return None


def closest_member(numa_info: NUMAInfo,
                   within: int,
                   size: int,
                   accept: Callable[[int], bool],
                   budget: List[int],
                   limit: int,
                   what: str,
                   error: Any = SearchBoundExceeded,
                   holdable: Optional[Callable[[int], bool]] = None,
                   deadline: Optional[Deadline] = None) -> Optional[int]:
    """The accepted mask of ``size`` nodes of ``within`` with the smallest average distance, then
    numerically smallest (prefer-closest-numa-nodes' order within a count); None: none accepted.

    Branch and bound instead of walking all C(N, size) masks. The total of a mask = its nodes'
    own distances + both directions of each pair; the average is that integer over size^2, so
    comparing totals is exact. Nodes are picked one by one and a branch is dropped once even its
    cheapest completion has a larger total than the best accepted mask so far (or an equal one
    and no smaller mask). The bound (Gilmore-Lawler style): each node still to be picked pays
    its pairs with the picked nodes and at least half of its cheapest pairs with the nodes that
    can still be picked.

    When a mask takes more than half of ``within`` (a pod over half the machine), the search
    picks the nodes it leaves out instead (:func:`_left_out_costs`): fewer picks, a far tighter
    bound (ring distances, 22 of 32 nodes: from over 2 s CPU undecided to milliseconds). On
    uniform or socket-shaped distances a programme over the groups answers first
    (:func:`_two_level_closest`).

    ``budget`` (a one-item list, shared across calls) counts the masks and branches examined
    (``limit`` at first); past it, or past ``deadline``, ``error`` names ``what`` could not be
    decided, and what was found so far. ``holdable``: a test of partial masks built in id
    order; a branch it refuses is dropped (it must refuse every extension of a mask it
    refuses); used only when the search picks the mask's own nodes.
    """
    nodes = list(bits_of(within))
    if not 1 <= size <= len(nodes):
        return None
    rows = numa_info.distances
    if rows is None:
        raise TopologyManagerError("NUMA distances are not known")
    own = dict((node, rows[node][node]) for node in nodes)
    pair = dict(((a, b), rows[a][b] + rows[b][a]) for a in nodes for b in nodes if a < b)
    best: List[Any] = [None, None, None]  # cost, tie-break key, mask
    clock = deadline if deadline is not None else Deadline()
    shortcut = _two_level_closest(nodes, own, pair, size)
    if shortcut is not None and accept(shortcut):
        return shortcut

    def pair_of(a: int, b: int) -> int:
        return pair[(a, b) if a < b else (b, a)]

    left_out = 2 * size > len(nodes)
    if left_out:
        # pick the nodes left out, highest id first: the smallest mask leaves out the largest ids
        order = nodes[::-1]
        costs = _left_out_costs(nodes, own, pair_of)
        picks = len(nodes) - size

        def mask_of(picked: int) -> int:
            return within & ~picked

        def tie_key(picked: int) -> int:
            return -picked
        check = None
    else:
        order = nodes
        costs = own
        picks = size

        def mask_of(picked: int) -> int:
            return picked

        def tie_key(picked: int) -> int:
            return picked
        check = holdable

    # ring distances: no mask of ``size`` nodes has a smaller total than ``floor``, a run of
    # neighbours, and with ``strict`` only runs have it: the smallest accepted run is the answer
    floor = None
    ring = _ring_runs(numa_info, size)
    if ring is not None:
        floor, strict, runs = ring
        for run in sorted(run for run in runs if not run & ~within):
            budget[0] -= 1
            if budget[0] < 0 or clock.over():
                raise error("%s %s of %d NUMA nodes (runs of %d neighbours on a ring) without an answer"
                            % (what, clock.spent(limit), len(nodes), size))
            if accept(run):
                found = run
                break
        else:
            found = None
        if found is not None and strict:
            return found
        if found is None and strict:
            floor += 1  # no run accepted: every other mask has a larger (integer) total
        if left_out:  # in the search's terms: minus the whole of ``within``
            floor -= _total(nodes, own, pair)
        if found is not None:  # the best run, to be beaten by a smaller mask of the same total
            best[0], best[1], best[2] = floor, tie_key(within & ~found if left_out else found), found

    # per position in ``order``: for each node from there on, prefix sums of its cheapest pairs
    # with the other nodes from there on (built when a branch first reaches the position)
    cheapest: Dict[int, Dict[int, List[int]]] = {}

    def halves_from(start: int) -> Dict[int, List[int]]:
        found = cheapest.get(start)
        if found is None:
            rest = order[start:]
            found = {}
            for node in rest:
                sums = [0]
                for value in sorted(pair_of(node, other) for other in rest if other != node):
                    sums.append(sums[-1] + value)
                found[node] = sums
            cheapest[start] = found
        return found

    def give_up() -> None:
        found = ""
        if best[2] is not None:
            found = ("; an accepted mask exists (%s, average distance %g) but whether a closer one does is "
                     "unknown" % (list(bits_of(best[2])), numa_info.average_distance(best[2])))
        raise error("%s %s of %d NUMA nodes (masks of %d) without an answer%s"
                    % (what, clock.spent(limit), len(nodes), size, found))

    def visit(start: int, chosen: List[int], total: int, left: int) -> None:
        budget[0] -= 1
        if budget[0] < 0 or clock.over():
            give_up()
        if not left:
            picked = sum(1 << node for node in chosen)
            key = tie_key(picked)
            if best[0] is None or (total, key) < (best[0], best[1]):
                mask = mask_of(picked)
                if accept(mask):
                    best[0], best[1], best[2] = total, key, mask
            return
        rest = order[start:]
        adds = [costs[node] + sum(pair_of(node, other) for other in chosen) for node in rest]
        if best[0] is not None:
            # the completion's total = its nodes' adds + the pairs among them; each node pays
            # at least half of its ``left - 1`` cheapest pairs among ``rest``
            halves = halves_from(start)
            shares = sorted(2 * add + halves[node][left - 1] for add, node in zip(adds, rest))
            floor2 = 2 * total + sum(shares[:left])  # twice the bound: the halves stay integers
            if floor is not None and floor2 < 2 * floor:
                floor2 = 2 * floor
            # a tie only wins with a better tie-break: the best one here takes the next ``left`` nodes
            if floor2 > 2 * best[0] or (floor2 == 2 * best[0]
                                        and tie_key(sum(1 << node for node in chosen + rest[:left])) >= best[1]):
                return
        for index in range(start, len(order) - left + 1):
            chosen.append(order[index])
            if check is None or check(sum(1 << node for node in chosen)):
                visit(index + 1, chosen, total + adds[index - start], left - 1)
            chosen.pop()

    visit(0, [], 0, picks)
    return best[2]


def _ring_runs(numa_info: NUMAInfo, size: int) -> Optional[Tuple[int, bool, List[int]]]:
    """Ring distances: node ids in order around a circle, the distance between two nodes a
    function ``w`` of the hops between them (the shorter way round), non-decreasing in the hops,
    ``w(0)`` the own distance. Then (floor, strict, runs): every run of ``size`` neighbouring
    nodes (``runs``, one mask per first node) has the least distance total of any mask of
    ``size`` nodes, ``floor``; ``strict`` (``w(2) > w(1)``, or at most three nodes): only runs
    have it. None for any other distance shape.

    Why: ``sum of w(hops)`` over a mask's ordered pairs = ``size^2 w(last) - sum over h of
    (w(h + 1) - w(h)) * (pairs at most h hops apart)``, and a run has the most pairs at most
    ``h`` hops apart for every ``h`` (the circular rearrangement inequality, Hardy, Littlewood
    and Polya, *Inequalities*, ch. X). A mask that is not a run has ``c >= 2`` runs of its own
    and so ``size - c`` neighbouring pairs, fewer than a run's ``size - 1``: with ``w(2) >
    w(1)`` its total is larger. test_bignuma_bounds checks both against brute force.
    """
    ids = numa_info.nodes
    rows = numa_info.distances
    count = len(ids)
    if rows is None or not 1 <= size <= count:
        return None
    first = rows[ids[0]]
    hops = [first[ids[hop]] for hop in range(count // 2 + 1)]
    if any(hops[hop] < hops[hop - 1] for hop in range(1, len(hops))):
        return None
    for index, node in enumerate(ids):
        row = rows[node]
        for other, peer in enumerate(ids):
            apart = abs(index - other)
            if row[peer] != hops[min(apart, count - apart)]:
                return None
    # a run of ``size``: (size - apart) ordered pairs of each signed offset ``apart``
    floor = size * hops[0] + 2 * sum((size - apart) * hops[min(apart, count - apart)] for apart in range(1, size))
    strict = count <= 3 or hops[2] > hops[1]
    runs = set()
    for start in range(count):
        runs.add(sum(1 << ids[(start + step) % count] for step in range(size)))
    return floor, strict, sorted(runs)


def _total(nodes: Sequence[int], own: Dict[int, int], pair: Dict[Tuple[int, int], int]) -> int:
    """The distance total of all of ``nodes`` (``pair`` holds every pair of them)."""
    return sum(own[node] for node in nodes) + sum(pair.values())


def _left_out_costs(nodes: Sequence[int], own: Dict[int, int], pair_of: Callable[[int, int], int]) -> Dict[int, int]:
    """Per node, what leaving it out adds to a mask's total, for masks written as ``nodes``
    minus the nodes ``R`` left out: total(nodes - R) = total(nodes) + sum over R of these
    costs + the pairs inside R (each node of R takes away its own distance and its pairs with
    every node; a pair inside R is taken away twice that way, so it comes back once)."""
    return dict((node, -own[node] - sum(pair_of(node, other) for other in nodes if other != node)) for node in nodes)


#: CPU seconds one merge search may take (the process's CPU time, not the wall clock: on a busy
#: host the answer does not depend on other work); past it the search answers cannot_check with
#: what it found so far (tests lower it)
MAX_SEARCH_SECONDS = [2.0]


class Deadline:
    """The time budget of one merge search: :data:`MAX_SEARCH_SECONDS` of CPU time from its
    creation, read every 64 calls of :meth:`over` (process_time costs about a microsecond)."""

    __slots__ = ("start", "limit", "calls", "late")

    def __init__(self, seconds: Optional[float] = None) -> None:
        self.start = time.process_time()
        self.limit = MAX_SEARCH_SECONDS[0] if seconds is None else seconds
        self.calls = 0
        self.late = False

    def over(self) -> bool:
        self.calls += 1
        if not self.calls & 63:
            self.late = time.process_time() - self.start > self.limit
        return self.late

    def spent(self, limit: int) -> str:
        """Why the search stopped: its time budget or its step bound (``limit`` steps)."""
        if self.late:
            return "ran out of its time budget (%g s CPU)" % self.limit
        return "examined %d masks and branches" % limit


def _two_level_closest(nodes: Sequence[int], own: Dict[int, int], pair: Dict[Tuple[int, int], int],
                       size: int) -> Optional[int]:
    """The mask of ``size`` of ``nodes`` with the smallest distance total, then numerically
    smallest, when the distances have two levels (uniform, or sockets): the nodes fall into
    groups with one pair distance inside each group and one distance ``X`` between any two
    groups, and one own distance per group; None for any other shape.

    Then a mask's total depends on how many nodes it takes from each group alone: with ``n_g``
    from group ``g``, twice the total is ``X * size^2 + sum_g h_g(n_g)``, ``h_g(n) = 2 n own_g
    + n (n - 1) P_g - X n^2``; a programme over the groups finds the least sum, and for given
    counts the numerically smallest mask takes each group's lowest ids (masks of different
    groups are disjoint, so the smaller of two partial masks stays smaller whatever is added).
    """
    if not pair:
        return None
    top = max(pair.values())
    parent = dict((node, node) for node in nodes)

    def root(node: int) -> int:
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for (a, b), value in pair.items():
        if value < top:
            parent[root(a)] = root(b)
    members: Dict[int, List[int]] = {}
    for node in nodes:
        members.setdefault(root(node), []).append(node)
    groups = []
    for group in members.values():
        inner = set(pair[(a, b)] for a in group for b in group if a < b)
        owns = set(own[node] for node in group)
        if len(inner) > 1 or len(owns) > 1:
            return None
        groups.append((sorted(group), owns.pop(), inner.pop() if inner else 0))
    for (a, b), value in pair.items():
        if root(a) != root(b) and value != top:
            return None
    # best[count] = (twice the group terms so far, mask)
    best: Dict[int, Tuple[int, int]] = {0: (0, 0)}
    for group, own_value, inner_value in groups:
        step: Dict[int, Tuple[int, int]] = {}
        for count, (value, mask) in best.items():
            part = 0
            for taken in range(0, min(len(group), size - count) + 1):
                if taken:
                    part |= 1 << group[taken - 1]
                key = (value + 2 * taken * own_value + taken * (taken - 1) * inner_value - top * taken * taken, mask | part)
                if count + taken not in step or key < step[count + taken]:
                    step[count + taken] = key
        best = step
    found = best.get(size)
    return None if found is None else found[1]


class NoPreferredMerge(SearchBoundExceeded):
    """No preferred merged hint exists (certain), but the best non-preferred one is out of bounds."""


def _single_node_only(lists: Sequence[Any]) -> bool:
    """single-numa-node lists: only preferred one-node or nil hints (different masks AND to 0)."""
    for hints in lists:
        if is_hint_set(hints):
            if not getattr(hints, "single_numa", False):
                return False
        elif not all(h.preferred and (h.affinity is None or h.affinity.count() == 1) for h in hints):
            return False
    return True


def _implicit_non_preferred(lists: Sequence[Any], numa_info: NUMAInfo, prefer_closest: bool,
                            search_seconds: Optional[float] = None) -> TopologyHint:
    # imported here: only hint sets come here (hint_sets is loaded then); listed-hint merges never compile it
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hint_sets import MAX_MASK_VISITS
    default = numa_info.default_mask
    if _single_node_only(lists):
        # every permutation is preferred (equal masks) or merges to nothing: no best at all
        return TopologyHint(BitMask.from_value(default), False)
    best_count = best_non_preferred_affinity_count(lists)
    within = default
    for hints in lists:
        if is_hint_set(hints):
            within &= hints.universe
        else:
            reach = 0
            for hint in hints:
                reach |= default if hint.affinity is None else hint.affinity.value
            within &= reach
    nodes = bits_of(within)
    if not nodes:
        return TopologyHint(BitMask.from_value(default), False)
    sets = sum(1 for hints in lists if is_hint_set(hints))
    too_big = len(nodes) > MAX_FAST_MERGE_NODES or sets * ((1 << len(nodes)) - 1) > MAX_MASK_VISITS
    if all(not is_hint_set(hints) or hints.interval_exact() for hints in lists):
        # the method by estimated cost: the transform pays for every mask of the reachable nodes
        # (a projection test per hint set and mask, then table passes), the ranked search for
        # the masks it tries; it runs first, within the transform's cost when that can run
        if too_big or len(nodes) >= RANKED_FROM_NODES[0]:
            best = _ranked_non_preferred(lists, within, best_count, numa_info, prefer_closest,
                                         search_seconds=search_seconds)
            return TopologyHint(BitMask.from_value(default if best is None else best), False)
        transform_cost = (TRANSFORM_TESTS_PER_SET * sets + len(lists)) << len(nodes)
        try:
            best = _ranked_non_preferred(lists, within, best_count, numa_info, prefer_closest,
                                         work_limit=min(transform_cost, MAX_SEARCH_WORK),
                                         search_seconds=search_seconds)
        except NoPreferredMerge:
            pass  # dearer than the transform: that decides
        else:
            return TopologyHint(BitMask.from_value(default if best is None else best), False)
    if too_big:
        raise NoPreferredMerge(
            "no preferred merged hint exists; the best non-preferred one would need the ANDs of hints "
            "over %d NUMA nodes (2^%d masks per resource), more than this simulator examines (%d masks), "
            "and a rank-order search cannot split memory sums that wrap around uint64"
            % (len(nodes), len(nodes), MAX_MASK_VISITS))
    compressor = Compressor(nodes)
    masks_per_list = []
    for hints in lists:
        if is_hint_set(hints):
            present = set()
            for compact in range(1, 1 << len(nodes)):
                part = compressor.expand(compact)
                if hints.projects(part, within):
                    present.add(part)
        else:
            present = set((default if h.affinity is None else h.affinity.value) & within for h in hints)
        masks_per_list.append(present)
    achieved = _achievable_ands(masks_per_list, within, compressor)
    if not achieved:
        return TopologyHint(BitMask.from_value(default), False)
    return _to_hint(_rank_non_preferred(achieved, compressor, best_count, numa_info, prefer_closest), False)


#: the non-preferred merge searches masks in rank order alone (no Moebius transform after it)
#: from this many reachable NUMA nodes on, or when the transform is out of bounds; below, the
#: ranked search runs first within the transform's estimated cost (tests lower it)
RANKED_FROM_NODES = [MAX_FAST_MERGE_NODES + 1]
#: the transform's cost per hint set and mask of the reachable nodes, in node tests (a projection
#: test costs a few of the ranked search's node tests)
TRANSFORM_TESTS_PER_SET = 4
#: assignment steps one achievability test may take
MAX_COVER_STEPS = 200000
#: node tests (one per node and list) the partial-mask and achievability tests of one search may
#: take together
MAX_SEARCH_WORK = 4000000


def _ranked_non_preferred(lists: Sequence[Any],
                          within: int,
                          best_count: int,
                          numa_info: NUMAInfo,
                          prefer_closest: bool,
                          work_limit: Optional[int] = None,
                          search_seconds: Optional[float] = None) -> Optional[int]:
    """The kubelet's best non-preferred merged mask, searched in its ranking order (count B, then
    just below B, larger first, then above B, smaller first; in a count, numerically or by
    average distance) and tested one by one (:func:`_achievable`); None: no AND is non-empty.

    Exact for any hint set that answers the interval query ``exists_between`` exactly --
    monotone sets, and sets split into monotone parts (memory-manager NUMA groups, the 1.36
    device fallback hint; ``hint_sets``). A merged mask of ``c`` nodes lies inside a mask of at
    least ``c`` nodes of every list: the nodes of a count are those every list's masks of that
    size reach (``reach``; nodes in small NUMA groups or with single-NUMA allocations drop out
    at once). Masks are built from their highest node down, and a partial mask no list can hold
    (no hint of some list contains it), or one that needs a node the branch can no longer
    choose, is dropped with every mask that extends it.

    Bounded by masks (:data:`MAX_MASK_VISITS`), node tests (``work_limit``, default
    :data:`MAX_SEARCH_WORK`) and CPU time (:data:`MAX_SEARCH_SECONDS`): past any of them
    NoPreferredMerge says which, and what the search had settled.
    """
    # imported here: only hint sets come here (hint_sets is loaded then); listed-hint merges never compile it
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hint_sets import MAX_MASK_VISITS
    nodes = bits_of(within)
    size = len(nodes)
    counts = ([best_count] if 1 <= best_count <= size else []) + list(range(min(best_count - 1, size), 0, -1)) \
        + list(range(max(best_count + 1, 1), size + 1))
    projections = [None if is_hint_set(hints) else
                   set((within if h.affinity is None else h.affinity.value & within) for h in hints) for hints in lists]
    work = [0, MAX_SEARCH_WORK if work_limit is None else work_limit]
    clock = Deadline(search_seconds)
    needed = _needed_nodes(lists, projections, within, work)
    settled: List[int] = []  # counts searched through without a merged mask

    def undecided(why: str) -> NoPreferredMerge:
        done = ""
        if settled:
            done = "; no merged mask of %s nodes exists" % ", ".join(str(count) for count in settled)
        return NoPreferredMerge("no preferred merged hint exists; the search for the best non-preferred one over %d "
                                "NUMA nodes %s%s" % (size, why, done))

    try:
        forced = needed(0)
    except _WorkExceeded as err:
        raise undecided(str(err))
    if forced is None:
        return None  # some list has no hint at all within ``within``
    counts = [count for count in counts if count >= popcount(forced)]

    def reach(count: int) -> int:
        found = within
        for hints, projected in zip(lists, projections):
            if projected is None:
                found &= hints.reach(count)
            else:
                union = 0
                for hint in projected:
                    if popcount(hint) >= count:
                        union |= hint
                found &= union
        return found

    if prefer_closest:
        budget = [MAX_MASK_VISITS]
        for count in counts:
            allowed = reach(count)
            if forced & ~allowed:
                settled.append(count)
                continue

            def closest_holdable(mask: int, allowed: int = allowed) -> bool:
                # nodes are added in id order: every node up to the highest one chosen is decided
                more = needed(mask)
                return more is not None and not more & (((1 << mask.bit_length()) - 1) | ~allowed)

            try:
                best = closest_member(numa_info, allowed, count,
                                      lambda m: _achievable(m, within, lists, projections, work),
                                      budget, MAX_MASK_VISITS,
                                      "no preferred merged hint exists; the search for the best non-preferred one",
                                      NoPreferredMerge, closest_holdable, clock)
            except _WorkExceeded as err:
                raise undecided(str(err))
            if best is not None:
                return best
            settled.append(count)
        return None
    visits = [0]

    def numeric(count: int, below: int, chosen: int, nodes: Sequence[int], lower: List[int]) -> Iterator[int]:
        """Masks of ``count`` more nodes among nodes[:below], added to ``chosen``, numerically
        ascending (the highest node decides first). A partial mask is dropped with all its
        extensions when some list has no hint containing it, or when the nodes no list can
        leave out while holding it are more than ``count`` or not among nodes[:index]."""
        if not count:
            yield chosen
            return
        for index in range(count - 1, below):
            visits[0] += 1
            if visits[0] > MAX_MASK_VISITS:
                raise undecided("examined %d masks without an answer" % MAX_MASK_VISITS)
            if clock.over():
                raise undecided("ran out of its time budget (%g s CPU)" % clock.limit)
            mask = chosen | (1 << nodes[index])
            more = needed(mask)
            if more is None or more & ~lower[index] or popcount(more) > count - 1:
                continue
            yield from numeric(count - 1, index, mask, nodes, lower)

    try:
        for count in counts:
            allowed = reach(count)
            if forced & ~allowed:
                settled.append(count)
                continue
            free = allowed & ~int(forced)  # int(): older pylint does not see the None check above
            chosen_from = bits_of(free)  # a merged mask holds every forced node: the rest is chosen
            lower = [0] * (len(chosen_from) + 1)  # nodes[:index] as a mask
            for index, node in enumerate(chosen_from):
                lower[index + 1] = lower[index] | (1 << node)
            if count - popcount(forced) <= len(chosen_from):
                for mask in numeric(count - popcount(forced), len(chosen_from), forced, chosen_from, lower):
                    if _achievable(mask, within, lists, projections, work):
                        return mask
            settled.append(count)
    except _WorkExceeded as err:
        raise undecided(str(err))
    return None


class _WorkExceeded(Exception):
    """The node tests of one ranked search passed their bound (turned into NoPreferredMerge)."""


def _needed_nodes(lists: Sequence[Any], projections: Sequence[Any], within: int,
                  work: Optional[List[int]] = None) -> Callable[[int], Optional[int]]:
    """A test of a (partial) mask ``P``: None when some list has no hint containing it (no
    merged mask contains it), else the nodes of ``within`` outside ``P`` that no list can leave
    out while holding ``P`` -- every merged mask containing ``P`` contains them too.
    ``work``: [node tests so far, their bound], counted as in :func:`_achievable`."""
    def needed(mask: int) -> Optional[int]:
        rest = within & ~mask
        if work is not None:
            _count_work(work, popcount(rest) * len(lists) + 1)
        droppable = 0
        for hints, projected in zip(lists, projections):
            if projected is None:
                if not hints.exists_between(mask, hints.universe):
                    return None
                for node in bits_of(rest & ~droppable):
                    bit = 1 << node
                    if hints.exists_between(mask, hints.universe & ~bit):
                        droppable |= bit
            else:
                common = -1
                for hint in projected:
                    if not mask & ~hint:
                        common &= hint
                if common == -1:
                    return None
                droppable |= rest & ~common
        return rest & ~droppable
    return needed


def _count_work(work: List[int], amount: int) -> None:
    """Add node tests to ``work`` ([so far, bound]); past the bound: _WorkExceeded."""
    work[0] += amount
    if work[0] > work[1]:
        raise _WorkExceeded("made more than %d node tests without an answer" % work[1])


def _achievable(target: int, within: int, lists: Sequence[Any], projections: Sequence[Any],
                work: Optional[List[int]] = None) -> bool:
    """Some choice of one hint per list ANDs (within ``within``) to exactly ``target``.

    Each list must give a mask holding ``target``; every other node of ``within`` must be
    left out by at least one list. A list can leave out the nodes ``dropped`` when it has a
    hint between ``target`` and its universe without ``dropped`` (the interval query; hint
    sets split into monotone parts answer it exactly), and leaving out fewer nodes is never
    harder, so the nodes are handed out one by one to lists that can still leave them out,
    backtracking on failure (bounded by :data:`MAX_COVER_STEPS`).
    """
    if work is not None:
        _count_work(work, popcount(within & ~target) * len(lists) + 1)
    checks = []
    holds = []
    for hints, projected in zip(lists, projections):
        if projected is None:
            checks.append(lambda dropped, hints=hints: hints.exists_between(target, hints.universe & ~dropped))
            holds.append(lambda node, hints=hints: hints.exists_between(target | node, hints.universe))
        else:
            holding = [p for p in projected if not target & ~p]
            checks.append(lambda dropped, holding=holding: any(not p & dropped for p in holding))
            holds.append(lambda node, holding=holding: any(p & node for p in holding))
    if not all(check(0) for check in checks):
        return False
    everything = within & ~target
    if any(check(everything) for check in checks):
        return True  # one list holds exactly target: the others take their widest hint
    # a node no hint of some list holds together with ``target`` is left out by that list
    # whatever it gives: only the other nodes are handed out, those fewest lists can leave
    # out first
    choices = []
    for node in bits_of(everything):
        bit = 1 << node
        if all(hold(bit) for hold in holds):
            able = sum(1 for check in checks if check(bit))
            if not able:
                return False
            choices.append((able, node))
    rest = [node for _able, node in sorted(choices)]
    dropped = [0] * len(checks)
    steps = [0]

    def assign(index: int) -> bool:
        if index == len(rest):
            return True
        bit = 1 << rest[index]
        for which, check in enumerate(checks):
            steps[0] += 1
            if steps[0] > MAX_COVER_STEPS:
                raise NoPreferredMerge(
                    "no preferred merged hint exists; deciding whether %s is a merged hint took more than %d "
                    "steps" % (list(bits_of(target)), MAX_COVER_STEPS))
            if check(dropped[which] | bit):
                dropped[which] |= bit
                if assign(index + 1):
                    return True
                dropped[which] &= ~bit
        return False

    return assign(0)


def merge_permutations(lists: Sequence[Any]) -> Optional[int]:
    """Permutations the kubelet's merge loop visits: the product of the list lengths (None
    when a hint set's length is not computable in bounds)."""
    total = 1
    for hints in lists:
        length = hints.count() if is_hint_set(hints) else len(hints)
        if length is None:
            return None
        total *= length
    return total
