# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reservation filters: values and exact error messages naming the filter."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import xml.etree.ElementTree as ET

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.numaguard.kubelet.plugins.filter.eviction_hard_format import eviction_hard_format
from ansible_collections.numaguard.kubelet.plugins.filter.eviction_hard_parse import eviction_hard_parse
from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_check import reserved_memory_check
from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_format import reserved_memory_format
from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_junit import reserved_memory_junit
from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_parse import reserved_memory_parse
from ansible_collections.numaguard.kubelet.plugins.filter.reserved_resources_format import reserved_resources_format
from ansible_collections.numaguard.kubelet.plugins.filter.reserved_resources_parse import reserved_resources_parse

GI = 1 << 30
FACTS = {
    "nodes": [
        {"id": 0, "cpus": [0, 1], "memory_total_bytes": 16 * GI, "memory_free_bytes": GI, "hugepages": {},
         "distances": {"0": 10, "1": 20}},
        {"id": 1, "cpus": [2, 3], "memory_total_bytes": 16 * GI, "memory_free_bytes": GI, "hugepages": {},
         "distances": {"0": 20, "1": 10}},
    ],
    "system": {"memory_total_bytes": 32 * GI},
}


def test_parse_and_format_reserved_memory():
    assert reserved_memory_parse("0:memory=3072Mi;1:memory=2148Mi") == [
        {"numaNode": 0, "limits": {"memory": "3Gi"}}, {"numaNode": 1, "limits": {"memory": "2148Mi"}}]
    assert reserved_memory_format([{"numaNode": 0, "limits": {"memory": "3072Mi"}}]) == "0:memory=3Gi"
    assert reserved_memory_format(["0:memory=1Gi", "1:memory=1Gi"]) == "0:memory=1Gi;1:memory=1Gi"


def test_resources_and_eviction():
    assert reserved_resources_parse("cpu=500m, memory=4096Mi") == {"cpu": "500m", "memory": "4Gi"}
    assert reserved_resources_format({"memory": "4096Mi", "cpu": "0.5"}) == "cpu=500m,memory=4Gi"
    assert eviction_hard_parse("memory.available<500Mi") == {"memory.available": "500Mi"}
    assert eviction_hard_parse(None)["memory.available"] == "100Mi"
    assert eviction_hard_parse("memory.available<500Mi", merge_defaults=True)["nodefs.available"] == "10%"
    assert eviction_hard_format({"nodefs.available": "10%", "memory.available": "500Mi"}) == \
        "memory.available<500Mi,nodefs.available<10%"


@pytest.mark.parametrize("call,message", [
    (lambda: reserved_memory_parse("0:memory=1Gi; 1:memory=2Gi"),
     'numaguard.kubelet.reserved_memory_parse: reserved_memory: failed to convert the NUMA node ID, exptected '
     'integer, got  1 (in " 1:memory=2Gi": the kubelet does not trim spaces in --reserved-memory)'),
    (lambda: reserved_memory_format(42),
     "numaguard.kubelet.reserved_memory_format: reserved_memory must be a flag string, a list of flag strings, or a "
     "list of {numaNode, limits} dicts, got int"),
    (lambda: reserved_resources_parse("hugepages-2Mi=1Gi"),
     'numaguard.kubelet.reserved_resources_parse: reserved resources: cannot reserve "hugepages-2Mi" resource '
     '(hugepages cannot be held back by kube-reserved/system-reserved; that is why a hugepages entry in '
     'reservedMemory can never balance); allowed: cpu, memory, ephemeral-storage, pid'),
    (lambda: reserved_resources_format({"memory": "-1"}),
     'numaguard.kubelet.reserved_resources_format: kube_reserved: resource quantity for "memory" cannot be negative: '
     '-1'),
    (lambda: eviction_hard_parse("memory.available<101%"),
     "numaguard.kubelet.eviction_hard_parse: eviction_hard: eviction percentage threshold memory.available must be "
     "<= 100%: 101%"),
    (lambda: eviction_hard_format(None),
     "numaguard.kubelet.eviction_hard_format: input must be a dict or a flag string, got None"),
    (lambda: reserved_memory_check(FACTS, strategy="spread", reserved_memory="0:memory=1Gi"),
     "numaguard.kubelet.reserved_memory_check: give either reserved_memory (to validate) or a computing strategy "
     "(spread), not both"),
    (lambda: reserved_memory_check({"nodes": "x"}),
     "numaguard.kubelet.reserved_memory_check: numa_topology.nodes must be a list, got str"),
    (lambda: reserved_memory_junit(["h1"]),
     "numaguard.kubelet.reserved_memory_junit: input must be a dict of host name to result, got list"),
])
def test_filter_errors_name_the_filter(call, message):
    with pytest.raises(AnsibleFilterError) as info:
        call()
    assert str(info.value) == message


