# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Locating the kubelet's files (running kubelet's flags, else defaults) and state summaries."""

from __future__ import annotations

import os

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.checkpoint import CPUManagerCheckpoint, dump_cpu_manager_state
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.checkpoint import MemoryManagerCheckpoint, dump_memory_manager_state
from ansible_collections.numaguard.kubelet.plugins.module_utils._host import kubelet_paths
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.kubelet_paths import (
    KubeletPathsError,
    kubelet_facts,
    locate_kubelet,
    parse_kubelet_cmdline,
    read_state_text,
)


def _proc(root, pid, argv, cwd=None):
    pdir = root / "proc" / str(pid)
    pdir.mkdir(parents=True)
    (pdir / "cmdline").write_bytes(b"\x00".join(a.encode() for a in argv) + b"\x00")
    # a root process whose executable is named like its argv[0] (only a root kubelet binary is trusted)
    (pdir / "status").write_text("Uid:\t0\t0\t0\t0\n")
    os.symlink("/usr/bin/" + os.path.basename(argv[0]), str(pdir / "exe"))
    if cwd:
        os.symlink(cwd, str(pdir / "cwd"))


def _file(root, path, content=""):
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content)


@pytest.mark.parametrize("argv,flags", [
    (["kubelet"], {}),
    (["/usr/bin/kubelet", "--config=/a.yaml", "--root-dir", "/data/kubelet", "--v=2"],
     {"config": "/a.yaml", "root-dir": "/data/kubelet", "v": "2"}),
    (["kubelet", "--config", "/a.yaml", "--config=/b.yaml"], {"config": "/b.yaml"}),
    (["kubelet", "--fail-swap-on", "--config-dir", "/d"], {"fail-swap-on": "true", "config-dir": "/d"}),
    (["kubelet", "positional", "--", "--config=/x"], {"config": "/x"}),
    (["kubelet", "--config"], {"config": "true"}),
    # policy options given as separate words must not be mistaken for boolean flags
    (["kubelet", "--topology-manager-policy-options", "prefer-closest-numa-nodes=true",
      "--cpu-manager-policy-options", "full-pcpus-only=true"],
     {"topology-manager-policy-options": "prefer-closest-numa-nodes=true",
      "cpu-manager-policy-options": "full-pcpus-only=true"}),
])
def test_parse_kubelet_cmdline(argv, flags):
    assert parse_kubelet_cmdline(argv) == flags


def test_defaults_when_no_kubelet_runs(tmp_path):
    (tmp_path / "proc").mkdir()
    _proc(tmp_path, 1, ["/sbin/init"])
    _proc(tmp_path, 2, ["/usr/bin/kubelet-helper", "--config=/nope"])
    _file(tmp_path, "/etc/kubernetes/kubelet-config.yaml", "kind: KubeletConfiguration\n")
    (tmp_path / "var/lib/kubelet").mkdir(parents=True)
    assert locate_kubelet(str(tmp_path)) == {
        "running": False, "pid": None, "pids": [], "ignored": [], "flags": {}, "source": "default",
        "config": "/etc/kubernetes/kubelet-config.yaml", "config_exists": True,
        "config_dir": None, "config_dir_exists": False,
        "root_dir": "/var/lib/kubelet", "root_dir_exists": True}


def test_default_order_prefers_kubeadm_location(tmp_path):
    _file(tmp_path, "/etc/kubernetes/kubelet-config.yaml")
    _file(tmp_path, "/var/lib/kubelet/config.yaml")
    (tmp_path / "etc/kubernetes/kubelet.conf.d").mkdir(parents=True)
    found = locate_kubelet(str(tmp_path))
    assert (found["config"], found["config_dir"], found["config_dir_exists"]) == \
        ("/var/lib/kubelet/config.yaml", "/etc/kubernetes/kubelet.conf.d", True)


def test_running_kubelet_flags_win(tmp_path):
    _file(tmp_path, "/var/lib/kubelet/config.yaml")  # a default that the running kubelet does NOT use
    _proc(tmp_path, 4242, ["/usr/local/bin/kubelet", "--kubeconfig=/etc/kubernetes/kubelet.conf",
                           "--config=/etc/k8s/kubelet.yaml", "--config-dir", "/etc/k8s/kubelet.d",
                           "--root-dir=/data/kubelet", "--reserved-memory", "0:memory=1Gi", "--v=4"])
    _proc(tmp_path, 77, ["bash"])
    _file(tmp_path, "/etc/k8s/kubelet.yaml")
    found = locate_kubelet(str(tmp_path))
    assert found == {
        "running": True, "pid": 4242, "pids": [4242], "ignored": [], "source": "cmdline",
        "flags": {"config": "/etc/k8s/kubelet.yaml", "config-dir": "/etc/k8s/kubelet.d",
                  "kubeconfig": "/etc/kubernetes/kubelet.conf", "reserved-memory": "0:memory=1Gi",
                  "root-dir": "/data/kubelet"},
        "config": "/etc/k8s/kubelet.yaml", "config_exists": True,
        "config_dir": "/etc/k8s/kubelet.d", "config_dir_exists": False,
        "root_dir": "/data/kubelet", "root_dir_exists": False}


def test_running_kubelet_without_config_reads_no_file(tmp_path):
    _file(tmp_path, "/var/lib/kubelet/config.yaml")
    _proc(tmp_path, 10, ["kubelet", "--cpu-manager-policy=static"])
    found = locate_kubelet(str(tmp_path))
    assert (found["config"], found["config_exists"], found["root_dir"], found["flags"]) == \
        (None, False, "/var/lib/kubelet", {"cpu-manager-policy": "static"})


