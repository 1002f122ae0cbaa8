# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for _k8s/versions.py: version parsing, gate defaults per release, option maturity at
every boundary, behaviour switches and the assumption reported in results."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s import versions as v
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import (
    DEVICE_HINTS_FROM_DEVICE_NUMA_NODES,
    DISTRIBUTE_FULL_PCPUS_LOOP_FIXED,
    KubeletAssumption,
    VersionError,
    behaviour,
    effective_gates,
    gate_enabled,
    gate_errors,
    option_availability_error,
    option_maturity,
    parse_kubelet_version,
)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("1.31", (1, 31, 0)),
        ("v1.32.4", (1, 32, 4)),
        ("1.33.0-rc.1", (1, 33, 0)),
        (" 1.26 ", (1, 26, 0)),
        ("Kubernetes v1.35.2", (1, 35, 2)),
        ("Kubernetes v1.35.2\n", (1, 35, 2)),
        ("v1.30.4-eks-a737599", (1, 30, 4)),
        ("v1.29.8+k3s1", (1, 29, 8)),
        ("v1.31.1-gke.1678000", (1, 31, 1)),
        ("v1.40.0", (1, 40, 0)),
    ],
)
def test_parse_kubelet_version(text, expected):
    assert parse_kubelet_version(text) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("one", "kubelet_version: 'one' is not a Kubernetes version (expected e.g. 1.35 or v1.35.2)"),
        ("1.25", "kubelet_version: 1.25 is older than the oldest release this collection knows (1.26)"),
        ("v2.0.0", "kubelet_version: v2.0.0 is not a Kubernetes 1.x release"),
        (1.3, "kubelet_version: 1.3 was read as a number; quote it (\"1.30\")"),
        (None, "kubelet_version: None is not a Kubernetes version (expected e.g. 1.35 or v1.35.2)"),
        ("Kubernetes", "kubelet_version: 'Kubernetes' is not a Kubernetes version (expected e.g. 1.35 or v1.35.2)"),
    ],
)
def test_parse_kubelet_version_errors(text, message):
    with pytest.raises(VersionError) as err:
        parse_kubelet_version(text)
    assert str(err.value) == message


@pytest.mark.parametrize(
    "manager, option, boundary, before, after",
    [
        # the list: each maturity change, one release before and at the boundary
        ("cpu", "full-pcpus-only", 33, "beta", "stable"),
        ("cpu", "distribute-cpus-across-numa", 33, "alpha", "beta"),
        ("cpu", "strict-cpu-reservation", 32, None, "alpha"),
        ("cpu", "strict-cpu-reservation", 33, "alpha", "beta"),
        ("cpu", "strict-cpu-reservation", 35, "beta", "stable"),
        ("cpu", "prefer-align-cpus-by-uncorecache", 32, None, "alpha"),
        ("cpu", "prefer-align-cpus-by-uncorecache", 34, "alpha", "beta"),
        ("cpu", "prefer-align-cpus-by-uncorecache", 36, "beta", "stable"),
        ("cpu", "distribute-cpus-across-cores", 31, None, "alpha"),
        ("topology", "prefer-closest-numa-nodes", 28, "alpha", "beta"),
        ("topology", "prefer-closest-numa-nodes", 32, "beta", "stable"),
        ("topology", "max-allowable-numa-nodes", 31, None, "beta"),
        ("topology", "max-allowable-numa-nodes", 35, "beta", "stable"),
        ("memory", "memory-drift-tolerance", 38, None, "alpha"),
    ],
)
def test_option_maturity_at_each_boundary(manager, option, boundary, before, after):
    assert option_maturity(manager, option, (1, boundary - 1)) == before
    assert option_maturity(manager, option, (1, boundary)) == after


def test_option_maturity_stays_alpha_and_newer_releases_read_as_the_newest_known():
    assert option_maturity("cpu", "align-by-socket", (1, 26)) == "alpha"
    assert option_maturity("cpu", "align-by-socket", (1, 40)) == "alpha"
    assert option_maturity("topology", "nope", (1, 32)) is None


@pytest.mark.parametrize(
    "version, gates, expected",
    [
        ((1, 32), {}, 'CPU Manager Policy Beta-level Options not enabled, but option "strict-cpu-reservation" provided'),
        ((1, 33), {}, None),
        ((1, 34), {"CPUManagerPolicyBetaOptions": False},
         'CPU Manager Policy Beta-level Options not enabled, but option "strict-cpu-reservation" provided'),
        ((1, 35), {"CPUManagerPolicyBetaOptions": False}, None),  # GA: no gate any more
        ((1, 31), {}, 'unknown CPU Manager Policy option: "strict-cpu-reservation"'),
    ],
)
def test_option_availability_follows_the_release(version, gates, expected):
    # 1.32: alpha -> needs the alpha gate; message names the option's level in that release
    if version == (1, 32):
        expected = 'CPU Manager Policy Alpha-level Options not enabled, but option "strict-cpu-reservation" provided'
    assert option_availability_error("cpu", "strict-cpu-reservation", version, gates) == expected


