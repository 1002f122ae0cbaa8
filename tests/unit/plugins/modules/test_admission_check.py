# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The admission_check module's logic (run_check) against fake host trees of the bundled fleet."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os
import shutil

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.admission_check import run_check
from ansible_collections.numaguard.kubelet.tests.fleet import topologies

CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
memoryManagerPolicy: Static
topologyManagerPolicy: restricted
reservedSystemCPUs: "0,48"
kubeReserved: {memory: 1Gi}
systemReserved: {memory: 1Gi}
reservedMemory:
  - numaNode: 0
    limits: {memory: 1Gi}
  - numaNode: 1
    limits: {memory: 1124Mi}
"""


def pod(name, cpu, memory, **extra):
    resources = {"cpu": cpu, "memory": memory}
    resources.update(extra)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": dict(resources), "limits": dict(resources)}}]}}


@pytest.fixture(scope="module")
def host_tree(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("admission") / "h01")
    topologies.write_tree("intel-2s", root, hostname="h01")
    return root


@pytest.fixture()
def host(host_tree):
    """The module's host tree with a fresh kubelet dir (config only, no state files)."""
    kubelet_dir = os.path.join(host_tree, "var", "lib", "kubelet")
    shutil.rmtree(kubelet_dir, ignore_errors=True)
    os.makedirs(kubelet_dir)
    with open(os.path.join(kubelet_dir, "config.yaml"), "w") as handle:
        handle.write(CONFIG)
    return host_tree


def params(root, **kw):
    base = {"root": root, "pod": None, "pod_file": None, "pod_file_content": None, "topology": None,
            "kubelet_config": None, "kubelet_config_dir": None, "kubelet_flags": None,
            "memory_manager_state": None, "cpu_manager_state": None, "devices": None,
            "device_allocations": None, "return_state": False, "merge_method": "fast"}
    base.update(kw)
    return base


def test_fresh_node_reads_config_and_admits(host):
    result = run_check(params(host, pod=[pod("db", "4", "8Gi"), pod("huge", "4", "300Gi")], return_state=True))
    first, second = result["pods"]
    assert first["admitted"] and first["numa_nodes"] == [0]
    assert first["containers"][0]["cpus"] == "1-2,49-50"
    # 300Gi does not fit one 188Gi node, and node 0 already holds a single-node allocation, so
    # memory offers no mask at all ("no preference"): the merge admits and Allocate fails (pkg/kubelet/cm/memorymanager/policy_static.go, upstream #128708)
    assert not second["admitted"] and second["reason"] == "UnexpectedAdmissionError"
    assert second["message"].startswith("Allocate failed due to [memorymanager] ")
    assert second["failed_provider"] == "memory"
    assert result["sources"]["kubelet_config"] == "/var/lib/kubelet/config.yaml"
    assert result["sources"]["memory_manager_state"] == "absent (/var/lib/kubelet/memory_manager_state)"
    assert result["node"]["reserved_cpus"] == "0,48"
    assert result["memory"]["0"]["memory"]["reserved"] == 8 * 1024 ** 3
    assert result["memory"]["1"]["memory"]["reserved"] == 0   # the rejected pod was released
    assert result["pinning"]["memory_manager_pinning_requests_total"] == 2
    assert result["pinning"]["memory_manager_pinning_errors_total"] == 1
    assert "default/huge  rejected" in result["msg"]
    assert result["table"] == result["msg"].split("\n")
    assert "default/huge: UnexpectedAdmissionError: Allocate failed due to [memorymanager]" in result["msg"]
    state = result["state_after"]
    assert json.loads(state["memory_manager_state"])["policyName"] == "Static"
    assert json.loads(state["cpu_manager_state"])["defaultCpuSet"] == "0,3-48,51-95"


def test_state_files_are_read_and_round_trip(host):
    first = run_check(params(host, pod=pod("db", "4", "8Gi"), return_state=True))
    kubelet_dir = os.path.join(host, "var", "lib", "kubelet")
    for name, text in first["state_after"].items():
        with open(os.path.join(kubelet_dir, name), "w") as handle:
            handle.write(text)
    second = run_check(params(host, pod=pod("web", "4", "8Gi"), return_state=True))
    assert second["sources"]["cpu_manager_state"] == "/var/lib/kubelet/cpu_manager_state"
    web = second["pods"][0]
    assert web["admitted"] and web["containers"][0]["cpus"] == "3-4,51-52"
    assert second["memory"]["0"]["memory"]["reserved"] == 16 * 1024 ** 3
    # nothing new -> the state written back is byte-identical to what was read
    third = run_check(params(host, pod={"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "be"},
                                        "spec": {"containers": [{"name": "c", "image": "x"}]}},
                             return_state=True))
    for name, text in first["state_after"].items():
        assert third["state_after"][name] == text, name


