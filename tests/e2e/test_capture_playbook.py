# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""capture.yml on the simulated fleet: facts JSON + snapshot archive that reads back with root= to
byte-identical facts; and device locality from the host (fake GPU, SR-IOV VFs) in admission_check."""
from __future__ import annotations

import json
import tarfile

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.facts import gather


def _canon(value):
    return json.dumps(value, sort_keys=True)


@pytest.fixture(scope="module")
def captured(fleet, tmp_path_factory):
    out = tmp_path_factory.mktemp("captures")
    proc = fleet.playbook("playbooks/capture.yml", "-e", "capture_dir=%s" % out, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:]
    return out


def test_capture_round_trips_byte_identical_on_every_host(fleet, captured, tmp_path):
    live = fleet.module("all", "numaguard.kubelet.numa_facts")
    problems = []
    for name in fleet.names:
        with open(str(captured / ("%s.json" % name))) as handle:
            saved = json.load(handle)["ansible_facts"]["numa_topology"]
        root = tmp_path / name
        root.mkdir()
        with tarfile.open(str(captured / ("%s.tar.gz" % name)), "r:gz") as tar:
            tar.extractall(str(root))
        read_back = gather(str(root))
        want = live[name]["ansible_facts"]["numa_topology"]
        if _canon(saved) != _canon(want):
            problems.append("%s: saved facts differ from the live facts" % name)
        if _canon(read_back) != _canon(want):
            problems.append("%s: root=<snapshot> facts differ from the live facts" % name)
    assert not problems, "\n".join(problems)
    # nothing left behind on the hosts
    leftovers = fleet.ssh(fleet.names[0], "ls -d /tmp/numaguard-capture-* ~/.ansible/tmp/numaguard-capture-* 2>/dev/null")
    assert leftovers.stdout.strip() == ""


def test_saved_facts_feed_validate_as_topology_file(fleet, captured):
    name = fleet.hosts_of("gpu-sriov")[0]["name"]
    with open(str(captured / ("%s.json" % name))) as handle:
        facts = json.load(handle)["ansible_facts"]["numa_topology"]
    assert [(d["id"], d["numa_node"], d["via"]) for d in facts["device_plugins"]["resources"]["nvidia.com/gpu"]] \
        == [("GPU-5c3e2a1b-7d4f-4e8a-9b0c-1d2e3f405162", 1, "nvidia")]
    assert [d["address"] for d in facts["pci_devices"] if d["physfn"]] == ["0000:3b:01.%d" % f for f in range(4)]


CONFIG = {"cpuManagerPolicy": "static", "topologyManagerPolicy": "single-numa-node", "reservedSystemCPUs": "0"}


def _pod(name, extra):
    limits = {"cpu": "2", "memory": "1Gi"}
    limits.update(extra)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": limits}}]}}


def test_gpu_and_vf_pods_checked_against_the_right_node_without_devices_option(fleet):
    name = fleet.hosts_of("gpu-sriov")[0]["name"]
    result = fleet.module(name, "numaguard.kubelet.admission_check",
                          {"kubelet_config": CONFIG,
                           "pod": [_pod("gpu", {"nvidia.com/gpu": "1"}), _pod("vf", {"intel.com/e810_vf": "1"}),
                                   _pod("two-gpus", {"nvidia.com/gpu": "2"})]})[name]
    assert not result.get("failed"), result.get("msg")
    gpu, vf, two = result["pods"]
    assert gpu["admitted"] and gpu["numa_nodes"] == [1]
    assert gpu["containers"][0]["devices"] == {"nvidia.com/gpu": ["GPU-5c3e2a1b-7d4f-4e8a-9b0c-1d2e3f405162"]}
    assert vf["admitted"] and vf["numa_nodes"] == [0]
    assert vf["containers"][0]["devices"] == {"intel.com/e810_vf": ["0000:3b:01.0"]}
    assert not two["admitted"]
    assert result["sources"]["devices"].startswith("host: 6 device(s) registered in "
                                                   "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint")
