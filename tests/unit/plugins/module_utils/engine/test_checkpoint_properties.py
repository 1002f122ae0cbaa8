# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Property tests: random checkpoint states survive write -> read -> write byte for byte, the
output is what an independent JSON reader sees, and the Go-style syntax check accepts exactly
what a JSON parser accepts."""

from __future__ import absolute_import, division, print_function

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine import checkpointmanager
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager import checkpoint as cpu_ck
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager import checkpoint as mem_ck
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s import gojson, gospew

# names with the characters Go escapes (<>&, U+2028/9, controls), quotes, backslashes, non-ASCII
NAMES = st.text(alphabet=st.sampled_from(list("ab-_.0123456789<>&\"\\/\n\t\x01\x7f \u00e9\u4e2d\u2028\u2029\U0001f600")),
                max_size=8)
CPUSETS = st.lists(st.integers(0, 300), max_size=6).map(lambda ids: ",".join(str(i) for i in sorted(set(ids))))
NUMA = st.integers(0, 40)  # ids >= 10 exercise string-sorted JSON keys vs numeric spew keys
U64 = st.integers(0, 2 ** 64 - 1)
RESOURCES = st.sampled_from(["memory", "hugepages-2Mi", "hugepages-1Gi", "hugepages-1536Ki"])


def _blocks():
    return st.lists(st.builds(mem_ck.Block, st.lists(NUMA, max_size=3).map(tuple), RESOURCES, U64), max_size=3)


def _node():
    table = st.fixed_dictionaries({k: U64 for k in mem_ck.MEMORY_TABLE_KEYS})
    return st.fixed_dictionaries({
        "numberOfAssignments": st.integers(-(2 ** 63), 2 ** 63 - 1),
        "memoryMap": st.dictionaries(RESOURCES, table, max_size=3),
        "cells": st.lists(NUMA, max_size=4)})


CPU_STATES = st.builds(
    cpu_ck.CPUManagerCheckpoint,
    policy_name=st.sampled_from(["none", "static", "st<a>tic\u00e9"]),
    default_cpu_set=CPUSETS,
    entries=st.dictionaries(NAMES, st.dictionaries(NAMES, CPUSETS, min_size=1, max_size=3), max_size=4),
    pod_entries=st.dictionaries(NAMES, CPUSETS, max_size=3),
)

MEMORY_STATES = st.builds(
    mem_ck.MemoryManagerCheckpoint,
    policy_name=st.sampled_from(["None", "Static"]),
    machine_state=st.dictionaries(NUMA, _node(), max_size=5),
    entries=st.dictionaries(NAMES, st.dictionaries(NAMES, _blocks(), min_size=1, max_size=3), max_size=3),
    pod_entries=st.dictionaries(NAMES, _blocks(), max_size=2),
)


def _same_cpu(a, b):
    return (a.policy_name, a.default_cpu_set, a.entries, a.pod_entries) == \
        (b.policy_name, b.default_cpu_set, b.entries, b.pod_entries)


def _same_memory(a, b):
    return (a.policy_name, a.machine_state, a.entries, a.pod_entries) == \
        (b.policy_name, b.machine_state, b.entries, b.pod_entries)


@settings(max_examples=150, deadline=None)
@given(CPU_STATES)
def test_cpu_round_trip_v4_v3_v2(cp):
    text = cpu_ck.dump_cpu_manager_state(cp, 4)
    back = cpu_ck.load_cpu_manager_state(text)
    assert back.version == 4 and back.checksum_ok is True and _same_cpu(back, cp)
    assert cpu_ck.dump_cpu_manager_state(back) == text
    # independent reader: the data string holds the same content, NUMA-free here
    outer = json.loads(text)
    inner = json.loads(outer["data"])
    assert inner.get("entries", {}) == cp.entries
    assert dict((p, e.get("cpuSet", "")) for p, e in inner.get("podEntries", {}).items()) == cp.pod_entries
    assert outer["dataChecksum"] == gospew.string_checksum(outer["data"])
    v3 = cpu_ck.dump_cpu_manager_state(cp, 3)
    back3 = cpu_ck.load_cpu_manager_state(v3)
    assert back3.version == 3 and back3.checksum_ok is True and _same_cpu(back3, cp)
    assert cpu_ck.dump_cpu_manager_state(back3) == v3
    if not cp.pod_entries:
        v2 = cpu_ck.dump_cpu_manager_state(cp, 2)
        again = cpu_ck.load_cpu_manager_state(v2)
        assert again.version == 2 and again.checksum_ok is True and _same_cpu(again, cp)
        assert cpu_ck.dump_cpu_manager_state(again) == v2


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["none", "static"]), CPUSETS, st.dictionaries(NAMES, CPUSETS, max_size=4))
def test_cpu_round_trip_v1(policy, default, v1_entries):
    cp = cpu_ck.CPUManagerCheckpoint(policy_name=policy, default_cpu_set=default, v1_entries=v1_entries, version=1)
    text = cpu_ck.dump_cpu_manager_state(cp)
    back = cpu_ck.load_cpu_manager_state(text)
    assert back.v1_entries == v1_entries and back.checksum_ok is True
    assert cpu_ck.dump_cpu_manager_state(back, 1) == text


@settings(max_examples=80, deadline=None)
@given(MEMORY_STATES)
def test_memory_round_trip_all_versions(cp):
    for version in (3, 2, 1):
        if version == 1 and cp.pod_entries:
            continue
        text = mem_ck.dump_memory_manager_state(cp, version)
        back = mem_ck.load_memory_manager_state(text)
        assert back.checksum_ok is True
        expected_pods = cp.pod_entries if version != 1 else {}
        assert (back.policy_name, back.machine_state, back.entries, back.pod_entries) == \
            (cp.policy_name, cp.machine_state, cp.entries, expected_pods)
        assert mem_ck.dump_memory_manager_state(back) == text
        outer = json.loads(text)
        keys = list(outer["machineState"])
        assert keys == sorted(str(k) for k in cp.machine_state)  # "10" < "2"
        assert [int(k) for k in keys] == sorted(cp.machine_state, key=str)
        if version == 3:
            assert back.legacy_checksum_ok is True
            inner = json.loads(outer["data"])
            assert list(inner["machineState"]) == keys
            v1_sum = json.loads(mem_ck.dump_memory_manager_state(
                mem_ck.MemoryManagerCheckpoint(cp.policy_name, cp.machine_state, cp.entries, version=1)))["checksum"]
            assert outer["checksum"] == v1_sum


@settings(max_examples=50, deadline=None)
@given(MEMORY_STATES, st.integers(1, 2 ** 32))
def test_memory_any_wrong_checksum_is_corruption(cp, delta):
    text = mem_ck.dump_memory_manager_state(cp, 3)
    outer = json.loads(text)
    bad = text.replace('"dataChecksum":%d' % outer["dataChecksum"],
                       '"dataChecksum":%d' % (outer["dataChecksum"] + delta))
    try:
        mem_ck.load_memory_manager_state(bad)
    except checkpointmanager.CheckpointError as error:
        assert str(error) == "could not load v3 checkpoint: checkpoint is corrupted"
    else:  # pragma: no cover
        raise AssertionError("corruption not detected")
    legacy = mem_ck.dump_memory_manager_state(cp, 2)
    ck_value = json.loads(legacy)["checksum"]
    tampered = legacy.replace('"checksum":%d' % ck_value, '"checksum":%d' % ((ck_value + delta) % 2 ** 32 or 1))
    if tampered != legacy:
        try:
            mem_ck.load_memory_manager_state(tampered)
        except checkpointmanager.CheckpointError as error:
            assert str(error) == "checkpoint is corrupted"
        else:  # pragma: no cover
            raise AssertionError("corruption not detected")


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_go_string_encoding_is_valid_json_and_html_safe(text):
    encoded = gojson.encode_string(text)
    assert json.loads(encoded) == text
    body = encoded[1:-1]
    for char in "<>&\u2028\u2029":
        assert char not in body
    assert all(c >= " " for c in body)


JSONISH = st.text(alphabet=st.sampled_from(list('{}[]",:0123456789.eE+- \t\n\\/uabtrfnls\u00e9\x01')), max_size=24)


@settings(max_examples=600, deadline=None)
@given(JSONISH)
def test_syntax_check_accepts_exactly_what_json_accepts(text):
    try:
        json.loads(text)
        python_ok = True
    except ValueError:
        python_ok = False
    try:
        gojson.parse(text)
        go_ok = True
    except gojson.GoJSONError:
        go_ok = False
    assert go_ok == python_ok, text


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                    max_leaves=10))
def test_unknown_keys_of_any_shape_are_ignored(extra):
    base = cpu_ck.dump_cpu_manager_state(cpu_ck.CPUManagerCheckpoint("static", "0-7", version=2))
    text = '{"zzUnknown":%s,%s' % (json.dumps(extra), base[1:])
    cp = cpu_ck.load_cpu_manager_state(text)
    assert (cp.version, cp.default_cpu_set, cp.checksum_ok) == (2, "0-7", True)
