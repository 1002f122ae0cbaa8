# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The NUMA-distributed CPU assignment: ``takeByTopologyNUMADistributed`` (pkg/kubelet/cm/cpumanager/cpu_assignment.go, KEP-2902).

Used only with the ``distribute-cpus-across-numa`` CPU Manager policy option: spread the request
evenly over the fewest NUMA nodes that can take it, choosing the combination that leaves the
machine's free CPUs most balanced (population standard deviation rounded to 3 decimals, first
best wins). Its own module so that other runs do not compile it (issue 12: fresh-process cost);
the packed assignment and the shared accumulator are in :mod:`.cpu_assignment`.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import itertools
import math

try:
    from typing import Any, Dict, FrozenSet, Iterable, Iterator, List, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.cpu_assignment import (
    PACKED,
    TakeError,
    _Accumulator,
    _not_enough,
    take_packed,
)


def _go_round(value: float) -> float:
    """Go's math.Round (half away from zero), unlike Python's banker's rounding."""
    return math.copysign(math.floor(abs(value) + 0.5), value)


def balance_score(values: List[int]) -> float:
    """Population standard deviation, mean and result rounded to 3 decimals (as upstream)."""
    mean = _go_round(float(sum(values)) / len(values) * 1000) / 1000
    total = 0.0
    for value in values:
        total += (value - mean) * (value - mean)
    return _go_round(math.sqrt(total / len(values)) * 1000) / 1000


def _combinations(items: List[int], size: int) -> Iterator[List[int]]:
    """n-choose-k in the kubelet's (lexicographic by position) order."""
    if size < 1:
        return
    for combo in itertools.combinations(items, size):
        yield list(combo)


