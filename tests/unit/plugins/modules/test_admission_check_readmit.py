# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""admission_check with ``readmit`` on a fake host tree of the bundled fleet (intel-2s).

The node's state files are the ones the kubelet writes after admitting ``big`` (200Gi, must span
both NUMA nodes) and then ``small`` (10Gi, joins the group) under ``best-effort``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.admission_check import run_check
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission_inputs import AdmissionInputError
from ansible_collections.numaguard.kubelet.tests.fleet import topologies

CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: best-effort
reservedSystemCPUs: "0,48"
kubeReserved: {memory: 1Gi}
systemReserved: {memory: 1Gi}
reservedMemory:
  - numaNode: 0
    limits: {memory: 1Gi}
  - numaNode: 1
    limits: {memory: 1124Mi}
"""


def pod(name, cpu, memory, stamp=None):
    resources = {"cpu": cpu, "memory": memory}
    meta = {"name": name, "namespace": "shop", "uid": "uid-" + name}
    if stamp:
        meta["creationTimestamp"] = stamp
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": dict(resources), "limits": dict(resources)}}]}}


RUNNING = [pod("big", "2", "200Gi", "2026-11-01T10:00:00Z"), pod("small", "2", "10Gi", "2026-11-01T11:00:00Z")]


def params(root, **kw):
    base = {"root": root, "pod": None, "pod_file": None, "pod_file_content": None, "topology": None,
            "kubelet_config": None, "kubelet_config_dir": None, "kubelet_flags": None,
            "memory_manager_state": None, "cpu_manager_state": None, "devices": None,
            "device_allocations": None, "running_pods": None, "node_allocatable": None, "readmit": None,
            "return_state": False, "merge_method": "fast"}
    base.update(kw)
    return base


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("readmit") / "h01")
    topologies.write_tree("intel-2s", root, hostname="h01")
    kubelet_dir = os.path.join(root, "var", "lib", "kubelet")
    shutil.rmtree(kubelet_dir, ignore_errors=True)
    os.makedirs(kubelet_dir)
    with open(os.path.join(kubelet_dir, "config.yaml"), "w") as handle:
        handle.write(CONFIG)
    first = run_check(params(root, pod=RUNNING, return_state=True))
    assert [p["admitted"] for p in first["pods"]] == [True, True]
    assert first["pods"][0]["numa_nodes"] == [0, 1] and first["pods"][1]["numa_nodes"] == [0, 1]
    for name, text in first["state_after"].items():
        with open(os.path.join(kubelet_dir, name), "w") as handle:
            handle.write(text)
    return root


def test_from_the_state_files_restart_is_safe_reset_is_not(host):
    result = run_check(params(host, readmit=True))["readmit"]
    assert result["running_pods"]["source"] == "state files"
    assert result["running_pods"]["count"] == 2
    assert result["running_pods"]["recorded_order"].startswith("by pod uid")
    restored, fresh = result["starts"]["restored"], result["starts"]["fresh"]
    assert restored["kubelet_starts"] and restored["all_readmitted"]
    assert restored["search"]["method"] == "exhaustive" and restored["search"]["orders_tried"] == 2
    assert not fresh["all_readmitted"]
    (rejected,) = fresh["rejected"]
    assert rejected["pod"] == "unknown/uid-big"
    assert rejected["order"] == ["unknown/uid-small", "unknown/uid-big"]
    assert rejected["reason"] == "UnexpectedAdmissionError"
    assert result["all_readmitted"] is False
    assert result["boot_drift"]["checked"] and result["boot_drift"]["starts"] and result["boot_drift"]["how"] == "exact"
    assert any("reboot or reset (fresh state): unknown/uid-big can be rejected" in line for line in result["summary"])


def test_listed_pods_are_readmitted_in_creation_order(host):
    listed = {"kind": "PodList", "items": list(reversed(RUNNING))}
    result = run_check(params(host, readmit={"start": "fresh"}, running_pods=listed))["readmit"]
    assert result["running_pods"]["source"] == "running_pods option"
    assert result["running_pods"]["recorded_order"] == "creation time"
    fresh = result["starts"]["fresh"]
    assert list(result["starts"]) == ["fresh"]
    assert fresh["recorded_order"]["order"] == ["shop/big", "shop/small"]
    assert fresh["recorded_order"]["all_readmitted"] is True
    assert [r["pod"] for r in fresh["rejected"]] == ["shop/big"]


def test_proposed_configuration_that_the_state_stops(host):
    proposed = {"cpuManagerPolicy": "static", "memoryManagerPolicy": "None", "topologyManagerPolicy": "best-effort",
                "reservedSystemCPUs": "0,48", "kubeReserved": {"memory": "1Gi"}, "systemReserved": {"memory": "1Gi"}}
    result = run_check(params(host, readmit=True, kubelet_config=proposed))["readmit"]
    restored = result["starts"]["restored"]
    assert restored["kubelet_starts"] is False
    assert 'differs from state checkpoint policy "Static"' in restored["start_error"]
    assert result["starts"]["fresh"]["all_readmitted"] is True   # no memory manager: no NUMA group to form


@pytest.mark.parametrize("value, message", [
    ({"start": "reboot"}, "readmit.start must be restored, fresh or a list of them"),
    ({"orders": 3}, "readmit: unknown key(s) orders"),
    ({"max_orders": "many"}, "readmit.max_orders must be an integer"),
    ({"exhaustive_up_to": 12}, "readmit exhaustive_up_to is at most 8"),
    ("sometimes", "readmit must be true or a dict"),
])
def test_bad_readmit_values(host, value, message):
    with pytest.raises(AdmissionInputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        run_check(params(host, readmit=value))


def test_new_pods_are_not_mixed_with_readmit(host):
    with pytest.raises(AdmissionInputError, match="pod and pod_file are new pods"):
        run_check(params(host, readmit=True, pod=RUNNING[0]))


def test_hugepages_the_os_cannot_back_fail_at_runtime(tmp_path):
    root = str(tmp_path / "h02")
    topologies.write_tree("intel-2s", root, hostname="h02")
    pool = os.path.join(root, "sys/devices/system/node/node0/hugepages/hugepages-2048kB")
    with open(os.path.join(pool, "nr_hugepages")) as handle:
        total = int(handle.read())
    with open(os.path.join(pool, "free_hugepages"), "w") as handle:
        handle.write("%d\n" % (total // 4))
    kubelet_dir = os.path.join(root, "var", "lib", "kubelet")
    shutil.rmtree(kubelet_dir, ignore_errors=True)
    os.makedirs(kubelet_dir)
    with open(os.path.join(kubelet_dir, "config.yaml"), "w") as handle:
        handle.write(CONFIG.replace("best-effort", "single-numa-node"))
    assert total == 1024
    wanted = "1Gi"   # half the pool: the state has it free, the OS only a quarter
    manifest = pod("dpdk", "2", "1Gi")
    for kind in ("requests", "limits"):
        manifest["spec"]["containers"][0]["resources"][kind]["hugepages-2Mi"] = wanted
    result = run_check(params(root, pod=manifest))
    (checked,) = result["pods"]
    assert checked["admitted"] and checked["numa_nodes"] == [0]
    assert checked["runtime"] == "admitted, then fails at runtime"
    assert checked["runtime_shortfalls"] == [
        "hugepages-2Mi on NUMA node 0: the pod takes 1Gi, the OS has 512Mi free (free_hugepages %d)" % (total // 4)]
    assert "shop/dpdk: admitted, then fails at runtime: hugepages-2Mi on NUMA node 0" in result["msg"]
    drift = run_check(params(root, readmit=True, running_pods=[]))["readmit"]
    assert drift["hugepages"] == []   # no state file: nothing to compare