def test_corrupt_state_file_fails_with_kubelet_message(host):
    first = run_check(params(host, pod=pod("db", "4", "8Gi"), return_state=True))
    # the authoritative copy is the escaped "data" string of the V3 file (the legacy top-level
    # fields are ignored when it is valid), so corrupt that one
    head, sep, tail = first["state_after"]["memory_manager_state"].rpartition('\\"numberOfAssignments\\":1')
    assert sep
    text = head + '\\"numberOfAssignments\\":2' + tail
    with pytest.raises(ValueError) as err:
        run_check(params(host, pod=pod("web", "1", "1Gi"), memory_manager_state=text))
    assert "could not restore state from checkpoint" in str(err.value)
    assert "checkpoint is corrupted" in str(err.value)


def test_policy_mismatch_fails(host):
    state = '{"policyName":"none","defaultCpuSet":"0-95","checksum":0}'
    with pytest.raises(ValueError) as err:
        run_check(params(host, pod=pod("web", "1", "1Gi"), cpu_manager_state=state))
    assert 'configured policy "static" differs from state checkpoint policy "none"' in str(err.value)


def test_fresh_option_ignores_files_and_inline_config(host):
    config = {"topologyManagerPolicy": "single-numa-node", "cpuManagerPolicy": "static",
              "reservedSystemCPUs": "0"}
    result = run_check(params(host, pod=pod("a", "2", "1Gi"), kubelet_config=config,
                              memory_manager_state="", cpu_manager_state=""))
    assert result["sources"]["kubelet_config"] == "option"
    assert result["sources"]["cpu_manager_state"] == "ignored (fresh node)"
    assert result["pods"][0]["containers"][0]["cpus"] == "1,49"
    assert result["pods"][0]["containers"][0]["affinity"] == {"numa_affinity": [0], "preferred": True}


def test_kubelet_flags_override_config(host):
    result = run_check(params(host, pod=pod("a", "2", "1Gi"),
                              kubelet_flags={"--topology-manager-policy": "single-numa-node",
                                             "topology-manager-scope": "pod"}))
    assert result["node"]["topology_manager_policy"] == "single-numa-node"
    assert result["node"]["topology_manager_scope"] == "pod"


