# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cached / shared forms used on the admission hot path equal the plain ones.

``bits_of`` memoises tuples and ``hint_map_to_dict`` memoises one dict per hint object; both must
give exactly what the literal computations give, whatever the order of calls.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.mask_table import hint
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask, bits_of
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import (
    DONT_CARE_HINT,
    TopologyHint,
    hint_map_to_dict,
    memoise_dicts,
)


def literal_bits(value):
    return tuple(i for i in range(value.bit_length()) if value >> i & 1)


def literal_map(hints):
    if hints is None:
        return None
    return dict((r, None if v is None else [
        {"numa_affinity": None if h.affinity is None else list(literal_bits(h.affinity.value)),
         "preferred": h.preferred} for h in v])
        for r, v in hints.items())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, (1 << 64) - 1), min_size=1, max_size=20))
def test_bits_of_equals_literal_even_when_cached(values):
    for value in values + values:  # second pass reads the cache
        assert bits_of(value) == literal_bits(value)
        assert BitMask.from_value(value).bits() == literal_bits(value)


def test_bits_of_edges():
    assert bits_of(0) == ()
    assert bits_of(1 << 63) == (63,)
    assert bits_of((1 << 64) - 1) == tuple(range(64))


hint_strategy = st.one_of(
    st.builds(hint, st.integers(1, (1 << 64) - 1), st.booleans()),  # interned
    st.builds(lambda v, p: TopologyHint(BitMask.from_value(v), p), st.integers(0, (1 << 64) - 1),
              st.booleans()),  # fresh objects
    st.builds(lambda p: TopologyHint(None, p), st.booleans()),
    st.just(DONT_CARE_HINT))


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.none(), st.dictionaries(
    st.sampled_from(["cpu", "memory", "hugepages-2Mi", "hugepages-1Gi", "example.com/gpu"]),
    st.one_of(st.none(), st.lists(hint_strategy, max_size=8)))))
def test_hint_map_to_dict_equals_literal(hints):
    expected = literal_map(hints)
    first = hint_map_to_dict(hints)
    assert first == expected
    assert hint_map_to_dict(hints) == expected  # memoised path
    if hints is not None:
        assert list(first) == sorted(hints)
        for resource, value in hints.items():
            if value is not None:
                assert first[resource] == [h.to_dict() for h in value]


def test_memoised_dict_is_invisible_to_hint_semantics():
    plain = TopologyHint(BitMask(0, 2), True)
    shared = hint(5, True)
    hint_map_to_dict({"cpu": [plain, shared]})
    assert plain == shared and hash(plain) == hash(shared)
    assert repr(plain) == repr(TopologyHint(BitMask(0, 2), True))
    assert str(plain) == "{[0,2] preferred}"


def test_memoise_dicts_keeps_existing_and_matches_to_dict():
    first = TopologyHint(BitMask(1, 3), False)
    second = TopologyHint(BitMask(2), True)
    hint_map_to_dict({"cpu": [first]})
    kept = first.__dict__["_as_dict"]
    memoise_dicts([first, second], [(1, 3), (2,)])
    assert first.__dict__["_as_dict"] is kept
    assert hint_map_to_dict({"cpu": [first, second]}) == {"cpu": [first.to_dict(), second.to_dict()]}
