# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``--limit`` runs whose every host is cut off still print their summary, and name the host unreachable.

Ansible ends the whole playbook once every host of a play is lost, and ``--limit`` leaves localhost
out of the plays: discover.yml, check_pod.yml and validate.yml printed no report, apply.yml no
summary, and validate.yml (whose plays ran on localhost) printed nothing under any ``--limit``.
A fleet of its own, two hosts; h01 is given a closed port in the inventory.
"""

from __future__ import annotations

import os
import re
import sys

import numaguard_fleet_tool as fleet_tool  # pylint: disable=import-error
import numaguard_playbook_runs as playbook_runs  # pylint: disable=import-error
import pytest

pytestmark = pytest.mark.skipif(fleet_tool.unavailable() is not None, reason=str(fleet_tool.unavailable()))

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(os.path.abspath(sys.executable))


@pytest.fixture(scope="module")
def small_fleet(tmp_path_factory):
    """Two hosts (h01 cut off: its inventory port is closed, h02 reachable), an inventory and a pod."""
    work = tmp_path_factory.mktemp("limit-fleet")
    state = fleet_tool.up(str(work / "fleet"), topologies=["vm-single", "vm-nonuma"], base_port="auto", quiet=True)
    try:
        cut = state["hosts"][0]
        with open(state["inventory"]) as handle:
            text = handle.read()
        inventory = work / "inventory.yml"
        inventory.write_text(text.replace("ansible_port: %d\n" % cut["port"], "ansible_port: 1\n"))
        pod = playbook_runs.write_pod(str(work / "pod.yaml"), "web")
        yield {"inventory": str(inventory), "pod": pod, "cut": cut["name"], "up": state["hosts"][1]["name"]}
    finally:
        fleet_tool.down(str(work / "fleet"), quiet=True)


def _playbook(small_fleet, play, *args, limit):
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", small_fleet["inventory"],
            os.path.join(REPO, "playbooks", play + ".yml"), "--limit", limit] + list(args)
    # settings for every host: a host without kubelet_numa_settings is not configured (validate)
    argv += ["-e", '{"kubelet_numa_settings": {"topologyManagerPolicy": "none"}}']
    proc, _seconds = playbook_runs.run(argv, playbook_runs.ansible_env(bindir=BIN), timeout=300)
    return proc


PLAYS = {
    "discover": ((), r'"  {cut} +ERROR +(unknown: )?discovery failed'),
    "check_pod": (("-e", "pod_file={pod}"), r'"  {cut} +CANNOT CHECK +(unknown: )?cannot check: unreachable: '),
    "validate": (("-e", "validate_fail=false"), r'"  {cut} +ERROR +cannot check: unreachable: '),
}


@pytest.mark.parametrize("play", sorted(PLAYS))
def test_report_when_every_limited_host_is_unreachable(small_fleet, play):
    args, row = PLAYS[play]
    proc = _playbook(small_fleet, play, *[a.format(**small_fleet) for a in args], limit=small_fleet["cut"])
    assert re.search(r"of 1 host\(s\)", proc.stdout), proc.stdout[-4000:]
    assert re.search(row.format(**small_fleet), proc.stdout), proc.stdout[-4000:]
    assert '"  %s: unreachable: ' % small_fleet["cut"] in proc.stdout, proc.stdout[-4000:]
    assert "could not check %s" % small_fleet["cut"] not in proc.stdout, proc.stdout[-4000:]
    # still unreachable in the recap, and the exit code says so
    assert re.search(r"^%s +: .*unreachable=1 " % small_fleet["cut"], proc.stdout, re.M), proc.stdout[-4000:]
    assert proc.returncode == 4, proc.stdout[-4000:]


def test_apply_summary_when_every_limited_host_is_unreachable(small_fleet):
    proc = _playbook(small_fleet, "apply", "-e", "kubelet_numa_kubelet_version=1.31",
                     "-e", '{"kubelet_numa_settings": {"topologyManagerPolicy": "restricted"}}', limit=small_fleet["cut"])
    summary = proc.stdout[proc.stdout.find("Per-host summary"):]
    assert "%s: unreachable - no preflight result" % small_fleet["cut"] in summary, proc.stdout[-4000:]
    assert "kubelet_numa rollout failed on %s" % small_fleet["cut"] in summary, proc.stdout[-4000:]
    assert proc.returncode == 2, proc.stdout[-4000:]


def test_validate_checks_the_limited_hosts_only(small_fleet):
    """Under --limit the report covers the hosts --limit keeps; the one it leaves out is not called unreachable."""
    both = "%s,%s" % (small_fleet["cut"], small_fleet["up"])
    proc = _playbook(small_fleet, "validate", "-e", "validate_hosts=%s" % both, limit=small_fleet["up"])
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "reservedMemory valid on 1 of 1 host(s)" in proc.stdout, proc.stdout[-4000:]
    assert small_fleet["cut"] not in proc.stdout.split("PLAY RECAP")[0], proc.stdout[-4000:]
