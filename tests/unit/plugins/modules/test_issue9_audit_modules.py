# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 9 audit: what each module reports about the kubelet it assumed, and the start-up checks as
the role's preflight (kubelet_config in check mode) surfaces them. validate.yml's filter is controller
code, so its half is in tests/unit/plugins/filter/test_issue9_validate_filter.py (a module test runs
where ansible.errors cannot be imported)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from ansible.module_utils.common import warnings as ansible_warnings

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends import reserved_memory as reserved_memory_backend
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s import versions
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import topology_from_any
from ansible_collections.numaguard.kubelet.plugins.modules import kubelet_config, reserved_memory
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.test_kubelet_config_module import (  # noqa: F401  # pylint: disable=unused-import
    HEADER,
    paths,  # a fixture
    run,
)

GI = 1 << 30
ASINT64 = "could not covert a variable of type Quantity to int64"
# 11Gi + 11Gi + the 100Mi hard eviction threshold on an 11Gi node (kubelet >= 1.29 wording)
CAPACITY_1_37 = ('invalid Node Allocatable configuration. Resource "memory" has a reservation of '
                 '{{23727177728 0} {<nil>}  BinarySI} but capacity of {{11811160064 0} {<nil>}  BinarySI}. '
                 'Expected capacity >= reservation.')
OVER_CAPACITY = {"memoryManagerPolicy": "Static", "kubeReserved": {"memory": "11Gi"}, "systemReserved": {"memory": "11Gi"},
                 "evictionHard": {"memory.available": "100Mi"},
                 "reservedMemory": [{"numaNode": 0, "limits": {"memory": "22628Mi"}}]}
NOT_INT64 = {"memoryManagerPolicy": "Static", "kubeReserved": {"memory": "1.5Gi"}, "evictionHard": {"memory.available": "100Mi"},
             "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1636.0Mi"}}]}  # sums right; AsInt64 refuses it


def topology(memory_gi=16, cpus=4):
    return {"nodes": [{"id": 0, "cpus": list(range(cpus)), "memory_total_bytes": memory_gi * GI,
                       "memory_free_bytes": GI, "hugepages": {}, "distances": {"0": 10}}]}


@pytest.fixture(autouse=True)
def _own_warning_list(monkeypatch):
    """Module warnings land in a process-wide list: give each test its own."""
    monkeypatch.setattr(ansible_warnings, "_global_warnings", type(ansible_warnings._global_warnings)())


# ---- results say which kubelet and gates they assumed ------------------------------------------

def test_kubelet_config_result_names_the_version_and_the_configured_gates(capsys, paths):  # noqa: F811 (the imported fixture)
    settings = {"topologyManagerPolicy": "restricted", "featureGates": {"CPUManagerPolicyAlphaOptions": True}}
    result = run(kubelet_config, capsys, dict(paths, settings=settings, kubelet_version="v1.35.2", _ansible_check_mode=True))
    assert not result.get("failed"), result
    assert result["kubelet_version"] == "v1.35.2" and result["kubelet_version_source"] == "option"
    gates = result["feature_gates"]
    assert gates["CPUManagerPolicyAlphaOptions"] is True          # the configured gate, not the default
    assert gates["PodLevelResources"] is True and gates["PodLevelResourceManagers"] is False
    # a different release, the same settings: the table's defaults of that release
    result = run(kubelet_config, capsys, dict(paths, settings=settings, kubelet_version="1.33", _ansible_check_mode=True))
    assert result["kubelet_version"] == "1.33" and result["feature_gates"]["PodLevelResources"] is False


def without_version(fixture_paths, **changes):
    args = dict(fixture_paths, settings={"topologyManagerPolicy": "restricted"}, _ansible_check_mode=True, **changes)
    del args["kubelet_version"]
    return args


def test_kubelet_config_without_a_version_or_a_kubelet_binary_assumes_the_newest_release_and_warns(
        capsys, paths, monkeypatch):  # noqa: F811 (the imported fixture)
    monkeypatch.setattr(versions, "host_kubelet_version", lambda module: None)
    result = run(kubelet_config, capsys, without_version(paths))
    assert not result.get("failed"), result
    assert result["kubelet_version_source"] == "default" and result["kubelet_version"] == "1.37"
    texts = [w if isinstance(w, str) else json.dumps(w) for w in result.get("warnings", [])]
    assert any("kubelet version unknown" in t and "1.37" in t for t in texts), texts


