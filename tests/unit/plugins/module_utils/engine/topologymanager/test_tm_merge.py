# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Merge tests: table cases from the spec and a differential test fast == exhaustive."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tm_fakes import h  # noqa: E402  (tests dir is on sys.path via rootdir conftest? see below)

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.merge import (
    best_non_preferred_affinity_count,
    filter_providers_hints,
    merge_exhaustive,
    merge_fast,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import KubeletPanic, NUMAInfo

BOTH = pytest.mark.parametrize("merge", [merge_fast, merge_exhaustive], ids=["fast", "exhaustive"])


def test_filter_providers_hints_meanings():
    lists = filter_providers_hints([None, {}, {"a": None, "b": [], "c": [h([0], True)]}])
    assert lists == [[h(None, True)], [h(None, True)], [h(None, True)], [h(None, False)], [h([0], True)]]


def test_best_count():
    assert best_non_preferred_affinity_count([[h(None, True)]]) == 0
    assert best_non_preferred_affinity_count([[h([0, 1], False), h([0, 1, 2], True)], [h([3], False)]]) == 2


# (lists, numa ids, prefer_closest, expected hint) -- pkg/kubelet/cm/topologymanager/policy.go and its tests
CASES = [
    # 3.7 example 1: CPU {1} preferred, {0,1} not; memory {0},{1} preferred, {0,1} not
    ([[h([1], True), h([0, 1], False)], [h([0], True), h([1], True), h([0, 1], False)]],
     [0, 1], h([1], True)),
    # 3.7 example 2: memory only {0} preferred -> {0} non-preferred (B = 1)
    ([[h([1], True), h([0, 1], False)], [h([0], True)]], [0, 1], h([0], False)),
    # variant: memory also offers {0,1}: {1} and {0} tie at count B=1, narrowest numeric -> {0}
    ([[h([1], True), h([0, 1], False)], [h([0], True), h([0, 1], False)]], [0, 1], h([0], False)),
    # 3.7 example 3: device {0} + CPU {0},{1}
    ([[h([0], True), h([0, 1], False)], [h([0], True), h([1], True), h([0, 1], False)]],
     [0, 1], h([0], True)),
    # 9.3: {0} + {0,1}, both preferred individually -> not preferred
    ([[h([0], True)], [h([0, 1], True)]], [0, 1], h([0], False)),
    # 9.6: every permutation empty -> full mask non-preferred
    ([[h([0], True)], [h([1], True)]], [0, 1], h([0, 1], False)),
    # cannot satisfy
    ([[h(None, False)]], [0, 1], h([0, 1], False)),
    # don't care everywhere -> default mask preferred
    ([[h(None, True)], [h(None, True)]], [0, 1, 2], h([0, 1, 2], True)),
    # 9.8 numeric tie-break: {1,2}=6 beats {0,3}=9
    ([[h([0, 3], True), h([1, 2], True)]], [0, 1, 2, 3], h([1, 2], True)),
    # 9.7: non-preferred creep toward B=2: {0,1} (d=B) beats {0} and {0,1,2}
    ([[h([0, 1], False), h([0, 1, 2], False)], [h([0], False), h([0, 1, 2, 3], False)]],
     [0, 1, 2, 3], h([0, 1], False)),
    # d < B: larger d better
    ([[h([0, 1, 2], False)], [h([0], False), h([0, 1], False), h([0, 1, 2, 3], False)]],
     [0, 1, 2, 3], h([0, 1, 2], False)),
    # sparse ids
    ([[h([33], True), h([0, 33], False)], [h([0], True), h([33], True)]], [0, 1, 33], h([33], True)),
    # empty list (single-numa-node filter leftovers) -> default non-preferred
    ([[h([0], True)], []], [0, 1], h([0, 1], False)),
    # masks outside the machine are cut by the default mask
    ([[h([0, 5], True)], [h(None, True)]], [0, 1], h([0], True)),
]


@BOTH
@pytest.mark.parametrize("lists, ids, expected", CASES)
def test_merge_table(merge, lists, ids, expected):
    assert merge(lists, NUMAInfo(ids)) == expected


DIST4 = {0: [10, 20, 30, 12], 1: [20, 10, 12, 30], 2: [30, 12, 10, 20], 3: [12, 30, 20, 10]}


@BOTH
def test_prefer_closest_reranks_equal_counts(merge):
    info = NUMAInfo([0, 1, 2, 3], DIST4)
    lists = [[h([0, 1], True), h([0, 3], True), h([1, 2], True)]]
    assert merge(lists, info, False) == h([0, 1], True)     # narrowest: numeric 3 < 6 < 9
    assert merge(lists, info, True) == h([1, 2], True)      # {1,2} avg 11 == {0,3} avg 11 -> numeric 6 < 9
    lists = [[h([0, 1], True), h([0, 3], True)]]
    assert merge(lists, info, True) == h([0, 3], True)      # {0,3} avg 11 < {0,1} avg 15
    # count still decides first
    lists = [[h([2], True), h([0, 3], True)]]
    assert merge(lists, info, True) == h([2], True)


def test_sparse_ids_with_prefer_closest_start_and_panic_only_past_the_list():
    # the kubelet starts (numa_info.go NewNUMAInfo has no such check) and reads d[node1][node2]
    # positionally: only a mask holding id 33 runs past a three-entry list
    info = NUMAInfo([0, 1, 33], {0: [10, 20, 20], 1: [20, 10, 20], 33: [20, 20, 10]})
    assert info.short_lists
    assert info.closest(BitMask.from_ids([0]).value, BitMask.from_ids([1]).value) == BitMask.from_ids([0]).value
    with pytest.raises(KubeletPanic) as err:
        info.closest(BitMask.from_ids([0]).value, BitMask.from_ids([33]).value)
    assert str(err.value) == "runtime error: index out of range [33] with length 3"
    # different widths: narrowest, no lookup
    assert info.closest(BitMask.from_ids([33]).value, BitMask.from_ids([0, 1]).value) == BitMask.from_ids([33]).value


def _random_case(rng):
    n = rng.randint(1, 6)
    sparse = rng.random() < 0.25
    ids = sorted(rng.sample(range(12), n)) if sparse else list(range(n))
    closest = (not sparse) and rng.random() < 0.5
    info = NUMAInfo(ids)
    if closest:
        table = {}
        for a in range(n):
            for b in range(a + 1):
                table[(a, b)] = table[(b, a)] = 10 if a == b else rng.choice([11, 12, 20, 21, 32])
        info = NUMAInfo(ids, dict((ids[a], [table[(a, b)] for b in range(n)]) for a in range(n)))
    lists = []
    for _list in range(rng.randint(1, 5)):
        hints = []
        for _hint in range(rng.randint(0, 7)):
            if rng.random() < 0.1:
                hints.append(TopologyHint(None, rng.random() < 0.7))
            else:
                chosen = [i for i in ids if rng.random() < 0.5] or [rng.choice(ids)]
                hints.append(TopologyHint(BitMask.from_ids(chosen), rng.random() < 0.5))
        lists.append(hints)
    return lists, info, closest


def test_list_path_equals_packed_path(monkeypatch):
    """The non-preferred search has a packed-int path and a list path (huge counts); both agree."""
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager import merge
    rng = random.Random(7)
    for _case in range(1500):
        lists, info, closest = _random_case(rng)
        monkeypatch.setattr(merge, "_PACKED_OK", True)
        packed = merge_fast(lists, info, closest)
        monkeypatch.setattr(merge, "_PACKED_OK", False)
        assert merge_fast(lists, info, closest) == packed


@pytest.mark.parametrize("lists", [
    [[h([0], True)], [h([1], True)]],
    [[h(None, False)], [h(None, False)]],
    [[h([0, 1], False), h([3, 7, 20], False)], [h([1, 2], False), h([0, 1, 2, 9], False), h(None, False)]],
])
def test_beyond_the_transform_merge_fast_searches_in_rank_order(lists):
    # 21 NUMA nodes: the Moebius transform would need 2^21 tables (it raised a
    # TopologyManagerError); the rank-order search gives the kubelet's answer
    info = NUMAInfo(list(range(21)))
    assert merge_fast(lists, info) == merge_exhaustive(lists, info)


def test_fast_equals_exhaustive_on_10000_random_cases():
    rng = random.Random(20261122)
    mismatches = []
    for case in range(10000):
        lists, info, closest = _random_case(rng)
        expected = merge_exhaustive(lists, info, closest)
        got = merge_fast(lists, info, closest)
        if got != expected:
            mismatches.append((case, info.nodes, closest, lists, expected, got))
    assert mismatches == []


_IDS = [0, 1, 2, 3, 4]
_HINT = st.one_of(
    st.builds(TopologyHint, st.none(), st.booleans()),
    st.builds(lambda ids, pref: TopologyHint(BitMask.from_ids(ids), pref),
              st.sets(st.sampled_from(_IDS), min_size=1), st.booleans()))


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(st.lists(_HINT, max_size=6), min_size=1, max_size=4), st.booleans())
def test_fast_equals_exhaustive_property(lists, closest):
    """Hypothesis-generated lists (shrinks to a minimal counterexample if the merges ever differ)."""
    distances = dict((a, [10 if a == b else 10 + 3 * abs(a - b) + (a * b) % 4 for b in _IDS]) for a in _IDS)
    info = NUMAInfo(_IDS, distances)
    assert merge_fast(lists, info, closest) == merge_exhaustive(lists, info, closest)
