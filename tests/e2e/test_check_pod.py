# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""admission_check ad hoc and playbooks/check_pod.yml against the simulated fleet.

Each host gets its own kubelet configuration (and, for one host, state files) in its
/var/lib/kubelet, written through the host's tree on this machine; the module reads them on the
host over ssh at the real paths.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numaguard_fleet_tool as fleet_tool  # pylint: disable=import-error
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)

pytestmark = pytest.mark.skipif(fleet_tool.unavailable() is not None, reason=str(fleet_tool.unavailable()))

POD = """apiVersion: v1
kind: Pod
metadata:
  name: db
  namespace: shop
spec:
  containers:
    - name: postgres
      image: postgres:16
      resources:
        requests: {cpu: "4", memory: 8Gi}
        limits: {cpu: "4", memory: 8Gi}
"""

STATIC = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: restricted
reservedSystemCPUs: "0,48"
systemReserved: {memory: 1Gi}
reservedMemory:
  - numaNode: 0
    limits: {memory: 1124Mi}
"""

TIGHT = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
topologyManagerPolicy: single-numa-node
reservedSystemCPUs: "0-61"
"""


def ad_hoc(fleet, host, args):
    """``ansible HOST -m numaguard.kubelet.admission_check -a ARGS`` (key=value form, as a user
    types it, default output callback); returns the host's result dict plus ``failed``."""
    argv = [os.path.join(BIN, "ansible"), "-i", fleet.inventory, host, "-m", "numaguard.kubelet.admission_check",
            "-a", args]
    env = dict(fleet.env, ANSIBLE_STDOUT_CALLBACK="ansible.builtin.minimal", ANSIBLE_LOAD_CALLBACK_PLUGINS="1")
    proc = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    lines = proc.stdout.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(host + " | ") and " => " in line:
            status, first = line[len(host) + 3:].split(" => ", 1)
            body = [first]
            for rest in lines[index + 1:]:
                body.append(rest)
                if rest == "}":
                    break
            result = json.loads("\n".join(body))
            result["failed"] = status.startswith("FAILED")
            return result
    raise AssertionError("no result for %s (exit %d):\n%s\n%s" % (host, proc.returncode, proc.stdout, proc.stderr))


def _write(fleet, name, relpath, text):
    path = os.path.join(fleet.host(name)["root"], relpath)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


@pytest.fixture
def pod_file(tmp_path):
    path = tmp_path / "db.yaml"
    path.write_text(POD)
    return str(path)


def test_ad_hoc_reads_the_hosts_state_files(fleet_restored, pod_file):
    fleet = fleet_restored
    host = fleet.hosts_of("intel-2s")[0]["name"]
    _write(fleet, host, "var/lib/kubelet/config.yaml", STATIC)
    first = ad_hoc(fleet, host, "pod_file=%s return_state=true" % pod_file)
    assert first["failed"] is False, first.get("msg")
    assert first["changed"] is False
    pod = first["pods"][0]
    assert pod["admitted"] and pod["numa_nodes"] == [0] and pod["containers"][0]["cpus"] == "1-2,49-50"
    assert first["sources"]["memory_manager_state"] == "absent (/var/lib/kubelet/memory_manager_state)"
    # the kubelet writes its state after admitting; put it on the host and ask again
    for name, text in first["state_after"].items():
        _write(fleet, host, "var/lib/kubelet/" + name, text)
    # the same manifest again is the same (derived) uid, i.e. the running pod being re-admitted:
    # the kubelet hands it back its own CPUs. A second replica needs its own name.
    again = ad_hoc(fleet, host, "pod_file=%s" % pod_file)
    assert again["pods"][0]["containers"][0]["cpus"] == "1-2,49-50"
    replica = os.path.join(os.path.dirname(pod_file), "db-2.yaml")
    with open(replica, "w") as handle:
        handle.write(POD.replace("name: db", "name: db-2"))
    second = ad_hoc(fleet, host, "pod_file=%s" % replica)
    assert second["sources"]["memory_manager_state"] == "/var/lib/kubelet/memory_manager_state"
    pod = second["pods"][0]
    assert pod["admitted"] and pod["containers"][0]["cpus"] == "3-4,51-52"
    assert second["memory"]["0"]["memory"]["reserved"] == 16 * 1024 ** 3
    # a corrupted state file is a failure with the kubelet's message, not an answer
    text = first["state_after"]["cpu_manager_state"].replace('"dataChecksum":', '"dataChecksum":1')
    _write(fleet, host, "var/lib/kubelet/cpu_manager_state", text)
    broken = ad_hoc(fleet, host, "pod_file=%s" % replica)
    assert broken["failed"] is True
    assert "could not restore state from checkpoint" in broken["msg"]


