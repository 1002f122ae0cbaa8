# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Output that reads at scale: discover.yml, validate.yml and check_pod.yml with the
numaguard.kubelet.compact stdout callback print a headline and at most one line per host (here every
host of the session fleet is its own hardware class, the worst case), and nothing else grows with
the fleet. Counted in lines, never timed. A host failure is printed in full.

The 50-host figures (default callback and compact, before and after) come from
``benchmarks/report_output_lines.sh 50``; see docs/reports.md.
"""

from __future__ import annotations

import re

import numaguard_fleet_tool as fleet_tool  # pylint: disable=import-error
import numaguard_playbook_runs as playbook_runs  # pylint: disable=import-error
import pytest

pytestmark = pytest.mark.skipif(fleet_tool.unavailable() is not None, reason=str(fleet_tool.unavailable()))

COMPACT = {"ANSIBLE_STDOUT_CALLBACK": "numaguard.kubelet.compact"}
#: A screen: what an 80x50 terminal shows without scrolling.
SCREEN = 50
#: Lines the 12-host fleet may add once, not per host (distinct warnings, a details header).
SLACK = 5


@pytest.fixture(scope="module")
def pod_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("lines") / "pod.yaml"
    return playbook_runs.write_pod(str(path), "db")


def _run(fleet, play, hosts, pod_file, env=None):
    pattern = ",".join(hosts)
    if play == "discover":
        return fleet.playbook("playbooks/discover.yml", limit=pattern, env=env or COMPACT)
    if play == "validate":
        # settings for every host (a host without kubelet_numa_settings is not configured)
        return fleet.playbook("playbooks/validate.yml", "-e", "validate_hosts=%s" % pattern, "-e", "validate_fail=false",
                              "-e", '{"kubelet_numa_settings": {"topologyManagerPolicy": "none"}}', env=env or COMPACT)
    return fleet.playbook("playbooks/check_pod.yml", "-e", "pod_file=%s" % pod_file, "-e", "check_pod_hosts=%s" % pattern,
                          env=env or COMPACT)


HEADLINES = {
    "discover": r"^NUMA topology of %d host\(s\): %d discovered, 0 failed",
    "validate": r"^reservedMemory valid on \d+ of %d host\(s\)",
    "check_pod": r"^admitted on \d+, rejected on \d+.*\(of %d host\(s\)\)",
}


@pytest.mark.parametrize("play", ["discover", "validate", "check_pod"])
def test_one_screen_and_at_most_one_line_per_host(fleet, pod_file, play):
    few = fleet.names[:3]
    every = fleet.names
    small = _run(fleet, play, few, pod_file)
    large = _run(fleet, play, every, pod_file)
    for proc, hosts in ((small, few), (large, every)):
        assert proc.returncode == 0, proc.stdout[-4000:]
        headline = HEADLINES[play] % ((len(hosts),) * HEADLINES[play].count("%d"))
        assert re.search(headline, proc.stdout, re.M), proc.stdout
        assert not re.search(r"^(ok|skipping|changed): \[", proc.stdout, re.M), proc.stdout
    growth = len(playbook_runs.lines(large)) - len(playbook_runs.lines(small))
    print("%s: %d lines for %d hosts, %d for %d"
          % (play, len(playbook_runs.lines(small)), len(few), len(playbook_runs.lines(large)), len(every)))
    # every e2e host has its own hardware class: one report line each, nothing else per host; the
    # slack is for what the larger fleet has once (a warning of one quirky host, a details section)
    assert growth <= len(every) - len(few) + SLACK, large.stdout
    assert len(playbook_runs.lines(large)) <= SCREEN, large.stdout


def test_default_callback_grows_by_several_lines_per_host(fleet, pod_file):
    """The figure the compact callback exists for (the default prints ok: [host] per task and a recap line)."""
    few = fleet.names[:3]
    small = _run(fleet, "check_pod", few, pod_file, env={"ANSIBLE_STDOUT_CALLBACK": "default"})
    large = _run(fleet, "check_pod", fleet.names, pod_file, env={"ANSIBLE_STDOUT_CALLBACK": "default"})
    assert len(playbook_runs.lines(large)) - len(playbook_runs.lines(small)) >= 3 * (len(fleet.names) - len(few))


def test_a_failing_host_is_shown_in_full(fleet, tmp_path):
    # a host whose topology cannot be read: discover fails on it and says why, on the compact output too
    name = fleet.names[0]
    proc = fleet.playbook("playbooks/discover.yml", "-e", "discover_root=/nonexistent-root", limit=name, env=COMPACT)
    assert proc.returncode != 0
    assert re.search(r"fatal: \[%s\]: FAILED! => .*nonexistent-root" % name, proc.stdout), proc.stdout
    assert re.search(r"^  %s : ok=\d+ changed=\d+ unreachable=0 failed=1" % name, proc.stdout, re.M), proc.stdout
