# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kubelet_numa role's preflight decision in Python (issue 22): converged, applies, refusals."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.filter.rollout_batches import rollout_batches
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.rollout_decision import decide, drain_note, readmit_args, role_input_error, summary_line

HEALTHY = {"healthy": True, "problems": [], "active": True}
OPTIONS = {"repair_state": False, "restart": True, "drain": False, "drain_on_every_change": False, "readmit_on_reject": "fail",
           "break_lock": "", "state_dir": "/var/lib/kubelet/numaguard-backups"}


def plan(needs_write=False, cpu=False, reasons=()):
    return {"needs_write": needs_write, "path": "/etc/kubernetes/kubelet.conf.d/50-numaguard-numa.conf", "flags": [],
            "reset": {"cpu_manager_state": cpu, "memory_manager_state": False, "reasons": list(reasons)}}


def status(health=None, **extra):
    result = {"health": HEALTHY if health is None else health, "pending": False, "journal": None, "locked_by_other": False}
    result.update(extra)
    return result


def test_state_files_the_kubelet_would_refuse_are_not_converged_even_when_healthy():
    """Config as intended, healthy, no /configz, state file of another policy: refused with the
    reason, never 'unchanged'; with repair_state it applies."""
    refused = decide("h1", plan(cpu=True, reasons=["cpuManagerPolicy 'static' differs from the checkpoint policy 'none'"]),
                     status(), None, OPTIONS, False)
    assert not refused["converged"] and not refused["applies"] and refused["summary"] is None
    assert "h1 is NOT converged" in refused["refuse"] and "checkpoint policy 'none'" in refused["refuse"]
    assert "set kubelet_numa_repair_state: true to move them aside" in refused["refuse"]
    repaired = decide("h1", plan(cpu=True), status(), None, dict(OPTIONS, repair_state=True), False)
    assert repaired["applies"] and repaired["refuse"] is None
    preview = decide("h1", plan(cpu=True), status(), None, dict(OPTIONS, repair_state=True), True)
    assert preview["summary"]["result"] == "would repair state"


def test_converged_host_is_unchanged_and_a_stopped_one_is_brought_back():
    done = decide("h1", plan(), status(), None, OPTIONS, False)
    assert done["converged"] and done["summary"]["result"] == "unchanged" and done["explain"] == "config unchanged, nothing to do"
    down = {"healthy": False, "problems": ["the kubelet service is not active (status command exit 3: inactive)"]}
    stopped = decide("h1", plan(), status(down), None, OPTIONS, True)
    assert not stopped["converged"] and stopped["summary"]["result"].startswith("would bring the kubelet back (the kubelet service")


def test_locked_host_is_refused_unless_its_lock_is_stale_or_broken():
    holder = {"change_id": "X", "pid": 7, "controller": "ctl", "started": "2026-01-01T00:00:00Z", "holder_pid": 99}
    locked = decide("h1", plan(True), status(locked_by_other=True, lock_holder=holder), None, OPTIONS, False)
    assert "h1 is locked by another rollout: pid 7 on controller ctl, started 2026-01-01T00:00:00Z, flock held on the " \
           "host by pid 99" in locked["refuse"] and "kubelet_numa_break_lock=X" in locked["refuse"]
    assert decide("h1", plan(True), status(locked_by_other=True, lock_holder=holder, lock_stale=True), None, OPTIONS,
                  False)["refuse"] is None
    assert decide("h1", plan(True), status(locked_by_other=True, lock_holder=holder), None, dict(OPTIONS, break_lock="X"),
                  False)["refuse"] is None


@pytest.mark.parametrize("mode", ["fail", "warn"])
def test_readmission_rejections_refuse_or_warn(mode):
    readmit = {"readmit": {"all_readmitted": False, "fresh_without": ["cpu_manager_state"], "summary": ["pod a rejected"]}}
    decision = decide("h1", plan(True, cpu=True), status(), readmit, dict(OPTIONS, readmit_on_reject=mode), False)
    if mode == "fail":
        assert "resetting cpu_manager_state without a drain would get running pods rejected" in decision["refuse"]
    else:
        assert decision["refuse"] is None and decision["warning"] == "WARNING kubelet_numa: pod a rejected"


def test_drain_only_when_a_state_file_is_reset_or_asked_for_every_change():
    assert decide("h1", plan(True, cpu=True), status(), None, dict(OPTIONS, drain=True), False)["drain"]
    assert not decide("h1", plan(True), status(), None, dict(OPTIONS, drain=True), False)["drain"]
    assert decide("h1", plan(True), status(), None, dict(OPTIONS, drain=True, drain_on_every_change=True), False)["drain"]
    note = drain_note({"drain_result": {"rc": 2, "msg": "[Errno 2] No such file or directory: b'kubectl'"}, "kubectl": "kubectl",
                       "kubectl_host": "localhost", "node_name": "h1"})
    assert "skipping cordon and drain of node h1" in note
    assert drain_note({"drain_result": {"skipped": True}}) is None


def test_summary_line_names_moves_backup_and_recovery():
    line = summary_line({"host": "h1", "result": "applied", "path": "/p", "reset_cpu_manager_state": True, "backup_dir": "/b",
                         "recovered": {"change_id": "C", "action": "rolled back", "reason": "r"}})
    assert line == "h1: applied /p ; cpu_manager_state moved to backup ; backup /b ; interrupted change C rolled back (r)"


