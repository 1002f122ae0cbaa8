# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rollout journal, per-host lock, health checks and recovery of an interrupted change."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fcntl
import hashlib
import json
import os
import signal
import time

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends import kubelet_rollout as backend
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config import rollout
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.backup import BackupError, create_backup

A = {"change_id": "20260101T100000Z-ctl-1", "controller": "ctl", "pid": 1, "started": "2026-01-01T10:00:00Z"}
B = {"change_id": "20260101T110000Z-ctl-2", "controller": "ctl", "pid": 2, "started": "2026-01-01T11:00:00Z"}


@pytest.fixture(autouse=True)
def stop_holders(tmp_path):
    """Stop the holder processes the test's locks started (they would keep their flock for a lease)."""
    yield
    for directory, _dirs, files in os.walk(str(tmp_path)):
        if rollout.LOCK in files:
            try:
                record = json.loads(open(os.path.join(directory, rollout.LOCK)).read() or "null")
            except (ValueError, RecursionError):
                continue
            if isinstance(record, dict) and rollout.start_ticks(record.get("holder_pid")) == record.get("holder_start"):
                os.kill(record["holder_pid"], signal.SIGTERM)


def flock_is_held(state):
    with open(os.path.join(state, rollout.LOCK), "rb") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
    return False


def wait_until(predicate, timeout=10.0):
    deadline = time.time() + timeout
    while not predicate():
        assert time.time() < deadline, "timed out"
        time.sleep(0.05)


def test_lock_is_exclusive_names_the_holder_and_can_be_taken_over_only_by_id(tmp_path):
    state = str(tmp_path / "backups")
    assert rollout.acquire(state, A) == {"acquired": True, "replaced": None, "stale": False}
    record = rollout.lock_holder(state)
    assert flock_is_held(state)  # held by the holder process after acquire returned
    assert record["holder_pid"] != os.getpid() and rollout.start_ticks(record["holder_pid"]) == record["holder_start"]
    assert rollout.acquire(state, A)["replaced"] is None  # idempotent for the same change
    with pytest.raises(rollout.LockHeld) as err:
        rollout.acquire(state, B, wait=0.2)
    assert "pid 1 on controller ctl, started 2026-01-01T10:00:00Z (change 20260101T100000Z-ctl-1)" in str(err.value)
    assert "flock held on the host by pid %d" % record["holder_pid"] in str(err.value)
    assert err.value.holder["change_id"] == A["change_id"]
    with pytest.raises(rollout.LockHeld):
        rollout.acquire(state, B, take_over="some-other-id", wait=0.2)
    taken = rollout.acquire(state, B, take_over=A["change_id"])
    assert taken["replaced"]["pid"] == 1 and not taken["stale"]
    wait_until(lambda: rollout.start_ticks(record["holder_pid"]) is None or _zombie(record["holder_pid"]))  # A's holder stopped
    assert not rollout.release(state, A["change_id"])  # not the holder
    holder_b = rollout.lock_holder(state)["holder_pid"]
    assert rollout.release(state, B["change_id"])
    assert rollout.lock_holder(state) is None and not flock_is_held(state)
    wait_until(lambda: rollout.start_ticks(holder_b) is None or _zombie(holder_b))


def _zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_record_whose_holder_is_gone_is_stale_and_replaced(tmp_path):
    state = str(tmp_path)
    rollout.acquire(state, A)
    record = rollout.lock_holder(state)
    os.kill(record["holder_pid"], signal.SIGKILL)  # the host rebooted / the holder was killed
    wait_until(lambda: not flock_is_held(state))
    assert rollout.lock_holder(state) is None
    assert rollout.lock_state(state)["record"]["change_id"] == A["change_id"]  # the stale record is still there
    with pytest.raises(rollout.LockHeld) as err:  # a step of A notices that it lost the lock
        rollout.require_holder(state, A["change_id"])
    assert "lost the lock" in str(err.value)
    taken = rollout.acquire(state, B)
    assert taken["stale"] and taken["replaced"]["change_id"] == A["change_id"]
    assert rollout.release(state, B["change_id"])


def test_holder_lets_go_after_the_lease_without_a_step(tmp_path):
    state = str(tmp_path)
    rollout.acquire(state, A, lease=1)
    rollout.require_holder(state, A["change_id"])  # renews
    wait_until(lambda: not flock_is_held(state), timeout=15)
    with pytest.raises(rollout.LockHeld):
        rollout.require_holder(state, A["change_id"])
    assert rollout.acquire(state, B)["stale"]
    assert rollout.release(state, B["change_id"])


def test_garbage_lock_file_is_refused_with_advice(tmp_path):
    (tmp_path / rollout.LOCK).write_text("[" * 1000)
    with pytest.raises(BackupError) as err:
        rollout.acquire(str(tmp_path), A)
    assert "move it away if no rollout is running" in str(err.value)


