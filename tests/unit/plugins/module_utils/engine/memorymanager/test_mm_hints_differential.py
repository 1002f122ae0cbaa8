# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fast hint search equals a plain mask-by-mask reading of calculateHints (pkg/kubelet/cm/memorymanager/policy_static.go) on random states.

The reference below walks every mask in IterateBitMasks order and applies the rules one by one,
exactly as the spec words them; the simulator computes the same thing with subset sums and list
filters. Random states include NUMA groups (consistent or not), assignments, sparse NUMA ids,
several memory types, missing tables and reusable init-container memory.
"""

import itertools
import os
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.machine_state import (  # noqa: E402
    MemoryTable,
    NUMANodeState,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.static_policy import (  # noqa: E402
    MemoryManagerStatic,
    MissingMemoryTable,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import mask_value  # noqa: E402

TYPES = ("memory", "hugepages-2Mi", "hugepages-1Gi")


def reference_hints(state, requested, reusable):
    """Spec 2.3.5 read literally: one mask at a time."""
    ids = sorted(state)
    min_size = len(ids)
    accepted = []
    for size in range(1, len(ids) + 1):
        for combo in itertools.combinations(ids, size):
            free = dict((r, sum(state[n].memory_map[r].free if r in state[n].memory_map else 0 for n in combo))
                        for r in requested)
            alloc = dict((r, sum(state[n].memory_map[r].allocatable if r in state[n].memory_map else 0
                                 for n in combo)) for r in requested)
            if any(alloc[r] < requested[r] for r in requested):
                continue
            min_size = min(min_size, size)
            if size == 1:
                if len(state[combo[0]].cells or []) > 1:
                    continue
            else:
                bad = False
                for n in combo:
                    if state[n].number_of_assignments > 0:
                        cells = state[n].cells or []
                        if len(cells) == 1 or sorted(cells) != list(combo):
                            bad = True
                            break
                if bad:
                    continue
            extra = reusable.get(mask_value(combo), {})
            if any(free[r] + extra.get(r, 0) < requested[r] for r in requested):
                continue
            accepted.append(combo)
    if not accepted or not requested:
        return {}
    hints = [(list(combo), len(combo) == min_size) for combo in accepted]
    return dict((r, hints) for r in requested)


node_strategy = st.fixed_dictionaries({
    "tables": st.dictionaries(st.sampled_from(TYPES),
                              st.tuples(st.integers(0, 64), st.integers(0, 64)), min_size=2, max_size=3),
    "assignments": st.integers(0, 3),
    "group": st.integers(0, 3),
})


@settings(max_examples=250, deadline=None)
@given(ids=st.lists(st.integers(0, 40), min_size=1, max_size=6, unique=True),
       nodes=st.lists(node_strategy, min_size=6, max_size=6),
       requested=st.dictionaries(st.sampled_from(TYPES), st.integers(0, 160), min_size=0, max_size=3),
       reusable_entries=st.lists(st.tuples(st.sampled_from([1, 2, 3, 4, 5, 6, 7, 12, 63]), st.sampled_from(TYPES),
                                           st.integers(0, 160)), max_size=6),
       pod_matches=st.booleans())
@example(ids=[0, 3],
         nodes=[{"tables": {"memory": (100, 100)}, "assignments": 1, "group": 0},
                {"tables": {"memory": (100, 0)}, "assignments": 0, "group": 0}]
         + [{"tables": {"memory": (1, 0)}, "assignments": 0, "group": 0}] * 4,
         requested={"memory": 60}, reusable_entries=[(1, "memory", 60)], pod_matches=True)
def test_fast_hints_equal_reference(ids, nodes, requested, reusable_entries, pod_matches):
    ids = sorted(ids)
    state = {}
    for index, node_id in enumerate(ids):
        spec = nodes[index]
        memory_map = {}
        for name, (allocatable, used) in spec["tables"].items():
            used = min(used, allocatable)
            memory_map[name] = MemoryTable(allocatable, 0, allocatable, used, allocatable - used)
        # groups: 0 = own node, otherwise a prefix-based group of the sorted ids (may be inconsistent)
        group = spec["group"]
        cells = [node_id] if group == 0 else ids[:group + 1] if group + 1 <= len(ids) else ids
        state[node_id] = NUMANodeState(spec["assignments"], memory_map, list(cells))
    mm = MemoryManagerStatic(state)
    reusable = {}
    for positions, name, amount in reusable_entries:
        combo = tuple(node_id for bit, node_id in enumerate(ids) if positions >> bit & 1)
        if combo:
            reusable.setdefault(mask_value(combo), {})[name] = amount
    mm._reusable = {"pod": reusable} if pod_matches else {"other": reusable}
    if any(name not in node.memory_map for name in requested for node in state.values()):
        with pytest.raises(MissingMemoryTable):
            mm.calculate_hints("pod", requested)
        return
    fast = mm.calculate_hints("pod", requested)
    expected = reference_hints(state, requested, reusable if pod_matches else {})
    assert dict((r, [(list(h.affinity.bits()), h.preferred) for h in hints]) for r, hints in fast.items()) == expected
