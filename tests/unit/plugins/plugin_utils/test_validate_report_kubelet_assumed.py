# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""validate.yml's report names the kubelet version and gates each host was checked for: once per
distinct assumption (one line for a fleet that shares it, however many hosts), per host in the
JSON model and in each JUnit testcase's system-out; existing JUnit content unchanged."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import xml.etree.ElementTree as ET

from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_check import reserved_memory_check
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import validate_report
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report_render import render_junit, render_text

GI = 1 << 30
FACTS = {"nodes": [{"id": 0, "cpus": [0, 1], "memory_total_bytes": 16 * GI, "memory_free_bytes": GI}]}
CONFIG = {"memoryManagerPolicy": "Static", "kubeReserved": {"memory": "1Gi"},
          "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}]}


def _assumed(text):
    return [t for t in text if t.startswith("kubelet assumed: ")]


def test_fifty_hosts_sharing_the_default_get_one_line():
    hosts = ["h%02d" % i for i in range(50)]
    results = dict((h, reserved_memory_check(FACTS, kubelet_config=CONFIG, errors="report")) for h in hosts)
    report = validate_report(results, {}, {}, hosts)
    assert _assumed(render_text(report)) == [
        "kubelet assumed: 1.37 (version unknown: the newest released), feature gates: the release's defaults "
        "-- all 50 host(s)"]
    assert report["kubelet"] == [{"version": "1.37", "source": "default", "feature_gates_set": {}, "hosts": hosts}]
    assert report["hosts"][7]["kubelet"] == {"version": "1.37", "source": "default", "feature_gates_set": {}}


def test_an_assumed_version_alone_does_not_make_a_valid_host_a_warning():
    """The default-version warning is said once per run; a host whose settings raise nothing stays ok,
    and one whose settings raise a warning of their own is still a warning."""
    quiet = reserved_memory_check(FACTS, kubelet_config=CONFIG, errors="report")
    noisy = reserved_memory_check(FACTS, kubelet_config=dict(
        CONFIG, memoryManagerPolicy="None", reservedMemory=[{"numaNode": 0, "limits": {"memory": "2Gi"}}]), errors="report")
    assert quiet["valid"] and quiet["warnings"] == quiet["kubelet_warnings"] != []
    assert len(noisy["warnings"]) > len(noisy["kubelet_warnings"])
    report = validate_report({"a": quiet, "b": noisy}, {}, {}, ["a", "b"])
    assert [h["status"] for h in report["hosts"]] == ["ok", "warning"]
    assert any(quiet["kubelet_warnings"][0] in line for line in render_text(report))


def test_mixed_versions_and_gates_one_line_each():
    gated = dict(CONFIG, featureGates={"SystemReservedHugepages": True})
    results = {"a": reserved_memory_check(FACTS, kubelet_config=CONFIG, kubelet_version="1.28"),
               "b": reserved_memory_check(FACTS, kubelet_config=CONFIG, kubelet_version="1.28"),
               "c": reserved_memory_check(FACTS, kubelet_config=gated, kubelet_version="1.38"),
               "d": {"valid": False, "errors": ["x"], "warnings": [], "input_error": "x"}}
    report = validate_report(results, {}, {}, ["a", "b", "c", "d"])
    assert _assumed(render_text(report)) == [
        "kubelet assumed: 1.28 (kubelet_numa_kubelet_version), feature gates: the release's defaults -- 2 host(s): a, b",
        "kubelet assumed: 1.38 (kubelet_numa_kubelet_version), feature gates: SystemReservedHugepages=true "
        "(others: the release's defaults) -- 1 host(s): c"]
    root = ET.fromstring(render_junit(report).split("\n", 1)[1])
    cases = dict((c.get("name"), c) for c in root.iter("testcase"))
    # in system-out: Jenkins' JUnit schema allows no properties in a testcase
    assert root.find(".//properties") is None
    assert "kubelet assumed: 1.38 (option), feature gates set: SystemReservedHugepages=true" in cases["c"].findtext("system-out")
    assert "kubelet assumed: 1.28 (option), feature gates set: none" in cases["a"].findtext("system-out")
    assert "kubelet assumed" not in (cases["d"].findtext("system-out") or "")  # a host that could not be checked assumed nothing
