# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/validate.yml end to end: example inventories (saved topologies, no connection) and the
simulated fleet (topology gathered from each host over ssh, and from its snapshot root)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "fleet"))

import fleet as fleetlib  # noqa: E402  (tests/fleet/fleet.py)
import topologies as topolib  # noqa: E402  (tests/fleet/topologies.py)

from ansible_collections.numaguard.kubelet.tests.schemas.junit_jenkins import read_junit  # noqa: E402

PLAYBOOK = os.path.join(REPO, "playbooks", "validate.yml")
EXAMPLES = os.path.join(REPO, "playbooks", "examples", "validate")
BIN = os.path.dirname(sys.executable)


def _env():
    env = dict(os.environ)
    env.update({"ANSIBLE_PIPELINING": "1", "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_FORKS": "10",
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_RETRY_FILES_ENABLED": "0",
                "PATH": BIN + os.pathsep + env.get("PATH", "")})
    return env


def run(inventory, tmp_path, *extra):
    junit = str(tmp_path / "report.xml")
    args = [os.path.join(BIN, "ansible-playbook"), "-i", inventory, PLAYBOOK, "-e", "validate_junit_file=" + junit]
    for item in extra:
        args += ["-e", json.dumps(item)]
    proc = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=600, check=False)
    report = None
    if os.path.exists(junit):
        with open(junit) as handle:
            text = handle.read()
        read_junit(text)  # valid against Jenkins xunit's JUnit schema, read by its decoder
        report = ET.fromstring(text.split("\n", 1)[1])
    return proc, report


def cases(report):
    out = {}
    for case in report.findall("./testsuite/testcase"):
        failure = case.find("failure")
        error = case.find("error")
        out[case.get("name")] = ("failure", failure.text) if failure is not None else (
            ("error", error.text) if error is not None else ("ok", (case.findtext("system-out") or "")))
    return out