def test_devices_and_pod_file_content(host):
    manifests = [pod("gpu", "2", "1Gi", **{"nvidia.com/gpu": "1"}), None,
                 {"kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
                  "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}]
    result = run_check(params(host, pod_file_content=[{"source": "pods.yaml", "manifests": manifests}],
                              devices={"nvidia.com/gpu": {"gpu0": 1}}))
    gpu, web = result["pods"]
    assert gpu["source"] == "pods.yaml#1" and web["source"] == "pods.yaml#3"
    assert gpu["admitted"] and gpu["numa_nodes"] == [1]
    assert gpu["containers"][0]["devices"] == {"nvidia.com/gpu": ["gpu0"]}
    assert web["namespace"] == "shop" and web["qos_class"] == "BestEffort"


@pytest.mark.parametrize("overrides, message", [
    ({"pod": None}, "no pod to check: give pod or pod_file"),
    ({"pod": {"kind": "Service", "metadata": {"name": "x"}}},
     "pod: kind 'Service' has no pod to admit (expected Pod, List or a workload with a pod template)"),
    ({"pod_file": ["/x.yaml"]}, "pod_file is read on the controller by the action plugin"),
    ({"kubelet_config": "/etc/kubernetes/missing.yaml"}, "kubelet_config: "),
    ({"kubelet_flags": {"--bogus": "1"}}, "kubelet_flags: unsupported flag --bogus"),
    ({"kubelet_config": {"topologyManagerPolicy": "restricted", "topologyManagerScope": "node"}},
     'topology manager: invalid configuration: topologyManagerScope (--topology-manager-scope) "node" must be '
     'one of: "container", or "pod"'),
    ({"devices": {"gpu": {"a": 0}}}, "fully-qualified extended resource name"),
])
def test_bad_inputs_fail_clearly(host, overrides, message):
    kw = {"pod": pod("a", "1", "1Gi")}
    kw.update(overrides)
    with pytest.raises(ValueError) as err:
        run_check(params(host, **kw))
    assert message in str(err.value)


def test_bad_pod_names_source(host):
    bad = copy.deepcopy(pod("a", "1", "1Gi"))
    bad["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "1x"
    with pytest.raises(ValueError) as err:
        run_check(params(host, pod=[pod("ok", "1", "1Gi"), bad]))
    assert str(err.value).startswith("pod[]#2: ")


def test_state_that_fails_start_up_validation(host):
    """A memory_manager_state written under another reservedMemory: the kubelet refuses to start."""
    first = run_check(params(host, pod=pod("db", "4", "8Gi"), return_state=True))
    moved = CONFIG.replace("limits: {memory: 1Gi}\n  - numaNode: 1\n    limits: {memory: 1124Mi}",
                           "limits: {memory: 1124Mi}\n  - numaNode: 1\n    limits: {memory: 1Gi}")
    assert moved != CONFIG
    with open(os.path.join(host, "var", "lib", "kubelet", "config.yaml"), "w") as handle:
        handle.write(moved)
    with pytest.raises(ValueError) as err:
        run_check(params(host, pod=pod("web", "1", "1Gi"),
                         memory_manager_state=first["state_after"]["memory_manager_state"]))
    assert "[memorymanager] the expected machine state is different from the real one" in str(err.value)


def test_topology_option_and_too_many_nodes(host):
    facts = {"nodes": [{"id": n, "cpus": [n], "memory_total_bytes": 1 << 30} for n in range(9)]}
    config = {"topologyManagerPolicy": "best-effort"}
    with pytest.raises(ValueError) as err:
        run_check(params(host, pod=pod("a", "1", "1Gi"), topology=facts, kubelet_config=config,
                         memory_manager_state="", cpu_manager_state=""))
    assert str(err.value) == "topology manager: unsupported on machines with more than 8 NUMA Nodes"
    config["topologyManagerPolicyOptions"] = {"max-allowable-numa-nodes": "9"}
    result = run_check(params(host, pod=pod("a", "1", "1Gi"), topology=facts, kubelet_config=config,
                              memory_manager_state="", cpu_manager_state=""))
    assert result["sources"]["topology"] == "option" and result["node"]["numa_nodes"] == list(range(9))


@pytest.mark.parametrize("release, refused", [("1.34", True), ("v1.35.0", False)])
def test_kubelet_version_decides_option_maturity_and_is_reported(host, release, refused):
    config = dict(cpuManagerPolicy="static", reservedSystemCPUs="0", featureGates={"CPUManagerPolicyBetaOptions": False},
                  cpuManagerPolicyOptions={"strict-cpu-reservation": "true"})
    if refused:
        with pytest.raises(ValueError) as err:
            run_check(params(host, pod=pod("a", "2", "1Gi"), kubelet_config=config, kubelet_version=release))
        assert 'CPU Manager Policy Beta-level Options not enabled, but option "strict-cpu-reservation" provided' in str(err.value)
        return
    result = run_check(params(host, pod=pod("a", "2", "1Gi"), kubelet_config=config, kubelet_version=release))
    assert result["kubelet_version"] == "v1.35.0" and result["kubelet_version_source"] == "option"
    assert result["feature_gates"]["CPUManagerPolicyBetaOptions"] is False
    assert result["kubelet_warnings"] == []


def test_kubelet_version_default_is_the_host_binary_else_newest_release(host):
    from_host = run_check(params(host, pod=pod("a", "2", "1Gi"), host_kubelet_version="Kubernetes v1.34.3"))
    assert from_host["kubelet_version"] == "v1.34.3" and from_host["kubelet_version_source"] == "host"
    assumed = run_check(params(host, pod=pod("a", "2", "1Gi")))
    assert assumed["kubelet_version"] == "1.37" and assumed["kubelet_version_source"] == "default"
    assert "kubelet version unknown" in assumed["kubelet_warnings"][0]
    with pytest.raises(ValueError) as err:
        run_check(params(host, pod=pod("a", "2", "1Gi"), kubelet_version="banana"))
    assert "kubelet_version: 'banana' is not a Kubernetes version" in str(err.value)
