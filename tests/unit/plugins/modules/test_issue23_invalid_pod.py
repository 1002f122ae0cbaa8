# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 23, case 7: an invalid pod fails the check with Kubernetes' validation message
(``invalid_pod``), distinct from a host that cannot be checked; check_pod.yml then ends with
rc != 0 (tests/e2e/test_issue23_check_pod_invalid.py runs the playbook)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.numaguard.kubelet.plugins.modules import admission_check
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import check_pod_report
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import patch_module_args

TOPOLOGY = {"nodes": [{"id": 0, "cpus": [0, 1], "memory_total_bytes": 8 << 30, "memory_free_bytes": 8 << 30, "hugepages": {},
                       "distances": {"0": 10}}]}
SUBDOMAIN = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
             "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
             "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")
FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def pod(name, cpu):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": cpu, "memory": "1Gi"}}}]}}


def run(capsys, manifest):
    args = {"pod": manifest, "topology": TOPOLOGY, "kubelet_config": {}, "cpu_manager_state": "", "memory_manager_state": "",
            "kubelet_version": "1.31"}
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            admission_check.main()
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("manifest,message", [
    (pod("web\u202eevil", "1"), 'pod: metadata.name: Invalid value: "web\\u202eevil": ' + SUBDOMAIN),
    (pod("web\n", "1"), 'pod: metadata.name: Invalid value: "web\\n": ' + SUBDOMAIN),
    (pod("web", "\uff12"), 'pod: spec.containers[0].resources.limits[cpu]: Invalid value: "\uff12": ' + FORMAT_WRONG),
    ({"kind": "ConfigMap", "metadata": {"name": "x"}}, "pod: kind 'ConfigMap' has no pod to admit"),
])
def test_an_invalid_pod_is_a_failure_with_kubernetes_message(capsys, manifest, message):
    result = run(capsys, manifest)
    assert result["failed"] and result["invalid_pod"] is True
    assert result["msg"].startswith(message), result["msg"]
    assert "\u202e" not in result["msg"]  # never printed raw: it would reverse the rest of the line


def test_a_host_that_cannot_be_checked_is_not_an_invalid_pod(capsys):
    args = {"pod": pod("web", "1"), "root": "/nonexistent-root", "kubelet_version": "1.31"}
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            admission_check.main()
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] and "invalid_pod" not in result


def test_the_report_keeps_invalid_apart_from_cannot_check():
    # registered with failed_when: false, as check_pod.yml does: "failed" is false then
    results = {"h1": {"failed": False, "invalid_pod": True, "msg": "pod: metadata.name: Invalid value: \"A\": x"},
               "h2": {"failed": True, "msg": "cannot read the host"}}
    report = check_pod_report(results, {}, {}, ["h1", "h2"])
    by_host = dict((e["host"], e) for e in report["hosts"])
    assert by_host["h1"]["status"] == "invalid" and by_host["h1"]["summary"].startswith("invalid pod: pod: metadata.name")
    assert by_host["h2"]["status"] == "cannot_check"
    assert report["invalid_pod"] == ["h1"] and report["cannot_check"] == ["h2"]
    assert report["headline"].startswith("invalid pod (the API server would refuse it), checked on no host: ")
