# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""--reserved-memory / --kube-reserved / --eviction-hard parsing with the kubelet's exact rules."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.reserved import (
    format_reserved_memory_flag,
    parse_reserved_memory,
    parse_reserved_memory_config,
    parse_reserved_memory_flag,
    reservations_to_config,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import (
    ReservationSyntaxError,
    format_eviction_map,
    format_resource_map,
    parse_eviction_map,
    parse_resource_map,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_quote

WORKED = [{"numaNode": 0, "limits": {"memory": "3Gi"}}, {"numaNode": 1, "limits": {"memory": "2148Mi"}}]


@pytest.mark.parametrize("value", [
    "0:memory=3Gi;1:memory=2148Mi",
    ["0:memory=3Gi", "1:memory=2148Mi"],
    ["0:memory=3072Mi;1:memory=2148Mi"],
    WORKED,
])
def test_three_flag_forms_and_config_list_agree(value):
    parsed = parse_reserved_memory(value)
    assert reservations_to_config(parsed) == WORKED
    assert format_reserved_memory_flag(parsed) == "0:memory=3Gi;1:memory=2148Mi"


def test_canonical_form_keeps_the_written_format_like_the_kubelet():
    # A plain byte count is DecimalSI, and the kubelet prints it as such (not as 3Gi).
    parsed = parse_reserved_memory([{"numaNode": 0, "limits": {"memory": "3221225472"}}])
    assert format_reserved_memory_flag(parsed) == "0:memory=3221225472"


def test_several_types_in_one_flag():
    parsed = parse_reserved_memory_flag("0:memory=1Gi,hugepages-1Gi=2Gi")
    assert reservations_to_config(parsed) == [{"numaNode": 0, "limits": {"hugepages-1Gi": "2Gi", "memory": "1Gi"}}]
    assert format_reserved_memory_flag(parsed) == "0:hugepages-1Gi=2Gi,memory=1Gi"


def test_duplicate_type_in_one_entry_keeps_last_like_the_kubelet():
    parsed = parse_reserved_memory_flag("0:memory=1Gi,memory=2Gi")[0]
    assert parsed.duplicate_types() == ("memory",)
    assert str(parsed.limits_map()["memory"]) == "2Gi"


FLAG_ERRORS = [
    ("0:memory=1Gi;", "reserved_memory: the reserved memory has incorrect format, expected "
     "numaNodeID:type=quantity[,type=quantity...], got "),
    ("memory=1Gi", "reserved_memory: the reserved memory has incorrect format, expected "
     "numaNodeID:type=quantity[,type=quantity...], got memory=1Gi"),
    ("0:1:memory=1Gi", "reserved_memory: the reserved memory has incorrect format, expected "
     "numaNodeID:type=quantity[,type=quantity...], got 0:1:memory=1Gi"),
    ("a:memory=1Gi", "reserved_memory: failed to convert the NUMA node ID, exptected integer, got a"),
    ("0:memory=1Gi; 1:memory=2Gi", "reserved_memory: failed to convert the NUMA node ID, exptected integer, got  1 "
     "(in \" 1:memory=2Gi\": the kubelet does not trim spaces in --reserved-memory)"),
    ("0:memory", "reserved_memory: the reserved limit has incorrect value, expected type=quantatity, got memory"),
    ("0:memory=1Gi,", "reserved_memory: the reserved limit has incorrect value, expected type=quantatity, got "),
    ("0:cpu=1", 'reserved_memory: memory type conversion error, unknown type: "cpu" (only memory and '
     'hugepages-<size> can be reserved per NUMA node)'),
    ("0:Memory=1Gi", 'reserved_memory: memory type conversion error, unknown type: "Memory" (only memory and '
     'hugepages-<size> can be reserved per NUMA node)'),
    ("0:memory=1GB", "reserved_memory: failed to parse the quantatity, expected quantatity, got 1GB (quantity '1GB' "
     "has an unknown suffix 'GB' (expected one of Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent "
     "such as e3; suffixes are case-sensitive))"),
    ("4294967296:memory=1Gi", "reserved_memory: NUMA node ID 4294967296 is outside the 32-bit range the kubelet "
     "stores (it would silently wrap around)"),
]


@pytest.mark.parametrize("value,message", FLAG_ERRORS)
def test_flag_errors_use_kubelet_wording(value, message):
    with pytest.raises(ReservationSyntaxError) as info:
        parse_reserved_memory(value)
    assert str(info.value) == message


def test_flag_error_keeps_kubelet_message_separately():
    with pytest.raises(ReservationSyntaxError) as info:
        parse_reserved_memory("x:memory=1Gi")
    assert info.value.kubelet_message == "failed to convert the NUMA node ID, exptected integer, got x"


def test_empty_flag_then_more_flags_is_refused():
    assert parse_reserved_memory_flag([""]) == []
    with pytest.raises(ReservationSyntaxError) as info:
        parse_reserved_memory_flag(["", "0:memory=1Gi"])
    assert info.value.kubelet_message == "no target (nil pointer to *[]MemoryReservation"


def test_go_int_forms_accepted():
    assert [r.numa_node for r in parse_reserved_memory_flag("+1:memory=1Gi;01:memory=1Gi;-1:memory=1Gi")] == [1, 1, -1]


@pytest.mark.parametrize("entries,message", [
    ([{"numaNode": "0", "limits": {"memory": "1Gi"}}],
     "reservedMemory[0].numaNode must be an integer, got the string '0' (quote-less in YAML: numaNode: 0)"),
    ([{"numaNode": True, "limits": {}}], "reservedMemory[0].numaNode must be an integer, got bool True"),
    ([{"numa": 0, "limits": {}}], "reservedMemory[0] has unknown key(s) numa (expected numaNode and limits; the "
                                  "kubelet's strict decoding refuses them)"),
    ([{"numaNode": 0, "limits": ["memory=1Gi"]}],
     "reservedMemory[0].limits must be a map of type to quantity, got list ['memory=1Gi']"),
    ([{"numaNode": 0, "limits": {"memory": "1 Gi"}}],
     "reservedMemory[0].limits.memory: quantity '1 Gi' is not a valid Kubernetes quantity (expected e.g. '100Mi', "
     "'1.5Gi', '500m', '1e3')"),
    ({"numaNode": 0}, "reservedMemory must be a list of {numaNode, limits} entries, got dict"),
])
def test_config_list_errors(entries, message):
    with pytest.raises(ReservationSyntaxError) as info:
        parse_reserved_memory_config(entries)
    assert str(info.value) == message


def test_mixed_list_is_refused():
    with pytest.raises(ReservationSyntaxError) as info:
        parse_reserved_memory(["0:memory=1Gi", {"numaNode": 1, "limits": {}}])
    assert str(info.value) == ("reserved_memory must be a flag string, a list of flag strings, or a list of "
                               "{numaNode, limits} dicts, not a mixture")


# -- kube/system reserved -------------------------------------------------------------------------

@pytest.mark.parametrize("value,expected", [
    ("cpu=500m,memory=1Gi", {"cpu": "500m", "memory": "1Gi"}),
    (" cpu = 500m , memory=1024Mi,", {"cpu": "500m", "memory": "1Gi"}),
    (["cpu=1", "memory=1Gi"], {"cpu": "1", "memory": "1Gi"}),
    ({"memory": "4Gi", "pid": "1000", "ephemeral-storage": "10Gi"}, {"memory": "4Gi", "pid": "1k", "ephemeral-storage": "10Gi"}),
    ({"memory": 1073741824}, {"memory": "1073741824"}),
    (None, {}),
    ("", {}),
])
def test_resource_map(value, expected):
    assert dict((k, str(v)) for k, v in parse_resource_map(value).items()) == expected


@pytest.mark.parametrize("value,message", [
    ("hugepages-1Gi=1Gi", 'kube_reserved: cannot reserve "hugepages-1Gi" resource (hugepages cannot be held back by '
     'kube-reserved/system-reserved; that is why a hugepages entry in reservedMemory can never balance); allowed: cpu, '
     'memory, ephemeral-storage, pid'),
    ("gpu=1", 'kube_reserved: cannot reserve "gpu" resource; allowed: cpu, memory, ephemeral-storage, pid'),
    ("memory=-1Gi", 'kube_reserved: resource quantity for "memory" cannot be negative: -1Gi'),
    ("memory=1 Gi", "kube_reserved: failed to parse quantity \"1 Gi\" for \"memory\" resource: quantity '1 Gi' is not "
     "a valid Kubernetes quantity (expected e.g. '100Mi', '1.5Gi', '500m', '1e3')"),
    ("memory", 'kube_reserved: malformed pair, expect string=string, got "memory" (e.g. \'cpu=500m,memory=1Gi\')'),
    (42, "kube_reserved must be a flag string such as 'cpu=500m,memory=1Gi', a list of them, or a dict, got int"),
])
def test_resource_map_errors(value, message):
    with pytest.raises(ReservationSyntaxError) as info:
        parse_resource_map(value)
    assert str(info.value) == message


def test_format_resource_map():
    assert format_resource_map({"memory": "4096Mi", "cpu": "0.5"}) == "cpu=500m,memory=4Gi"


# -- eviction-hard syntax ---------------------------------------------------------------------------

def test_eviction_flag_syntax():
    assert parse_eviction_map("memory.available<500Mi, nodefs.available<10%") == {
        "memory.available": "500Mi", "nodefs.available": "10%"}
    assert parse_eviction_map(["memory.available<1Gi", "memory.available<2Gi"]) == {"memory.available": "2Gi"}
    with pytest.raises(ReservationSyntaxError) as info:
        parse_eviction_map("memory.available=500Mi")
    assert str(info.value) == ('eviction_hard: malformed pair, expect string<string, got "memory.available=500Mi" '
                               "(e.g. 'memory.available<500Mi')")
    assert format_eviction_map({"nodefs.available": "10%", "memory.available": "100Mi"}) == \
        "memory.available<100Mi,nodefs.available<10%"


def test_go_quote():
    assert go_quote('a"b\\c\n\x01') == '"a\\"b\\\\c\\n\\x01"'


_qty = st.sampled_from(["1Gi", "100Mi", "2148Mi", "1", "5G", "1.5Gi", "512Ki"])
_types = st.sampled_from(["memory", "hugepages-2Mi", "hugepages-1Gi"])
_entry = st.tuples(st.integers(0, 40), st.dictionaries(_types, _qty, min_size=1, max_size=3))


@settings(max_examples=150, deadline=None)
@given(st.lists(_entry, min_size=1, max_size=6))
def test_flag_and_config_round_trip(entries):
    config = [{"numaNode": n, "limits": limits} for n, limits in entries]
    parsed = parse_reserved_memory(config)
    flag = format_reserved_memory_flag(parsed)
    again = parse_reserved_memory(flag)
    assert reservations_to_config(again) == reservations_to_config(parsed)
    # repeated-flag form gives the same
    assert reservations_to_config(parse_reserved_memory(flag.split(";"))) == reservations_to_config(parsed)
    for original, back in zip(parsed, again):
        for name, quantity in original.limits_map().items():
            assert back.limits_map()[name] == quantity


def test_messages_quote_like_go():
    """Values in messages are quoted as Go's %q (strconv.Quote), control characters included."""
    assert go_quote('0:memory=1Gi\x07"') == '"0:memory=1Gi\\a\\""'
    assert go_quote("\x01\x7f\u2028") == '"\\x01\\x7f\\u2028"'
