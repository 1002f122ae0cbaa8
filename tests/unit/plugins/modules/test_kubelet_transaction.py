# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""kubelet_rollout operation=transaction: the whole change in one process that holds the flock,
fenced before each destructive step (issue 22)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends import kubelet_rollout as backend
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config import rollout, transaction
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.backup import BackupError
from ansible_collections.numaguard.kubelet.plugins.modules import kubelet_rollout as kubelet_rollout_module
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import patch_module_args

ME = {"change_id": "20260101T120000Z-ctl-3", "controller": "ctl", "pid": 3, "started": "2026-01-01T12:00:00Z"}
OTHER = {"change_id": "20260101T100000Z-ctl-1", "controller": "ctl", "pid": 1, "started": "2026-01-01T10:00:00Z"}
MAIN = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: none\n"
CPU_NONE = '{"policyName":"none","defaultCpuSet":"","checksum":1353318690}'
STATIC = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"}


class FakeKubelet:
    """Service commands of a kubelet that starts healthy (or not); the commands run, in order."""

    def __init__(self, healthy_after_start=True, running=True):
        self.running = running
        self.healthy_after_start = healthy_after_start
        self.commands = []
        self.on_command = {}

    def run_command(self, argv):
        self.commands.append(argv[0])
        if argv[0] in ("start", "restart"):
            self.running = self.healthy_after_start
        elif argv[0] == "stop":
            self.running = False
        hook = self.on_command.get(argv[0])
        if hook:
            hook()
        if argv[0] == "logs":
            return 0, "I starting\nE forced start failure\n", ""
        return (0 if self.running or argv[0] != "status" else 3), "", ""


@pytest.fixture
def host(tmp_path, monkeypatch):
    root = tmp_path / "kubelet"
    (root / "conf.d").mkdir(parents=True)
    (root / "config.yaml").write_text(MAIN)
    (root / "cpu_manager_state").write_text(CPU_NONE)
    kubelet = FakeKubelet()
    monkeypatch.setattr(backend.Host, "fetch", lambda self, url: {"status": 200, "body": "ok"} if kubelet.running
                        else {"status": 0, "body": "cannot connect: refused"})
    yield root, kubelet
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


def params(root, **extra):
    p = dict((k, v.get("default")) for k, v in backend.argument_spec().items())
    p.update(operation="transaction", state_dir=str(root / "numaguard-backups"), kubelet_dirs=[str(root)],
             service_start_cmd="start", service_stop_cmd="stop", service_status_cmd="status", service_restart_cmd="restart",
             service_logs_cmd="logs", health_url="http://127.0.0.1:9/healthz", retries=0, delay=0,
             settings=dict(STATIC), config=str(root / "config.yaml"), config_dir=str(root / "conf.d"), root_dir=str(root),
             kubelet_version="1.31", validate_host=False)
    p.update(ME)
    p.update(extra)
    return p


def dropin(root):
    return root / "conf.d" / "50-numaguard-numa.conf"


def test_one_process_applies_the_whole_change_and_releases(host):
    root, kubelet = host
    p = params(root)
    seen = []
    kubelet.on_command["stop"] = lambda: seen.append(json.loads(open(os.path.join(p["state_dir"], rollout.LOCK)).read()))
    result = backend.run(p, kubelet.run_command, False)
    assert result["result"] == "applied" and result["changed"] and not result.get("failed")
    assert kubelet.commands.count("stop") == 1 and "start" in kubelet.commands
    # the flock was this very process's while it stopped the kubelet, renewed on the monotonic clock
    assert seen[0]["holder_pid"] == os.getpid() and seen[0]["transaction"] and seen[0]["renewed_monotonic"] > 0
    assert b"cpuManagerPolicy: static" in dropin(root).read_bytes()
    assert not (root / "cpu_manager_state").exists()  # moved into the change's own backup
    journal = rollout.read_journal(p["state_dir"])
    assert journal["status"] == "done" and journal["backup_dir"] == result["backup_dir"]
    assert [h["step"] for h in journal["history"]] == ["begin", "stopped", "backed_up", "written", "started", "done"]
    assert result["released"] and not rollout.lock_state(p["state_dir"])["held"] and open(os.path.join(p["state_dir"], rollout.LOCK)).read() == ""
    again = backend.run(params(root), kubelet.run_command, False)
    assert again["result"] == "unchanged" and not again["changed"]


