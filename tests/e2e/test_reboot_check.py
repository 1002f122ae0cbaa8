# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Re-admission on the simulated fleet: playbooks/reboot_check.yml and the kubelet_numa role's
preflight, which refuses a state reset without a drain that would get a running pod rejected.

The intel-2s host runs (on paper) two Guaranteed pods admitted under ``best-effort``: ``big``
(200Gi, spans both NUMA nodes) and then ``small`` (10Gi, joined big's NUMA group). Its state
files are the ones the kubelet writes after those admissions (made by the module itself with
``return_state``). From a fresh memory state, ``small`` admitted first takes node 0 alone and
``big`` can no longer form its group.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

import numaguard_fleet_tool as fleet_tool  # pylint: disable=import-error
import pytest

pytestmark = pytest.mark.skipif(fleet_tool.unavailable() is not None, reason=str(fleet_tool.unavailable()))

CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: best-effort
reservedSystemCPUs: "0,48"
systemReserved: {memory: 1Gi}
reservedMemory:
  - numaNode: 0
    limits: {memory: 1124Mi}
"""


def running(name, memory):
    resources = {"cpu": "2", "memory": memory}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "shop", "uid": "uid-" + name},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": dict(resources), "limits": dict(resources)}}]}}


def _write(fleet, host, relpath, text):
    path = os.path.join(fleet.host(host)["root"], relpath)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def _hashes(fleet, host):
    out = {}
    for top in ("etc/kubernetes", "var/lib/kubelet"):
        base = os.path.join(fleet.host(host)["root"], top)
        for directory, _dirs, files in os.walk(base):
            for name in files:
                with open(os.path.join(directory, name), "rb") as handle:
                    out[os.path.relpath(os.path.join(directory, name), base)] = hashlib.sha256(handle.read()).hexdigest()
    return out


@pytest.fixture
def node(fleet_restored):
    """The intel-2s host with its kubelet config and the state files of big + small."""
    fleet = fleet_restored
    host = fleet.hosts_of("intel-2s")[0]["name"]
    _write(fleet, host, "etc/kubernetes/kubelet-config.yaml", CONFIG)
    os.makedirs(os.path.join(fleet.host(host)["root"], "etc/kubernetes/kubelet.conf.d"), exist_ok=True)
    first = fleet.module(host, "numaguard.kubelet.admission_check",
                         {"pod": [running("big", "200Gi"), running("small", "10Gi")], "return_state": True,
                          "kubelet_config": "/etc/kubernetes/kubelet-config.yaml"})[host]
    assert [p["admitted"] for p in first["pods"]] == [True, True], first.get("msg")
    assert first["pods"][1]["numa_nodes"] == [0, 1]
    for name, text in first["state_after"].items():
        _write(fleet, host, "var/lib/kubelet/" + name, text)
    return fleet, host


def test_reboot_check_playbook(node, tmp_path):
    fleet, host = node
    report = str(tmp_path / "reboot.json")
    proc = fleet.playbook("playbooks/reboot_check.yml", "-e", json.dumps({
        "reboot_check_kubelet_config": {"cpuManagerPolicy": "static", "memoryManagerPolicy": "Static",
                                        "topologyManagerPolicy": "best-effort", "reservedSystemCPUs": "0,48",
                                        "systemReserved": {"memory": "1Gi"},
                                        "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}]},
        "reboot_check_report_file": report, "reboot_check_fail": True}), limit=host)
    assert proc.returncode != 0, proc.stdout[-3000:]
    with open(report) as handle:
        answer = json.load(handle)[host]["readmit"]
    assert answer["running_pods"]["source"] == "state files"
    assert answer["starts"]["restored"]["all_readmitted"] is True
    (rejected,) = answer["starts"]["fresh"]["rejected"]
    assert rejected["pod"] == "unknown/uid-big" and rejected["order"] == ["unknown/uid-small", "unknown/uid-big"]
    assert rejected["reason"] == "UnexpectedAdmissionError"
    assert answer["boot_drift"]["starts"] is True
    assert "reboot or reset (fresh state): unknown/uid-big can be rejected" in proc.stdout
    # one line per host: the host, then each start's answer and the boot drift, joined
    answer_task = proc.stdout[proc.stdout.find("TASK [Answer]"):proc.stdout.find("TASK [Write the answers")]
    lines = [line for line in answer_task.splitlines() if "%s: " % host in line]
    assert len(lines) == 1, answer_task
    assert re.search(r"%s: kubelet restart \(state restored\): all 2 pod\(s\) come back .*; reboot or reset \(fresh state\): "
                     r"unknown/uid-big can be rejected .*; boot drift: " % host, lines[0]), lines[0]


def _apply(fleet, host, tmp_path, settings, *extra, **variables):
    values = {
        "kubelet_numa_settings": settings,
        "kubelet_numa_kubelet_config": "/etc/kubernetes/kubelet-config.yaml",
        "kubelet_numa_kubelet_config_dir": "/etc/kubernetes/kubelet.conf.d",
        "kubelet_numa_kubelet_version": "1.31",
        "kubelet_numa_service_start_cmd": "/bin/false",
        "kubelet_numa_service_stop_cmd": "/bin/false",
        "kubelet_numa_service_restart_cmd": "/bin/false",
    }
    values.update(variables)
    path = tmp_path / "vars.json"
    path.write_text(json.dumps(values))
    return fleet.playbook("playbooks/apply.yml", "-e", "@%s" % path, *extra, limit=host)


# the same 1124Mi, now reserved on node 1: the memory manager state must be reset
MOVED = {"reservedMemory": [{"numaNode": 1, "limits": {"memory": "1124Mi"}}]}


def test_role_preflight_refuses_a_reset_that_rejects_a_running_pod(node, tmp_path):
    fleet, host = node
    before = _hashes(fleet, host)
    proc = _apply(fleet, host, tmp_path, MOVED)
    assert proc.returncode != 0
    assert "without a drain would get running pods rejected on re-admission" in proc.stdout
    assert "unknown/uid-big can be rejected (UnexpectedAdmissionError" in proc.stdout
    assert _hashes(fleet, host) == before
    # warn instead: the preflight goes on (check mode: nothing written either way)
    proc = _apply(fleet, host, tmp_path, MOVED, "--check", kubelet_numa_readmit_on_reject="warn")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "WARNING kubelet_numa: reboot or reset (fresh state): unknown/uid-big can be rejected" in proc.stdout
    assert "%s: re-admission check (fresh memory_manager_state, no drain): " % host in proc.stdout
    assert _hashes(fleet, host) == before
    # with a drain there is no running pod to re-admit: no check
    proc = _apply(fleet, host, tmp_path, MOVED, "--check", kubelet_numa_drain=True)
    # (the preflight's one module call runs the check only for a state reset without a drain, issue 22)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "%s: re-admission check" % host not in proc.stdout
    assert "can be rejected" not in proc.stdout
