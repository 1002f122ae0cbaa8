# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SSH connection of the first batch's host cut at each journal step of a rollout: the run
goes on, stops the later batches, prints the summary; the next run converges every host.
Two hosts: the cut one and one bystander in a later batch; see tests/fleet/apply_fleet.py.
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
    cut_ssh,
    healthy,
    host_paths,
    journal_of,
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
fleet = module_fleet(["intel-2s", "vm-single"])


@pytest.mark.parametrize("step", ["stopped", "backed_up", "written", "started", "rolling_back"])
def test_ssh_cut_at_each_step_summary_runs_and_every_host_converges(fleet, step):
    """The SSH connection of the first batch's only host cut while its change is at ``step``: the
    run goes on (whole batch unreachable), stops the later batches and still prints the summary;
    the orphaned transaction on the host finishes its change (or, at rolling_back, its rollback) by
    itself, so the host never stays stopped or half-changed; the next run converges every host."""
    reset_fleet(fleet)
    host = fleet["hosts"][0]
    paths = host_paths(host)
    pause = pause_at(host, step)
    if step == "rolling_back":
        open(os.path.join(paths["run"], "fail-next-start"), "w").close()
    proc = start_playbook(fleet, STATIC, kubelet_numa_batch_size=1)
    wait_for(os.path.join(pause, "reached-" + step), proc)
    assert cut_ssh(host), "no sshd session process found for %s" % host["name"]
    try:
        out, _err = proc.communicate(timeout=600)
    finally:
        release_pause(pause, step)  # the orphaned transaction goes on: its connection is gone, not its work
    assert proc.returncode != 0
    assert "UNREACHABLE!" in out, out[-4000:]
    summary = out[out.find("Per-host summary"):]
    assert "%s: unreachable - lost during its change in batch 1" % host["name"] in summary, out[-5000:]
    for other in fleet["hosts"][1:]:
        assert "%s: untouched" % other["name"] in summary
        assert not os.path.exists(host_paths(other)["dropin"])
    finished = wait_final(host)
    assert finished["status"] == ("rolled back" if step == "rolling_back" else "done"), finished
    assert healthy(fleet, host)  # never left stopped
    rerun = playbook(fleet, STATIC, kubelet_numa_batch_size=1)
    assert rerun.returncode == 0, rerun.stdout[-5000:]
    for each in fleet["hosts"]:
        each_paths = host_paths(each)
        assert b"cpuManagerPolicy: static" in read(each_paths["dropin"])
        assert json.loads(read(each_paths["cpu"]))["policyName"] == "static"
        assert read(each_paths["memory"]) == MEMORY_STATE.encode()
        assert healthy(fleet, each), each["name"]
        assert journal_of(each)["status"] == "done"
    if step != "stopped":  # the cut change's own backup holds the original state, byte for byte
        backup_dir = os.path.join(host["root"], finished["backup_dir"].lstrip("/"))
        with open(os.path.join(backup_dir, "manifest.json")) as handle:
            moved = [e for e in json.load(handle)["files"] if e["action"] == "move"]
        assert read(os.path.join(backup_dir, moved[0]["stored"])) == CPU_STATE.encode()
