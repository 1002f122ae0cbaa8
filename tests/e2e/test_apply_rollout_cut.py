# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The SSH connection of a first-batch host cut at each journal step of a rollout: the run
goes on, stops the later batches, prints the summary; the next run converges every host.

One host per journal step, all of the same class (vm-single, the class of the former two-host fleet's
cut host), in the first batch, and one bystander (intel-2s) in the later batch: one run cuts every
first-batch host at its own step, and one rerun converges them all (two playbook runs for the five steps,
where a run per step cost ten); each step is still a test of its own with its own assertions.
See tests/fleet/apply_fleet.py.
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
STEPS = ["stopped", "backed_up", "written", "started", "rolling_back"]
# play order: groups by name (vm-single's numa_1n_... before intel-2s's numa_2n_...), so the five
# vm-single hosts are the first batch and intel-2s the later one
fleet = module_fleet(["vm-single"] * len(STEPS) + ["intel-2s"])


@pytest.fixture(scope="module")
def cut(fleet):
    """Host i of the first batch paused at STEPS[i]; once all are, every first-batch host's SSH
    connections cut; the run's output; the pauses released (the orphaned transactions go on); each
    host's final journal; one rerun on every host. Returns step -> (host, sshd processes cut, final
    journal), the bystander and whether the cut run left it without a drop-in, the cut run and the rerun."""
    reset_fleet(fleet)
    hosts = dict(zip(STEPS, fleet["hosts"]))
    bystander = fleet["hosts"][len(STEPS)]
    pauses = {}
    for step, host in hosts.items():
        pauses[step] = pause_at(host, step)
        if step == "rolling_back":
            open(os.path.join(host_paths(host)["run"], "fail-next-start"), "w").close()
    proc = start_playbook(fleet, STATIC, kubelet_numa_batch_size=len(STEPS))
    for step in STEPS:
        wait_for(os.path.join(pauses[step], "reached-" + step), proc)
    victims = dict((step, cut_ssh(host)) for step, host in hosts.items())
    try:
        out, _err = proc.communicate(timeout=600)
    finally:
        for step in STEPS:
            release_pause(pauses[step], step)  # the orphaned transaction goes on: its connection is gone, not its work
    untouched = not os.path.exists(host_paths(bystander)["dropin"])
    finished = dict((step, wait_final(host)) for step, host in hosts.items())
    rerun = playbook(fleet, STATIC, kubelet_numa_batch_size=len(STEPS))
    return (dict((step, (hosts[step], victims[step], finished[step])) for step in STEPS), (bystander, untouched),
            (proc.returncode, out), rerun)


@pytest.mark.parametrize("step", STEPS)
def test_ssh_cut_at_each_step_summary_runs_and_every_host_converges(fleet, cut, step):
    """The SSH connection of a first-batch host cut while its change is at ``step``: the run goes on
    (whole batch unreachable), stops the later batches and still prints the summary; the orphaned
    transaction on the host finishes its change (or, at rolling_back, its rollback) by itself, so
    the host never stays stopped or half-changed; the next run converges every host."""
    per_step, (bystander, untouched), (returncode, out), rerun = cut
    host, victims, finished = per_step[step]
    assert victims, "no sshd session process found for %s" % host["name"]
    assert returncode != 0
    assert "UNREACHABLE!" in out, out[-4000:]
    summary = out[out.find("Per-host summary"):]
    assert "%s: unreachable - lost during its change in batch 1" % host["name"] in summary, out[-5000:]
    assert "%s: untouched" % bystander["name"] in summary
    assert untouched, "the cut run wrote a drop-in on the bystander %s" % bystander["name"]
    assert finished["status"] == ("rolled back" if step == "rolling_back" else "done"), finished
    assert healthy(fleet, host)  # never left stopped
    assert rerun.returncode == 0, rerun.stdout[-5000:]
    for each in (host, bystander):
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
