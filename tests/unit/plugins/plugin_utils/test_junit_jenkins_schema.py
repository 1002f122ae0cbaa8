# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The JUnit every playbook writes (validate, discover, check_pod through numa_report's
render_junit; the reserved_memory_junit filter) is valid against Jenkins xunit's JUnit schema
(tests/schemas/junit_jenkins.py) and reads back, host by host, through the schema's decoder.
validate's JUnit put <properties> in each testcase: one schema error per host."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_check import reserved_memory_check
from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_junit import reserved_memory_junit
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import check_pod_report, discover_report, validate_report
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report_render import render_junit
from ansible_collections.numaguard.kubelet.tests.schemas.junit_jenkins import read_junit, schema_errors

GI = 1 << 30


def topo(nodes=2, gib=16, fingerprint="sha256:abcdef0123456789"):
    out = []
    for i in range(nodes):
        out.append({"id": i, "cpus": list(range(i * 4, (i + 1) * 4)), "memory_total_bytes": gib * GI,
                    "memory_free_bytes": gib * GI // 2,
                    "hugepages": {"hugepages-2Mi": {"page_size_bytes": 2 << 20, "total_pages": 0, "free_pages": 0}}})
    return {"nodes": out, "fingerprint": fingerprint}


CONFIG = {"memoryManagerPolicy": "Static", "kubeReserved": {"memory": "1Gi"}, "systemReserved": {"memory": "1Gi"},
          "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}, {"numaNode": 1, "limits": {"memory": "1Gi"}}]}


def _validate_results():
    bad = dict(CONFIG, reservedMemory=[{"numaNode": 0, "limits": {"memory": "1Gi"}}])
    return {
        "ok-1": reserved_memory_check(topo(), kubelet_config=CONFIG, kubelet_version="1.28"),
        "ok-2": reserved_memory_check(topo(), kubelet_config=dict(CONFIG, featureGates={"SystemReservedHugepages": True}),
                                      kubelet_version="1.38"),
        "bad": reserved_memory_check(topo(), kubelet_config=bad, kubelet_version="1.37"),
        "gone": {"valid": False, "errors": ["could not check gone: unreachable"], "warnings": [],
                 "input_error": "unreachable"},
    }


def test_validate_junit_is_valid_and_reads_back():
    results = _validate_results()
    text = render_junit(validate_report(results, {}, {}, sorted(results)))
    assert schema_errors(text) == []
    cases = read_junit(text)
    assert dict((h, c[0]) for h, c in cases.items()) == {"ok-1": "ok", "ok-2": "ok", "bad": "failure", "gone": "error"}
    assert "[reserved-memory-sum]" in cases["bad"][1]
    assert "kubelet assumed: 1.38 (option), feature gates set: SystemReservedHugepages=true" in cases["ok-2"][1]


def test_discover_junit_is_valid():
    topologies = {"h1": topo(), "h2": topo(), "h3": topo(1, fingerprint="sha256:" + "c" * 64), "h4": None}
    groups = dict((h, ["pool"]) for h in topologies)
    text = render_junit(discover_report(topologies, groups, sorted(topologies), failed={"h4": "unreachable"}))
    cases = read_junit(text)
    assert dict((h, c[0]) for h, c in cases.items()) == {"h1": "ok", "h2": "ok", "h3": "failure", "h4": "error"}


def test_check_pod_junit_is_valid():
    def pod(verdict, reason="", cannot=""):
        return {"name": "db", "namespace": "shop", "admitted": verdict == "admitted", "verdict": verdict, "reason": reason,
                "message": "m", "cannot_check": cannot, "numa_nodes": [0] if verdict == "admitted" else []}

    results = {"a": {"pods": [pod("admitted")], "memory": {}}, "b": {"pods": [pod("rejected", "OutOfcpu")], "memory": {}},
               "c": {"pods": [pod("cannot_check", cannot="nvidia.com/gpu: no device inventory")], "memory": {}},
               "d": {"unreachable": True, "msg": "ssh: no route"}}
    cases = read_junit(render_junit(check_pod_report(results, {}, {}, sorted(results), sorted(results))))
    assert dict((h, c[0]) for h, c in cases.items()) == {"a": "ok", "b": "failure", "c": "skipped", "d": "skipped"}


def test_reserved_memory_junit_filter_is_valid():
    results = _validate_results()
    cases = read_junit(reserved_memory_junit(results))
    assert dict((h, c[0]) for h, c in cases.items()) == {"ok-1": "ok", "ok-2": "ok", "bad": "failure", "gone": "error"}


def test_the_schema_refuses_properties_in_a_testcase():
    text = ('<testsuites><testsuite name="s" tests="1" failures="0" errors="0"><testcase name="h"><properties>'
            '<property name="a" value="b"/></properties></testcase></testsuite></testsuites>')
    assert len(schema_errors(text)) == 1
