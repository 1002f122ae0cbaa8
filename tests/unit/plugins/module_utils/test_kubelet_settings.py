# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for kubelet_settings: schema, casing, options per release, host checks, flags, reset."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import jsonschema
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import HugePages, NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.fields import SETTINGS_SCHEMA, schema_errors
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.settings import (
    normalise_settings,
    render_flags,
    reset_decision,
    settings_schema_errors,
    validate_settings,
)

GiB = 1 << 30


def topo(nodes=2, cpus_per_node=4, distances=True, memory=8 * GiB):
    result = []
    for n in range(nodes):
        cpus = tuple(range(n * cpus_per_node, (n + 1) * cpus_per_node))
        dist = dict((m, 10 if m == n else 21) for m in range(nodes)) if distances else {}
        result.append(NumaNode(id=n, cpus=cpus, memory_total_bytes=memory, memory_free_bytes=memory,
                               hugepages={"hugepages-2Mi": HugePages(page_size_bytes=2 << 20, total_pages=0, free_pages=0)},
                               distances=dist))
    return Topology.from_facts({"nodes": [
        {"id": n.id, "cpus": list(n.cpus), "memory_total_bytes": n.memory_total_bytes,
         "memory_free_bytes": n.memory_free_bytes,
         "hugepages": {"hugepages-2Mi": {"page_size_bytes": 2 << 20, "total_pages": 0, "free_pages": 0}},
         "distances": dict((str(k), v) for k, v in n.distances.items())} for n in result]})


def effective(**fields):
    config = kubelet_defaults()
    config.update(fields)
    return config


def check(settings, version="1.31", topology=None, **extra):
    eff = effective(**dict(normalise_settings(settings), **extra))
    return validate_settings(settings, eff, kubelet_version=version, topology=topology)


@pytest.mark.parametrize(
    "settings, message",
    [
        ({"cpuManagerPolicy": "Static"},
         "cpuManagerPolicy: 'Static' is not a valid policy name; names are case-sensitive, use 'static'"),
        ({"memoryManagerPolicy": "static"},
         "memoryManagerPolicy: 'static' is not a valid policy name; names are case-sensitive, use 'Static'"),
        ({"topologyManagerPolicy": "SingleNUMANode"},
         "topologyManagerPolicy: 'SingleNUMANode' is not a valid policy name; names are case-sensitive, use 'single-numa-node'"),
        ({"topologyManagerPolicy": "strict"},
         "topologyManagerPolicy: 'strict' is not valid; use one of: none, best-effort, restricted, single-numa-node (lower case)"),
        ({"memoryManagerPolicy": "BestEffort"},
         "memoryManagerPolicy: 'BestEffort' is not valid; use one of: None, Static (capitalised; 'BestEffort' is Windows only)"),
        ({"topologyManagerScope": "node"}, "topologyManagerScope: 'node' is not valid; use one of: container, pod"),
        ({"reservedMemory": [{"numaNode": -1, "limits": {}}]}, "settings.reservedMemory[0].numaNode: -1 is less than the minimum 0"),
        ({"reservedMemory": [{"numaNode": 0}]}, "settings.reservedMemory[0]: required key 'limits' is missing"),
        ({"featureGates": {"X": "yes"}}, "settings.featureGates.X: expected boolean, got string 'yes'"),
        ({"kubeReserved": {"cpu": 0.5}}, "settings.kubeReserved.cpu: expected string or integer, got number 0.5"),
        ({"cpuManagerReconcilePeriod": "10 seconds"}, "settings.cpuManagerReconcilePeriod: '10 seconds' does not match the expected format"),
    ],
)
def test_schema_and_casing_messages(settings, message):
    assert settings_schema_errors(settings) == [message]


def test_unknown_field_lists_managed_fields():
    (message,) = settings_schema_errors({"cgroupDriver": "systemd"})
    assert message.startswith("settings: unknown key 'cgroupDriver'; managed fields: cpuManagerPolicy, ")


def test_schema_is_valid_draft7():
    jsonschema.Draft7Validator.check_schema(SETTINGS_SCHEMA)