def test_rollout_batches_cuts_targets_as_serial_does():
    hostvars = dict(("h%02d" % i, {"kubelet_numa_status": {}}) for i in range(1, 11))
    hostvars["localhost"] = {}
    hosts = ["h%02d" % i for i in range(1, 11)] + ["localhost"]
    assert rollout_batches(hostvars, hosts, 2)["batches"][0] == ["h01", "h02"]
    assert rollout_batches(hostvars, hosts, "25%")["batches"][:2] == [["h01", "h02"], ["h03", "h04"]]  # 11 hosts x 25% = 2
    assert rollout_batches(hostvars, hosts)["targets"] == hosts[:-1]
    hostvars["h03"]["kubelet_numa_decided_at"], hostvars["h05"]["kubelet_numa_decided_at"] = 20.0, 10.0
    cut = rollout_batches(hostvars, hosts, 2)
    assert cut["batch_of"]["h05"] == 2 and cut["started"] == 10.0
    assert len(rollout_batches(hostvars, hosts, "1%")["batches"]) == 10


CHECK = {"enabled": True, "repair_state": False, "drain": False, "sysfs_root": "/", "kubelet_version": "1.31",
         "root_dir": "/var/lib/kubelet", "running_pods": None, "max_orders": 100}


def test_readmission_check_runs_only_for_a_state_reset_without_a_drain_and_decides_as_the_hosts_kubelet():
    assert readmit_args(plan(needs_write=True), CHECK) is None  # no state file is reset
    assert readmit_args(plan(needs_write=True, cpu=True), dict(CHECK, drain=True)) is None  # no running pod stays
    assert readmit_args(plan(needs_write=True, cpu=True), dict(CHECK, enabled=False)) is None
    assert readmit_args(plan(cpu=True), CHECK) is None  # nothing applies: nothing is reset
    found = dict(plan(needs_write=True, cpu=True), effective={"cpuManagerPolicy": "static"}, kubelet_version="1.29",
                 locations={"root_dir": "/data/kubelet"})
    args = readmit_args(found, CHECK)
    # the version the plan resolved on the host wins over the role's; the located root dir over the role's
    assert args == {"root": "/", "kubelet_config": {"cpuManagerPolicy": "static"}, "kubelet_version": "1.29",
                    "kubelet_flags": {"root-dir": "/data/kubelet"},
                    "readmit": {"start": "fresh", "reset": ["cpu_manager_state"], "max_orders": 100}}
    repaired = readmit_args(plan(cpu=True), dict(CHECK, repair_state=True, running_pods=[{"kind": "Pod"}], kubelet_version=""))
    assert repaired["kubelet_flags"] == {"root-dir": "/var/lib/kubelet"} and repaired["running_pods"] == [{"kind": "Pod"}]
    assert "kubelet_version" not in repaired  # neither the plan nor the role names one: the module's default


INPUTS = {"settings_defined": True, "settings": {"topologyManagerScope": "pod"}, "config_mode": "dropin",
          "backup_root": "/var/lib/kubelet/numaguard-backups", "start_cmd": "systemctl start kubelet",
          "stop_cmd": "systemctl stop kubelet", "restart_cmd": "systemctl restart kubelet",
          "health_url": "http://127.0.0.1:10248/healthz", "backup_keep": 10, "drain": False, "wait_node_ready": False,
          "node_name": "worker-1"}


def test_role_inputs_as_the_role_defaults_give_them_pass():
    assert role_input_error("h1", INPUTS) is None
    assert role_input_error("h1", dict(INPUTS, backup_keep="0", drain="yes", config_mode="merge",
                                       health_url="https://node:10250/healthz")) is None


def test_unset_settings_are_named_with_the_host():
    assert role_input_error("worker-1", dict(INPUTS, settings_defined=False, settings=None)) == (
        "kubelet_numa: kubelet_numa_settings is not set for worker-1: give the KubeletConfiguration fields to manage in the "
        "variable kubelet_numa_settings (check its spelling in the inventory, group_vars, host_vars or -e)")


@pytest.mark.parametrize("change, shown", [
    ({"settings": {}}, "settings={}"),
    ({"settings": None}, "settings=null"),
    ({"settings": ["cpuManagerPolicy"]}, 'settings=["cpuManagerPolicy"]'),
    ({"config_mode": "replace"}, "mode=replace"),
    ({"backup_root": "backups"}, "backup_root=backups"),
    ({"start_cmd": ""}, "backup_root=/var/lib/kubelet/numaguard-backups"),
    ({"restart_cmd": None}, "health_url=http://127.0.0.1:10248/healthz"),
    ({"health_url": "127.0.0.1:10248/healthz"}, "health_url=127.0.0.1:10248/healthz"),
    ({"backup_keep": -1}, "backup_keep=-1"),
    ({"backup_keep": "ten"}, "backup_keep=ten"),
    ({"backup_keep": True}, "backup_keep=True"),
    ({"backup_keep": "²"}, "backup_keep=²"),
    ({"drain": True, "node_name": "Worker_1"}, 'node_name="Worker_1"'),
    ({"wait_node_ready": "yes", "node_name": "a" * 254}, 'node_name="' + "a" * 254 + '"'),
    ({"drain": "true", "node_name": ["worker-1"]}, 'node_name=["worker-1"]'),
    ({"wait_node_ready": "on", "node_name": "worker-1\n"}, 'node_name="worker-1\\n"'),
])
def test_each_wrong_input_fails_with_the_role_message_showing_the_values(change, shown):
    message = role_input_error("h1", dict(INPUTS, **change))
    assert message.startswith("kubelet_numa: kubelet_numa_settings must be a non-empty dict of KubeletConfiguration fields")
    assert shown in message


def test_a_node_name_is_only_checked_when_kubectl_is_used():
    assert role_input_error("h1", dict(INPUTS, node_name="Not A Name", drain="no", wait_node_ready=0)) is None
    assert role_input_error("h1", dict(INPUTS, node_name="Not A Name", drain="1.0", wait_node_ready="maybe")) is None