def test_kubelet_config_takes_the_host_version_and_the_gates_of_the_config_file(
        capsys, paths, monkeypatch):  # noqa: F811 (the imported fixture)
    monkeypatch.setattr(versions, "host_kubelet_version", lambda module: "Kubernetes v1.36.1")
    with open(paths["config"], "a") as handle:
        handle.write("featureGates:\n  AllAlpha: true\n")
    result = run(kubelet_config, capsys, without_version(paths))
    assert not result.get("failed"), result
    assert result["kubelet_version"] == "v1.36.1" and result["kubelet_version_source"] == "host"
    assert result["feature_gates"]["PodLevelResourceManagers"] is True      # alpha in 1.36, AllAlpha from the file
    assert result["feature_gates"]["CPUManagerPolicyAlphaOptions"] is True


def test_reserved_memory_on_the_live_host_takes_kubelet_version_and_the_files_gates(capsys, tmp_path, monkeypatch):
    topo, capacity = topology_from_any(topology())
    monkeypatch.setattr(reserved_memory_backend, "read_topology", lambda root: topo)
    monkeypatch.setattr(reserved_memory_backend, "read_system_memory", lambda root: {"memory_total_bytes": capacity})
    monkeypatch.setattr(versions, "host_kubelet_version", lambda module: "Kubernetes v1.36.0")
    config = tmp_path / "kubelet.yaml"
    config.write_text(HEADER + "featureGates:\n  AllBeta: false\n")
    result = run(reserved_memory, capsys, {"root": "/", "kubelet_config": str(config), "kube_reserved": "memory=1Gi",
                                           "eviction_hard": {}, "reserved_memory": "0:memory=1Gi",
                                           "memory_manager_policy": "Static"})
    assert result["valid"] is True, result
    assert result["kubelet_version"] == "v1.36.0" and result["kubelet_version_source"] == "host"
    assert result["feature_gates"]["CPUManagerPolicyBetaOptions"] is False  # AllBeta: false from the file


# ---- reserved_memory: valid true for trimmed object quantities, false for capacity (module) --------

def test_reserved_memory_module_accepts_a_trimmed_limit_in_a_config_file(capsys, tmp_path):
    config = tmp_path / "kubelet.yaml"
    config.write_text(HEADER + "memoryManagerPolicy: Static\nkubeReserved:\n  memory: 1Gi\n"
                      "evictionHard:\n  memory.available: 100Mi\nreservedMemory:\n"
                      "- numaNode: 0\n  limits:\n    memory: \" 1124Mi\"\n")
    result = run(reserved_memory, capsys, {"topology": topology(), "kubelet_config": str(config),
                                           "kubelet_version": "1.37", "fail_on_invalid": False})
    assert result["valid"] is True, result["errors"]
    assert result["kubelet_version"] == "1.37" and "feature_gates" in result
    # the same value as the --reserved-memory flag is refused (the flag is not trimmed)
    result = run(reserved_memory, capsys, {"topology": topology(), "kubelet_config": str(config),
                                           "reserved_memory": "0:memory= 1124Mi", "fail_on_invalid": False})
    assert result["valid"] is False


def test_reserved_memory_module_refuses_a_cpu_reservation_beyond_the_node(capsys):
    result = run(reserved_memory, capsys, {"topology": topology(cpus=4), "kube_reserved": {"memory": "1Gi", "cpu": "3"},
                                           "system_reserved": {"cpu": "2"}, "eviction_hard": {},
                                           "reserved_memory": "0:memory=1Gi", "memory_manager_policy": "Static",
                                           "kubelet_version": "1.35", "fail_on_invalid": False})
    assert result["valid"] is False
    finding = [f for f in result["findings"] if f["rule"] == "node-allocatable-capacity"][0]
    assert finding["fatal"] is True
    assert finding["kubelet_message"] == (
        'invalid Node Allocatable configuration. Resource "cpu" has a reservation of {{5 0} {<nil>}  DecimalSI} '
        'but capacity of {{4000 -3} {<nil>}  DecimalSI}. Expected capacity >= reservation.')  # cadvisor: NewMilliQuantity(cores*1000)


# ---- the role's preflight: kubelet_config in check mode refuses every start-up failure -----------

@pytest.mark.parametrize("settings, expected", [
    (NOT_INT64, ASINT64),
    (OVER_CAPACITY, CAPACITY_1_37),
    ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0, 1"},
     'unable to parse reserved-cpus list: strconv.Atoi: parsing " 1": invalid syntax'),
])
def test_preflight_check_mode_refuses_the_start_up_failures_with_the_kubelets_words(
        capsys, paths, settings, expected):  # noqa: F811 (the imported fixture)
    args = dict(paths, settings=settings, kubelet_version="1.37", topology=topology(memory_gi=11), _ansible_check_mode=True)
    result = run(kubelet_config, capsys, args)
    assert result.get("failed") is True, result
    assert expected in result["msg"], result["msg"]