values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, allow_infinity=False),
              st.sampled_from(["none", "static", "Static", "None", "pod", "10s", "0-1", "1Gi", "x"])),
    lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.sampled_from(["numaNode", "limits", "memory", "a"]), c, max_size=3)),
    max_leaves=8,
)


@hsettings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(sorted(SETTINGS_SCHEMA["properties"]) + ["bogus"]), values, max_size=4))
def test_stdlib_validator_agrees_with_jsonschema(data):
    ours = schema_errors(data, SETTINGS_SCHEMA)
    theirs = list(jsonschema.Draft7Validator(SETTINGS_SCHEMA).iter_errors(data))
    assert bool(ours) == bool(theirs), (ours, [e.message for e in theirs])


@pytest.mark.parametrize(
    "settings, version, expected",
    [
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "cpuManagerPolicyOptions": {"align-by-socket": True}}, "1.31",
         ["cpuManagerPolicyOptions.align-by-socket: CPU Manager Policy Alpha-level Options not enabled, but option \"align-by-socket\" "
          "provided; set featureGates.CPUManagerPolicyAlphaOptions: true"]),
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "cpuManagerPolicyOptions": {"strict-cpu-reservation": "true"}}, "1.31",
         ["cpuManagerPolicyOptions.strict-cpu-reservation: unknown CPU Manager Policy option: \"strict-cpu-reservation\" -- kubelet 1.31 "
          "does not know it (added in 1.32); remove it or set kubelet_version to the release you run"]),
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "cpuManagerPolicyOptions": {"full-pcpus": "true"}}, "1.31",
         ["cpuManagerPolicyOptions.full-pcpus: unknown CPU Manager Policy option: \"full-pcpus\"; known options: align-by-socket, "
          "distribute-cpus-across-cores, distribute-cpus-across-numa, full-pcpus-only"]),
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "cpuManagerPolicyOptions": {"full-pcpus-only": "yes"}}, "1.31",
         ['cpuManagerPolicyOptions.full-pcpus-only: bad value for option "full-pcpus-only": '
          'strconv.ParseBool: parsing "yes": invalid syntax; use true or false']),
        ({"cpuManagerPolicyOptions": {"full-pcpus-only": True}}, "1.31",
         ["cpuManagerPolicyOptions: full-pcpus-only set but cpuManagerPolicy is 'none'; the none policy cannot apply cpu policy "
          "options: remove the options or use cpuManagerPolicy: static"]),
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "featureGates": {"CPUManagerPolicyAlphaOptions": True},
          "cpuManagerPolicyOptions": {"full-pcpus-only": True, "distribute-cpus-across-cores": True}}, "1.31",
         ["cpuManagerPolicyOptions: static policy options full-pcpus-only and distribute-cpus-across-cores can not be used at the same time; drop one"]),
        ({"cpuManagerPolicy": "static"}, "1.31",
         ["cpuManagerPolicy: static: the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero; "
          "set reservedSystemCPUs (e.g. '0') or kubeReserved/systemReserved cpu"]),
        ({"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "100m"}}, "1.31", []),
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "3-1"}, "1.31",
         ["reservedSystemCPUs: unable to parse reserved-cpus list: invalid range \"3-1\" (3 > 1) ('3-1'); use a CPU list without "
          "spaces such as 0-1,32-33"]),
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0, 1"}, "1.31",
         ["reservedSystemCPUs: unable to parse reserved-cpus list: strconv.Atoi: parsing \" 1\": invalid syntax ('0, 1'); use a "
          "CPU list without spaces such as 0-1,32-33"]),
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": " 0-1"}, "1.31",
         ["reservedSystemCPUs: unable to parse reserved-cpus list: strconv.Atoi: parsing \" 0\": invalid syntax (' 0-1'); use a "
          "CPU list without spaces such as 0-1,32-33"]),
        ({"topologyManagerPolicy": "restricted", "topologyManagerPolicyOptions": {"max-allowable-numa-nodes": 4}}, "1.31",
         ['topologyManagerPolicyOptions.max-allowable-numa-nodes: the minimum value of "max-allowable-numa-nodes" '
          'should not be less than 8; use a whole number >= 8']),
        ({"topologyManagerPolicy": "restricted", "topologyManagerPolicyOptions": {"max-allowable-numa-nodes": "x"}}, "1.35",
         ['topologyManagerPolicyOptions.max-allowable-numa-nodes: unable to convert policy option to integer '
          '"max-allowable-numa-nodes": strconv.Atoi: parsing "x": invalid syntax; use a whole number >= 8']),
        ({"topologyManagerPolicy": "restricted", "topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": True}}, "1.27",
         ["topologyManagerPolicyOptions.prefer-closest-numa-nodes: Topology Manager Policy Alpha-level Options not enabled, but option "
          "\"prefer-closest-numa-nodes\" provided; set featureGates.TopologyManagerPolicyAlphaOptions: true"]),
        ({"memoryManagerPolicy": "Static"}, "1.31",
         ["reservedMemory: [static-needs-reservation] memoryManagerPolicy Static needs a non-empty reservedMemory: "
          "[memorymanager] you should specify the system reserved memory Fix: reserve at least kube-reserved + "
          "system-reserved + the hard eviction threshold (default memory.available<100Mi), e.g. 0:memory=100Mi"]),
        ({"kubeReserved": {"gpu": "1"}}, "1.31", ["kubeReserved.gpu: only cpu, memory, ephemeral-storage, pid can be reserved"]),
    ],
)
def test_validation_errors(settings, version, expected):
    errors, _warnings = check(settings, version)
    assert errors == expected