def test_topology_option_gates():
    assert option_availability_error("topology", "prefer-closest-numa-nodes", (1, 27)) == (
        'Topology Manager Policy Alpha-level Options not enabled, but option "prefer-closest-numa-nodes" provided')
    assert option_availability_error("topology", "prefer-closest-numa-nodes", (1, 27),
                                     {"TopologyManagerPolicyAlphaOptions": True}) is None
    assert option_availability_error("topology", "max-allowable-numa-nodes", (1, 34),
                                     {"TopologyManagerPolicyBetaOptions": False}) == (
        'Topology Manager Policy Beta-level Options not enabled, but option "max-allowable-numa-nodes" provided')
    assert option_availability_error("topology", "max-allowable-numa-nodes", (1, 35),
                                     {"TopologyManagerPolicyBetaOptions": False}) is None
    assert option_availability_error("topology", "bogus", (1, 35)) == 'unknown Topology Manager Policy option: "bogus"'


def test_memory_option_needs_the_drift_gate():
    assert option_availability_error("memory", "memory-drift-tolerance", (1, 37)) == (
        'unknown Memory Manager Policy option: "memory-drift-tolerance"')
    assert option_availability_error("memory", "memory-drift-tolerance", (1, 38)) is not None
    assert option_availability_error("memory", "memory-drift-tolerance", (1, 38),
                                     {"MemoryManagerDriftTolerance": True}) is None


@pytest.mark.parametrize(
    "gate, release, expected",
    [
        ("CPUManagerPolicyBetaOptions", 31, True),
        ("CPUManagerPolicyAlphaOptions", 31, False),
        ("TopologyManagerPolicyBetaOptions", 27, False),
        ("TopologyManagerPolicyBetaOptions", 28, True),
        ("PodLevelResources", 33, False),
        ("PodLevelResources", 34, True),
        ("PodLevelResourceManagers", 35, False),
        ("PodLevelResourceManagers", 36, False),
        ("PodLevelResourceManagers", 37, False),  # beta but off by default (kubernetes#141209)
        ("InPlacePodVerticalScaling", 32, False),
        ("InPlacePodVerticalScaling", 33, True),
        ("InPlacePodVerticalScalingExclusiveCPUs", 36, False),
        ("SystemReservedHugepages", 38, False),
        ("MemoryManagerDriftTolerance", 38, False),
    ],
)
def test_gate_defaults(gate, release, expected):
    assert gate_enabled(gate, (1, release)) is expected


def test_all_alpha_and_all_beta_follow_the_stage_in_that_release():
    assert gate_enabled("CPUManagerPolicyAlphaOptions", (1, 31), {"AllAlpha": True})
    assert gate_enabled("PodLevelResourceManagers", (1, 36), {"AllAlpha": True})
    assert not gate_enabled("PodLevelResourceManagers", (1, 37), {"AllAlpha": True})  # beta in 1.37
    assert gate_enabled("PodLevelResourceManagers", (1, 37), {"AllBeta": True})
    assert not gate_enabled("CPUManagerPolicyBetaOptions", (1, 31), {"AllBeta": False})
    # an explicit entry wins over AllAlpha/AllBeta
    assert not gate_enabled("PodLevelResourceManagers", (1, 37), {"AllBeta": True, "PodLevelResourceManagers": False})
    # GA gates are untouched by AllBeta
    assert gate_enabled("InPlacePodVerticalScaling", (1, 35), {"AllBeta": False})
    # gates the table does not list are kept as configured
    assert effective_gates((1, 35), {"SomeOtherGate": True})["SomeOtherGate"] is True


def test_gate_errors_locked_and_non_boolean():
    assert gate_errors((1, 33), {"CPUManagerPolicyOptions": False}) == {
        "CPUManagerPolicyOptions": "cannot set feature gate CPUManagerPolicyOptions to false, feature is locked to true"}
    assert gate_errors((1, 32), {"CPUManagerPolicyOptions": False}) == {}
    assert gate_errors((1, 35), {"InPlacePodVerticalScaling": False}) == {
        "InPlacePodVerticalScaling": "cannot set feature gate InPlacePodVerticalScaling to false, feature is locked to true"}
    assert gate_errors((1, 35), {"Foo": "yes"}) == {"Foo": "invalid value of Foo=yes, err: expected a boolean"}
    assert gate_errors((1, 35), {"PodLevelResourceManagers": True}) == {
        "PodLevelResourceManagers": "unrecognized feature gate: PodLevelResourceManagers"}
    assert gate_errors((1, 36), {"PodLevelResourceManagers": True}) == {}
    assert gate_errors((1, 35), {"NotInTheTable": True}) == {}


def test_behaviour_switches_pairs():
    assert not behaviour(DEVICE_HINTS_FROM_DEVICE_NUMA_NODES, (1, 35))
    assert behaviour(DEVICE_HINTS_FROM_DEVICE_NUMA_NODES, (1, 36))
    assert not behaviour(DISTRIBUTE_FULL_PCPUS_LOOP_FIXED, (1, 36))
    assert behaviour(DISTRIBUTE_FULL_PCPUS_LOOP_FIXED, (1, 37))