def test_good_example_inventory(tmp_path):
    proc, report = run(os.path.join(EXAMPLES, "good", "inventory.yml"), tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert report.get("tests") == "6" and report.get("failures") == "0" and report.get("errors") == "0"
    results = cases(report)
    assert "--reserved-memory=0:memory=3Gi;1:memory=2148Mi" in results["worker-a1"][1]
    assert "--reserved-memory=0:memory=2Gi;33:memory=1124Mi" in results["power-1"][1]
    assert "kubelet settings (reservedMemory included) are valid on all 6 host(s)" in proc.stdout


BROKEN = {
    "forgot-eviction": "[reserved-memory-sum] the total amount \"5Gi\" of type \"memory\" is not equal to the value "
                       "\"5220Mi\" determined by Node Allocatable feature",
    "hugepages-reserved": "[reserved-memory-hugepages] the total amount \"2Gi\" of type \"hugepages-1Gi\" is not equal "
                          "to the value \"0\" determined by Node Allocatable feature",
    "missing-node": "[reserved-memory-numa-node] the reserved memory configuration references a NUMA node 1 that does "
                    "not exist on this machine (host NUMA nodes: 0)",
    "lowercase-policy": "[memory-manager-policy] memoryManagerPolicy \"static\": unknown policy: \"static\" Fix: policy "
                        "names are case-sensitive: write Static",
    "eviction-trap": "[reserved-memory-sum] the total amount \"5220Mi\" of type \"memory\" is not equal to the value "
                     "\"5Gi\" determined by Node Allocatable feature",
    "over-capacity": "[node-capacity] NUMA node 0: reserved memory 16484Mi + hugepages 0 = 16484Mi exceeds the node's "
                     "memory",
    "zero-and-duplicate": "[reserved-memory-zero] invalid configuration: reserved memory may not be zero for NUMA node 0 "
                          "and resource \"memory\"",
}


def test_broken_example_inventory_reports_every_mistake(tmp_path):
    proc, report = run(os.path.join(EXAMPLES, "broken", "inventory.yml"), tmp_path)
    assert proc.returncode != 0
    assert report.get("tests") == "8" and report.get("failures") == "7" and report.get("errors") == "1"
    results = cases(report)
    for host, text in BROKEN.items():
        kind, body = results[host]
        assert kind == "failure" and text in body, (host, body)
        assert text.replace('"', '\\"') in proc.stdout  # also printed in the run log (JSON-escaped by debug)
    assert results["zero-and-duplicate"][1].count("[reserved-memory-") == 2
    assert results["no-topology"][0] == "error" and "does-not-exist.json" in results["no-topology"][1]
    assert "kubelet settings are invalid or could not be checked on 8 host(s)" in proc.stdout
    assert "reservedMemory valid on 0 of 8 host(s): 7 invalid, 1 could not be checked" in proc.stdout
    # the topology file is looked up in the current directory, then next to the inventory; both are named
    assert "neither %s (current directory)" % os.path.normpath(os.path.join(os.getcwd(), "../topologies/does-not-exist.json")) \
        in results["no-topology"][1]


def test_validate_fail_false_reports_without_failing(tmp_path):
    proc, report = run(os.path.join(EXAMPLES, "broken", "inventory.yml"), tmp_path, {"validate_fail": False})
    assert proc.returncode == 0
    assert report.get("failures") == "7"


# -- the simulated fleet --------------------------------------------------------------------------

needs_fleet = pytest.mark.skipif(os.geteuid() != 0 or not os.access("/usr/sbin/sshd", os.X_OK),
                                 reason="the simulated fleet needs root and openssh-server (scripts/bootstrap)")


@pytest.fixture(scope="module")
def fleet():
    fleet_dir = tempfile.mkdtemp(prefix="ng-validate-fleet-")
    names = sorted(topolib.TOPOLOGIES)
    state = fleetlib.up(fleet_dir, topologies=names, base_port="auto", quiet=True)
    try:
        yield state
    finally:
        fleetlib.down(fleet_dir, quiet=True)
        shutil.rmtree(fleet_dir, ignore_errors=True)


SETTINGS = {"memoryManagerPolicy": "Static", "kubeReserved": {"memory": "2Gi"}, "systemReserved": {"memory": "1Gi"}}


@needs_fleet
def test_fleet_every_strategy_validates_on_every_host(fleet, tmp_path):
    hosts = [h["name"] for h in fleet["hosts"]]
    # one strategy over ssh (proportional/node0/reserved_cpus on every bundled topology: unit property tests)
    for strategy in ("spread",):
        variables = {"kubelet_numa_settings": SETTINGS, "validate_strategy": strategy}
        proc, report = run(fleet["inventory"], tmp_path, variables)
        assert proc.returncode == 0, (strategy, proc.stdout[-4000:] + proc.stderr[-2000:])
        assert report.get("tests") == str(len(hosts)) and report.get("failures") == "0"
        assert sorted(cases(report)) == sorted(hosts)
        # the topology came from each host itself, over ssh
        assert re.search(r"ok: \[%s\]" % re.escape(hosts[0]), proc.stdout)


@needs_fleet
def test_fleet_snapshot_roots_and_a_broken_reservation(fleet, tmp_path):
    settings = dict(SETTINGS, reservedMemory=[{"numaNode": 1, "limits": {"memory": "3172Mi"}}])
    variables = {"kubelet_numa_settings": settings, "numa_snapshot_root": "{{ fleet_root }}"}
    proc, report = run(fleet["inventory"], tmp_path, variables)
    assert proc.returncode != 0
    results = cases(report)
    single = sorted(h["name"] for h in fleet["hosts"] if len(topolib.TOPOLOGIES[h["topology"]].nodes) == 1)
    failed = sorted(name for name, (kind, _body) in results.items() if kind != "ok")
    assert single and failed == single
    for name in single:
        assert "references a NUMA node 1 that does not exist on this machine" in results[name][1]
    cxl = [h["name"] for h in fleet["hosts"] if h["topology"] == "cxl-memory"][0]
    assert "[memory-only-node] NUMA node 1 has no CPUs" in results[cxl][1]