def test_topology_gate_error_names_alpha_option_when_only_alpha():
    errors, _warnings = check({"topologyManagerPolicy": "restricted", "topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": True}},
                              "1.27", featureGates={"TopologyManagerPolicyAlphaOptions": True})
    assert errors == []


def test_host_checks():
    host = topo(nodes=2, cpus_per_node=4)
    errors, _warnings = check({"cpuManagerPolicy": "static", "reservedSystemCPUs": "6-9"}, topology=host)
    assert errors == ["reservedSystemCPUs: reserved-cpus: 6-9 is not a subset of online-cpus: 0-7; CPUs 8-9 do not exist or are offline on this host"]
    errors, _warnings = check({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0-7"}, topology=host)
    assert errors == ["reservedSystemCPUs: 0-7 reserves every online CPU; the static policy would have no CPU to give exclusively"]
    big = topo(nodes=9, cpus_per_node=1)
    errors, _warnings = check({"topologyManagerPolicy": "single-numa-node"}, topology=big)
    assert errors == ["topologyManagerPolicy: single-numa-node: unsupported on machines with more than 8 NUMA Nodes (this host has 9); "
                      "set topologyManagerPolicyOptions.max-allowable-numa-nodes: \"9\" or topologyManagerPolicy: none"]
    errors, warnings = check({"topologyManagerPolicy": "single-numa-node", "topologyManagerPolicyOptions": {"max-allowable-numa-nodes": 9}},
                             topology=big)
    assert errors == []
    assert warnings == ["topologyManagerPolicyOptions.max-allowable-numa-nodes: 9; the kubelet warns that admission time grows "
                        "exponentially with the number of NUMA nodes"]
    assert check({"topologyManagerPolicy": "none"}, topology=big)[0] == []
    errors, _warnings = check({"topologyManagerPolicy": "restricted", "topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": True}},
                              topology=topo(distances=False))
    assert errors == ["topologyManagerPolicyOptions.prefer-closest-numa-nodes: cannot discover NUMA topology: error getting NUMA "
                      "distances from cadvisor (no distances for NUMA node 0)"]
    # NewNUMAInfo reads the distances before any policy is built: single-numa-node needs them too
    errors, _warnings = check({"topologyManagerPolicy": "single-numa-node",
                               "topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": True}}, topology=topo(distances=False))
    assert len(errors) == 1 and "no distances for NUMA node 0" in errors[0]
    errors, _warnings = check({"memoryManagerPolicy": "Static", "reservedMemory": [{"numaNode": 3, "limits": {"memory": "1Gi"}}]}, topology=host)
    assert errors == ["reservedMemory: [reserved-memory-numa-node] the reserved memory configuration references a NUMA node 3 "
                      "that does not exist on this machine (host NUMA nodes: 0, 1). Fix: move the NUMA node 3 reservation to "
                      "one of 0, 1"]