def test_check_pod_playbook_reports_every_host(fleet_restored, pod_file, tmp_path):
    fleet = fleet_restored
    intel = fleet.hosts_of("intel-2s")[0]["name"]
    cxl = fleet.hosts_of("cxl-memory")[0]["name"]
    sparse = fleet.hosts_of("sparse-ids")[0]["name"]
    nonuma = fleet.hosts_of("vm-nonuma")[0]["name"]
    _write(fleet, intel, "var/lib/kubelet/config.yaml", STATIC)
    _write(fleet, cxl, "var/lib/kubelet/config.yaml", TIGHT)
    _write(fleet, sparse, "var/lib/kubelet/cpu_manager_state", '{"policyName":"static","defaultCpuSet":"0-3"}')
    report_file = str(tmp_path / "report.json")
    proc = fleet.playbook("playbooks/check_pod.yml", "-e", "pod_file=%s" % pod_file,
                          "-e", "check_pod_report_file=%s" % report_file)
    assert proc.returncode == 0, proc.stdout[-3000:]
    with open(report_file) as handle:
        report = json.load(handle)
    hosts = dict((entry["host"], entry) for entry in report["hosts"])
    assert set(hosts) == set(fleet.names)
    assert hosts[intel]["status"] == "admitted"
    assert hosts[intel]["pods"][0]["numa_nodes"] == [0]
    # 2 free CPUs on the CXL host, the pod wants 4 on one node: the CPU manager has no hint
    assert hosts[cxl]["status"] == "rejected"
    assert hosts[cxl]["pods"][0]["reason"] == "TopologyAffinityError"
    # the state file names policy static while the host's kubelet runs policy none
    assert hosts[sparse]["status"] == "cannot_check"
    assert 'configured policy "none" differs from state checkpoint policy "static"' in hosts[sparse]["errors"][0]
    # a 2-CPU VM passes the Topology Manager (policy none) but not the kubelet's resource fit
    assert hosts[nonuma]["status"] == "rejected"
    assert hosts[nonuma]["pods"][0]["reason"] == "OutOfcpu"
    assert hosts[nonuma]["pods"][0]["message"] == ("Node didn't have enough resource: cpu, requested: 4000, used: 0, "
                                                   "capacity: 2000")
    out = proc.stdout
    assert re.search(r"admitted on \d+, rejected on \d+ \((OutOfcpu|TopologyAffinityError) \d+, "
                     r"(OutOfcpu|TopologyAffinityError) \d+\), could not check 1 \(could not restore state from checkpoint 1\)", out), out
    assert re.search(r"%s +ADMITTED +numa_2n_96c_2m_1g_[0-9a-f]{8}: " % intel, out)
    assert "shop/db admitted on NUMA 0 (cpus 1-2,49-50; 8Gi memory on 0)" in out
    assert "shop/db rejected: TopologyAffinityError: Resources cannot be allocated with Topology locality" in out
    # the playbook fails on request when nobody admits
    proc = fleet.playbook("playbooks/check_pod.yml", "-e", "pod_file=%s" % pod_file, "-e", "check_pod_fail_if_none=true",
                          limit=cxl)
    assert proc.returncode != 0 and "no host would admit the pod" in proc.stdout


def test_check_pod_fails_when_no_host_could_check_unless_told(fleet, pod_file):
    """A valid pod that no host can check (here: every host's root is missing): that is a failed
    run (rc != 0) saying so, not rc 0, unless check_pod_fail_if_unchecked=false (issue 26). An
    invalid manifest fails on its own (issue 23); unreachable hosts end with exit code 4."""
    hosts = ",".join(fleet.names[:2])
    args = ("-e", "pod_file=%s" % pod_file, "-e", "check_pod_root=/nonexistent-root")
    proc = fleet.playbook("playbooks/check_pod.yml", *args, limit=hosts)
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "could not check 2" in proc.stdout, proc.stdout[-3000:]
    assert "no host could check the pod (see the report above: could not check 2 of 2 host(s))" in proc.stdout
    accepted = fleet.playbook("playbooks/check_pod.yml", *args, "-e", "check_pod_fail_if_unchecked=false", limit=hosts)
    assert accepted.returncode == 0, accepted.stdout[-3000:]
    assert "no host could check the pod (see" not in accepted.stdout