def test_a_moved_lock_clock_does_not_expire_the_lease(host):
    """The lease is never read from file times: the lock file's mtime put years back (a clock jump)
    mid-change changes nothing; the change completes and the kubelet runs."""
    root, kubelet = host
    p = params(root, lock_lease=60)
    lock = os.path.join(p["state_dir"], rollout.LOCK)
    kubelet.on_command["stop"] = lambda: os.utime(lock, (0, 0))
    result = backend.run(p, kubelet.run_command, False)
    assert result["result"] == "applied" and kubelet.running
    assert rollout.read_journal(p["state_dir"])["status"] == "done"


@pytest.mark.parametrize("how", ["signal", "record", "file"])
def test_a_fenced_change_restores_what_it_changed_and_says_so(host, how):
    """Taken over (SIGTERM from a take-over), the record cleared or the lock file replaced while the
    kubelet was stopped: the next fence stops the change, the backup is restored, the kubelet runs."""
    root, kubelet = host
    p = params(root)
    lock = os.path.join(p["state_dir"], rollout.LOCK)

    def take():
        if how == "signal":
            os.kill(os.getpid(), signal.SIGTERM)
        elif how == "record":
            with open(lock, "r+") as handle:
                handle.truncate(0)
        else:
            os.unlink(lock)
            open(lock, "w").close()
    kubelet.on_command["stop"] = take
    result = backend.run(p, kubelet.run_command, False)
    assert result["failed"] and result["result"] == "fenced, rolled back"
    assert result["fenced"] and "refusing to back up and move the state files" in result["fenced"]
    assert "kubelet stopped" in result["did"] and "No file had been changed (no backup was made)" in result["msg"]
    assert (root / "cpu_manager_state").read_text() == CPU_NONE and not dropin(root).exists()
    assert kubelet.running and kubelet.commands[-2:] == ["start", "status"]
    journal = rollout.read_journal(p["state_dir"])
    assert journal["status"] == "rolled back" and journal["reason"].startswith("fenced:")


def test_fenced_after_the_write_restores_the_backup(host):
    root, kubelet = host
    p = params(root)
    kubelet.on_command["start"] = lambda: os.kill(os.getpid(), signal.SIGTERM)
    result = backend.run(p, kubelet.run_command, False)
    assert result["result"] == "fenced, rolled back", result
    assert "Restored the previous config and state files from %s" % result["backup_dir"] in result["msg"]
    assert (root / "cpu_manager_state").read_text() == CPU_NONE and not dropin(root).exists()


def test_a_change_finished_since_the_preflight_fences_this_run_before_anything(host):
    root, kubelet = host
    p = params(root)
    rollout.record_step(p["state_dir"], OTHER["change_id"], "begin")
    seen = dict((k, v) for k, v in rollout.read_journal(p["state_dir"]).items() if k in ("change_id", "status", "updated"))
    rollout.finish(p["state_dir"], OTHER["change_id"], "done", "other run")
    result = backend.run(params(root, preflight_journal=seen), kubelet.run_command, False)
    assert result["failed"] and result["result"] == "fenced, nothing changed"
    assert "change %s (done" % OTHER["change_id"] in result["msg"] and "this run changed nothing" in result["msg"]
    assert kubelet.commands == [] and not dropin(root).exists()
    assert rollout.read_journal(p["state_dir"])["change_id"] == OTHER["change_id"]


def test_failed_start_rolls_back_with_the_kubelets_complaint(host):
    root, kubelet = host
    kubelet.healthy_after_start = False
    kubelet.on_command["stop"] = lambda: setattr(kubelet, "healthy_after_start", kubelet.commands.count("stop") > 1)
    result = backend.run(params(root), kubelet.run_command, False)
    assert result["failed"] and result["result"] == "rolled back"
    assert "did not come back healthy with the new configuration" in result["msg"]
    assert "started the kubelet again: healthy" in result["msg"] and "forced start failure" in result["msg"]
    assert (root / "cpu_manager_state").read_text() == CPU_NONE and not dropin(root).exists()


def test_state_files_the_kubelet_would_refuse_are_never_unchanged(host):
    """Config as intended, kubelet healthy, no /configz, but the state file disagrees: refused with
    the reason (nothing changed), or repaired with repair_state."""
    root, kubelet = host
    backend.run(params(root), kubelet.run_command, False)
    (root / "cpu_manager_state").write_text(CPU_NONE)  # e.g. restored by hand
    with pytest.raises(BackupError) as err:
        backend.run(params(root, host_name="h1"), kubelet.run_command, False)
    assert "h1 NOT converged" in str(err.value) and "differs from the cpu_manager_state checkpoint policy 'none'" in str(err.value)
    assert (root / "cpu_manager_state").read_text() == CPU_NONE
    repaired = backend.run(params(root, repair_state=True, change_id="20260101T130000Z-ctl-4"), kubelet.run_command, False)
    assert repaired["result"] == "state repaired" and not (root / "cpu_manager_state").exists()


