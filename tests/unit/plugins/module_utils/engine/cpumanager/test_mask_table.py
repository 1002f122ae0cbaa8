# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Mask table: kubelet mask order, compact/real conversion, all-mask sums, interned hints."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.mask_table import hint, table_for
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask, iterate_bitmask_values
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(0, 63), min_size=1, max_size=8), st.data())
def test_order_sums_and_conversions_match_the_literal_definitions(ids, data):
    ids = sorted(ids)
    table = table_for(ids)
    assert [table.real[m] for m in table.order] == list(iterate_bitmask_values(ids))
    values = data.draw(st.lists(st.integers(0, 9), min_size=len(ids), max_size=len(ids)))
    sums = table.sums(values)
    for compact in table.order:
        nodes = [ids[j] for j in range(len(ids)) if compact >> j & 1]
        assert table.real[compact] == BitMask.from_ids(nodes).value
        assert table.count[compact] == len(nodes)
        assert sums[compact] == sum(values[ids.index(n)] for n in nodes)
        assert table.compact(nodes) == compact
    assert list(table.in_order(sums)) == [sums[m] for m in table.order]


def test_hints_are_interned_and_equal_to_fresh_ones():
    assert hint(5, True) is hint(5, True)
    assert hint(5, True) == TopologyHint(BitMask(0, 2), True)
    table = table_for([1, 4])
    assert [h.to_dict() for h in table.all_hints(1)] == [
        {"numa_affinity": [1], "preferred": True}, {"numa_affinity": [4], "preferred": True},
        {"numa_affinity": [1, 4], "preferred": False}]
    assert table.select([0, 1, 2, 3], 2) == [False, True, True]
    assert table.select([0, 1, 2, 3], 2, required=1) == [False, False, True]
    assert table.min_affinity([0, 1, 2, 3], 3) == 2
