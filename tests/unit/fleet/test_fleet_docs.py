# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/fleet.md and the demo's narration against the fleet's real topology list (issue 26).

The docs described an older fleet (host names, counts of topologies and hosts) and the demo said
"the intel_2s group has two hosts" when it had three. The demo now prints ``fleet describe`` of the
fleet it brought up; docs/fleet.md must hold ``fleet describe --bundled`` verbatim, name every bundled
topology, and its examples must use the bundled fleet's real host names and counts."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from ansible_collections.numaguard.kubelet.tests.fleet import fleet as fleet_tool

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
FLEET_PY = os.path.join(REPO, "tests", "fleet", "fleet.py")


def _doc():
    with open(os.path.join(REPO, "docs", "fleet.md")) as handle:
        return handle.read()


def _bundled():
    known = fleet_tool.list_topologies()
    return known, fleet_tool.plan_hosts(None, fleet_tool.bundled_fleet(known), known)


def test_describe_bundled_is_in_the_docs_verbatim():
    known, hosts = _bundled()
    proc = subprocess.run([sys.executable, FLEET_PY, "describe", "--bundled"], capture_output=True, text=True, check=False,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines == fleet_tool.describe_hosts(hosts, known)
    block = re.search(r"<!-- fleet describe --bundled .*?-->\n```text\n(.*?)```", _doc(), re.S)
    assert block, "docs/fleet.md has no fleet describe --bundled block"
    assert block.group(1).splitlines() == lines


def test_the_docs_count_and_name_the_bundled_fleet():
    known, hosts = _bundled()
    doc = _doc()
    assert "the bundled example fleet (%d hosts)" % len(hosts) in doc
    paragraph = doc[doc.index("Bundled topologies ("):]
    paragraph = paragraph[:paragraph.index("\n\n")]
    named = set(re.findall(r"`([a-z0-9-]+)`", paragraph))
    assert named == set(known), sorted(set(known) ^ named)
    # the discover example: the real number of hosts, the odd host and its group's other hosts
    odd = [h for h in hosts if h["hugepages"]]
    assert len(odd) == 1
    odd = odd[0]
    peers = [h["name"] for h in hosts if h["group"] == odd["group"] and h is not odd]
    assert "NUMA topology of %d hosts: %d discovered" % (len(hosts), len(hosts)) in doc
    assert "  %s (group %s): differs from the %d other hosts of group %s" % (
        odd["name"], odd["group"], len(peers), odd["group"]) in doc
    assert "      %s: 2 nodes" % ", ".join(peers) in doc
    by_name = dict((h["name"], h) for h in hosts)
    for name in re.findall(r"^(h\d\d)  \d+ nodes", doc, re.M):  # the example's host blocks
        assert name in by_name, name
    # the e2e fleet (tests/e2e/conftest.py): every bundled topology and the odd host
    assert "an `intel-2s:1Gi=0` host (%d hosts, free ports" % (len(known) + 1) in doc


def test_describe_names_the_odd_host_of_any_fleet():
    known = ["intel-2s", "vm-single"]
    hosts = fleet_tool.plan_hosts(5, ["intel-2s", "vm-single", "intel-2s:1Gi=0:2Mi=8"], known)
    lines = fleet_tool.describe_hosts(hosts, known)
    assert lines[0] == "5 hosts (h01-h05) on 2 of the 2 bundled topologies: intel-2s, vm-single"
    assert lines[1] == ("group intel_2s: 3 hosts (h01, h03, h04); h03 is intel-2s with 1Gi=0, 2Mi=8 pages per node "
                        "(the odd one out)")
    assert len(lines) == 2


def test_the_demo_narrates_from_the_fleet_not_by_hand():
    with open(os.path.join(REPO, "scripts", "demo")) as handle:
        demo = handle.read()
    assert 'tests/fleet/fleet.py describe --dir "$fleet_dir"' in demo
    # no hand-written host counts or host names in what it says
    assert not re.search(r"\b(two|three|\d+) hosts\b", demo), re.findall(r".*\bhosts\b.*", demo)
    assert not re.search(r"\bh\d\d\b", demo)