def test_a_live_lock_refuses_and_a_stopped_kubelet_is_brought_back(host):
    root, kubelet = host
    p = params(root)
    rollout.acquire(p["state_dir"], OTHER)
    try:
        with pytest.raises(rollout.LockHeld):
            backend.run(p, kubelet.run_command, False)
    finally:
        rollout.release(p["state_dir"], OTHER["change_id"])
    backend.run(p, kubelet.run_command, False)
    kubelet.running = False
    result = backend.run(params(root), kubelet.run_command, False)
    assert result["result"].startswith("kubelet brought back (the kubelet service is not active") and kubelet.running


@pytest.mark.parametrize("option,value,message", [
    ("retries", 10 ** 20, "retries: 100000000000000000000 is out of bounds (0 to 1000)"),
    ("delay", float("nan"), "delay: nan is out of bounds"),
    ("backup_keep", -1, "backup_keep: -1 is out of bounds (0 to 10000)"),
])
def test_every_retry_and_delay_is_bounded(host, option, value, message):
    root, kubelet = host
    with pytest.raises(BackupError) as err:
        backend.run(params(root, **{option: value}), kubelet.run_command, False)
    assert message in str(err.value)
    with pytest.raises(BackupError) as err:
        backend.run(params(root, retries=1000, delay=600), kubelet.run_command, False)
    assert "waits longer than 3600 seconds" in str(err.value)


HOLDER = """
import fcntl, os, signal, sys, time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
fcntl.flock(fd, fcntl.LOCK_EX)
linger = float(sys.argv[2])
signal.signal(signal.SIGTERM, lambda *_: (time.sleep(linger), os._exit(0)) if linger >= 0 else None)
print("locked", flush=True)
while True:
    time.sleep(0.05)
"""


@pytest.fixture
def holder(tmp_path):
    """A live transaction's stand-in: flocks the lock file and writes its record; on SIGTERM it lets
    go after ``linger`` seconds (never when negative)."""
    started = []

    def start(state_dir, linger, **record):
        os.makedirs(state_dir, exist_ok=True)
        path = os.path.join(state_dir, rollout.LOCK)
        proc = subprocess.Popen([sys.executable, "-c", HOLDER, path, str(linger)], stdout=subprocess.PIPE, text=True)
        started.append(proc)
        assert proc.stdout.readline().strip() == "locked"
        fd = os.open(path, os.O_RDWR)
        try:
            rollout.write_fd(fd, dict(OTHER, holder_pid=proc.pid, holder_start=rollout.start_ticks(proc.pid), transaction=True,
                                      **record))
        finally:
            os.close(fd)
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def test_a_take_over_waits_for_the_holders_worst_case_rollback_time(tmp_path, holder, monkeypatch):
    """The taker SIGTERMs the live transaction and waits for it as long as that transaction's own
    worst-case rollback time (release_within in its record, from its retries and delay; bounded),
    not a fixed few seconds: a holder that restores for longer than 5 s is still waited for."""
    state = str(tmp_path / "numaguard-backups")
    assert transaction.release_bound(30, 2.0) == 1780.0  # the role's defaults: 30 probes 2 s apart
    assert transaction.release_bound(0, 0.0) < transaction.release_bound(30, 2.0) < transaction.release_bound(30, 4.0)
    assert transaction.release_bound(1000, 3.6) == transaction.MAX_RELEASE_WAIT  # the largest retries x delay accepted
    waits = []
    real_flock = rollout.try_flock

    def flock(fd, mode, wait):
        waits.append(wait)
        return real_flock(fd, mode, min(wait, 0.3))
    monkeypatch.setattr(rollout, "try_flock", flock)
    for record, own, expected in (({"release_within": 42.0}, 77.0, 42.0), ({}, 77.0, 77.0),
                                  ({"release_within": 1e12}, 77.0, transaction.MAX_RELEASE_WAIT),
                                  ({"release_within": "soon"}, 77.0, 77.0)):
        proc = holder(state, -1, **record)  # ignores SIGTERM: never lets go
        del waits[:]
        lock = transaction.OwnedLock(state, ME, 60, own)
        with pytest.raises(rollout.LockHeld) as err:
            lock.take(OTHER["change_id"])
        assert waits == [3.0, expected]
        assert "still held after %.0f s, the holder's worst-case rollback time" % expected in str(err.value)
        proc.kill()
        proc.wait()
    # a holder that needs 6 s to restore and let go (more than the old fixed 5 s) is waited for
    monkeypatch.setattr(rollout, "try_flock", real_flock)
    holder(state, 6.0, release_within=30.0)
    lock = transaction.OwnedLock(state, ME, 60, 77.0)
    began = time.monotonic()
    lock.take(OTHER["change_id"])
    try:
        assert 5.5 < time.monotonic() - began < 30.0 and lock.replaced["change_id"] == OTHER["change_id"]
        assert lock.record["release_within"] == 77.0  # its own bound, for the next taker
    finally:
        lock.release()