def test_journal_steps_are_durable_and_bounded(tmp_path):
    state = str(tmp_path)
    rollout.acquire(state, A)
    rollout.record_step(state, A["change_id"], "begin", {"intended": {"path": "/x", "sha256": "0" * 64},
                                                         "backup_dir": os.path.join(state, A["change_id"])})
    journal = rollout.record_step(state, A["change_id"], "stopped")
    assert journal["status"] == "in progress" and journal["step"] == "stopped"
    assert [h["step"] for h in journal["history"]] == ["begin", "stopped"]
    assert not [n for n in os.listdir(state) if ".tmp" in n]
    with pytest.raises(BackupError):
        rollout.record_step(state, B["change_id"], "written")
    assert rollout.finish(state, A["change_id"], "done")["status"] == "done"
    (tmp_path / rollout.JOURNAL).write_text(json.dumps({"change_id": "x", "status": "in progress", "backup_dir": "/etc"}))
    with pytest.raises(BackupError) as err:
        rollout.read_journal(state)
    assert "names backup directory '/etc' outside" in str(err.value)


def test_resume_decision(tmp_path):
    config = tmp_path / "50.conf"
    config.write_text("new")
    digest = hashlib.sha256(b"new").hexdigest()
    journal = {"step": "written", "intended": {"path": str(config), "sha256": digest}}
    assert rollout.resume_decision(journal)["action"] == "complete"
    assert rollout.resume_decision(dict(journal, step="backed_up"))["action"] == "roll back"
    assert rollout.resume_decision(dict(journal, step="rolling_back"))["action"] == "roll back"
    config.write_text("old")
    assert rollout.resume_decision(journal)["action"] == "roll back"


def test_health_needs_service_healthz_and_configz():
    def ok():
        return {"rc": 0, "out": "active"}

    pages = {"h": {"status": 200, "body": "ok"}, "c": {"status": 200, "body": json.dumps({"kubeletconfig": {"cpuManagerPolicy": "none"}})}}
    result = rollout.check_health(ok, pages.get, "h", "c", {"cpuManagerPolicy": "static", "reservedMemory": []})
    assert not result["healthy"] and result["configz"] == "mismatch"
    assert result["problems"] == ["cpuManagerPolicy is 'none' in the running kubelet, 'static' intended"]
    assert rollout.check_health(ok, pages.get, "h", "c", {"cpuManagerPolicy": "none"})["healthy"]
    pages["c"] = {"status": 404, "body": "Not Found"}
    result = rollout.check_health(ok, pages.get, "h", "c", {"cpuManagerPolicy": "static"})
    assert result["healthy"] and result["configz"] == "unreachable (HTTP 404)"
    result = rollout.check_health(lambda: {"rc": 3, "out": "inactive"}, pages.get, "h", None, None)
    assert not result["healthy"] and result["problems"] == ["the kubelet service is not active (status command exit 3: inactive)"]


class FakeHost:
    """A kubelet whose start succeeds (or not); records the commands run."""

    def __init__(self, healthy_after_start=True):
        self.running = False
        self.healthy_after_start = healthy_after_start
        self.commands = []

    def run_command(self, argv):
        self.commands.append(argv[0])
        if argv[0] == "start":
            self.running = self.healthy_after_start
        elif argv[0] == "stop":
            self.running = False
        return (0 if self.running or argv[0] != "status" else 3), "", ""


def params(state, **extra):
    p = dict((k, v.get("default")) for k, v in backend.argument_spec().items())
    p.update(state_dir=state, service_start_cmd="start", service_stop_cmd="stop", service_status_cmd="status",
             health_url="http://127.0.0.1:9/healthz", retries=0, delay=0)
    p.update(B)
    p.update(extra)
    return p


@pytest.fixture
def interrupted(tmp_path, monkeypatch):
    """Change A interrupted after moving cpu_manager_state (kubelet stopped)."""
    root = tmp_path / "kubelet"
    root.mkdir()
    state = str(root / "numaguard-backups")
    (root / "cpu_manager_state").write_text("old state")
    (root / "50.conf").write_text("old conf")
    rollout.acquire(state, A)
    backup_dir = os.path.join(state, A["change_id"])
    rollout.record_step(state, A["change_id"], "begin", {
        "backup_dir": backup_dir, "intended": {"path": str(root / "50.conf"), "sha256": hashlib.sha256(b"new conf").hexdigest()}})
    create_backup(state, [str(root / "50.conf")], [str(root / "cpu_manager_state")], [str(root)], name=A["change_id"])
    rollout.record_step(state, A["change_id"], "backed_up")
    monkeypatch.setattr(backend.Host, "fetch", lambda self, url: {"status": 200, "body": "ok"} if self.run_command(["status"])[0] == 0
                        else {"status": 0, "body": "cannot connect: refused"})
    return root, state