def test_assumption_sources():
    given = KubeletAssumption.resolve("v1.35.2", "Kubernetes v1.30.0", {"AllAlpha": True})
    assert given.source == "option" and given.version == (1, 35, 2) and given.warnings == []
    assert given.result()["kubelet_version"] == "v1.35.2"
    assert given.enabled("CPUManagerPolicyAlphaOptions")

    host = KubeletAssumption.resolve(None, "Kubernetes v1.30.0\n")
    assert host.source == "host" and host.text == "v1.30.0" and host.minor == (1, 30)
    assert host.result()["feature_gates"]["CPUManagerPolicyBetaOptions"] is True
    assert host.gates["PodLevelResources"] is False  # 1.30 has no such gate: off

    default = KubeletAssumption.resolve(None, None)
    assert default.source == "default" and default.version == v.NEWEST_RELEASED
    assert default.warnings == ["kubelet version unknown (no kubelet_version given and no kubelet binary found): decisions "
                                "follow kubelet 1.37, the newest released kubelet this collection knows"]

    garbled = KubeletAssumption.resolve("", "kubelet: command not found")
    assert garbled.source == "default"
    assert "the host's kubelet --version output was not usable" in garbled.warnings[-1]

    newer = KubeletAssumption.resolve("1.41")
    assert newer.warnings == ["kubelet 1.41 is newer than the newest release this collection knows (1.38): decisions follow 1.38"]
    with pytest.raises(VersionError):
        KubeletAssumption.resolve("banana")


def test_table_is_ordered_and_complete():
    for gate, entries in v.GATES.items():
        minors = [e[0] for e in entries]
        assert minors == sorted(minors) and len(set(minors)) == len(minors), gate
    for table in (v.CPU_MANAGER_OPTIONS, v.TOPOLOGY_MANAGER_OPTIONS, v.MEMORY_MANAGER_OPTIONS):
        for option, entries in table.items():
            assert [e[0] for e in entries] == sorted(e[0] for e in entries), option
    for gate in ("PodLevelResources", "PodLevelResourceManagers", "CPUManagerPolicyAlphaOptions",
                 "CPUManagerPolicyBetaOptions", "InPlacePodVerticalScalingExclusiveCPUs",
                 "InPlacePodVerticalScalingExclusiveMemory", "SystemReservedHugepages", "MemoryManagerDriftTolerance"):
        assert gate in v.GATES


def test_pod_overhead_is_added_to_limits_only_where_a_limit_exists():
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod, pod_limits, pod_requests
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                "spec": {"overhead": {"cpu": "250m", "memory": "120Mi"},
                         "containers": [{"name": "c", "image": "x",
                                         "resources": {"requests": {"cpu": "1", "memory": "1Gi"},
                                                       "limits": {"cpu": "2"}}}]}}
    pod = Pod.from_manifest(manifest)
    assert pod_limits(pod) == {"cpu": 2250}                      # no memory limit: no overhead there
    assert pod_requests(pod) == {"cpu": 1250, "memory": (1 << 30) + 120 * (1 << 20)}


def test_none_policy_merge_is_the_empty_hint_and_empty_topologies_start():
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import NUMAInfo
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_none import NonePolicy
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.topology_manager import topology_manager_from_config
    assert NonePolicy(NUMAInfo([0])).merge([{}]) == (TopologyHint(None, False), True)

    class Empty:
        nodes = ()
    for policy in ("best-effort", "restricted", "single-numa-node"):
        assert topology_manager_from_config(Empty(), {"topologyManagerPolicy": policy}).policy.name == policy


class _Module:
    """The two AnsibleModule methods host_kubelet_version uses; counts the probes."""

    def __init__(self, output="Kubernetes v1.34.2\n"):
        self.output = output
        self.probes = 0

    def get_bin_path(self, name):
        return "/usr/bin/kubelet"

    def run_command(self, args):
        self.probes += 1
        return 0, self.output, ""


@pytest.mark.parametrize("option, root, topology, probes", [
    (None, "/", None, True),
    ("", None, None, True),          # unset root is the live host
    ("1.31", "/", None, False),      # the option wins: the host is not asked
    (None, "/snapshot", None, False),  # a snapshot's kubelet is not this host's
    (None, "/", {"nodes": []}, False),  # a topology option replaces the host's
])
def test_probe_host_kubelet_asks_the_host_only_when_the_module_reads_it(option, root, topology, probes):
    module = _Module()
    found = v.probe_host_kubelet(module, option, root, topology)
    assert module.probes == (1 if probes else 0)
    assert found == ("Kubernetes v1.34.2" if probes else None)
    kubelet = v.KubeletAssumption.resolve(option, found)
    assert kubelet.source == ("option" if option else "host" if probes else "default")
    assert v.probe_host_kubelet(None, option, root, topology) is None  # the controller has no host to ask
