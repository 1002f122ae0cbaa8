# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""admission_check's resource fit on fake host trees: OutOfcpu on a small VM, missing hugepage
sizes, running pods from the API, and the sources named in the result."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.admission_check import run_check
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.checkpoint import CPUManagerCheckpoint, dump_cpu_manager_state
from ansible_collections.numaguard.kubelet.tests.fleet import topologies

GI = 1 << 30


def pod(name, uid=None, phase=None, **resources):
    meta = {"name": name, "namespace": "default"}
    if uid:
        meta["uid"] = uid
    document = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": {"containers": [{"name": "c", "image": "x",
                                         "resources": {"requests": dict(resources), "limits": dict(resources)}}]}}
    if phase:
        document["status"] = {"phase": phase}
    return document


@pytest.fixture(scope="module")
def vm(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("fit") / "vm")
    topologies.write_tree("vm-single", root, hostname="vm")
    os.makedirs(os.path.join(root, "var", "lib", "kubelet"), exist_ok=True)
    return root


def check(root, pods, **extra):
    params = {"root": root, "pod": pods, "merge_method": "fast", "return_state": False}
    params.update(extra)
    return run_check(params)


def test_eight_cpu_pod_on_a_four_cpu_vm_is_out_of_cpu(vm):
    result = check(vm, [pod("big", cpu="8", memory="40Gi", **{"hugepages-1Gi": "4Gi"})])
    (big,) = result["pods"]
    assert big["verdict"] == "rejected" and big["admitted"] is False
    assert big["reason"] == "OutOfcpu"
    assert big["message"] == "Node didn't have enough resource: cpu, requested: 8000, used: 0, capacity: 4000"
    assert [i["resource"] for i in big["resource_fit"]["insufficient"]] == ["cpu", "memory", "hugepages-1Gi"]
    assert result["sources"]["running_pods"] == "state files only"
    assert result["node_allocatable"]["allocatable"]["cpu"] == 4000
    assert "big" in result["msg"] and "OutOfcpu" in result["msg"]


def test_missing_hugepage_size_is_never_admitted(vm):
    (huge,) = check(vm, [pod("huge", cpu="1", memory="1Gi", **{"hugepages-1Gi": "1Gi"})])["pods"]
    assert huge["verdict"] == "rejected" and huge["reason"] == "OutOfhugepages-1Gi"


def test_running_pods_from_the_api_fill_the_node(vm):
    k8s_info = {"changed": False, "api_found": True,
                "resources": [pod("web-%d" % i, uid="u%d" % i, cpu="1", memory="1Gi") for i in range(3)]
                + [pod("job", uid="u9", phase="Succeeded", cpu="4", memory="1Gi")]}
    result = check(vm, [pod("two", cpu="2", memory="1Gi"), pod("one", cpu="1", memory="1Gi")], running_pods=k8s_info)
    two, one = result["pods"]
    assert two["reason"] == "OutOfcpu"
    assert two["message"] == "Node didn't have enough resource: cpu, requested: 2000, used: 3000, capacity: 4000"
    assert one["verdict"] == "admitted"
    assert result["running_pods"]["count"] == 3
    assert result["sources"]["running_pods"] == "option"
    assert "Succeeded or Failed left out" in result["running_pods"]["warnings"][0]


def test_extended_resource_without_inventory_cannot_be_checked(vm):
    (gpu,) = check(vm, [pod("gpu", cpu="1", memory="1Gi", **{"nvidia.com/gpu": "1"})])["pods"]
    assert gpu["verdict"] == "cannot_check" and gpu["admitted"] is False
    assert gpu["cannot_check"].startswith("nvidia.com/gpu: no device inventory")


def test_state_file_pods_are_counted(vm):
    content = dump_cpu_manager_state(CPUManagerCheckpoint(policy_name="static", default_cpu_set="0",
                                                          entries={"p1": {"c": "1-3"}}), 2)
    result = check(vm, [pod("two", cpu="500m", memory="1Gi")], cpu_manager_state=content,
                   kubelet_config={"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "1"}},
                   memory_manager_state="")
    (two,) = result["pods"]
    # 4 CPUs - 1 reserved = 3000m allocatable, all held by p1's exclusive CPUs
    assert two["reason"] == "OutOfcpu"
    assert two["message"] == "Node didn't have enough resource: cpu, requested: 500, used: 3000, capacity: 3000"
    assert result["running_pods"]["count"] == 1
    assert result["sources"]["resource_fit"]["running_pods"] == ["cpu_manager_state"]


def test_bad_running_pods_fail_clearly(vm):
    with pytest.raises(ValueError, match=r"running_pods\[0\]: kind 'Service'"):
        check(vm, [pod("a", cpu="1", memory="1Gi")], running_pods=[{"kind": "Service"}])
