# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 9 audit: playbooks/validate.yml surfaces the kubelet's start-up refusals (AsInt64,
Node Allocatable capacity) with the kubelet's words, and accepts a trimmed config quantity.
Saved topology, local connection: no fleet needed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PLAYBOOK = os.path.join(REPO, "playbooks", "validate.yml")
TOPOLOGY = os.path.join(REPO, "playbooks", "examples", "validate", "topologies", "vm-single.json")  # one 15.6Gi node
BIN = os.path.dirname(sys.executable)

BASE = {"memoryManagerPolicy": "Static", "kubeReserved": {"memory": "4Gi"}, "systemReserved": {"memory": "1Gi"}}
HOSTS = {
    "not-int64": dict(BASE, reservedMemory=[{"numaNode": 0, "limits": {"memory": "5220.0Mi"}}]),
    "over-capacity": dict(BASE, kubeReserved={"memory": "10Gi"}, systemReserved={"memory": "8Gi"},
                          reservedMemory=[{"numaNode": 0, "limits": {"memory": "18532Mi"}}]),
    "trimmed": dict(BASE, reservedMemory=[{"numaNode": 0, "limits": {"memory": " 5220Mi"}}]),
}


def test_validate_playbook_reports_the_start_up_refusals(tmp_path):
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {
        "vars": {"ansible_connection": "local", "numa_topology_file": TOPOLOGY},
        "hosts": dict((name, {"kubelet_numa_settings": settings}) for name, settings in HOSTS.items())}}))
    # the same over-capacity host on a 1.28 kubelet: the words its kubelet uses (before kubernetes/kubernetes#119764)
    hosts = json.loads(inventory.read_text())
    hosts["all"]["hosts"]["old-kubelet"] = {
        "kubelet_numa_settings": HOSTS["over-capacity"], "kubelet_numa_kubelet_version": "1.28"}
    inventory.write_text(json.dumps(hosts))
    junit = tmp_path / "report.xml"
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", str(inventory), PLAYBOOK,
                           "-e", "validate_junit_file=%s" % junit], env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert proc.returncode != 0, proc.stdout[-3000:]
    results = {}
    for case in ET.parse(str(junit)).getroot().findall("./testsuite/testcase"):
        failure = case.find("failure")
        results[case.get("name")] = None if failure is None else failure.text
    assert results["trimmed"] is None, results["trimmed"]
    assert "[reserved-memory-integer]" in results["not-int64"]
    assert "could not covert a variable of type Quantity to int64" in results["not-int64"]
    assert "[node-allocatable-capacity]" in results["over-capacity"]
    assert ('invalid Node Allocatable configuration. Resource "memory" has a reservation of {{19432210432 0} {<nil>}  '
            'BinarySI} but capacity of {{16763346944 0} {<nil>}  BinarySI}. Expected capacity >= reservation.'
            in results["over-capacity"]), results["over-capacity"]
    assert ('invalid Node Allocatable configuration. Resource "memory" has an allocatable of {{19432210432 0} {<nil>}  '
            'BinarySI}, capacity of {{-2668863488 0} {<nil>}  BinarySI}' in results["old-kubelet"]), results["old-kubelet"]
    assert "Expected capacity" not in results["old-kubelet"]
    assert "reservedMemory valid on 1 of 4 host(s): 3 invalid" in proc.stdout
    # the report says once which kubelet each group of hosts was checked for
    assert ("kubelet assumed: 1.37 (version unknown: the newest released), feature gates: the release's defaults "
            "-- 3 host(s): not-int64, over-capacity, trimmed" in proc.stdout), proc.stdout
    assert ("kubelet assumed: 1.28 (kubelet_numa_kubelet_version), feature gates: the release's defaults -- 1 host(s): "
            "old-kubelet" in proc.stdout), proc.stdout
