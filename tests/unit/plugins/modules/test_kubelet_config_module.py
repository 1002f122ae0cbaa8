# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""kubelet_config module in-process (patch_module_args)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends import kubelet_config as kubelet_config_backend
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s import versions
from ansible_collections.numaguard.kubelet.plugins.modules import kubelet_config
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import run_main as run

HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
TOPOLOGY = {"nodes": [
    {"id": 0, "cpus": [0, 1], "memory_total_bytes": 8 << 30, "memory_free_bytes": 8 << 30, "hugepages": {}, "distances": {"0": 10, "1": 21}},
    {"id": 1, "cpus": [2, 3], "memory_total_bytes": 8 << 30, "memory_free_bytes": 8 << 30, "hugepages": {}, "distances": {"0": 21, "1": 10}},
]}


@pytest.fixture
def paths(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "root").mkdir()
    (tmp_path / "config.yaml").write_text(HEADER + "cpuManagerPolicy: none\n")
    (tmp_path / "root" / "cpu_manager_state").write_text('{"policyName":"none","defaultCpuSet":"","checksum":1}')
    return {"config": str(tmp_path / "config.yaml"), "config_dir": str(tmp_path / "conf.d"), "root_dir": str(tmp_path / "root"),
            "kubelet_version": "1.31", "topology": TOPOLOGY}


def test_check_mode_writes_nothing_then_write_then_idempotent(capsys, paths):
    args = dict(paths, settings={"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"})
    dropin = os.path.join(paths["config_dir"], "50-numaguard-numa.conf")
    result = run(kubelet_config, capsys, dict(args, _ansible_check_mode=True, _ansible_diff=True))
    assert result["changed"] and result["needs_write"] and not os.path.exists(dropin)
    assert result["diff"]["after"].endswith('reservedSystemCPUs: "0"\n')
    assert result["reset"] == {"cpu_manager_state": True, "memory_manager_state": False,
                               "reasons": ["cpuManagerPolicy 'static' differs from the cpu_manager_state checkpoint policy 'none'"]}
    assert result["flags_string"] == "--cpu-manager-policy=static --reserved-cpus=0"
    result = run(kubelet_config, capsys, args)
    assert result["changed"] and os.path.exists(dropin)
    assert result["config_mode"] == "dropin"
    result = run(kubelet_config, capsys, dict(args, backup=True))
    assert not result["changed"] and "backup_file" not in result


def test_merge_mode_backup(capsys, paths):
    result = run(kubelet_config, capsys, dict(paths, mode="merge", backup=True, settings={"topologyManagerPolicy": "restricted"}))
    assert result["changed"] and result["path"] == paths["config"]
    assert os.path.exists(result["backup_file"])
    with open(paths["config"]) as handle:
        assert "topologyManagerPolicy: restricted" in handle.read()


def test_validation_failure_reports_every_error_and_writes_nothing(capsys, paths):
    result = run(kubelet_config, capsys, dict(paths, settings={"cpuManagerPolicy": "static", "reservedSystemCPUs": "0-7",
                                                               "topologyManagerPolicyOptions": {"max-allowable-numa-nodes": 2}}))
    assert result["failed"]
    assert result["errors"] == [
        'topologyManagerPolicyOptions.max-allowable-numa-nodes: the minimum value of "max-allowable-numa-nodes" '
        'should not be less than 8; use a whole number >= 8',
        "reservedSystemCPUs: reserved-cpus: 0-7 is not a subset of online-cpus: 0-3; CPUs 4-7 do not exist or are offline on this host",
    ]
    assert result["msg"].startswith("invalid kubelet settings: ")
    assert os.listdir(paths["config_dir"]) == []


def test_bad_topology_fact_and_bad_config(capsys, paths, tmp_path):
    result = run(kubelet_config, capsys, dict(paths, topology={"nodes": "x"}, settings={"topologyManagerPolicy": "restricted"}))
    assert result["failed"] and "set validate_host: false to skip the host checks" in result["msg"]
    (tmp_path / "config.yaml").write_text("kind: KubeletConfiguration\n")
    result = run(kubelet_config, capsys, dict(paths, settings={"topologyManagerPolicy": "restricted"}))
    assert result["failed"]
    assert result["msg"] == "kubelet config file %s: 'apiVersion' is missing (expected apiVersion: kubelet.config.k8s.io/v1beta1)" % paths["config"]


def test_reserved_memory_rules_come_from_the_reservation_validation(capsys, paths):
    wrong = {"memoryManagerPolicy": "Static", "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}]}
    result = run(kubelet_config, capsys, dict(paths, settings=wrong))
    assert result["failed"]
    assert result["errors"] and all(e.startswith("reservedMemory: [") for e in result["errors"])
    assert "100Mi" in " ".join(result["errors"])  # kube 0 + system 0 + default hard eviction 100Mi
    right = {"memoryManagerPolicy": "Static", "reservedMemory": [{"numaNode": 0, "limits": {"memory": "100Mi"}}]}
    result = run(kubelet_config, capsys, dict(paths, settings=right, _ansible_check_mode=True))
    assert not result.get("failed"), result
    assert result["reset"]["memory_manager_state"] is False  # no memory_manager_state file yet


def test_dropin_refused_when_running_kubelet_has_no_config_dir(capsys, paths, monkeypatch):
    monkeypatch.setattr(kubelet_config_backend, "locate_kubelet", lambda root: {
        "running": True, "pid": 42, "source": "cmdline", "config": paths["config"], "config_dir": None, "root_dir": paths["root_dir"]})
    args = dict(paths, settings={"topologyManagerPolicy": "restricted"})
    del args["config_dir"]
    result = run(kubelet_config, capsys, args)
    assert result["failed"]
    assert result["msg"].startswith("the running kubelet (pid 42) was started without --config-dir, so it ignores drop-in files; "
                                    "add --config-dir=/etc/kubernetes/kubelet.conf.d to its flags first")
    result = run(kubelet_config, capsys, dict(args, mode="merge", _ansible_check_mode=True))
    assert not result.get("failed") and result["path"] == paths["config"]


def test_kubelet_version_detected_from_the_binary(capsys, paths, monkeypatch):
    monkeypatch.setattr(versions, "host_kubelet_version", lambda module: "v1.30.2")
    args = dict(paths, settings={"topologyManagerPolicy": "restricted", "topologyManagerPolicyOptions": {"max-allowable-numa-nodes": 9}})
    del args["kubelet_version"]
    result = run(kubelet_config, capsys, args)
    assert result["failed"] and "kubelet 1.30 does not know it (added in 1.31)" in result["msg"]


def test_warns_about_flags_that_override_the_files(capsys, paths, monkeypatch):
    monkeypatch.setattr(kubelet_config_backend, "locate_kubelet", lambda root: {
        "running": True, "pid": 7, "source": "cmdline", "config": paths["config"], "config_dir": paths["config_dir"],
        "root_dir": paths["root_dir"], "flags": {"cpu-manager-policy": "none", "config": paths["config"]}})
    result = run(kubelet_config, capsys, dict(paths, settings={"topologyManagerPolicy": "restricted"}, _ansible_check_mode=True))
    texts = [w if isinstance(w, str) else w.get("event", w).get("msg", "") for w in result.get("warnings", [])]
    assert any(t.startswith("the running kubelet (pid 7) sets --cpu-manager-policy on its command line") for t in texts), result
