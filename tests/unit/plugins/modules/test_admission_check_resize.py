# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""admission_check: a pod that is already running on the node is a resize request.

Upstream: pkg/kubelet/allocation handlers.go ``podResizesAdmitHandler.Admit`` (1.34+; before,
``canResizePod``), features_linux.go ``IsInPlacePodVerticalScalingAllowed``. The running pod is
found by uid, else by namespace/name, among ``running_pods`` or (by uid) in the state files;
an infeasible resize is reported with the kubelet's reason and message and not admitted as a
new pod.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.admission_check import run_check
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.checkpoint import (
    CPUManagerCheckpoint,
    dump_cpu_manager_state,
)
from ansible_collections.numaguard.kubelet.plugins.modules import admission_check
from ansible_collections.numaguard.kubelet.tests.fleet import topologies
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import patch_module_args

CPU_MESSAGE = 'Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"'
MEMORY_MESSAGE = 'Resize is infeasible for Guaranteed Pods alongside Memory Manager policy "Static"'
STATIC = {"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "1"}}


def pod(name, uid=None, cpu="1", memory="1Gi", limits=True, namespace="default", status=None):
    meta = {"name": name, "namespace": namespace}
    if uid:
        meta["uid"] = uid
    values = {"cpu": cpu, "memory": memory}
    resources = {"requests": dict(values), "limits": dict(values)} if limits else {"requests": dict(values)}
    document = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": {"containers": [{"name": "c", "image": "x", "resources": resources}]}}
    if status is not None:
        document["status"] = status
    return document


@pytest.fixture(scope="module")
def vm(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("resize") / "vm")
    topologies.write_tree("vm-single", root, hostname="vm")
    os.makedirs(os.path.join(root, "var", "lib", "kubelet"), exist_ok=True)
    return root


def check(root, pods, **extra):
    params = {"root": root, "pod": pods, "merge_method": "fast", "return_state": False, "kubelet_version": "1.37",
              "kubelet_config": dict(STATIC), "cpu_manager_state": "", "memory_manager_state": ""}
    params.update(extra)
    return run_check(params)


def test_cpu_resize_found_by_uid_is_infeasible_under_static_and_not_admitted(vm):
    result = check(vm, [pod("web", uid="u-1", cpu="2", memory="1Gi")], running_pods=[pod("web", uid="u-1")])
    (web,) = result["pods"]
    assert web["admitted"] is False and web["verdict"] == "rejected"
    assert (web["reason"], web["message"]) == ("Infeasible", CPU_MESSAGE)
    resize = web["resize"]
    assert resize["verdict"] == "infeasible" and resize["metric_reason"] == "guaranteed_pod_cpu_manager_static_policy"
    assert resize["of"] == {"uid": "u-1", "namespace": "default", "name": "web", "matched_by": "uid",
                            "sources": ["running_pods"]}
    assert resize["gates"] == {"InPlacePodVerticalScaling": True, "InPlacePodVerticalScalingExclusiveCPUs": False,
                               "InPlacePodVerticalScalingExclusiveMemory": False}
    assert resize["kubelet_version"] == "1.37"
    # never run through admission as a new pod: no merges, no CPUs taken
    assert web["merges"] == [] and web["containers"] == [] and web["numa_nodes"] == []
    assert "default/web resize of default/web: infeasible (kubelet 1.37): Infeasible: " + CPU_MESSAGE in result["msg"]


def test_resize_found_by_namespace_and_name_when_the_manifest_has_no_uid(vm):
    result = check(vm, [pod("web", cpu="2")], running_pods=[pod("web", uid="u-api")])
    (web,) = result["pods"]
    assert web["resize"]["of"]["matched_by"] == "namespace/name"
    assert web["resize"]["of"]["uid"] == "u-api"
    assert web["message"] == CPU_MESSAGE
    # another namespace, or an explicit other uid, is a new pod
    other = check(vm, [pod("web", cpu="2", namespace="prod")], running_pods=[pod("web", uid="u-api")])["pods"][0]
    assert "resize" not in other and other["containers"]
    new_uid = check(vm, [pod("web", uid="u-new", cpu="2")], running_pods=[pod("web", uid="u-api")])["pods"][0]
    assert "resize" not in new_uid


def test_exclusive_cpus_gate_makes_the_resize_feasible_and_the_fit_excludes_the_pod_itself(vm):
    gates = dict(STATIC, featureGates={"InPlacePodVerticalScalingExclusiveCPUs": True})
    # the vm has 4 CPUs, 1 reserved: 3 allocatable; the running pod holds 1, the resize asks for 3
    result = check(vm, [pod("web", uid="u-1", cpu="3")], running_pods=[pod("web", uid="u-1")], kubelet_config=gates)
    (web,) = result["pods"]
    assert web["resize"]["verdict"] == "feasible" and web["resize"]["reason"] is None
    assert web["admitted"] is True and web["resource_fit"]["fits"] is True
    assert "resource fit" in web["resize"]["checked"][-1]
    assert any("Topology Manager" in note for note in web["resize"]["not_simulated"])
    too_big = check(vm, [pod("web", uid="u-1", cpu="4")], running_pods=[pod("web", uid="u-1")],
                    kubelet_config=gates)["pods"][0]
    assert too_big["resize"]["verdict"] == "feasible"
    assert too_big["admitted"] is False and too_big["reason"] == "OutOfcpu"
    assert too_big["message"] == "Node didn't have enough resource: cpu, requested: 4000, used: 0, capacity: 3000"


def test_memory_rule_under_memory_manager_static(vm):
    config = dict(STATIC, memoryManagerPolicy="Static",
                  reservedMemory=[{"numaNode": 0, "limits": {"memory": "1124Mi"}}],
                  kubeReserved={"cpu": "1", "memory": "1Gi"})
    result = check(vm, [pod("web", uid="u-1", cpu="1", memory="2Gi")], running_pods=[pod("web", uid="u-1")],
                   kubelet_config=config)
    (web,) = result["pods"]
    assert (web["reason"], web["message"]) == ("Infeasible", MEMORY_MESSAGE)
    assert web["resize"]["metric_reason"] == "guaranteed_pod_memory_manager_static_policy"


def test_burstable_pod_resize_is_not_refused_by_the_static_rule(vm):
    result = check(vm, [pod("web", uid="u-1", cpu="2", limits=False)],
                   running_pods=[pod("web", uid="u-1", limits=False)])
    (web,) = result["pods"]
    assert web["qos_class"] == "Burstable" and web["resize"]["verdict"] == "feasible"
    assert web["admitted"] is True


@pytest.mark.parametrize("version, verdict, message", [
    ("1.31", "feasible", None),   # no rule before 1.32 (the alpha gate is set on here)
    ("1.33", "infeasible", "Resize is infeasible for Guaranteed Pods alongside CPU Manager static policy"),
    ("1.34", "infeasible", CPU_MESSAGE),
])
def test_release_decides_the_rule_and_its_wording(vm, version, message, verdict):
    config = dict(STATIC, featureGates={"InPlacePodVerticalScaling": True})
    web = check(vm, [pod("web", uid="u-1", cpu="2")], running_pods=[pod("web", uid="u-1")],
                kubelet_version=version, kubelet_config=config)["pods"][0]
    assert web["resize"]["verdict"] == verdict and web["resize"]["message"] == message
    assert "InPlacePodVerticalScalingExclusiveMemory" in web["resize"]["gates"]


def test_kubelet_without_the_resize_gate_does_not_resize(vm):
    # 1.32: InPlacePodVerticalScaling alpha, off by default
    web = check(vm, [pod("web", uid="u-1", cpu="2")], running_pods=[pod("web", uid="u-1")],
                kubelet_version="1.32")["pods"][0]
    assert web["resize"]["verdict"] == "not_resized"
    assert (web["reason"], web["message"]) == ("Infeasible", "InPlacePodVerticalScaling is disabled")
    assert web["resize"]["gates"]["InPlacePodVerticalScaling"] is False


def test_unchanged_requests_are_not_a_resize_nor_a_second_admission(vm):
    web = check(vm, [pod("web", uid="u-1")], running_pods=[pod("web", uid="u-1")])["pods"][0]
    assert web["resize"]["verdict"] == "unchanged" and web["admitted"] is True and web["reason"] == ""


def test_allocated_resources_in_the_listed_status_are_the_allocation(vm):
    # the API object already carries the new spec (cpu 2); its status says 1 CPU is allocated
    listed = pod("web", uid="u-1", cpu="2", status={"phase": "Running", "containerStatuses": [
        {"name": "c", "allocatedResources": {"cpu": "1", "memory": "1Gi"}}]})
    web = check(vm, [pod("web", uid="u-1", cpu="2")], running_pods=[listed])["pods"][0]
    assert web["resize"]["verdict"] == "infeasible" and web["resize"]["changed"]["cpu"] is True


def test_state_file_pod_found_by_uid(vm):
    state = dump_cpu_manager_state(CPUManagerCheckpoint(policy_name="static", default_cpu_set="0,3",
                                                        entries={"u-9": {"c": "1-2"}}), 2)
    result = check(vm, [pod("db", uid="u-9", cpu="3")], cpu_manager_state=state)
    (db,) = result["pods"]
    assert db["resize"]["of"] == {"uid": "u-9", "namespace": None, "name": None, "matched_by": "uid",
                                  "sources": ["cpu_manager_state"]}
    assert db["resize"]["changed"]["cpu"] is True and db["message"] == CPU_MESSAGE
    assert "resize of uid u-9" in result["msg"]
    # the same CPUs and memory not recorded: whether memory changes is unknown, but only CPU counts here
    same = check(vm, [pod("db", uid="u-9", cpu="2")], cpu_manager_state=state)["pods"][0]
    assert same["resize"]["verdict"] == "feasible" and same["resize"]["changed"]["cpu"] is False
    # under Memory Manager Static the memory change decides, and the state does not show it
    config = dict(STATIC, memoryManagerPolicy="Static", reservedMemory=[{"numaNode": 0, "limits": {"memory": "1124Mi"}}],
                  kubeReserved={"cpu": "1", "memory": "1Gi"})
    unknown = check(vm, [pod("db", uid="u-9", cpu="2")], cpu_manager_state=state, kubelet_config=config)["pods"][0]
    assert unknown["verdict"] == "cannot_check" and unknown["resize"]["verdict"] == "cannot_check"
    assert "give running_pods" in unknown["cannot_check"]


def test_module_reports_the_resize(vm, capsys):
    args = {"root": vm, "pod": pod("web", uid="u-1", cpu="2"), "running_pods": [pod("web", uid="u-1")],
            "kubelet_version": "1.37", "kubelet_config": dict(STATIC), "cpu_manager_state": "",
            "memory_manager_state": ""}
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            admission_check.main()
    out = json.loads(capsys.readouterr().out)
    (web,) = out["pods"]
    assert web["resize"]["verdict"] == "infeasible" and web["message"] == CPU_MESSAGE
    assert any(line.startswith("default/web resize of default/web: infeasible") for line in out["table"])
