# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Hard eviction thresholds: defaults, the partial-map trap, and the kubelet's float32 percentages."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import struct
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.eviction import (
    DEFAULT_EVICTION_HARD,
    EvictionError,
    effective_eviction_hard,
    parse_float32,
    parse_threshold,
    round_float32,
)

GI = 1 << 30


def _f32(value):
    return struct.unpack("<f", struct.pack("<f", value))[0]


def test_issue_example_five_percent_of_10gi():
    threshold = parse_threshold("memory.available", "5%")
    held = threshold.bytes_of(10 * GI)
    assert held.value() == 536870920
    assert str(held) == "536870920"


@pytest.mark.parametrize("text,capacity,expected", [
    # expected values computed with IEEE float32 via struct (see test below), not with exact decimals
    ("10%", 16 * GI, 1717986944),  # exact decimal would be 1717986918
    ("1%", 512 * GI, 5497558016),  # exact decimal would be 5497558138
    ("100Mi", 16 * GI, 104857600),
    ("0.5%", 64 * GI, 343597376),
])
def test_threshold_bytes(text, capacity, expected):
    assert parse_threshold("memory.available", text).bytes_of(capacity).value() == expected


def test_float32_maths_matches_ieee_single_precision():
    # Independent oracle: numpy-free float32 through struct, for values where double rounding is harmless.
    for text in ("5", "10", "7.5", "33.3", "0.1", "12.345", "99.99"):
        want = _f32(_f32(float(text)) / 100)
        assert round_float32(parse_float32(text) / 100) == Fraction(want)


def _f32_neighbours(value):
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return [struct.unpack("<f", struct.pack("<I", b))[0] for b in (bits - 1, bits, bits + 1) if 0 <= b < 0x7F800000]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 10 ** 9), st.integers(0, 9))
def test_round_float32_is_the_nearest_float32(mantissa, decimals):
    # Independent oracle: among the float32 around a struct conversion, the nearest to the exact
    # decimal, ties to the even bit pattern.
    value = Fraction(mantissa, 10 ** decimals)
    candidates = _f32_neighbours(_f32(float(value)))
    best = min(candidates, key=lambda c: (abs(Fraction(c) - value),
                                          struct.unpack("<I", struct.pack("<f", c))[0] % 2))
    assert round_float32(value) == Fraction(best)


def test_defaults_when_unset():
    settings_ = effective_eviction_hard(None)
    assert settings_.effective == DEFAULT_EVICTION_HARD
    assert settings_.source == "default"
    assert str(settings_.memory_reservation(16 * GI)) == "100Mi"


def test_partial_map_drops_defaults():
    settings_ = effective_eviction_hard("nodefs.available<10%")
    assert settings_.memory_reservation(16 * GI) is None
    assert settings_.zeroed_defaults == ("memory.available", "nodefs.inodesFree", "imagefs.available",
                                         "imagefs.inodesFree")


def test_merge_defaults_fills_them_back():
    settings_ = effective_eviction_hard({"nodefs.available": "5%"}, merge_defaults=True)
    assert settings_.effective["memory.available"] == "100Mi"
    assert settings_.effective["nodefs.available"] == "5%"
    assert settings_.zeroed_defaults == ()


def test_empty_map_means_no_thresholds():
    settings_ = effective_eviction_hard({})
    assert settings_.thresholds == ()
    assert settings_.memory_reservation(GI) is None


@pytest.mark.parametrize("value", ["0%", "100%"])
def test_zero_and_hundred_percent_are_ignored(value):
    assert parse_threshold("memory.available", value) is None


def test_zero_point_zero_percent_is_not_ignored():
    assert parse_threshold("memory.available", "0.0%").bytes_of(GI).value() == 0


@pytest.mark.parametrize("signal,value,message", [
    ("memory.availabe", "100Mi", "evictionHard: unsupported eviction signal memory.availabe (known signals: "
     "memory.available, allocatableMemory.available, nodefs.available, nodefs.inodesFree, imagefs.available, "
     "imagefs.inodesFree, containerfs.available, containerfs.inodesFree, pid.available)"),
    ("memory.available", "0", "evictionHard: eviction threshold memory.available must be positive: 0"),
    ("memory.available", "-1Mi", "evictionHard: eviction threshold memory.available must be positive: -1Mi"),
    ("memory.available", "101%", "evictionHard: eviction percentage threshold memory.available must be <= 100%: 101%"),
    ("memory.available", "-5%", "evictionHard: eviction percentage threshold memory.available must be >= 0%: -5%"),
    ("memory.available", "inf%", "evictionHard: eviction percentage threshold memory.available must be <= 100%: inf%"),
    ("memory.available", "five%", 'evictionHard: memory.available<five%: strconv.ParseFloat: parsing "five": '
     'invalid syntax'),
    ("memory.available", "nan%", "evictionHard: memory.available<nan% is NaN; the kubelet accepts it and computes a "
     "meaningless threshold, use a number between 0 and 100"),
    ("memory.available", "100MB", "evictionHard: memory.available<100MB: quantity '100MB' has an unknown suffix 'MB' "
     "(expected one of Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3; suffixes are "
     "case-sensitive)"),
])
def test_threshold_errors(signal, value, message):
    with pytest.raises(EvictionError) as info:
        parse_threshold(signal, value)
    assert str(info.value) == message


def test_trailing_percent_signs_are_all_trimmed_like_the_kubelet():
    assert parse_threshold("memory.available", "5%%").bytes_of(10 * GI).value() == 536870920


def test_the_node_allocatable_addends_are_data_and_the_report_words_them():
    """``node_allocatable_reservation`` (the engine) labels its addends (system-reserved,
    kube-reserved, hard-eviction with its threshold); the equation's words are
    ``_report/node_allocatable_text.part_text``."""
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine import eviction as engine_eviction
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.node_allocatable import node_allocatable_reservation
    from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import parse_quantity
    from ansible_collections.numaguard.kubelet.plugins.module_utils._report.node_allocatable_text import part_text

    assert not hasattr(engine_eviction, "describe_threshold")
    eviction = engine_eviction.effective_eviction_hard({"memory.available": "5%"}, False, option="evictionHard")
    _totals, parts = node_allocatable_reservation({"memory": parse_quantity("1Gi")}, {"memory": parse_quantity("512Mi")},
                                                  eviction, 10 << 30, ["memory"])
    assert [p.label for p in parts["memory"]] == ["system-reserved", "kube-reserved", "hard-eviction"]
    assert [part_text(p) for p in parts["memory"]] == [
        "system-reserved", "kube-reserved",
        "hard eviction memory.available<5% (float32 0.05000000074505806 of capacity 10737418240 bytes) = 536870920"]
