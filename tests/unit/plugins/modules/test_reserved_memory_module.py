# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""numaguard.kubelet.reserved_memory module: options, results, failure modes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from ansible.module_utils.common import warnings as ansible_warnings

from ansible_collections.numaguard.kubelet.plugins.modules import reserved_memory
from ansible_collections.numaguard.kubelet.tests.fleet import topologies
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import patch_module_args

GI = 1 << 30
TOPOLOGY = {
    "nodes": [
        {"id": 0, "cpus": [0, 1], "memory_total_bytes": 16 * GI, "memory_free_bytes": GI, "hugepages": {},
         "distances": {"0": 10, "1": 20}},
        {"id": 1, "cpus": [2, 3], "memory_total_bytes": 16 * GI, "memory_free_bytes": GI, "hugepages": {},
         "distances": {"0": 20, "1": 10}},
    ],
}


@pytest.fixture(autouse=True)
def _fresh_warnings():
    # AnsibleModule keeps warnings in a process-global registry; each real module run is its own process.
    ansible_warnings._global_warnings.clear()
    yield
    ansible_warnings._global_warnings.clear()


def warnings_of(result):
    # The registered result's ``warnings`` is filled by Ansible from module.warn(); in a unit-test
    # process that may be routed to the controller's display instead, so read the findings.
    return [f["text"] for f in result["findings"] if f["severity"] == "warning"]


def run(args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            reserved_memory.main()


def result_of(capsys):
    return json.loads(capsys.readouterr().out)


def test_worked_example(capsys):
    run({"topology": TOPOLOGY, "kube_reserved": "memory=4Gi", "system_reserved": {"memory": "1Gi"},
         "reserved_memory": "0:memory=3Gi;1:memory=2148Mi", "memory_manager_policy": "Static"})
    result = result_of(capsys)
    assert result["valid"] is True and result["changed"] is False and not result.get("failed")
    assert result["flag"] == "0:memory=3Gi;1:memory=2148Mi"
    assert result["totals"]["memory"]["node_allocatable"] == "5220Mi"
    assert [n["guaranteed_memory"] for n in result["nodes"]] == ["13Gi", "14236Mi"]


def test_invalid_fails_with_every_error(capsys):
    run({"topology": TOPOLOGY, "kube_reserved": "memory=4Gi", "system_reserved": "memory=1Gi",
         "reserved_memory": "0:memory=3Gi,hugepages-1Gi=1Gi;1:memory=2Gi", "memory_manager_policy": "Static"})
    result = result_of(capsys)
    assert result["failed"] is True
    assert result["msg"].startswith('reservedMemory is invalid (3 error(s)): [reserved-memory-hugepage-size] '
                                    'reservedMemory for NUMA node 0 names hugepages-1Gi')
    assert [f["rule"] for f in result["findings"]] == ["reserved-memory-hugepage-size", "reserved-memory-sum",
                                                       "reserved-memory-hugepages"]


def test_fail_on_invalid_false_reports(capsys):
    run({"topology": TOPOLOGY, "kube_reserved": "memory=4Gi", "system_reserved": "memory=1Gi",
         "reserved_memory": "0:memory=3Gi;1:memory=2Gi", "memory_manager_policy": "Static", "fail_on_invalid": False})
    result = result_of(capsys)
    assert result["valid"] is False and not result.get("failed")
    assert "100Mi short" in result["errors"][0]


def test_strategy_defaults_to_static_and_warnings_are_ansible_warnings(capsys):
    run({"topology": TOPOLOGY, "kube_reserved": "memory=4Gi", "eviction_hard": "nodefs.available<10%",
         "strategy": "spread"})
    result = result_of(capsys)
    assert result["memory_manager_policy"] == "Static"
    assert result["flag"] == "0:memory=2Gi;1:memory=2Gi"
    assert warnings_of(result)[0].startswith("[eviction-defaults-dropped]")


def test_bad_option_values_fail_cleanly(capsys):
    run({"topology": {"nodes": [{"id": "x"}]}})
    assert result_of(capsys)["msg"].startswith("nodes[0].id must be an integer")
    run({"topology": TOPOLOGY, "strategy": "spread", "split_unit": "1MB"})
    assert result_of(capsys)["msg"] == ("split_unit: quantity '1MB' has an unknown suffix 'MB' (expected one of Ki, Mi, "
                                        "Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as e3; suffixes "
                                        "are case-sensitive)")


def _fleet_tree(name, root):
    topologies.write_tree(name, root, force=True)


def test_discovers_under_root_and_reads_kubelet_config(tmp_path, capsys):
    root = str(tmp_path / "host")
    _fleet_tree("intel-2s", root)
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                      "memoryManagerPolicy: Static\nkubeReserved:\n  memory: 4Gi\nsystemReserved:\n  memory: 1Gi\n"
                      "reservedMemory:\n- numaNode: 0\n  limits:\n    memory: 3Gi\n- numaNode: 1\n  limits:\n"
                      "    memory: 2148Mi\n")
    run({"root": root, "kubelet_config": str(config), "memory_manager_state": str(tmp_path / "missing")})
    result = result_of(capsys)
    assert result["valid"] is True, result
    assert result["memory_manager_policy"] == "Static"
    expected = ("[state-file] memory_manager_state %s does not exist: the kubelet will start with a fresh state"
                % (tmp_path / "missing"))
    assert warnings_of(result) == [expected]
    assert result["topology_fingerprint"].startswith("sha256:")


def test_reports_the_kubelet_version_and_gates_assumed(capsys):
    run({"topology": TOPOLOGY, "kube_reserved": "memory=4Gi", "system_reserved": {"memory": "1Gi"},
         "reserved_memory": "0:memory=3Gi;1:memory=2148Mi", "memory_manager_policy": "Static"})
    result = result_of(capsys)
    assert result["kubelet_version"] == "1.37" and result["kubelet_version_source"] == "default"
    assert result["feature_gates"]["SystemReservedHugepages"] is False
    run({"topology": TOPOLOGY, "kube_reserved": "memory=4Gi", "system_reserved": {"memory": "1Gi"},
         "reserved_memory": "0:memory=3Gi;1:memory=2148Mi", "memory_manager_policy": "Static",
         "kubelet_version": "v1.35.2"})
    result = result_of(capsys)
    assert result["kubelet_version"] == "v1.35.2" and result["kubelet_version_source"] == "option"
    run({"topology": TOPOLOGY, "kubelet_version": "1.2"})
    assert result_of(capsys)["msg"] == "kubelet_version: 1.2 is older than the oldest release this collection knows (1.26)"