def test_reservation_validator_is_called_only_when_otherwise_valid():
    calls = []

    def validator(eff, topology):
        calls.append(eff["memoryManagerPolicy"])
        return ["reservedMemory: sums differ"]

    eff = effective(memoryManagerPolicy="Static", reservedMemory=[{"numaNode": 0, "limits": {"memory": "1Gi"}}])
    errors, _warnings = validate_settings({"memoryManagerPolicy": "Static"}, eff, "1.31", topo(), validator)
    assert errors == ["reservedMemory: sums differ"] and calls == ["Static"]


def test_partial_eviction_warning():
    _errors, warnings = check({"evictionHard": {"memory.available": "500Mi"}}, evictionHard={"memory.available": "500Mi"})
    assert warnings == ["evictionHard does not set nodefs.available, nodefs.inodesFree, imagefs.available: the kubelet treats "
                        "unset signals as 0 (disabled); set them explicitly or set mergeDefaultEvictionSettings: true"]


def test_version_warnings():
    _errors, warnings = validate_settings({"topologyManagerPolicy": "none"}, effective(), kubelet_version=None)
    assert warnings == ["kubelet version unknown (no kubelet_version given and no kubelet binary found): decisions follow "
                        "kubelet 1.37, the newest released kubelet this collection knows"]
    _errors, warnings = validate_settings({"topologyManagerPolicy": "none"}, effective(), kubelet_version="1.40")
    assert warnings == ["kubelet 1.40 is newer than the newest release this collection knows (1.38): decisions follow 1.38"]


def test_locked_gate_refused():
    errors, _warnings = validate_settings({"featureGates": {"CPUManagerPolicyOptions": False}},
                                          effective(featureGates={"CPUManagerPolicyOptions": False}), kubelet_version="1.35")
    assert errors == ["featureGates.CPUManagerPolicyOptions: cannot set feature gate CPUManagerPolicyOptions to false, "
                      "feature is locked to true"]


def test_normalise_and_flags():
    settings = normalise_settings({
        "cpuManagerPolicy": "static",
        "cpuManagerPolicyOptions": {"full-pcpus-only": True},
        "reservedSystemCPUs": 0,
        "kubeReserved": {"cpu": 1, "memory": "1Gi"},
        "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%"},
        "featureGates": {"B": False, "A": True},
        "reservedMemory": [{"numaNode": 1, "limits": {"memory": "1Gi"}}, {"numaNode": 0, "limits": {"memory": "2Gi", "hugepages-1Gi": "1Gi"}}],
        "topologyManagerPolicy": None,
    })
    assert settings["cpuManagerPolicyOptions"] == {"full-pcpus-only": "true"}
    assert settings["reservedSystemCPUs"] == "0"
    assert "topologyManagerPolicy" not in settings
    assert render_flags(settings) == [
        "--cpu-manager-policy=static",
        "--cpu-manager-policy-options=full-pcpus-only=true",
        "--eviction-hard=memory.available<100Mi,nodefs.available<10%",
        "--feature-gates=A=true,B=false",
        "--kube-reserved=cpu=1,memory=1Gi",
        "--reserved-cpus=0",
        "--reserved-memory=0:hugepages-1Gi=1Gi,memory=2Gi",
        "--reserved-memory=1:memory=1Gi",
    ]


CPU_NONE = {"policyName": "none", "defaultCpuSet": "", "checksum": 1}
CPU_STATIC = {"policyName": "static", "defaultCpuSet": "0-7", "checksum": 1}
MEM_NONE = {"policyName": "None", "machineState": {}, "checksum": 1}


def mem_static(totals):
    return {"policyName": "Static", "machineState": dict(
        (str(n), {"numberOfAssignments": 0, "cells": [n], "memoryMap": {"memory": {"total": t}}}) for n, t in totals.items())}


