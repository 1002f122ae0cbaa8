# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""admission_check says what the kubelet's managers align and what they leave out (issue 27):
DRA claims are never aligned by the Topology Manager, extended resources without topology neither,
and a claim's device on another NUMA node than the pod's CPUs is a warning naming both nodes."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.admission_check import run_check
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.alignment import (
    STANDARD_NUMA_ATTRIBUTE,
    WHY_DRA,
    DRAInputError,
    DRAObjects,
    device_numa_node,
    pod_alignment,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod, pod_requests
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import read_topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.admission import describe_pod
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.admission_table import alignment_warnings
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import check_pod_report
from ansible_collections.numaguard.kubelet.tests.fleet import topologies

CONFIG = {"cpuManagerPolicy": "static", "topologyManagerPolicy": "single-numa-node", "memoryManagerPolicy": "Static",
          "reservedSystemCPUs": "0,16", "kubeReserved": {"memory": "1Gi"}, "systemReserved": {"memory": "1Gi"},
          "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}, {"numaNode": 1, "limits": {"memory": "1124Mi"}}]}


@pytest.fixture(scope="module")
def topology(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("dra") / "h")
    topologies.write_tree("gpu-sriov", root, hostname="h")
    return read_topology(root).to_facts()


def gpu_pod(name="trainer", cpu="4", claim="gpu-claim", extra=None):
    resources = {"cpu": cpu, "memory": "4Gi"}
    resources.update(extra or {})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
                     "containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": dict(resources), "limits": dict(resources),
                                                   "claims": [{"name": "gpu"}]}}]}}


def claim(name="gpu-claim", device="gpu-1", driver="gpu.example.com", pool="node-a"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "ml"},
            "status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": driver, "pool": pool, "device": device}]}}}}


def resource_slice(driver="gpu.example.com", pool="node-a", numa=None):
    numa = numa or {"gpu-0": 0, "gpu-1": 1}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "node-a-gpus"},
            "spec": {"driver": driver, "nodeName": "node-a", "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": dev, "attributes": {STANDARD_NUMA_ATTRIBUTE: {"int": node},
                                                              "gpu.example.com/model": {"string": "H100"}}}
                                 for dev, node in sorted(numa.items())]}}


def check(topology, pods, **kw):
    params = {"root": "/nonexistent", "pod": pods, "pod_file": None, "pod_file_content": None, "topology": topology,
              "kubelet_config": copy.deepcopy(CONFIG), "kubelet_config_dir": None, "kubelet_flags": None,
              "memory_manager_state": "", "cpu_manager_state": "", "devices": {}, "device_allocations": {},
              "return_state": False, "merge_method": "fast", "kubelet_version": "1.34"}
    params.update(kw)
    return run_check(params)


def test_a_resource_claim_is_reported_not_aligned_by_the_topology_manager(topology):
    result = check(topology, [gpu_pod()])
    pod = result["pods"][0]
    assert pod["admitted"] and pod["numa_nodes"] == [0]
    alignment = pod["alignment"]
    assert {"resource": "claim gpu", "why": WHY_DRA} in alignment["not_aligned"]
    assert [a["resource"] for a in alignment["aligned"]] == ["cpu", "memory"]
    assert alignment["claims"][0]["status"] == "unknown"
    assert "no ResourceClaim ml/gpu-claim given" in alignment["claims"][0]["note"]
    assert "claim gpu (DRA)" in describe_pod(pod)
    assert result["alignment_warnings"] == []


def test_a_claim_device_on_another_numa_node_warns_naming_both_nodes(topology):
    # the pod's exclusive CPUs and memory land on node 0 (first fit), the claim's GPU sits on node 1
    result = check(topology, [gpu_pod()], dra_objects=[claim(device="gpu-1"), resource_slice()])
    pod = result["pods"][0]
    assert pod["containers"][0]["cpu_numa_nodes"] == [0]
    entry = pod["alignment"]["claims"][0]
    assert entry["status"] == "mismatch"
    assert entry["devices"] == [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-1",
                                 "numa_node": 1, "attribute": STANDARD_NUMA_ATTRIBUTE}]
    warnings = result["alignment_warnings"]
    assert warnings and warnings == pod["alignment"]["warnings"]
    assert "claim gpu device gpu-1 (driver gpu.example.com) is on NUMA node 1 but the pod's exclusive CPUs are on " \
           "NUMA node 0" in warnings[0]
    assert any("memory is on NUMA node 0" in w for w in warnings)
    assert warnings[0] in result["msg"]
    # the fleet report shows the warning for the host
    report = check_pod_report({"h": result}, {"h": topology}, {"h": []}, ["h"])
    host = report["hosts"][0] if isinstance(report["hosts"], list) else report["hosts"]["h"]
    assert warnings[0] in host["warnings"]


