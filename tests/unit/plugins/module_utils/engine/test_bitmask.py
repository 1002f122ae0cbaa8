# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests for engine/bitmask.py, engine/hints.py and engine/errors.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import AdmissionError, StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import (
    BitMask,
    InvalidBitMask,
    bits_of,
    iterate_bitmask_values,
    iterate_bitmasks,
    mask_value,
    popcount,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import DONT_CARE_HINT, ZERO_HINT, TopologyHint, hint_map_to_dict


def test_construction_forms_agree():
    assert BitMask(0, 2) == BitMask.from_ids([2, 0]) == BitMask.from_value(5)
    assert BitMask(0, 2).value == 5
    assert BitMask().is_empty()
    assert BitMask(63).value == 1 << 63


@pytest.mark.parametrize("bad, message", [
    ((64,), "bit number must be in range 0-63 (NUMA node id 64)"),
    ((-1,), "bit number must be in range 0-63 (NUMA node id -1)"),
    (("1",), "NUMA node id must be an integer, got '1'"),
    ((True,), "NUMA node id must be an integer, got True"),
])
def test_bad_ids(bad, message):
    with pytest.raises(InvalidBitMask) as err:
        BitMask(*bad)
    assert str(err.value) == message


def test_bad_value():
    with pytest.raises(InvalidBitMask) as err:
        BitMask.from_value(1 << 64)
    assert str(err.value) == "bit number must be in range 0-63 (mask value %d)" % (1 << 64)


def test_immutable():
    mask = BitMask(1)
    with pytest.raises(AttributeError):
        mask._value = 3


def test_orders_are_the_kubelets():
    # numeric, not "more lower bits": {1,2}=6 < {0,3}=9
    assert BitMask(1, 2).is_less_than(BitMask(0, 3))
    assert BitMask(1, 2).is_narrower_than(BitMask(0, 3))
    assert BitMask(3).is_narrower_than(BitMask(0, 1))
    assert not BitMask(0, 1).is_narrower_than(BitMask(0, 1))


def test_iterate_order():
    assert [m.bits() for m in iterate_bitmasks([0, 1, 2])] == [
        (0,), (1,), (2,), (0, 1), (0, 2), (1, 2), (0, 1, 2)]
    assert [bits_of(v) for v in iterate_bitmask_values([0, 1, 33])] == [
        (0,), (1,), (33,), (0, 1), (0, 33), (1, 33), (0, 1, 33)]
    assert list(iterate_bitmask_values([])) == []


@settings(max_examples=200)
@given(st.frozensets(st.integers(0, 63)), st.frozensets(st.integers(0, 63)))
def test_set_algebra(a, b):
    ma, mb = BitMask.from_ids(a), BitMask.from_ids(b)
    assert set(ma.and_(mb).bits()) == a & b
    assert set(ma.or_(mb).bits()) == a | b
    assert ma.count() == len(a) == popcount(ma.value)
    assert ma.bits() == tuple(sorted(a))
    assert ma.is_subset_of(mb) == (a <= b)
    # narrower is a strict total order
    if a != b:
        assert ma.is_narrower_than(mb) != mb.is_narrower_than(ma)


def test_iterate_covers_every_subset_once():
    ids = [0, 2, 5, 9]
    values = list(iterate_bitmask_values(ids))
    expected = {mask_value(c) for r in range(1, 5) for c in itertools.combinations(ids, r)}
    assert len(values) == 15 and set(values) == expected
    counts = [popcount(v) for v in values]
    assert counts == sorted(counts)


def test_hints_equality_and_dict():
    assert TopologyHint(BitMask(0, 1), True) == TopologyHint(BitMask.from_value(3), True)
    assert TopologyHint(None, True) == DONT_CARE_HINT
    assert ZERO_HINT != DONT_CARE_HINT
    assert TopologyHint(BitMask(1), False).to_dict() == {"numa_affinity": [1], "preferred": False}
    assert hint_map_to_dict(None) is None
    assert hint_map_to_dict({"cpu": [], "memory": None, "x": [TopologyHint(BitMask(0), True)]}) == {
        "cpu": [], "memory": None, "x": [{"numa_affinity": [0], "preferred": True}]}
    assert str(TopologyHint(BitMask(0, 1), False)) == "{[0,1] not-preferred}"


def test_errors():
    err = AdmissionError.unexpected("boom")
    assert err.reason == "UnexpectedAdmissionError"
    assert err.message == "Allocate failed due to boom, which is unexpected"
    assert isinstance(StateError("x"), ValueError)
