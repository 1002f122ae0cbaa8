# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller (ansible-playbook) and the host's transaction process SIGKILLed at each journal
step of a rollout, then a rerun: the interrupted change is finished or undone from its own backup.
The controller alone killed: the transaction on the host finishes the change by itself (issue 22).

One host per journal step, all of the same class (vm-single, the class the first host of the former
two-host fleet had): one run changes them in one batch, each pausing at its own step, then the
controller and every host's transaction are killed and one rerun finishes or undoes every change
(two playbook runs for the five steps, where a run per step cost ten); each step is still a test of its own
with its own assertions. See tests/fleet/apply_fleet.py.
"""

from __future__ import annotations

import json
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fleet"))

from apply_fleet import (  # noqa: E402  (tests/fleet/apply_fleet.py: the shared rollout helpers)
    CPU_STATE,
    MEMORY_STATE,
    REQUIRES_FLEET,
    STATIC,
    healthy,
    host_paths,
    journal_of,
    kill_controller,
    kill_on_host,
    module_fleet,
    pause_at,
    playbook,
    read,
    release_pause,
    reset_fleet,
    start_playbook,
    wait_final,
    wait_for,
)

pytestmark = REQUIRES_FLEET
STEPS = ["stopped", "backed_up", "written", "started", "rolling_back"]
fleet = module_fleet(["vm-single"] * len(STEPS))


@pytest.fixture(scope="module")
def killed(fleet):
    """Host i paused at STEPS[i] in one run; the controller SIGKILLed, then each host's transaction
    process (a crash, an OOM kill, a reboot); the pauses released; one rerun on every host.
    Returns step -> (host, the interrupted journal, whether its transaction process was found), and the rerun."""
    reset_fleet(fleet)
    hosts = dict(zip(STEPS, fleet["hosts"]))
    pauses = {}
    for step, host in hosts.items():
        pauses[step] = pause_at(host, step)
        if step == "rolling_back":  # the new configuration fails to start, so the transaction rolls back
            open(os.path.join(host_paths(host)["run"], "fail-next-start"), "w").close()
    proc = start_playbook(fleet, STATIC, kubelet_numa_batch_size=len(STEPS))
    for step in STEPS:
        wait_for(os.path.join(pauses[step], "reached-" + step), proc)
    kill_controller(proc)
    found = dict((step, kill_on_host(host, int(read(os.path.join(pauses[step], "reached-" + step)))))
                 for step, host in hosts.items())
    for step in STEPS:
        release_pause(pauses[step], step)
    interrupted = dict((step, journal_of(host)) for step, host in hosts.items())
    rerun = playbook(fleet, STATIC, kubelet_numa_batch_size=len(STEPS))
    return dict((step, (hosts[step], interrupted[step], found[step])) for step in STEPS), rerun


@pytest.mark.parametrize("step", STEPS)
def test_change_killed_at_each_step_then_rerun_converges(fleet, killed, step):
    """SIGKILL of ansible-playbook AND of the host's transaction process (a crash, an OOM kill, a
    reboot) after stop / state move / config write / during the health wait / during a rollback; the
    next run finishes or undoes the change from its own backup, says which, and ends with a healthy
    kubelet on the complete new configuration."""
    per_step, rerun = killed
    host, interrupted, found = per_step[step]
    paths = host_paths(host)
    assert found, "the transaction process was not found on %s" % host["name"]
    assert interrupted["status"] == "in progress" and interrupted["step"] == step
    assert rerun.returncode == 0, rerun.stdout[-5000:]
    action = "completed" if step in ("written", "started") else "rolled back"
    assert "interrupted change %s %s" % (interrupted["change_id"], action) in rerun.stdout, \
        rerun.stdout[rerun.stdout.find("Per-host summary"):][:3000] + rerun.stdout[-3000:]
    # the dead change's lock record: its flock went with its process
    assert "replaced the stale lock record of change %s" % interrupted["change_id"] in rerun.stdout + rerun.stderr
    # the interrupted change's own backup holds the originals, byte for byte (none was made before the move)
    backup_dir = os.path.join(host["root"], interrupted["backup_dir"].lstrip("/"))
    if step == "stopped":
        assert not os.path.exists(backup_dir)
    else:
        with open(os.path.join(backup_dir, "manifest.json")) as handle:
            moved = [e for e in json.load(handle)["files"] if e["action"] == "move"]
        assert read(os.path.join(backup_dir, moved[0]["stored"])) == CPU_STATE.encode()
    # the end state: complete new configuration, fresh state of the new policy, healthy
    assert b"cpuManagerPolicy: static" in read(paths["dropin"])
    assert json.loads(read(paths["cpu"]))["policyName"] == "static"
    assert read(paths["memory"]) == MEMORY_STATE.encode()
    assert healthy(fleet, host)
    assert journal_of(host)["status"] == "done"


def test_controller_killed_mid_change_the_host_finishes_the_transaction_alone(fleet):
    """Only the controller dies (SIGKILL) while the kubelet is stopped: the transaction on the host
    holds the change by itself, finishes it (healthy, journal done, lock released) and the next run
    finds the host converged."""
    host = fleet["hosts"][0]
    reset_fleet(fleet, host["name"])  # the only host it runs on
    paths = host_paths(host)
    pause = pause_at(host, "stopped")
    proc = start_playbook(fleet, STATIC, "--limit", host["name"])
    wait_for(os.path.join(pause, "reached-stopped"), proc)
    kill_controller(proc)
    release_pause(pause, "stopped")
    journal = wait_final(host)
    assert journal["status"] == "done", journal
    assert json.loads(read(paths["cpu"]))["policyName"] == "static" and healthy(fleet, host)
    assert read(os.path.join(paths["backups"], "rollout.lock")) == b""
    rerun = playbook(fleet, STATIC, "--limit", host["name"])
    assert rerun.returncode == 0, rerun.stdout[-5000:]
    assert "%s: unchanged" % host["name"] in rerun.stdout, rerun.stdout[-3000:]
