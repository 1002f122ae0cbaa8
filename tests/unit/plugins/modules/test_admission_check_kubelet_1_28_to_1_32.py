# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""admission_check with ``kubelet_version`` on both sides of the issue-28 boundaries.

The rows and their sources are in docs/kubelet-versions.md; the machines and pods are those of
tests/unit/plugins/module_utils/engine/test_kubelet_1_28_to_1_32.py (two NUMA nodes of four
CPUs and 4Gi), given to the module as its ``topology`` option with no state files.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.admission_check import run_check
from ansible_collections.numaguard.kubelet.plugins.modules import admission_check
from ansible_collections.numaguard.kubelet.tests.unit.plugins.module_utils.engine.test_kubelet_1_28_to_1_32 import (
    FORBIDDEN,
    GROUP_RULE,
    SIDECAR_POD,
    SIZED,
    config,
    container,
    facts,
    pod,
    released_group_state,
)
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import patch_module_args


def check(root, pods, release, gates=None, smt=False, memory_manager_state="", kubelet_config=None, **changes):
    params = {"root": root, "pod": pods, "pod_file": None, "pod_file_content": None, "topology": facts(smt),
              "kubelet_config": kubelet_config or config(gates, **changes), "kubelet_config_dir": None,
              "kubelet_flags": None, "memory_manager_state": memory_manager_state, "cpu_manager_state": "",
              "devices": None, "device_allocations": None, "return_state": False, "merge_method": "fast",
              "kubelet_version": release}
    return run_check(params)


@pytest.fixture()
def root(tmp_path):
    return str(tmp_path)


@pytest.mark.parametrize("release, gates, refused", [
    ("1.27", None, False), ("1.28", None, True), ("1.28", {"SidecarContainers": True}, False),
    ("1.29", None, False), ("1.29", {"SidecarContainers": False}, True),
])
def test_sidecar_refused_while_the_gate_is_off(root, release, gates, refused):
    result = check(root, [SIDECAR_POD], release, gates)
    (mesh,) = result["pods"]
    assert result["kubelet_version"] == release and result["kubelet_version_source"] == "option"
    assert result["feature_gates"].get("SidecarContainers", False) is (release != "1.27" and not refused)
    if refused:
        assert (mesh["verdict"], mesh["reason"], mesh["message"]) == ("rejected", "InitContainerRestartPolicyForbidden",
                                                                      FORBIDDEN)
        assert "default/mesh: InitContainerRestartPolicyForbidden: " + FORBIDDEN in result["msg"]
    else:
        assert mesh["verdict"] == "admitted"


@pytest.mark.parametrize("release, verdict, reason", [("1.28", "admitted", None), ("1.29", "rejected", "TopologyAffinityError")])
def test_pod_scope_size_with_a_sidecar(root, release, verdict, reason):
    (sized,) = check(root, [SIZED], release, {"SidecarContainers": True}, topologyManagerScope="pod")["pods"]
    assert sized["verdict"] == verdict and (sized["reason"] or None) == reason
    if release == "1.28":
        assert dict((c["name"], c["cpus"]) for c in sized["containers"]) == {"proxy": "1-2", "setup": "1-3", "app": "1-2"}


@pytest.mark.parametrize("release, message", [
    ("1.28", "Allocate failed due to not enough cpus available to satisfy request, which is unexpected"),
    ("1.29", "Allocate failed due to not enough cpus available to satisfy request: requested=8, available=7, "
             "which is unexpected"),
])
def test_cpu_shortage_message(root, release, message):
    (big,) = check(root, [pod("big", [container("app", "8", "256Mi")])], release, topologyManagerPolicy="none",
                   memoryManagerPolicy="None", reservedMemory=[])["pods"]
    assert (big["reason"], big["message"]) == ("UnexpectedAdmissionError", message)


@pytest.mark.parametrize("release, message", [
    ("1.31", "SMT Alignment Error: requested 2 cpus not multiple cpus per core = 2"),
    ("1.32", "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 0, requested CPUs = 2, "
             "CPUs per core = 2"),
])
def test_smt_alignment_message(root, release, message):
    pods = [pod("first", [container("app", "6", "256Mi")]), pod("second", [container("app", "2", "256Mi")])]
    first, second = check(root, pods, release, smt=True, topologyManagerPolicy="none", memoryManagerPolicy="None",
                          reservedMemory=[], reservedSystemCPUs="0,4",
                          cpuManagerPolicyOptions={"full-pcpus-only": "true"})["pods"]
    assert first["verdict"] == "admitted"
    assert (second["reason"], second["message"]) == ("SMTAlignmentError", message)


@pytest.mark.parametrize("release", ["1.31", "1.32"])
def test_memory_group_rule_in_allocate(root, release, capsys):
    pods = [pod("small", [container("app", "1", "512Mi")]), pod("wide", [container("app", "5", "5Gi")])]
    args = {"root": root, "pod": pods, "topology": facts(), "kubelet_config": config(topologyManagerPolicy="restricted"),
            "memory_manager_state": "", "cpu_manager_state": "", "kubelet_version": release}
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            admission_check.main()
    out = json.loads(capsys.readouterr().out)
    small, wide = out["pods"]
    assert small["verdict"] == "admitted" and small["numa_nodes"] == [0]
    if release == "1.32":
        assert (wide["verdict"], wide["reason"], wide["message"]) == ("rejected", "UnexpectedAdmissionError", GROUP_RULE)
        assert out["memory"]["1"]["memory"]["reserved"] == 0
    else:
        assert wide["verdict"] == "admitted" and wide["numa_nodes"] == [0, 1]
        assert wide["containers"][0]["memory_blocks"] == [{"type": "memory", "size": 5 << 30, "numa_affinity": [0, 1]}]


@pytest.mark.parametrize("release", ["1.31", "1.32"])
def test_restored_memory_state_with_a_released_group(root, release):
    no_cpu, text = released_group_state()
    one_more = [pod("c", [container("app", "1", "512Mi")])]
    if release == "1.31":
        with pytest.raises(ValueError) as err:
            check(root, one_more, release, memory_manager_state=text, kubelet_config=no_cpu)
        assert "[memorymanager] the expected machine state is different from the real one" in str(err.value)
        return
    result = check(root, one_more, release, memory_manager_state=text, kubelet_config=no_cpu)
    assert result["pods"][0]["verdict"] == "admitted" and result["pods"][0]["numa_nodes"] == [0, 1]
