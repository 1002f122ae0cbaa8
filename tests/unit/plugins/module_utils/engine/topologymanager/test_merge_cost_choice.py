# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The merge by estimated cost, with a time budget (issue 24), against the literal merge.

* every policy (best-effort, restricted, single-numa-node), with and without
  prefer-closest-numa-nodes over ring, uniform, two-level and random distances, on random mixes
  of hint sets that are not monotone (memory NUMA groups, single-NUMA allocations, exact-mask
  bonuses, the 1.36 device fallback set) and literal lists, up to 8 nodes: the fast policy (big
  machine rules forced; then the cost choice; then the transform alone) equals the kubelet's
  permutation loop (fixed seeds);
* ``reach(size)`` holds every listed mask of at least ``size`` nodes;
* past its CPU-time budget the search answers cannot_check with why and what it settled;
* the issue's 64-node case (best-effort, half the machine after two small pods) is decided.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools
import random

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager import hint_sets, merge
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hint_sets import (
    FallbackHintSet,
    Need,
    ThresholdHintSet,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import NUMAInfo
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_options import PolicyOptions
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.topology_manager import create_policy

from .test_ranked_nonmonotone import _lists, random_case

SHAPES = ("ring", "uniform", "two-level", "random")


def distances(rnd, ids, shape):
    n = len(ids)
    table = {}
    for i, a in enumerate(ids):
        for j, b in enumerate(ids):
            if a == b:
                table[(a, b)] = 10
            elif shape == "ring":
                hops = abs(i - j)
                table[(a, b)] = 10 + 6 * min(hops, n - hops)
            elif shape == "uniform":
                table[(a, b)] = 20
            elif shape == "two-level":
                table[(a, b)] = 12 if i // 2 == j // 2 else 32
            else:
                table[(a, b)] = table.get((b, a), rnd.choice([11, 12, 20, 21, 30]))
    return dict((a, [table[(a, b)] for b in ids]) for a in ids)


def _forget_lists(lists):
    for hints in lists:
        if getattr(hints, "implicit", False):
            hints._listed = None  # answer by the rules, not by a list walked before
            if isinstance(hints, FallbackHintSet):
                hints.inner._listed = None


def _providers(lists):
    return [{"r%d" % index: hints} for index, hints in enumerate(lists)]


@pytest.mark.parametrize("seed", range(400))
def test_every_policy_equals_the_literal_merge(seed, monkeypatch):
    rnd = random.Random(24000 + seed)
    policy_name = rnd.choice(["best-effort", "restricted", "single-numa-node"])
    closest = rnd.random() < 0.5
    ids = list(range(rnd.randint(1, 8)))
    shape = rnd.choice(SHAPES)
    info = NUMAInfo(ids, distances(rnd, ids, shape))
    options = PolicyOptions(prefer_closest_numa=closest)
    lists = _lists(rnd, ids)
    literal = [hints.hints() if getattr(hints, "implicit", False) else list(hints) for hints in lists]
    product = 1
    for hints in literal:
        product *= max(1, len(hints))
    if product > 60000:
        lists, literal = lists[:2], literal[:2]  # the literal loop must finish in a test
    want = create_policy(policy_name, info, options, merger="exhaustive").merge(_providers(literal))
    monkeypatch.setattr(hint_sets, "BRUTE_NODES", 0)
    # the ranked search alone (what runs beyond 20 reachable nodes)
    monkeypatch.setattr(merge, "RANKED_FROM_NODES", [1])
    _forget_lists(lists)
    assert create_policy(policy_name, info, options).merge(_providers(lists)) == want
    # the choice by cost (ranked first within the transform's cost, the transform after it)
    monkeypatch.setattr(merge, "RANKED_FROM_NODES", [merge.MAX_FAST_MERGE_NODES + 1])
    _forget_lists(lists)
    assert create_policy(policy_name, info, options).merge(_providers(lists)) == want
    # the transform alone: the ranked search gets no node test
    monkeypatch.setattr(merge, "MAX_SEARCH_WORK", 0)
    _forget_lists(lists)
    assert create_policy(policy_name, info, options).merge(_providers(lists)) == want


@pytest.mark.parametrize("seed", range(200))
def test_reach_holds_every_listed_mask_of_a_size(seed, monkeypatch):
    ids, hint_set, listed = random_case(random.Random(seed), 0.3)
    monkeypatch.setattr(hint_sets, "BRUTE_NODES", 0)
    for size in range(1, len(ids) + 2):
        union = 0
        for mask in listed:
            if bin(mask).count("1") >= size:
                union |= mask
        assert not union & ~hint_set.reach(size), size
    smallest = min((bin(m).count("1") for m in listed), default=1)
    assert 1 <= hint_set.fewest_nodes_at_least() <= smallest


def _memory_like(n, group_nodes, single_used):
    """64-node sets like the issue's case: CPUs (4 per node, CPU 0 reserved) and memory (12Gi
    per node) for half the machine, node 0 and 1 in a NUMA group, node 2 single-used."""
    ids = list(range(n))
    cpu = ThresholdHintSet(ids, [Need(dict((node, 4 - (node == 0)) for node in ids), 2 * n)], n // 2 + 1)
    groups = [(1 << node, group_nodes) for node in ids if group_nodes >> node & 1]
    memory = ThresholdHintSet(ids, [Need(dict((node, 12) for node in ids), 8 * n)], (8 * n + 11) // 12,
                              no_single=group_nodes, multi_forbidden=single_used, groups=groups)
    return cpu, memory


def test_half_of_64_nodes_after_small_pods_is_decided():
    """The issue's case without distances: 38 s and cannot_check before; the reach of 43-node
    masks leaves nodes 0-2 out at once."""
    cpu, memory = _memory_like(64, 0b11, 0b100)
    got = merge.merge_implicit([cpu, memory], NUMAInfo(list(range(64)), None), False)
    assert not got.preferred and list(got.affinity.bits()) == list(range(3, 46))


def _almost_ring(ids):
    """Ring distances with one pair of opposite nodes one further apart: no longer a ring (the
    runs of neighbours are not known to be closest), so the branch and bound must search."""
    count = len(ids)
    rows = dict((a, [10 if a == b else 10 + 6 * min(abs(a - b), count - abs(a - b)) for b in ids]) for a in ids)
    rows[0][count // 2] += 1
    rows[count // 2][0] += 1
    return rows


def test_time_budget_gives_cannot_check_with_why(monkeypatch):
    cpu, memory = _memory_like(64, 0b11, 0b100)
    ids = list(range(64))
    ring = _almost_ring(ids)
    with pytest.raises(merge.NoPreferredMerge) as err:
        merge.merge_implicit([cpu, memory], NUMAInfo(ids, ring), True, search_seconds=0.0)
    assert "ran out of its time budget (0 s CPU)" in str(err.value)
    # numerically, the counts searched through are named
    monkeypatch.setattr(merge, "MAX_SEARCH_WORK", 10)
    with pytest.raises(merge.NoPreferredMerge) as err:
        merge.merge_implicit([cpu, memory], NUMAInfo(ids, None), False)
    assert "made more than 10 node tests without an answer" in str(err.value)


def test_restricted_rejects_within_its_short_budget():
    """restricted admits only a preferred hint: with none, the non-preferred search stops after
    its short budget and the pod is rejected all the same."""
    cpu, memory = _memory_like(64, 0, 0)
    ids = list(range(64))
    ring = _almost_ring(ids)
    policy = create_policy("restricted", NUMAInfo(ids, ring), PolicyOptions(prefer_closest_numa=True))
    hint, admit = policy.merge(_providers([cpu, memory]))
    assert not admit and hint.affinity is None
    assert policy.non_preferred_seconds == policy.non_preferred_budget
    assert BitMask.from_ids([0]).count() == 1


@pytest.mark.parametrize("seed", range(150))
def test_two_level_shortcut_equals_brute_force(seed):
    """Uniform and socket-shaped distances: the programme over groups finds the closest mask,
    then the numerically smallest, as walking every mask does; other shapes are left to the
    branch and bound (None)."""
    rnd = random.Random(seed)
    n = rnd.randint(1, 9)
    ids = sorted(rnd.sample(range(12), n))
    socket = dict((node, rnd.randint(0, 3)) for node in ids)
    inside = dict((group, rnd.choice([11, 12, 16])) for group in range(4))
    across = rnd.choice([20, 32])
    own = dict((node, 10) for node in ids)
    pair = {}
    for a in ids:
        for b in ids:
            if a < b:
                pair[(a, b)] = 2 * (inside[socket[a]] if socket[a] == socket[b] else across)
    shaped = rnd.random() < 0.7
    if not shaped and len(pair) > 1:
        pair[rnd.choice(sorted(pair))] += rnd.choice([1, 3])
    for size in range(1, n + 1):
        masks = [sum(1 << node for node in combo) for combo in itertools.combinations(ids, size)]

        def total(mask):
            chosen = [node for node in ids if mask >> node & 1]
            return sum(own[node] for node in chosen) + sum(pair[(a, b)] for a, b in itertools.combinations(chosen, 2))

        want = min(masks, key=lambda mask: (total(mask), mask))
        got = merge._two_level_closest(ids, own, pair, size)
        if shaped and pair:
            assert got is not None  # a shape with two levels is always recognised
        if got is not None:
            assert got == want, (size, bin(got), bin(want))


def test_preferred_search_has_a_time_budget(monkeypatch):
    """The preferred search (masks by size, numerically) stops at the time budget too."""
    monkeypatch.setattr(merge, "MAX_SEARCH_SECONDS", [0.0])
    ids = list(range(24))
    # CPUs prefer masks of three nodes holding node 23; memory prefers the same size without it
    cpu = ThresholdHintSet(ids, [Need(dict((node, 4) for node in ids), 10)], 3, required=1 << 23)
    memory = ThresholdHintSet(ids, [Need(dict((node, 8) for node in ids), 20)], 3, multi_forbidden=1 << 23)
    with pytest.raises(hint_sets.SearchBoundExceeded, match="ran out of its time budget"):
        merge.merge_implicit([cpu, memory], NUMAInfo(ids, None), False)