@pytest.mark.parametrize(
    "old, new, cpu_state, mem_state, expected_cpu, expected_mem, reason",
    [
        ({}, {"cpuManagerPolicy": "static"}, CPU_NONE, MEM_NONE, True, False,
         "cpuManagerPolicy 'static' differs from the cpu_manager_state checkpoint policy 'none'"),
        ({}, {"cpuManagerPolicy": "static"}, None, None, False, False, None),
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"}, {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1"},
         CPU_STATIC, None, True, False, "reservedSystemCPUs changed from '0' to '0-1'"),
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0,1"}, {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0-1"},
         CPU_STATIC, None, False, False, None),
        ({"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "1"}}, {"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "2"}},
         CPU_STATIC, None, True, False, "the CPU reservation (kubeReserved + systemReserved cpu) changed, so the reserved CPUs change"),
        ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"},
         {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "cpuManagerPolicyOptions": {"strict-cpu-reservation": "true"}},
         CPU_STATIC, None, True, False, "strict-cpu-reservation changed, so the default CPU set in the checkpoint no longer validates"),
        ({}, {"topologyManagerPolicy": "restricted"}, CPU_NONE, MEM_NONE, False, False, None),
        ({}, {"memoryManagerPolicy": "Static"}, CPU_NONE, MEM_NONE, False, True,
         "memoryManagerPolicy 'Static' differs from the memory_manager_state checkpoint policy 'None'"),
        ({"memoryManagerPolicy": "Static", "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}]},
         {"memoryManagerPolicy": "Static", "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1024Mi"}}]},
         None, mem_static({0: 8 * GiB, 1: 8 * GiB}), False, False, None),
        ({"memoryManagerPolicy": "Static", "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}]},
         {"memoryManagerPolicy": "Static", "reservedMemory": [{"numaNode": 1, "limits": {"memory": "1Gi"}}]},
         None, mem_static({0: 8 * GiB, 1: 8 * GiB}), False, True,
         "reservedMemory changed, so the checkpoint's systemReserved per NUMA node no longer matches"),
        ({"memoryManagerPolicy": "Static"}, {"memoryManagerPolicy": "Static"}, None, mem_static({0: 8 * GiB, 1: 8 * GiB - 4096}),
         False, True, "NUMA node 1 memory drifted: checkpoint total 8589930496 bytes, host now 8589934592 bytes"),
        ({"memoryManagerPolicy": "Static"}, {"memoryManagerPolicy": "Static"}, None, mem_static({0: 8 * GiB}),
         False, True, "memory_manager_state covers NUMA nodes 0 but the host has 0,1"),
        ({}, {}, "unreadable", None, True, False, "cpu_manager_state is not a readable checkpoint; the kubelet would refuse it"),
    ],
)
def test_reset_decision(old, new, cpu_state, mem_state, expected_cpu, expected_mem, reason):
    result = reset_decision(effective(**old), effective(**new), cpu_state, mem_state, topo())
    assert (result["cpu_manager_state"], result["memory_manager_state"]) == (expected_cpu, expected_mem)
    assert result["reasons"] == ([reason] if reason else [])


@pytest.mark.parametrize("version, warned", [("1.36", True), ("1.37", False)])
def test_distribute_with_full_pcpus_warns_on_kubelets_without_the_loop_fix(version, warned):
    settings = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
                "cpuManagerPolicyOptions": {"full-pcpus-only": True, "distribute-cpus-across-numa": True}}
    _errors, warnings = check(settings, version=version)
    found = [w for w in warnings if "kubernetes/kubernetes#140730" in w]
    assert bool(found) is warned
    if warned:
        assert "kubelet 1.36 loop" in found[0] and "check that reservedSystemCPUs cover whole cores" in found[0]


@pytest.mark.parametrize("settings, words", [
    ({"reservedMemroy": []}, "settings: unknown key 'reservedMemroy'; did you mean 'reservedMemory'?; managed fields: "),
    ({"topologymanagerpolicy": "restricted"}, "did you mean 'topologyManagerPolicy'?"),
    ({"memoryManagerPolicy": "Static", "reservedMemory": [{"numaNode": 0, "limit": {"memory": "1Gi"}}]},
     "settings.reservedMemory[0]: unknown key 'limit'; did you mean 'limits'?"),
])
def test_unknown_keys_name_the_closest_field(settings, words):
    assert any(words in e for e in settings_schema_errors(settings)), settings_schema_errors(settings)