def test_a_transaction_records_its_own_worst_case_rollback_time(host):
    root, kubelet = host
    p = params(root, retries=3, delay=0.5)
    seen = []
    kubelet.on_command["stop"] = lambda: seen.append(json.loads(open(os.path.join(p["state_dir"], rollout.LOCK)).read()))
    assert backend.run(p, kubelet.run_command, False)["result"] == "applied"
    assert seen[0]["release_within"] == transaction.release_bound(3, 0.5)


def _run_module(capsys, p, check_mode=True, diff=True):
    """The real module (AnsibleModule) with ``p``; the service commands are true/false."""
    args = dict((k, v) for k, v in p.items() if v is not None)
    args.update(service_status_cmd="true", _ansible_check_mode=check_mode, _ansible_diff=diff)
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            kubelet_rollout_module.main()
    return json.loads(capsys.readouterr().out)


def test_status_with_settings_plans_and_reads_the_status_in_one_call(host, capsys, monkeypatch):
    """The role's preflight is one module call per host: the plan kubelet_config would return in
    check mode, its diff, and the lock / journal / health, the /configz expectation being the fields
    in force now and the backup root checked against the planned locations' directories."""
    root, _kubelet = host
    seen = {}
    real_run = backend.run
    monkeypatch.setattr(backend, "run", lambda p, *args: seen.update(p) or real_run(p, *args))
    p = params(root, operation="status", kubelet_dirs=list(backend.DEFAULT_KUBELET_DIRS))
    result = _run_module(capsys, p)
    assert not result.get("failed"), result
    plan = result["plan"]
    assert plan["needs_write"] and plan["path"] == str(dropin(root)) and plan["reset"]["cpu_manager_state"] is True
    assert plan["effective"]["cpuManagerPolicy"] == "static" and plan["previous"]["cpuManagerPolicy"] == "none"
    assert "diff" not in plan and "cpuManagerPolicy: static" in result["diff"]["after"]
    assert result["health"]["healthy"] and result["lock_held"] is False and result["journal"] is None
    assert seen["expected"] == plan["previous"] and seen["kubelet_dirs"] == [str(root), str(root / "conf.d")]
    assert not dropin(root).exists() and not os.path.exists(p["state_dir"])  # nothing written
    # without settings: the status alone, as before
    alone = _run_module(capsys, params(root, operation="status", settings=None))
    assert "plan" not in alone and "diff" not in alone and alone["health"]["healthy"]


def test_status_with_settings_the_kubelet_refuses_fails_with_kubelet_configs_message(host, capsys):
    root, _kubelet = host
    result = _run_module(capsys, params(root, operation="status", settings={"cpuManagerPolicy": "dynamic"}))
    assert result["failed"] and result["msg"].startswith("invalid kubelet settings: ") and "dynamic" in result["msg"]
    assert "health" not in result  # planning comes first: a bad plan reads nothing else


def test_status_with_settings_never_returns_the_kubelets_credentials(host, capsys):
    """The plan's credentials (staticPodURLHeader) stay on the host, in the plan, its diff and
    anything else the status returns, as kubelet_config's own result (issue 23)."""
    root, _kubelet = host
    secret = "Bearer s3cr3t-t0ken-value"
    (root / "config.yaml").write_text(MAIN + "staticPodURL: https://pods.example/m\nstaticPodURLHeader:\n  Authorization: [\"%s\"]\n"
                                      % secret)
    result = _run_module(capsys, params(root, operation="status", config_mode="merge"))
    assert not result.get("failed"), result
    assert secret not in json.dumps(result) and "s3cr3t" not in json.dumps(result)
    assert result["plan"]["content"]["staticPodURLHeader"] == {"Authorization": ["********"]}
