# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""`make demo` (scripts/demo) end to end: the README's first checkout command."""

from __future__ import annotations

import glob
import os
import re
import subprocess

# tests/e2e/conftest.py loads tests/fleet/fleet.py under this name (test dirs are not packages).
import numaguard_fleet_tool as fleet_tool  # pylint: disable=import-error
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(fleet_tool.unavailable() is not None, reason=str(fleet_tool.unavailable()))


def test_demo_shows_every_host_and_tears_down():
    before = set(glob.glob("/tmp/numaguard-demo.*"))
    proc = subprocess.run(["bash", os.path.join(REPO, "scripts", "demo")], cwd=REPO, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600, check=False)
    out = proc.stdout
    assert proc.returncode == 0, out[-4000:]
    names = fleet_tool.list_topologies()
    hosts = len(fleet_tool.bundled_fleet(names))
    assert "fleet: %d hosts up in" % hosts in out
    # discover: every host in a hardware class, the odd intel_2s host flagged
    assert "NUMA topology of %d host(s): %d discovered, 0 failed" % (hosts, hosts) in out
    assert re.search(r"class numa_2n_96c_2m_1g_[0-9a-f]{8} \(2 hosts\)", out)
    assert "differs from group intel_2s" in out
    # validate: the classic mistake caught, JUnit written
    assert re.search(r"INVALID +numa_\S+: 1 error\(s\): \[reserved-memory-sum\]", out), out[-3000:]
    assert "JUnit for CI:" in out
    # apply: the forced failed start was rolled back byte for byte
    assert "config and cpu_manager_state are byte-identical to before" in out
    # check_pod: admitted, rejected with the kubelet's reason, could not check
    assert re.search(r"admitted on [1-9]\d*, rejected on [1-9]\d* \(.*OutOfcpu \d+.*\), could not check [1-9]", out), out[-3000:]
    assert "HTML report (per-NUMA memory bars, pod verdicts):" in out
    seconds = int(re.search(r"the story took (\d+) s once the fleet was up", out).group(1))
    print("demo story: %d s" % seconds)
    assert "fleet: %d hosts stopped in" % hosts in out
    assert set(glob.glob("/tmp/numaguard-demo.*")) == before  # its temporary directory is gone
    assert os.path.isfile(os.path.join(REPO, ".demo", "numa-report.html"))