def test_a_claim_device_on_the_pods_node_is_aligned_without_warning(topology):
    result = check(topology, [gpu_pod()], dra_objects=[claim(device="gpu-0"), resource_slice()])
    entry = result["pods"][0]["alignment"]["claims"][0]
    assert entry["status"] == "aligned" and entry["devices"][0]["numa_node"] == 0
    assert result["alignment_warnings"] == []
    # still listed as not aligned by the kubelet: it was luck, not the Topology Manager
    assert {"resource": "claim gpu", "why": WHY_DRA} in result["pods"][0]["alignment"]["not_aligned"]


def test_claim_from_a_template_found_through_the_pod_status(topology):
    manifest = gpu_pod()
    manifest["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    manifest["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "trainer-gpu-x7k2"}]}
    result = check(topology, [manifest], dra_objects=[{"kind": "List", "items": [claim(name="trainer-gpu-x7k2"), resource_slice()]}])
    entry = result["pods"][0]["alignment"]["claims"][0]
    assert entry["resource_claim"] == "trainer-gpu-x7k2" and entry["template"] == "one-gpu"
    assert entry["status"] == "mismatch"


def test_extended_resources_without_topology_are_not_aligned(topology):
    devices = {"example.com/fpga": {"fpga-0": []}, "nvidia.com/gpu": {"gpu-a": 1}}
    manifest = gpu_pod(extra={"example.com/fpga": "1", "nvidia.com/gpu": "1", "example.com/dongle": "1"})
    result = check(topology, [manifest], devices=devices)
    pod = result["pods"][0]
    reasons = dict((item["resource"], item["why"]) for item in pod["alignment"]["not_aligned"])
    assert "reports no NUMA topology" in reasons["example.com/fpga"]
    assert "no device plugin registered it" in reasons["example.com/dongle"]
    aligned = dict((item["resource"], item) for item in pod["alignment"]["aligned"])
    if pod["admitted"]:
        assert aligned["nvidia.com/gpu"]["numa_nodes"] == [1]


def test_topology_manager_none_aligns_nothing(topology):
    config = dict(CONFIG, topologyManagerPolicy="none")
    result = check(topology, [gpu_pod()], kubelet_config=config)
    alignment = result["pods"][0]["alignment"]
    assert alignment["aligned"] == []
    assert {item["resource"] for item in alignment["not_aligned"]} == {"cpu", "memory", "claim gpu"}


@pytest.mark.parametrize("attributes, driver, expected", [
    ({STANDARD_NUMA_ATTRIBUTE: {"int": 3}, "dra.net/numaNode": {"int": 1}}, "dra.net", (3, STANDARD_NUMA_ATTRIBUTE)),
    ({"dra.net/numaNode": {"int": 1}, "other.io/numaNode": {"int": 2}}, "dra.net", (1, "dra.net/numaNode")),
    ({"numa": {"int": 2}}, "x", (2, "numa")),
    ({STANDARD_NUMA_ATTRIBUTE: {"ints": [3, 2]}}, "x", (3, STANDARD_NUMA_ATTRIBUTE)),  # list form: own node first
    ({"dra.cpu/numaNodeID": {"intValue": 5}}, "y", (5, "dra.cpu/numaNodeID")),
    ({"model": {"string": "x"}}, "x", (None, "")),
    ({"numaNode": {"bool": True}}, "x", (None, "")),
    (None, "x", (None, "")),
])
def test_numa_attribute_names(attributes, driver, expected):
    assert device_numa_node(attributes, driver) == expected


def test_v1beta1_basic_attributes_and_bad_input():
    old = {"kind": "ResourceSlice", "spec": {"driver": "d", "pool": {"name": "p"},
                                             "devices": [{"name": "n0", "basic": {"attributes": {"d/numaNode": {"int": 1}}}}]}}
    assert DRAObjects([old]).device_numa == {("d", "p", "n0"): (1, "d/numaNode")}
    with pytest.raises(DRAInputError, match=r"dra_objects\[0\]: kind 'Pod' is neither"):
        DRAObjects([{"kind": "Pod"}])
    with pytest.raises(DRAInputError, match="ResourceClaim without metadata.name"):
        DRAObjects([{"kind": "ResourceClaim"}])


def test_the_engine_returns_the_mismatch_as_data_and_the_report_words_it(topology):
    """pod_alignment (the engine) returns no text for a mismatch: ``mismatches`` (data), which
    ``_report/admission_table.alignment_warnings`` turns into the module's ``warnings``."""
    result = check(topology, [gpu_pod()], dra_objects=[claim(device="gpu-1"), resource_slice()])
    pod = result["pods"][0]
    engine = pod_alignment(gpu_pod(), pod_requests(Pod.from_manifest(gpu_pod())), pod, result["node"], None,
                           DRAObjects([claim(device="gpu-1"), resource_slice()]))
    assert "warnings" not in engine
    assert engine["mismatches"][0] == {"pod": "ml/trainer", "claim": "gpu", "device": "gpu-1", "driver": "gpu.example.com",
                                       "numa_node": 1, "pinned": "cpu", "pod_numa_nodes": [0]}
    assert alignment_warnings(engine) == pod["alignment"]
    assert all(isinstance(value, (int, str, list)) for m in engine["mismatches"] for value in m.values())
