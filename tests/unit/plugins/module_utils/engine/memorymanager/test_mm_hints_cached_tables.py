# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The memory manager's shared tables (subset sums, allocatable fits, interned hint tables, the
"every node holds it" short-cut) give the literal per-mask answer, including uint64 wrap-around,
sparse NUMA ids, several hugepage sizes, groups, and many simulators sharing the caches."""

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.machine_state import (
    MemoryTable,
    NUMANodeState,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.static_policy import (
    MemoryManagerStatic,
)

TYPES = ("memory", "hugepages-2Mi", "hugepages-1Gi")
U64 = 1 << 64


def literal_hints(state, requested):
    """Spec 2.3.5 per mask with the kubelet's uint64 sums (no groups, no assignments)."""
    ids = sorted(state)
    min_size = len(ids)
    accepted = []
    for size in range(1, len(ids) + 1):
        for combo in itertools.combinations(ids, size):
            alloc = dict((r, sum(state[n].memory_map[r].allocatable for n in combo) % U64) for r in requested)
            if any(alloc[r] < requested[r] for r in requested):
                continue
            min_size = min(min_size, size)
            free = dict((r, sum(state[n].memory_map[r].free for n in combo) % U64) for r in requested)
            if any(free[r] < requested[r] for r in requested):
                continue
            accepted.append(combo)
    if not accepted or not requested:
        return {}
    return dict((r, [(list(c), len(c) == min_size) for c in accepted]) for r in requested)


def as_pairs(hints):
    return dict((r, [(list(h.affinity.bits()), h.preferred) for h in v]) for r, v in hints.items())


def build(ids, tables):
    state = {}
    for node_id, per_type in zip(ids, tables):
        memory_map = {}
        for name in TYPES:
            allocatable, free = per_type[name]
            free = min(free, allocatable)
            memory_map[name] = MemoryTable(allocatable, 0, allocatable, allocatable - free, free)
        state[node_id] = NUMANodeState(0, memory_map, [node_id])
    return state


big = st.sampled_from([0, 1, 7, 64, (1 << 62), (1 << 63) - 1, (1 << 63), U64 - 1])
amounts = st.one_of(st.integers(0, 100), big)
table = st.fixed_dictionaries(dict((name, st.tuples(amounts, amounts)) for name in TYPES))


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.integers(0, 63), min_size=1, max_size=5, unique=True),
       tables=st.lists(table, min_size=5, max_size=5),
       requested=st.dictionaries(st.sampled_from(TYPES), st.one_of(st.integers(0, 200), big),
                                 min_size=1, max_size=3))
def test_wraparound_and_shortcut_equal_literal(ids, tables, requested):
    ids = sorted(ids)
    state = build(ids, tables)
    expected = literal_hints(state, requested)
    # two managers on the same machine share every cache: both must answer the literal result
    for _round in range(2):
        assert as_pairs(MemoryManagerStatic(state).calculate_hints("pod", requested)) == expected


def test_many_sparse_nodes_several_page_sizes_and_state_changes():
    ids = [1, 4, 5, 9, 17, 23, 40, 63, 2, 30]
    ids.sort()
    base = [dict((name, (64, 64)) for name in TYPES) for _node in ids]
    requested = {"memory": 32, "hugepages-2Mi": 16, "hugepages-1Gi": 8}
    state = build(ids, base)
    assert as_pairs(MemoryManagerStatic(state).calculate_hints("pod", requested)) == literal_hints(state, requested)
    # one node's free memory changes: cached tables for the old values must not leak
    changed = [dict(t) for t in base]
    changed[3]["hugepages-1Gi"] = (64, 3)
    changed[7]["memory"] = (64, 20)
    state2 = build(ids, changed)
    assert as_pairs(MemoryManagerStatic(state2).calculate_hints("pod", requested)) == literal_hints(state2, requested)
    assert as_pairs(MemoryManagerStatic(state).calculate_hints("pod", requested)) == literal_hints(state, requested)
    # nothing fits on one node: bigger minimum size, not-preferred hints
    wide = {"memory": 100, "hugepages-2Mi": 70, "hugepages-1Gi": 65}
    assert as_pairs(MemoryManagerStatic(state2).calculate_hints("pod", wide)) == literal_hints(state2, wide)
