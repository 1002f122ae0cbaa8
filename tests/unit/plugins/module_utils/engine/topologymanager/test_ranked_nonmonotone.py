# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ranked non-preferred merge over hint sets that are not monotone.

Memory-manager NUMA groups (a multi-node mask holding a grouped node must be exactly its group,
a node with a single-NUMA allocation joins no multi-node mask), this pod's reusable memory on
exactly one mask, and the 1.36 device fallback hint (every node, beside masks of the device
nodes only) make hint sets that are not upward-closed. The ranked search answers them through
the interval query ``exists_between(low, high)``, computed from the sets' monotone parts:

* the query itself against walking every mask, on random sets;
* whole merges (preferred or not) against the kubelet's permutation loop, on random mixes of
  such sets and literal lists, with and without prefer-closest-numa-nodes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import random

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager import hint_sets, merge
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hint_sets import (
    FallbackHintSet,
    Need,
    ThresholdHintSet,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import NUMAInfo


def random_groups(rnd, ids):
    """Memory-manager-like group rules: some disjoint multi-node groups, some single-used nodes."""
    free = list(ids)
    rnd.shuffle(free)
    groups, in_group, single_used = [], 0, 0
    while len(free) >= 2 and rnd.random() < 0.5:
        size = rnd.randint(2, min(3, len(free)))
        members = [free.pop() for _index in range(size)]
        group = sum(1 << node for node in members)
        groups.extend((1 << node, group) for node in members)
        in_group |= group
    while free and rnd.random() < 0.3:
        single_used |= 1 << free.pop()
    return groups, in_group, single_used


def random_set(rnd, ids, allow_groups=True):
    weights = dict((node, rnd.choice([0, 1, 2, 4, 4, 8])) for node in ids)
    need = rnd.randint(1, max(1, sum(weights.values()) // rnd.choice([1, 2, 3])))
    bonus = {}
    if rnd.random() < 0.3:
        mask = sum(1 << node for node in rnd.sample(ids, rnd.randint(1, len(ids))))
        bonus[mask] = rnd.randint(1, 6)
    needs = [Need(weights, need, bonus=bonus)]
    if rnd.random() < 0.3:
        needs.append(Need(dict((node, rnd.choice([0, 1, 3])) for node in ids), rnd.randint(1, 4)))
    groups, in_group, single_used = random_groups(rnd, ids) if allow_groups else ([], 0, 0)
    required = 1 << rnd.choice(ids) if rnd.random() < 0.1 else 0
    touching = [sum(1 << node for node in rnd.sample(ids, min(2, len(ids))))] if rnd.random() < 0.15 else []

    def build(preferred_size):
        return ThresholdHintSet(ids, needs, preferred_size, required=required, touching=touching,
                                no_single=in_group, multi_forbidden=single_used, groups=groups)

    smallest = build(None).min_size()
    return build(rnd.choice([smallest, smallest, (smallest or 0) + 1]))


def random_fallback(rnd, ids):
    inner_ids = sorted(rnd.sample(ids, rnd.randint(1, max(1, len(ids) - 1))))
    inner = random_set(rnd, inner_ids, allow_groups=False)
    if inner.is_empty() or len(inner_ids) == len(ids):
        return inner
    return FallbackHintSet(inner, ids)


def walked(hint_set):
    return [mask for mask in range(1, 1 << (max(hint_set.ids) + 1)) if hint_set.member(mask)]


def random_case(rnd, fallback_share):
    """(ids, a random set -- a fallback set in ``fallback_share`` of the cases --, its masks walked)."""
    ids = sorted(rnd.sample(range(10), rnd.randint(1, 8)))
    hint_set = random_fallback(rnd, ids) if rnd.random() < fallback_share else random_set(rnd, ids)
    return ids, hint_set, walked(hint_set)


@pytest.mark.parametrize("seed", range(300))
def test_exists_between_equals_walking_every_mask(seed, monkeypatch):
    rnd = random.Random(seed)
    _ids, hint_set, listed = random_case(rnd, 0.3)
    monkeypatch.setattr(hint_sets, "BRUTE_NODES", 0)  # the big-machine answer, through the parts
    assert hint_set.interval_exact()
    universe = hint_set.universe
    for _query in range(60):
        high = rnd.randrange(1 << 10) & universe if rnd.random() < 0.8 else universe
        low = rnd.randrange(1 << 10) & high if rnd.random() < 0.7 else rnd.randrange(1 << 10)
        low &= rnd.randrange(1 << 10)
        want = any(not low & ~m and not m & ~high for m in listed)
        assert hint_set.exists_between(low, high) == want, (bin(low), bin(high))


@pytest.mark.parametrize("seed", range(200))
def test_members_by_parts_equal_walking_every_mask(seed, monkeypatch):
    """members() (what findBestHint, the explanation and the narrowest size walk) through the
    parts: singles, group masks and the general nodes' walk, merged by size then value."""
    rnd = random.Random(seed)
    ids, hint_set, listed = random_case(rnd, 0.2)
    monkeypatch.setattr(hint_sets, "BRUTE_NODES", 0)
    for _query in range(8):
        superset_of = sum(1 << n for n in ids if rnd.random() < 0.25)
        start = rnd.choice([1, 1, 2, 3])
        want = sorted(((m, hint_set.member(m)) for m in listed if not superset_of & ~m and bin(m).count("1") >= start),
                      key=lambda item: (bin(item[0]).count("1"), item[0]))
        assert list(hint_set.members(superset_of, start)) == want
    assert hint_set.min_size() == (min(bin(m).count("1") for m in listed) if listed else None)


def test_wrapping_sums_are_not_split():
    wraps = ThresholdHintSet(list(range(14)), [Need(dict((n, 1 << 62) for n in range(14)), 1 << 62, wrap64=True)],
                             1, groups=[(1, 3), (2, 3)], no_single=3)
    assert not wraps.interval_exact()
    with pytest.raises(hint_sets.SearchBoundExceeded, match="wrap around uint64"):
        wraps.exists_between(4, wraps.universe)


def _lists(rnd, ids):
    lists = []
    for _index in range(rnd.randint(1, 4)):
        pick = rnd.random()
        if pick < 0.45:
            hints = random_set(rnd, ids)
        elif pick < 0.7:
            hints = random_fallback(rnd, ids)
        else:
            hints = []
            for _hint in range(rnd.randint(1, 5)):
                if rnd.random() < 0.1:
                    hints.append(TopologyHint(None, rnd.random() < 0.5))
                else:
                    chosen = [n for n in ids if rnd.random() < 0.5] or [rnd.choice(ids)]
                    hints.append(TopologyHint(BitMask.from_ids(chosen), rnd.random() < 0.3))
        if getattr(hints, "implicit", False) and hints.is_empty():
            continue  # providers hand over non-empty sets only
        lists.append(hints)
    return lists or [[TopologyHint(BitMask.from_ids(ids), False)]]


@pytest.mark.parametrize("seed", range(1000))
def test_ranked_merge_of_non_monotone_sets_equals_the_kubelet(seed, monkeypatch):
    """merge_implicit (big-machine rules forced: parts, ranked search with its prune) against the
    kubelet's permutation loop over the literal lists."""
    rnd = random.Random(seed)
    closest = rnd.random() < 0.35
    count = rnd.randint(1, 7)
    ids = list(range(count)) if closest else sorted(rnd.sample(range(12), count))
    distances = None
    if closest:
        table = {}
        for a in ids:
            for b in ids:
                table[(a, b)] = 10 if a == b else table.get((b, a), rnd.choice([11, 12, 20, 21, 30]))
        distances = dict((a, [table[(a, b)] for b in ids]) for a in ids)
    info = NUMAInfo(ids, distances)
    lists = _lists(rnd, ids)
    literal = [hints.hints() if getattr(hints, "implicit", False) else hints for hints in lists]
    product = 1
    for hints in literal:
        product *= len(hints)
    want = merge.merge_exhaustive(literal, info, closest) if product <= 20000 else merge.merge_fast(literal, info, closest)
    monkeypatch.setattr(hint_sets, "BRUTE_NODES", 0)
    monkeypatch.setattr(merge, "RANKED_FROM_NODES", [1])
    for hints in lists:
        if getattr(hints, "implicit", False):
            hints._listed = None  # answer by the rules, not by a list walked before
            if isinstance(hints, FallbackHintSet):
                hints.inner._listed = None
    assert merge.merge_implicit(lists, info, closest) == want


def test_prune_drops_what_no_list_holds(monkeypatch):
    """24 nodes, a memory-like set whose nodes 0-11 are single-used or grouped: the search for a
    3-node merged mask skips every mask holding them after one test of the partial mask (455
    masks of 3 nodes come before {12,13,14}; the search may examine 200)."""
    monkeypatch.setattr(hint_sets, "MAX_MASK_VISITS", 200)
    ids = list(range(24))
    groups = [(1 << n, 0b11 << (n & ~1)) for n in range(0, 6)]
    single_used = sum(1 << n for n in range(6, 12))
    memory = ThresholdHintSet(ids, [Need(dict((n, 8) for n in ids), 20)], 3, no_single=0b111111,
                              multi_forbidden=single_used, groups=groups)
    cpu = ThresholdHintSet(ids, [Need(dict((n, 4) for n in ids), 10)], 3)
    devices = FallbackHintSet(ThresholdHintSet([0, 1], [Need({0: 1, 1: 1}, 1)], 1), ids)
    info = NUMAInfo(ids, None)
    got = merge.merge_implicit([cpu, devices, memory], info, False)
    assert got == TopologyHint(BitMask.from_ids([12, 13, 14]), False)