def test_begin_rolls_back_an_interrupted_change_from_its_own_backup(interrupted):
    root, state = interrupted
    rollout.release(state, A["change_id"])  # A's controller died; B took over (or A released)
    host = FakeHost()
    result = backend.run(params(state, operation="begin", kubelet_dirs=[str(root)]), host.run_command, False)
    assert result["recovered"]["action"] == "rolled back"
    assert result["recovered"]["change_id"] == A["change_id"]
    assert "restored from its own backup %s" % os.path.join(state, A["change_id"]) in result["recovered"]["detail"]
    assert (root / "cpu_manager_state").read_text() == "old state"
    assert rollout.read_journal(state)["status"] == "rolled back"
    assert rollout.lock_holder(state)["change_id"] == B["change_id"]
    assert result["health"]["healthy"]


def test_begin_completes_a_change_whose_config_is_in_place(interrupted):
    root, state = interrupted
    (root / "50.conf").write_text("new conf")
    rollout.record_step(state, A["change_id"], "written")
    rollout.release(state, A["change_id"])
    host = FakeHost()
    result = backend.run(params(state, operation="begin", kubelet_dirs=[str(root)]), host.run_command, False)
    assert result["recovered"]["action"] == "completed" and host.commands.count("start") == 1
    assert (root / "50.conf").read_text() == "new conf" and not (root / "cpu_manager_state").exists()
    assert rollout.read_journal(state)["status"] == "done"


def test_begin_on_a_locked_host_fails_and_check_mode_takes_nothing(interrupted):
    root, state = interrupted
    with pytest.raises(rollout.LockHeld):
        backend.run(params(state, operation="begin", kubelet_dirs=[str(root)]), FakeHost().run_command, False)
    with pytest.raises(rollout.LockHeld):
        backend.run(params(state, operation="begin", kubelet_dirs=[str(root)]), FakeHost().run_command, True)
    result = backend.run(params(state, operation="begin", kubelet_dirs=[str(root)], take_over=A["change_id"]),
                         FakeHost().run_command, True)
    assert result["recovered"]["action"] == "would roll back"
    assert rollout.lock_holder(state)["change_id"] == A["change_id"]
    assert not (root / "cpu_manager_state").exists()


def test_rollback_that_stays_unhealthy_fails_loudly_and_releases(interrupted):
    root, state = interrupted
    rollout.release(state, A["change_id"])
    with pytest.raises(BackupError) as err:
        backend.run(params(state, operation="begin", kubelet_dirs=[str(root)]), FakeHost(False).run_command, False)
    assert "was rolled back" in str(err.value) and "but the kubelet is not healthy" in str(err.value)
    assert rollout.read_journal(state)["status"] == "failed"
    assert rollout.lock_holder(state) is None
    assert (root / "cpu_manager_state").read_text() == "old state"


def test_step_requires_the_lock_and_pauses_for_tests(tmp_path):
    state = str(tmp_path)
    with pytest.raises(rollout.LockHeld):
        backend.run(params(state, operation="step", step="stopped"), FakeHost().run_command, False)
    rollout.acquire(state, B)
    pause = tmp_path / "pause"
    pause.mkdir()
    (pause / "pause-begin").write_text("")
    with pytest.raises(BackupError) as err:
        backend.run(params(state, operation="step", step="begin", pause_dir=str(pause), pause_timeout=0.1),
                    FakeHost().run_command, False)
    assert "nobody let step begin go on" in str(err.value)
    assert (pause / "reached-begin").exists()


def test_plan_is_current_while_the_files_it_read_are_unchanged(tmp_path):
    conf, drop_dir = tmp_path / "config.yaml", tmp_path / "conf.d"
    conf.write_text("a: 1\n")
    drop_dir.mkdir()
    snapshot = rollout.input_snapshot([str(conf), str(tmp_path / "missing")], [str(drop_dir)])
    assert snapshot["files"][str(tmp_path / "missing")] is None
    assert rollout.plan_is_current(json.loads(json.dumps(snapshot)))  # survives the trip through Ansible
    (drop_dir / "99-site.conf").write_text("x")  # a new drop-in changes the plan
    assert not rollout.plan_is_current(snapshot)
    (drop_dir / "99-site.conf").unlink()
    conf.write_text("a: 2\n")
    assert not rollout.plan_is_current(snapshot)
    with pytest.raises(BackupError):
        rollout.plan_is_current({"files": []})
    result = backend.run(params(str(tmp_path / "state"), operation="status", plan_inputs=snapshot, kubelet_dirs=[str(tmp_path)]),
                         FakeHost().run_command, True)
    assert result["plan_current"] is False and result["lock_held"] is False and result["stale_lock"] is None
