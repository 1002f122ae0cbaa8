# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""`make demo` (scripts/demo) end to end: the README's first checkout command."""

from __future__ import annotations

import glob
import os
import re
import subprocess

import pytest

# tests/e2e/conftest.py loads tests/fleet/fleet.py under this name (test dirs are not packages).
import numaguard_fleet_tool as fleet_tool  # pylint: disable=import-error

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytestmark = pytest.mark.skipif(fleet_tool.unavailable() is not None, reason=str(fleet_tool.unavailable()))


def test_demo_shows_every_host_and_tears_down():
    before = set(glob.glob("/tmp/numaguard-demo.*"))
    proc = subprocess.run(["bash", os.path.join(REPO, "scripts", "demo")], cwd=REPO, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, universal_newlines=True, timeout=600, check=False)
    out = proc.stdout
    assert proc.returncode == 0, out[-4000:]
    names = fleet_tool.list_topologies()
    hosts = len(fleet_tool.bundled_fleet(names))
    assert "fleet: %d hosts up in" % hosts in out
    assert "NUMA topology of %d hosts: %d discovered, 0 failed" % (hosts, hosts) in out
    for index in range(1, hosts + 1):
        assert re.search(r'"h%02d  \d+ nodes? \(\d+ with CPUs\), \d+ CPUs, ' % index, out), "h%02d missing" % index
    assert "Hosts that differ from the rest of their inventory group:" in out
    assert re.search(r"h12 \(group intel_2s\): differs from the 2 other hosts of group intel_2s", out)
    assert "fleet: %d hosts stopped in" % hosts in out
    assert set(glob.glob("/tmp/numaguard-demo.*")) == before  # its temporary directory is gone