def take_distributed(topo: Any, available: Iterable[int], count: int, group_size: int = 1, strategy: str = PACKED, align_by_socket: bool = False,
                     literal: bool = False) -> FrozenSet[int]:
    """``takeByTopologyNUMADistributed`` (KEP-2902) with CPU groups of ``group_size``.

    With ``align_by_socket`` a combination of NUMA nodes within one socket beats any
    cross-socket one, and a node's even share is capped at what it can give in whole groups.

    The search over NUMA combinations and remainder subsets is exponential; combinations are
    scored once per distinct sequence of free-CPU counts and remainder subsets once per distinct
    multiset of counts (see :func:`_evaluate_values`). ``literal=True`` runs the kubelet's plain
    enumeration instead (tests compare the two).
    """
    available = frozenset(available)
    if count % group_size != 0:
        return take_packed(topo, available, count, strategy)
    acc = _Accumulator(topo, available, count)
    if acc.satisfied():
        return frozenset(acc.result)
    if acc.failed():
        raise _not_enough(count, len(available))
    numas = acc.sorted_numas()
    free = dict((n, len(acc.avail_in_numa(n))) for n in numas)
    memo: dict = {}
    lo, hi = _numa_range(acc, group_size)
    for size in range(lo, hi + 1):
        best: Optional[tuple] = None
        best_balance = float("inf")
        best_in_one_socket = False
        for combo in _combinations(numas, size):
            if best_balance == 0 and (not align_by_socket or best_in_one_socket):
                break
            if literal:
                choice = _evaluate_combo_literal(acc, numas, combo, count, group_size, align_by_socket)
            else:
                choice = _evaluate_combo(free, combo, count, group_size, align_by_socket, memo)
            if choice is None:
                continue
            better = choice[0] < best_balance
            in_one_socket = align_by_socket and topo.numa_nodes_in_same_socket(combo)
            if align_by_socket and in_one_socket != best_in_one_socket:
                better = in_one_socket
            if better:
                best_balance = choice[0]
                best = (combo, choice[1])
                best_in_one_socket = in_one_socket
        if best is None:
            continue
        combo, remainder_set = best
        share = (count // len(combo) // group_size) * group_size
        for numa in combo:
            share = min(share, len(acc.avail_in_numa(numa)) // group_size * group_size)
        for numa in combo:
            acc.take(_take_quietly(topo, acc.avail_in_numa(numa), share, strategy))
        remainder = count - share * len(combo)
        while remainder > 0:
            progressed = False
            for numa in remainder_set or []:
                if remainder == 0:
                    break
                if len(acc.avail_in_numa(numa)) < group_size:
                    continue
                acc.take(_take_quietly(topo, acc.avail_in_numa(numa), group_size, strategy))
                remainder -= group_size
                progressed = True
            if not progressed:
                break
        if acc.needed > 0:
            raise TakeError("accounting error, not enough CPUs allocated, remaining: %d" % acc.needed)
        if acc.needed < 0:
            raise TakeError("accounting error, too many CPUs allocated, remaining: %d" % acc.needed)
        return frozenset(acc.result)
    return take_packed(topo, available, count, strategy)


def _take_quietly(topo: Any,
                  available: FrozenSet[int],
                  count: int,
                  strategy: str) -> FrozenSet[int]:
    """Upstream ignores errors of the per-node packed takes (and then reports an accounting error)."""
    try:
        return take_packed(topo, available, count, strategy)
    except TakeError:
        return frozenset()


def _numa_range(acc: _Accumulator, group_size: int) -> tuple:
    topo = acc.topo
    groups = (len(topo.details) - 1) // group_size + 1
    groups_per_numa = (groups - 1) // topo.num_numa_nodes + 1
    needed_groups = (acc.needed - 1) // group_size + 1
    lo = (needed_groups - 1) // groups_per_numa + 1
    hi = min(needed_groups, len(acc.avail_numas()))
    return lo, hi


def _evaluate_combo(free: Dict[int, int],
                    combo: List[int],
                    count: int,
                    group_size: int,
                    align_by_socket: bool,
                    memo: dict) -> Optional[tuple]:
    """Balance score and remainder subset of one NUMA combination, None when it cannot work.

    The outcome depends only on the free-CPU counts of the combination's nodes, in order (the
    other nodes' counts are then determined too), so it is computed once per such sequence.
    """
    sequence = tuple(free[n] for n in combo)
    if sequence not in memo:
        rest = list(free.values())
        for value in sequence:
            rest.remove(value)
        memo[sequence] = _evaluate_values(sequence, rest, count, group_size, align_by_socket)
    result = memo[sequence]
    if result is None:
        return None
    score, positions = result
    return score, ([combo[p] for p in positions] or None)


def _hand_out(values: List[int], remainder: int, group_size: int) -> List[int]:
    """Remainder groups handed round-robin over the subset (in order), skipping exhausted nodes."""
    values = list(values)
    left = remainder
    while left > 0:
        for index, value in enumerate(values):
            if left == 0:
                break
            if value < group_size:
                continue
            values[index] = value - group_size
            left -= group_size
    return values


def _evaluate_values(sequence: Tuple[int, ...],
                     rest: List[int],
                     count: int,
                     group_size: int,
                     align_by_socket: bool) -> Optional[tuple]:
    """Score and remainder positions (indices into ``sequence``) for one combination's counts."""
    if sum(sequence) < count:
        return None
    if sum(v // group_size for v in sequence) * group_size < count:
        return None
    share = (count // len(sequence) // group_size) * group_size
    if align_by_socket:
        for value in sequence:
            share = min(share, value // group_size * group_size)
    if any(v < share for v in sequence):
        return None
    after = [v - share for v in sequence]
    remainder = count - share * len(sequence)
    if remainder == 0:
        return balance_score(sorted(rest + after)), []
    positions = [i for i, v in enumerate(after) if v >= group_size]
    values = [after[i] for i in positions]
    ascending = all(values[i] <= values[i + 1] for i in range(len(values) - 1))
    best: Optional[tuple] = None
    for size in range(len(positions), 0, -1):
        size_best: Optional[tuple] = None
        for chosen in (_multiset_choices(values, size) if ascending
                       else _combinations(list(range(len(values))), size)):
            picked = [values[j] for j in chosen]
            if sum(v // group_size for v in picked) * group_size < remainder:
                continue
            handed = _hand_out(picked, remainder, group_size)
            others = [after[positions[j]] for j in range(len(values)) if j not in chosen]
            others += [after[i] for i in range(len(after)) if after[i] < group_size]
            score = balance_score(sorted(rest + others + handed))
            key = (score, tuple(chosen))
            if size_best is None or key < size_best:
                size_best = key
        if size_best is not None and (best is None or size_best[0] < best[0]):
            best = size_best
    if best is None:
        return None
    return best[0], [positions[j] for j in best[1]]


def _multiset_choices(values: List[int], size: int) -> Iterator[List[int]]:
    """For ascending ``values``: one index choice per distinct multiset of ``size`` values, the
    lexicographically first one (the first occurrences of each value)."""
    distinct: List[tuple] = []
    for index, value in enumerate(values):
        if distinct and distinct[-1][0] == value:
            distinct[-1][1].append(index)
        else:
            distinct.append((value, [index]))

    def walk(position, left):
        if left == 0:
            yield []
            return
        if position == len(distinct):
            return
        indexes = distinct[position][1]
        for take in range(min(left, len(indexes)), -1, -1):
            for tail in walk(position + 1, left - take):
                yield indexes[:take] + tail
    return walk(0, size)


def _evaluate_combo_literal(acc: _Accumulator,
                            numas: List[int],
                            combo: List[int],
                            count: int,
                            group_size: int,
                            align_by_socket: bool = False) -> Optional[tuple]:
    """The kubelet's plain enumeration (reference for :func:`_evaluate_combo`)."""
    free = dict((n, len(acc.avail_in_numa(n))) for n in numas)
    if sum(free[n] for n in combo) < count:
        return None
    if sum(free[n] // group_size for n in combo) * group_size < count:
        return None
    share = (count // len(combo) // group_size) * group_size
    if align_by_socket:
        for numa in combo:
            share = min(share, free[numa] // group_size * group_size)
    if any(free[n] < share for n in combo):
        return None
    after = dict(free)
    for numa in combo:
        after[numa] -= share
    remainder = count - share * len(combo)
    candidates = [n for n in combo if after[n] >= group_size]
    if remainder == 0:
        return balance_score(sorted(after.values())), None
    best_balance = float("inf")
    best_subset: Optional[List[int]] = None
    for size in range(len(candidates), 0, -1):
        for subset in _combinations(candidates, size):
            trial = dict(after)
            if sum(trial[n] // group_size for n in subset) * group_size < remainder:
                continue
            left = remainder
            while left > 0:
                for numa in subset:
                    if left == 0:
                        break
                    if trial[numa] < group_size:
                        continue
                    trial[numa] -= group_size
                    left -= group_size
            score = balance_score(sorted(trial.values()))
            if score < best_balance:
                best_balance = score
                best_subset = subset
    if best_subset is None:
        return None
    return best_balance, best_subset
