# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Go's strconv.Quote / ParseBool / Atoi, and the kubelet messages that embed them (one home: _k8s/gostrconv.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.policy_options import parse_bool
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import TopologyManagerError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_options import PolicyOptions
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.topology_manager import validate_config
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import BOOL_WORDS, go_atoi, go_parse_bool, go_quote


@pytest.mark.parametrize("text, quoted", [
    ('a"b\\c\n\x01\x7f\u00e9\u200b', '"a\\"b\\\\c\\n\\x01\\x7f\u00e9\\u200b"'),
    ("bad\toption", '"bad\\toption"'),
    ("\a\b\f\v\r", '"\\a\\b\\f\\v\\r"'),
    ("", '""'),
    ("\U000e0001", '"\\U000e0001"'),
])
def test_go_quote_escapes_as_strconv_quote(text, quoted):
    assert go_quote(text) == quoted


@given(st.text())
def test_go_quote_output_has_no_raw_control_characters(text):
    quoted = go_quote(text)
    assert quoted.startswith('"') and quoted.endswith('"')
    assert not any(ord(c) < 0x20 or ord(c) == 0x7F for c in quoted)


@pytest.mark.parametrize("text", sorted(BOOL_WORDS))
def test_parse_bool_words(text):
    assert go_parse_bool(text) is BOOL_WORDS[text]


@pytest.mark.parametrize("text, message", [
    ("yes", 'strconv.ParseBool: parsing "yes": invalid syntax'),
    ("tRUE", 'strconv.ParseBool: parsing "tRUE": invalid syntax'),
    ("", 'strconv.ParseBool: parsing "": invalid syntax'),
    ("a\tb", 'strconv.ParseBool: parsing "a\\tb": invalid syntax'),
])
def test_parse_bool_errors(text, message):
    with pytest.raises(ValueError) as err:
        go_parse_bool(text)
    assert str(err.value) == message


@pytest.mark.parametrize("text, value", [("0", 0), ("+7", 7), ("-12", -12), ("007", 7),
                                         ("9223372036854775807", (1 << 63) - 1)])
def test_atoi(text, value):
    assert go_atoi(text) == value


@pytest.mark.parametrize("text, message", [
    ("1.3", 'strconv.Atoi: parsing "1.3": invalid syntax'),
    (" 1", 'strconv.Atoi: parsing " 1": invalid syntax'),
    ("12\n", 'strconv.Atoi: parsing "12\\n": invalid syntax'),
    ("1_000", 'strconv.Atoi: parsing "1_000": invalid syntax'),
    ("\u0661", 'strconv.Atoi: parsing "\u0661": invalid syntax'),  # Arabic-Indic one: not ASCII
    ("+", 'strconv.Atoi: parsing "+": invalid syntax'),
    ("9223372036854775808", 'strconv.Atoi: parsing "9223372036854775808": value out of range'),
])
def test_atoi_errors(text, message):
    with pytest.raises(ValueError) as err:
        go_atoi(text)
    assert str(err.value) == message


def test_topology_manager_unknown_option_is_quoted_like_the_kubelet():
    """policy_options.go: fmt.Errorf("unknown Topology Manager Policy option: %q", name)."""
    with pytest.raises(TopologyManagerError) as err:
        PolicyOptions.parse({"bad\toption": "true"})
    assert str(err.value) == 'unknown Topology Manager Policy option: "bad\\toption"'


def test_topology_manager_bad_bool_value_is_quoted_like_the_kubelet():
    with pytest.raises(TopologyManagerError) as err:
        PolicyOptions.parse({"prefer-closest-numa-nodes": "y\tes"})
    assert str(err.value) == ('bad value for option "prefer-closest-numa-nodes": '
                              'strconv.ParseBool: parsing "y\\tes": invalid syntax')


def test_topology_manager_policy_name_is_quoted_like_the_kubelet():
    with pytest.raises(TopologyManagerError) as err:
        validate_config({"topologyManagerPolicy": "x\ty"})
    assert str(err.value).startswith('invalid configuration: topologyManagerPolicy (--topology-manager-policy) "x\\ty"')


def test_cpu_manager_option_value_is_quoted_like_the_kubelet():
    with pytest.raises(StateError) as err:
        parse_bool("full-pcpus-only", "no\n")
    assert str(err.value) == 'bad value for option "full-pcpus-only": strconv.ParseBool: parsing "no\\n": invalid syntax'
