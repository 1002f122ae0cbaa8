# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Mask table short-cuts: cached subset sums and the monotone ``select`` equal the literal ones."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.mask_table import gc_paused, table_for


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 63), min_size=1, max_size=7), st.data())
def test_cached_sums_and_monotone_select_equal_literal(ids, data):
    ids = sorted(ids)
    table = table_for(ids)
    size = len(ids)
    for _round in range(3):  # later rounds may read cached tables, with the same or new values
        values = data.draw(st.lists(st.integers(0, 5), min_size=size, max_size=size))
        need = data.draw(st.integers(-2, 12))
        sums = table.sums(values)
        literal = [sum(values[j] for j in range(size) if m >> j & 1) for m in range(1 << size)]
        assert sums == literal
        expected = [literal[m] >= need for m in table.order]
        assert table.select(sums, need, monotone=True) == expected
        assert table.select(sums, need) == expected
        required = data.draw(st.integers(0, (1 << size) - 1))
        expected_required = [literal[m] >= need and not required & ~m for m in table.order]
        assert table.select(sums, need, required, monotone=True) == expected_required


@settings(max_examples=60, deadline=None)
@given(st.sets(st.integers(0, 63), min_size=1, max_size=7), st.integers(1, 7))
def test_table_bits_and_memoised_hint_dicts_equal_literal(ids, min_affinity):
    ids = sorted(ids)
    table = table_for(ids)
    for compact in range(1 << len(ids)):
        assert table.bits[compact] == tuple(ids[j] for j in range(len(ids)) if compact >> j & 1)
    hints = table.all_hints(min_affinity)
    assert [h.__dict__["_as_dict"] for h in hints] == [
        {"numa_affinity": list(h.affinity.bits()), "preferred": h.preferred} for h in hints]
    assert [h.__dict__["_as_dict"] for h in hints] == [h.to_dict() for h in hints]


def test_gc_paused_restores_the_collector_setting():
    import gc
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