def test_relative_config_resolved_against_kubelet_cwd(tmp_path):
    _proc(tmp_path, 10, ["kubelet", "--config=conf/kubelet.yaml"], cwd="/opt/k8s")
    assert locate_kubelet(str(tmp_path))["config"] == "/opt/k8s/conf/kubelet.yaml"


def test_several_kubelets_lowest_pid_reported(tmp_path):
    _proc(tmp_path, 300, ["kubelet", "--root-dir=/a"])
    _proc(tmp_path, 20, ["kubelet", "--root-dir=/a"])
    found = locate_kubelet(str(tmp_path))
    assert (found["pid"], found["pids"], found["root_dir"]) == (20, [20, 300], "/a")


def test_unreadable_and_empty_cmdlines_are_skipped(tmp_path):
    (tmp_path / "proc" / "5").mkdir(parents=True)           # no cmdline file (process exited)
    (tmp_path / "proc" / "6").mkdir(parents=True)
    (tmp_path / "proc" / "6" / "cmdline").write_bytes(b"")  # kernel thread
    (tmp_path / "proc" / "7" / "cmdline").mkdir(parents=True)  # unreadable
    assert locate_kubelet(str(tmp_path))["running"] is False


def test_under_root():
    assert kubelet_paths.under_root("/", "/var/lib/kubelet") == "/var/lib/kubelet"
    assert kubelet_paths.under_root("/snap", "/var/lib/kubelet") == "/snap/var/lib/kubelet"


def _cpu_state(version=2):
    return dump_cpu_manager_state(CPUManagerCheckpoint(policy_name="static", default_cpu_set="0-7"), version)


def _mem_state(version=1):
    return dump_memory_manager_state(MemoryManagerCheckpoint(policy_name="None"), version)


def test_state_files_summaries(tmp_path):
    _file(tmp_path, "/var/lib/kubelet/cpu_manager_state", _cpu_state())
    facts = kubelet_facts(str(tmp_path))
    assert facts["state_files"] == {
        "cpu_manager_state": {"path": "/var/lib/kubelet/cpu_manager_state", "present": True,
                              "policy_name": "static", "version": "v2", "valid": True,
                              "checksum_ok": True, "checksum_error": None},
        "memory_manager_state": {"path": "/var/lib/kubelet/memory_manager_state", "present": False,
                                 "policy_name": None, "version": None, "valid": None,
                                 "checksum_ok": None, "checksum_error": None},
    }


@pytest.mark.parametrize("version", [2, 4])
def test_cpu_state_versions_verify(tmp_path, version):
    _file(tmp_path, "/var/lib/kubelet/cpu_manager_state", _cpu_state(version))
    summary = kubelet_facts(str(tmp_path))["state_files"]["cpu_manager_state"]
    assert (summary["version"], summary["checksum_ok"], summary["valid"]) == ("v%d" % version, True, True)


@pytest.mark.parametrize("version", [1, 3])
def test_memory_state_versions_verify(tmp_path, version):
    _file(tmp_path, "/var/lib/kubelet/memory_manager_state", _mem_state(version))
    summary = kubelet_facts(str(tmp_path))["state_files"]["memory_manager_state"]
    assert (summary["policy_name"], summary["version"], summary["checksum_ok"]) == ("None", "v%d" % version, True)


def test_corrupted_state_file(tmp_path):
    _file(tmp_path, "/var/lib/kubelet/cpu_manager_state",
          '{"policyName":"static","defaultCpuSet":"0-7","checksum":14413153}')
    summary = kubelet_facts(str(tmp_path))["state_files"]["cpu_manager_state"]
    assert summary == {"path": "/var/lib/kubelet/cpu_manager_state", "present": True, "policy_name": "static",
                       "version": None, "valid": False, "checksum_ok": False,
                       "checksum_error": "checkpoint is corrupted"}


def test_state_file_without_checksum(tmp_path):
    _file(tmp_path, "/var/lib/kubelet/memory_manager_state",
          '{"policyName":"Static","machineState":{},"checksum":0}')
    summary = kubelet_facts(str(tmp_path))["state_files"]["memory_manager_state"]
    assert (summary["valid"], summary["checksum_ok"], summary["checksum_error"]) == (
        True, None, "not verified: the file has checksum 0 (no checksum), which the kubelet accepts")


def test_state_file_not_json(tmp_path):
    _file(tmp_path, "/var/lib/kubelet/memory_manager_state", "not json")
    summary = kubelet_facts(str(tmp_path))["state_files"]["memory_manager_state"]
    assert (summary["present"], summary["policy_name"], summary["valid"], summary["checksum_ok"]) == \
        (True, None, False, False)
    assert summary["checksum_error"]


def test_state_file_in_custom_root_dir(tmp_path):
    _proc(tmp_path, 10, ["kubelet", "--root-dir=/data/kubelet"])
    _file(tmp_path, "/data/kubelet/cpu_manager_state", _cpu_state())
    summary = kubelet_facts(str(tmp_path))["state_files"]["cpu_manager_state"]
    assert (summary["path"], summary["present"]) == ("/data/kubelet/cpu_manager_state", True)


def test_unreadable_state_file(tmp_path):
    (tmp_path / "var/lib/kubelet/cpu_manager_state").mkdir(parents=True)
    with pytest.raises(KubeletPathsError) as info:
        kubelet_facts(str(tmp_path))
    assert str(info.value) == "%s/var/lib/kubelet/cpu_manager_state: cannot read: Is a directory" % tmp_path


def test_unknown_state_file_name(tmp_path):
    with pytest.raises(KubeletPathsError) as info:
        read_state_text(str(tmp_path), "/var/lib/kubelet", "kubelet_internal_checkpoint")
    assert str(info.value) == ("unknown kubelet state file 'kubelet_internal_checkpoint' "
                               "(known: cpu_manager_state, memory_manager_state)")
