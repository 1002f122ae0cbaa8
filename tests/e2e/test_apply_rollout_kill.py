# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The controller (ansible-playbook) SIGKILLed at each journal step of a rollout, then a rerun:
the interrupted change is finished or undone from its own backup. Two hosts are enough
(the change runs --limit to the first); see tests/fleet/apply_fleet.py.
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
    module_fleet,
    pause_at,
    playbook,
    read,
    release_pause,
    reset_fleet,
    start_playbook,
    wait_for,
)

pytestmark = REQUIRES_FLEET
fleet = module_fleet(["intel-2s", "vm-single"])


@pytest.mark.parametrize("step", ["stopped", "backed_up", "written", "started", "rolling_back"])
def test_controller_killed_at_each_step_then_rerun_converges(fleet, step):
    """SIGKILL of ansible-playbook after stop / state move / config write / during the health
    wait / during a rollback; the next run finishes or undoes the change from its own backup,
    says which, and ends with a healthy kubelet on the complete new configuration."""
    reset_fleet(fleet)
    host = fleet["hosts"][0]
    paths = host_paths(host)
    pause = pause_at(host, step)
    if step == "rolling_back":  # the new configuration fails to start, so the role rolls back
        open(os.path.join(paths["run"], "fail-next-start"), "w").close()
    proc = start_playbook(fleet, STATIC, "--limit", host["name"])
    wait_for(os.path.join(pause, "reached-" + step), proc)
    kill_controller(proc)
    release_pause(pause, step)
    interrupted = journal_of(host)
    assert interrupted["status"] == "in progress" and interrupted["step"] == step
    rerun = playbook(fleet, STATIC, "--limit", host["name"])
    assert rerun.returncode == 0, rerun.stdout[-5000:]
    action = "completed" if step in ("written", "started") else "rolled back"
    assert "interrupted change %s %s" % (interrupted["change_id"], action) in rerun.stdout, \
        rerun.stdout[rerun.stdout.find("Per-host summary"):][:3000] + rerun.stdout[-3000:]
    assert "took over the stale lock" in rerun.stdout + rerun.stderr  # the dead run's lock, from this controller
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