def test_check_worked_example_and_refusal():
    good = reserved_memory_check(FACTS, kube_reserved="memory=4Gi", system_reserved="memory=1Gi",
                                 reserved_memory="0:memory=3Gi;1:memory=2148Mi", memory_manager_policy="Static")
    assert good["valid"] and good["errors"] == [] and good["memory_capacity_bytes"] == 32 * GI
    bad = reserved_memory_check({"ansible_facts": {"numa_topology": FACTS}}, kube_reserved="memory=4Gi",
                                system_reserved="memory=1Gi", reserved_memory="0:memory=3Gi;1:memory=2Gi",
                                memory_manager_policy="Static")
    assert not bad["valid"]
    assert bad["errors"][0].startswith('[reserved-memory-sum] the total amount "5Gi" of type "memory" is not equal to '
                                       'the value "5220Mi" determined by Node Allocatable feature')
    assert bad["totals"]["memory"]["difference_bytes"] == 100 << 20


def test_check_equation_only_without_topology():
    result = reserved_memory_check(None, kube_reserved="memory=4Gi", system_reserved="memory=1Gi",
                                   reserved_memory="0:memory=3Gi;5:memory=2148Mi", memory_manager_policy="Static",
                                   kubelet_version="1.37")  # given: no "kubelet version unknown" warning
    assert result["valid"] and result["equation_only"] and result["nodes"] == [] and result["warnings"] == []
    computed = reserved_memory_check(None, kube_reserved="memory=4Gi", strategy="node0")
    assert computed["flag"] == "0:memory=4196Mi"


def test_junit_report():
    good = reserved_memory_check(FACTS, strategy="spread", kube_reserved="memory=1Gi")
    bad = reserved_memory_check(FACTS, reserved_memory="0:memory=1Gi", memory_manager_policy="Static")
    xml = reserved_memory_junit({"b-host": bad, "a-host": good, "c-host": "could not read topology"})
    assert xml.startswith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="numaguard.kubelet reserved memory" '
                          'tests="3" failures="1" errors="1">')
    root = ET.fromstring(xml.split("\n", 1)[1])
    cases = root.findall("./testsuite/testcase")
    assert [c.get("name") for c in cases] == ["a-host", "b-host", "c-host"]
    assert cases[0].find("failure") is None
    assert "--reserved-memory=0:memory=562Mi;1:memory=562Mi" in cases[0].find("system-out").text
    failure = cases[1].find("failure")
    assert failure.get("message").startswith("1 error(s): [reserved-memory-sum]")
    assert cases[2].find("error").text == "could not read topology"


def test_check_report_mode_never_raises():
    assert reserved_memory_check(None, errors="report", missing="cannot read x.json") == {
        "valid": False, "errors": ["cannot read x.json"], "warnings": [], "input_error": "cannot read x.json"}
    bad_json = reserved_memory_check("{nodes", errors="report")
    assert bad_json["input_error"].startswith("topology is not valid JSON: ")
    bad_topology = reserved_memory_check('{"nodes": "x"}', errors="report")
    assert bad_topology["errors"] == ["numa_topology.nodes must be a list, got str"]
    import json
    good = reserved_memory_check(json.dumps(FACTS), errors="report", kube_reserved="memory=1Gi", strategy="node0")
    assert good["valid"] and good["flag"] == "0:memory=1124Mi"
    xml = reserved_memory_junit({"h": bad_json})
    assert 'errors="1"' in xml and "cannot check: topology is not valid JSON" in xml


def test_equation_only_has_no_startup_verdict_but_a_known_topology_has_one():
    # issue 21: the start-up verdict needs a machine; the stand-in nodes of the equation are not one
    args = dict(kube_reserved="memory=4Gi", system_reserved="memory=1Gi", eviction_hard={},
                reserved_memory="0:memory=3Gi;5:memory=2Gi", memory_manager_policy="Static", kubelet_version="1.37")
    result = reserved_memory_check(None, **args)
    assert result["valid"] and result["kubelet_startup"] is None
    assert "kubelet-startup" not in [f["rule"] for f in result["findings"]]
    topology = {"nodes": [{"id": 0, "cpus": [0, 1], "memory_total_bytes": 16 << 30, "memory_free_bytes": 1 << 30,
                           "hugepages": {}, "distances": {"0": 10}}]}
    result = reserved_memory_check(topology, errors="report", **args)
    assert result["valid"] is False
    assert result["kubelet_startup"]["verdict"] == "refuses" and result["kubelet_startup"]["manager"] == "memory"
