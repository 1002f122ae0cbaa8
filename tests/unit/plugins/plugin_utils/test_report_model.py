# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one report model and its renderings: text at scale, JSON, JUnit, Prometheus, HTML, classes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import xml.etree.ElementTree as ET

import pytest
import yaml

from ansible_collections.numaguard.kubelet.plugins.module_utils._report.classes import hardware_class
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import check_pod_report, discover_report, human_bytes, regroup, validate_report
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report_html import render_html
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report_render import (
    flag_with_units,
    render_classes_inventory,
    render_junit,
    render_prometheus,
    render_text,
)

GI = 1 << 30


def topo(nodes=2, cpus_per_node=4, gib=16, pages_1g=0, fingerprint="sha256:abcdef0123456789"):
    out = []
    for i in range(nodes):
        huge = {"hugepages-1Gi": {"page_size_bytes": GI, "total_pages": pages_1g, "free_pages": pages_1g},
                "hugepages-2Mi": {"page_size_bytes": 2 << 20, "total_pages": 0, "free_pages": 0}}
        out.append({"id": i, "cpus": list(range(i * cpus_per_node, (i + 1) * cpus_per_node)),
                    "memory_total_bytes": gib * GI, "memory_free_bytes": gib * GI // 2, "hugepages": huge})
    return {"nodes": out, "fingerprint": fingerprint}


def test_hardware_class_names_are_readable_group_names():
    assert hardware_class(topo(2, 48, pages_1g=16)) == {"name": "numa_2n_96c_1g", "fingerprint": "abcdef01",
                                                        "group": "numa_2n_96c_1g_abcdef01"}
    assert hardware_class(topo(1, 4))["name"] == "numa_1n_4c_nohp"


def test_human_units():
    assert human_bytes(16 * GI + GI // 2) == "16.5 GiB"
    assert human_bytes(1022 << 20) == "1022.0 MiB"
    assert flag_with_units("--reserved-memory=0:memory=1075038415;1:memory=1022Mi") == \
        "--reserved-memory=0:memory=1075038415;1:memory=1022Mi (node 0 1.0 GiB)"


def _validate_fleet_results(count):
    return _validate_fleet(count, results_only=True)


def _validate_fleet(count, results_only=False):
    results, topologies, groups = {}, {}, {}
    for i in range(count):
        host = "h%03d" % i
        topologies[host] = topo(fingerprint="sha256:%s" % ("a" * 64 if i % 2 else "b" * 64))
        groups[host] = ["workers"]
        results[host] = {"valid": i != 7, "errors": [] if i != 7 else ["[reserved-memory-sum] not balanced"],
                         "warnings": ["[same] a 600 character warning " + "x" * 560],
                         "flag": "0:memory=1Gi;1:memory=1075038415",
                         "nodes": [{"id": 0, "memory_total_bytes": 16 * GI, "hugepages_bytes": 0,
                                    "reserved_memory_bytes": GI, "guaranteed_memory_bytes": 15 * GI}]}
    if results_only:
        return results
    return validate_report(results, topologies, groups, sorted(results))


def test_text_at_scale_is_one_screen():
    report = _validate_fleet(50)
    lines = render_text(report)
    assert lines[0] == "reservedMemory valid on 49 of 50 host(s): 1 invalid, 0 could not be checked"
    assert len(lines) <= 14, "\n".join(lines)
    # identical warnings once, with their hosts
    assert sum(1 for line in lines if "a 600 character warning" in line) == 1
    assert any(line.startswith("  - [50 hosts: h000, h001, h002 and 47 more \u2014 see the JSON]") for line in lines)
    # the host that needs action comes first, with why
    assert lines[2].startswith("need action: 1 of 50 host(s) (1 invalid)")
    assert lines[3] == "  h007: [reserved-memory-sum] not balanced"
    assert any("h007" in line and "INVALID" in line for line in lines)
    assert any("(node 1 1.0 GiB)" in line for line in lines)


def test_text_small_fleet_names_every_host_and_groups_identical_answers():
    lines = render_text(_validate_fleet(4))
    text = "\n".join(lines)
    assert all("h%03d" % i in text for i in range(4))
    assert lines[2] == "need action: none (0 of 4 host(s))"
    assert any(line.startswith("  2 WARNING: h000, h002 -- --reserved-memory=") for line in lines), lines


def test_identical_hosts_are_one_answer_and_a_tie_pictures_the_healthy_one():
    report = _validate_fleet(10)  # h007 invalid; the rest valid, with the same warning
    by_class = dict((c["group"], c) for c in report["classes"])
    answers = dict((a["id"], a) for a in report["answers"])
    assert [(a["status"], a["count"]) for a in report["answers"]] == [("invalid", 1), ("warning", 5), ("warning", 4)]
    assert report["needs_action"] == {"count": 1, "hosts": ["h007"], "answers": ["a1"], "outliers": []}
    odd = by_class["numa_2n_8c_nohp_aaaaaaaa"]
    assert answers[odd["picture"]["answer"]]["status"] == "warning" and odd["counts"] == {"invalid": 1, "warning": 4}
    # one invalid and one valid host of a class: the valid one is the class's picture, the invalid one comes first
    tie = validate_report(dict((h, r) for h, r in _validate_fleet_results(10).items() if h in ("h006", "h007")),
                          {}, {}, ["h007", "h006"])
    (cls,) = tie["classes"]
    assert [a["hosts"] for a in tie["answers"]] == [["h007"], ["h006"]]
    assert cls["picture"]["host"] == "h006" and tie["answers"][0]["needs_action"]


def test_junit_classname_timestamps_and_warnings():
    xml = render_junit(_validate_fleet(3))
    root = ET.fromstring(xml.split("\n", 1)[1])
    suite = root.find("testsuite")
    assert suite.get("timestamp") and suite.get("tests") == "3" and suite.get("failures") == "0"
    case = suite.find("testcase")
    assert case.get("classname") == "validate.workers"
    assert "WARNING: [same]" in case.find("system-out").text


def test_prometheus_textfile():
    text = render_prometheus(_validate_fleet(2))
    assert '# TYPE numaguard_numa_memory_reserved_bytes gauge' in text
    assert 'numaguard_numa_memory_reserved_bytes{host="h000",hw_class="numa_2n_8c_nohp_bbbbbbbb",' \
           'fingerprint="bbbbbbbb",node="0"} 1073741824' in text
    for line in text.splitlines():
        assert line.startswith("#") or line.rsplit(" ", 1)[1].isdigit(), line


def _pod(verdict, reason="", message="", cannot="", cost=None):
    pod = {"name": "db", "namespace": "shop", "admitted": verdict == "admitted", "verdict": verdict, "reason": reason,
           "message": message, "cannot_check": cannot, "numa_nodes": [0] if verdict == "admitted" else []}
    if cost:
        pod["kubelet_cost"] = cost
    return pod


def test_check_pod_headline_separates_rejected_and_unchecked():
    memory = {"0": {"memory": {"total": 16 * GI, "systemReserved": GI, "allocatable": 15 * GI, "reserved": 4 * GI,
                               "free": 11 * GI}}}
    results = {
        "a": {"pods": [_pod("admitted")], "memory": memory},
        "b": {"pods": [_pod("rejected", "OutOfcpu", "Node didn't have enough resource: cpu, requested: 8000, "
                            "used: 0, capacity: 4000")], "memory": {}},
        "c": {"pods": [_pod("rejected", "OutOfcpu", "x")], "memory": {}},
        "d": {"pods": [_pod("cannot_check", cannot="nvidia.com/gpu: no device inventory")], "memory": {}},
        "e": {"failed": True, "msg": "memory_manager_state: could not restore state from checkpoint"},
        "f": {"pods": [_pod("admitted", cost={"estimated_seconds": 900.0, "warning": "the kubelet would spend 15 minutes"})],
              "memory": memory},
    }
    report = check_pod_report(results, {}, {}, sorted(results))
    assert report["headline"] == ("admitted on 2, rejected on 2 (OutOfcpu 2), could not check 2 "
                                  "(memory_manager_state 1, nvidia.com/gpu 1) (of 6 host(s))")
    hosts = dict((e["host"], e) for e in report["hosts"])
    assert hosts["a"]["numa"][0]["allocated"] == 4 * GI
    assert report["warnings"] == [{"text": "shop/db: the kubelet would spend 15 minutes", "count": 1, "hosts": ["f"]}]
    junit = ET.fromstring(render_junit(report).split("\n", 1)[1]).find("testsuite")
    assert (junit.get("failures"), junit.get("skipped")) == ("2", "2")
    html = render_html(report)
    assert "OutOfcpu" in html and "<script" not in html and "http" not in html.replace("http-equiv", "")


def test_html_escapes_and_draws_bars():
    report = _validate_fleet(2)
    for answer in report["answers"]:
        answer["errors"] = ["<script>alert(1)</script>"]
    html = render_html(report)
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert html.count('class="node"') == 2 and 'class="r" style="width:6.250%"' in html


def test_discover_report_and_classes_inventory():
    topologies = {"h1": topo(pages_1g=4), "h2": topo(pages_1g=4), "h3": topo(1, 4, fingerprint="sha256:" + "c" * 64),
                  "h4": None}
    groups = {"h1": ["pool"], "h2": ["pool"], "h3": ["pool"], "h4": ["pool"]}
    report = discover_report(topologies, groups, ["h1", "h2", "h3", "h4"], failed={"h4": "unreachable"})
    assert report["headline"].startswith("NUMA topology of 4 host(s): 3 discovered, 1 failed, 2 hardware class(es)")
    statuses = dict((e["host"], e["status"]) for e in report["hosts"])
    assert statuses == {"h1": "ok", "h2": "ok", "h3": "differs", "h4": "error"}
    inventory = yaml.safe_load(render_classes_inventory(report))
    assert inventory["all"]["children"]["numa_2n_8c_1g_abcdef01"]["hosts"] == {"h1": {}, "h2": {}}
    regroup(report, {"h1": "numa_9n_9c_nohp_99999999"})
    assert dict((c["group"], c["hosts"]) for c in report["classes"])["numa_9n_9c_nohp_99999999"] == ["h1"]
    json.dumps(report)


def test_bad_input_names_the_host():
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import ReportError
    with pytest.raises(ReportError, match="host h1"):
        discover_report({"h1": {"nodes": "x"}}, {}, ["h1"])


def test_check_pod_report_names_a_resize():
    message = 'Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"'
    resize = {"of": {"uid": "u-1", "namespace": "default", "name": "web", "matched_by": "uid", "sources": []},
              "verdict": "infeasible", "reason": "Infeasible", "message": message, "kubelet_version": "1.37",
              "gates": {"InPlacePodVerticalScalingExclusiveCPUs": False}, "checked": [], "not_simulated": []}
    pod = dict(_pod("rejected", "Infeasible", message), resize=resize)
    report = check_pod_report({"a": {"pods": [pod], "memory": {}}}, {}, {}, ["a"])
    (entry,) = report["hosts"]
    assert entry["status"] == "rejected"
    assert entry["pods"][0]["resize"]["verdict"] == "infeasible"
    assert entry["details"] == ["shop/db resize of default/web: infeasible (kubelet 1.37): Infeasible: " + message]


def test_check_pod_report_names_an_unreachable_host():
    """A result registered with ignore_unreachable (the host never answered) says unreachable, with the message."""
    results = {"a": {"unreachable": True, "changed": False, "msg": "ssh: connect to host 10.0.0.1 port 22: Connection refused"},
               "b": {"pods": [_pod("admitted")], "memory": {}}}
    report = check_pod_report(results, {}, {}, ["a", "b"], ["a", "b"])
    assert report["headline"] == "admitted on 1, rejected on 0, could not check 1 (unreachable 1) (of 2 host(s))"
    entry = [e for e in report["hosts"] if e["host"] == "a"][0]
    assert entry["errors"] == ["unreachable: ssh: connect to host 10.0.0.1 port 22: Connection refused"]
