# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Policies x scopes, options and start-up checks of the Topology Manager, with fake providers."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from tm_fakes import FakePod, FakeProvider, FakeTopology, h

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import AdmissionError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import TopologyManagerError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_options import PolicyOptions
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.topology_manager import (
    new_topology_manager,
    topology_manager_from_config,
)

TWO = FakeTopology([0, 1])

# CPU prefers {1}; memory can only use {0} (pkg/kubelet/cm/topologymanager/scope_container.go)
CPU_HINTS = {"cpu": [h([1], True), h([0, 1], False)]}
MEM_HINTS = {"memory": [h([0], True)]}
# both fit {0}
CPU_OK = {"cpu": [h([0], True), h([1], True), h([0, 1], False)]}
MEM_OK = {"memory": [h([0], True), h([0, 1], False)]}


def _manager(policy, scope, providers, topology=TWO, options=None, merger="fast"):
    return new_topology_manager(topology, policy, scope, options, providers, merger)


# policy, scope, cpu hints, mem hints, admitted, reason, affinity
MATRIX = [
    ("none", "container", CPU_HINTS, MEM_HINTS, True, "", None),
    ("none", "pod", CPU_HINTS, MEM_HINTS, True, "", None),
    ("best-effort", "container", CPU_HINTS, MEM_HINTS, True, "", h([0], False)),
    ("best-effort", "pod", CPU_HINTS, MEM_HINTS, True, "", h([0], False)),
    ("restricted", "container", CPU_HINTS, MEM_HINTS, False, "TopologyAffinityError", None),
    ("restricted", "pod", CPU_HINTS, MEM_HINTS, False, "TopologyAffinityError", None),
    ("single-numa-node", "container", CPU_HINTS, MEM_HINTS, False, "TopologyAffinityError", None),
    ("single-numa-node", "pod", CPU_HINTS, MEM_HINTS, False, "TopologyAffinityError", None),
    ("best-effort", "container", CPU_OK, MEM_OK, True, "", h([0], True)),
    ("restricted", "container", CPU_OK, MEM_OK, True, "", h([0], True)),
    ("restricted", "pod", CPU_OK, MEM_OK, True, "", h([0], True)),
    ("single-numa-node", "container", CPU_OK, MEM_OK, True, "", h([0], True)),
    ("single-numa-node", "pod", CPU_OK, MEM_OK, True, "", h([0], True)),
]


@pytest.mark.parametrize("merger", ["fast", "exhaustive"])
@pytest.mark.parametrize("policy, scope, cpu, mem, admitted, reason, affinity", MATRIX)
def test_policy_scope_matrix(merger, policy, scope, cpu, mem, admitted, reason, affinity):
    pod = FakePod("p1", ["app"])
    device = FakeProvider("devicemanager", {"app": None}, None)
    cpum = FakeProvider("cpumanager", {"app": cpu}, cpu)
    memm = FakeProvider("memorymanager", {"app": mem}, mem)
    tm = _manager(policy, scope, [device, cpum, memm], merger=merger)
    result = tm.admit(pod)
    assert (result.admitted, result.reason) == (admitted, reason)
    if reason == "TopologyAffinityError":
        assert result.message == "Resources cannot be allocated with Topology locality"
        assert not any(call[0] == "allocate" for call in cpum.calls)
        return
    expected_hint = affinity if affinity is not None else h(None, False)
    if policy == "none":
        assert result.decisions == []
        assert not any(call[0] in ("hints", "pod_hints") for call in cpum.calls)
    else:
        assert tm.get_affinity("p1", "app") == expected_hint
        assert result.decisions[0].merged == expected_hint
        asked = "hints" if scope == "container" else "pod_hints"
        assert cpum.calls[0][0] == asked
    # providers allocate in order device, cpu, memory with the stored hint
    for provider in (device, cpum, memm):
        assert provider.calls[-1] == ("allocate", "app", expected_hint)


def test_container_scope_order_and_no_rollback():
    pod = FakePod("p2", ["a", "b", "c"], init_containers=["init"])
    cpu = FakeProvider("cpumanager", {"init": CPU_OK, "a": CPU_OK, "b": {"cpu": []}, "c": CPU_OK})
    mem = FakeProvider("memorymanager", {})
    tm = _manager("restricted", "container", [cpu, mem])
    result = tm.admit(pod)
    assert not result.admitted and result.reason == "TopologyAffinityError"
    assert result.failed_container == "b"
    assert [c for c in cpu.calls if c[0] == "hints"] == [("hints", "init"), ("hints", "a"), ("hints", "b")]
    # init and a were allocated and stay so (GC is the caller's job)
    assert [c[1] for c in cpu.calls if c[0] == "allocate"] == ["init", "a"]
    assert result.allocated == ["init", "a"]


def test_allocation_error_is_a_result_and_wrapped():
    pod = FakePod("p3", ["a", "b"])
    cpu = FakeProvider("cpumanager", {"a": CPU_OK, "b": CPU_OK})
    mem = FakeProvider("memorymanager", {}, fail_on="b",
                       error=AdmissionError("UnexpectedAdmissionError",
                                            "[memorymanager] preferred hint violates NUMA node allocation"))
    result = _manager("best-effort", "container", [cpu, mem]).admit(pod)
    assert not result.admitted
    assert result.reason == "UnexpectedAdmissionError"
    assert result.message == ("Allocate failed due to [memorymanager] preferred hint violates NUMA node "
                              "allocation, which is unexpected")
    assert (result.failed_container, result.failed_provider) == ("b", "memorymanager")


def test_typed_allocation_error_keeps_its_reason():
    pod = FakePod("p4", ["a"])
    err = AdmissionError("SMTAlignmentError", "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2")
    cpu = FakeProvider("cpumanager", {"a": CPU_OK}, fail_on="a", error=err)
    result = _manager("none", "container", [cpu]).admit(pod)
    assert (result.reason, result.message) == ("SMTAlignmentError", err.message)


def test_pod_scope_one_merge_same_hint_for_all():
    pod = FakePod("p5", ["a", "b"], init_containers=["i"])
    cpu = FakeProvider("cpumanager", pod_hints={"cpu": [h([1], True), h([0, 1], False)]})
    tm = _manager("restricted", "pod", [cpu])
    result = tm.admit(pod)
    assert result.admitted and len(result.decisions) == 1
    assert result.decisions[0].containers == ["i", "a", "b"]
    assert [c for c in cpu.calls if c[0] == "allocate"] == [
        ("allocate", "i", h([1], True)), ("allocate", "a", h([1], True)), ("allocate", "b", h([1], True))]
    assert tm.get_affinity("p5", "b") == h([1], True)
    assert tm.get_affinity("p5", "zzz") == h(None, False)
    tm.remove_container("p5", "b")
    assert tm.get_affinity("p5", "b") == h(None, False)


def test_single_numa_node_full_mask_becomes_nil():
    one = FakeTopology([0])
    cpu = FakeProvider("cpumanager", {"a": {"cpu": [h([0], True)]}})
    tm = _manager("single-numa-node", "container", [cpu], topology=one)
    result = tm.admit(FakePod("p6", ["a"]))
    assert result.admitted and tm.get_affinity("p6", "a") == h(None, True)


def test_no_relevant_requests_get_dont_care():
    tm = _manager("single-numa-node", "container", [FakeProvider("x", {})])
    result = tm.admit(FakePod("p7", ["a"]))
    assert result.admitted and tm.get_affinity("p7", "a") == h(None, True)


def test_prefer_closest_changes_choice_and_is_ignored_by_single_numa_node():
    dist = {0: {0: 10, 1: 20, 2: 30, 3: 12}, 1: {0: 20, 1: 10, 2: 12, 3: 30},
            2: {0: 30, 1: 12, 2: 10, 3: 20}, 3: {0: 12, 1: 30, 2: 20, 3: 10}}
    topo = FakeTopology([0, 1, 2, 3], dist)
    hints = {"a": {"cpu": [h([0, 1], True), h([0, 3], True)]}}
    opts = {"prefer-closest-numa-nodes": "true"}
    tm = _manager("restricted", "container", [FakeProvider("c", hints)], topology=topo, options=opts)
    assert tm.admit(FakePod("p", ["a"])).affinities["a"] == h([0, 3], True)
    tm = _manager("restricted", "container", [FakeProvider("c", hints)], topology=topo)
    assert tm.admit(FakePod("p", ["a"])).affinities["a"] == h([0, 1], True)
    tm = _manager("single-numa-node", "container", [FakeProvider("c", {"a": {"cpu": [h([1], True), h([0], True)]}})],
                  topology=topo, options=opts)
    assert tm.admit(FakePod("p", ["a"])).affinities["a"] == h([0], True)


SIXTEEN = FakeTopology(list(range(16)))


def test_sixteen_nodes_need_max_allowable_numa_nodes():
    _manager("restricted", "container", [], topology=FakeTopology(list(range(8))))
    with pytest.raises(TopologyManagerError) as err:
        _manager("restricted", "container", [], topology=SIXTEEN)
    assert str(err.value) == "unsupported on machines with more than 8 NUMA Nodes"
    with pytest.raises(TopologyManagerError) as err:
        _manager("best-effort", "pod", [], topology=SIXTEEN, options={"max-allowable-numa-nodes": "15"})
    assert str(err.value) == "unsupported on machines with more than 15 NUMA Nodes"
    # policy none ignores the limit
    _manager("none", "container", [], topology=SIXTEEN)
    cpu = FakeProvider("cpumanager", {"a": {"cpu": [h([15], True), h([14, 15], False)]}})
    mem = FakeProvider("memorymanager", {"a": {"memory": [h([14, 15], True), h([15], False)]}})
    tm = _manager("best-effort", "container", [cpu, mem], topology=SIXTEEN,
                  options={"max-allowable-numa-nodes": "16"})
    result = tm.admit(FakePod("p", ["a"]))
    assert result.admitted and result.affinities["a"] == h([15], False)


def test_sparse_numa_ids():
    topo = FakeTopology([0, 1, 2, 33, 34])
    cpu = FakeProvider("cpumanager", {"a": {"cpu": [h([33], True), h([34], True), h([33, 34], False)]}})
    mem = FakeProvider("memorymanager", {"a": {"memory": [h([34], True), h([0, 34], False)]}})
    tm = _manager("single-numa-node", "container", [cpu, mem], topology=topo)
    result = tm.admit(FakePod("p", ["a"]))
    assert result.admitted and result.affinities["a"] == h([34], True)
    dist = dict((i, dict((j, 10 if i == j else 20) for j in [0, 1, 2, 33, 34])) for i in [0, 1, 2, 33, 34])
    sparse = FakeTopology([0, 1, 2, 33, 34], dist)
    # the kubelet starts; this merge never compares two different masks of one width: no panic
    tm = _manager("restricted", "container", [cpu, mem], topology=sparse, options={"prefer-closest-numa-nodes": "true"})
    result = tm.admit(FakePod("p", ["a"]))
    assert result.admitted and result.panic == "" and result.affinities["a"] == h([34], True)
    # {33} is the best so far when {34} comes: Closest({33}, {34}) reads d[33][33] of a 5-entry list
    both = [h([33], True), h([34], True)]
    tm = _manager("restricted", "container", [FakeProvider("cpumanager", {"a": {"cpu": both}}),
                                              FakeProvider("memorymanager", {"a": {"memory": both}})],
                  topology=sparse, options={"prefer-closest-numa-nodes": "true"})
    result = tm.admit(FakePod("p", ["a"]))
    assert not result.admitted and result.panic == "runtime error: index out of range [33] with length 5"
    tm = _manager("restricted", "container", [FakeProvider("cpumanager", {"a": {"cpu": [h([0], True), h([1], True)]}})],
                  topology=sparse, options={"prefer-closest-numa-nodes": "true"})
    result = tm.admit(FakePod("p", ["a"]))
    assert result.admitted and result.panic == "" and result.affinities["a"] == h([0], True)


@pytest.mark.parametrize("options, message", [
    ({"bogus": "1"}, 'unknown Topology Manager Policy option: "bogus"'),
    ({"prefer-closest-numa-nodes": "yes"},
     'bad value for option "prefer-closest-numa-nodes": strconv.ParseBool: parsing "yes": invalid syntax'),
    ({"max-allowable-numa-nodes": "x"},
     'unable to convert policy option to integer "max-allowable-numa-nodes": strconv.Atoi: parsing "x": invalid syntax'),
    ({"max-allowable-numa-nodes": "4"},
     'the minimum value of "max-allowable-numa-nodes" should not be less than 8'),
])
def test_option_errors(options, message):
    with pytest.raises(TopologyManagerError) as err:
        PolicyOptions.parse(options)
    assert str(err.value) == message


@pytest.mark.parametrize("value, expected", [("1", True), ("T", True), ("True", True), ("0", False), ("F", False)])
def test_option_bool_syntax(value, expected):
    assert PolicyOptions.parse({"prefer-closest-numa-nodes": value}).prefer_closest_numa is expected


def test_prefer_closest_needs_distances():
    with pytest.raises(TopologyManagerError) as err:
        _manager("restricted", "container", [], options={"prefer-closest-numa-nodes": "true"})
    assert str(err.value) == ("cannot discover NUMA topology: error getting NUMA distances from cadvisor "
                              "(no distances for NUMA node 0)")


@pytest.mark.parametrize("config, message", [
    ({"topologyManagerPolicy": "strict"},
     'invalid configuration: topologyManagerPolicy (--topology-manager-policy) "strict" must be one of: '
     '["none" "best-effort" "restricted" "single-numa-node"]'),
    ({"topologyManagerPolicy": "Restricted"},
     'invalid configuration: topologyManagerPolicy (--topology-manager-policy) "Restricted" must be one of: '
     '["none" "best-effort" "restricted" "single-numa-node"]'),
    ({"topologyManagerPolicy": "restricted", "topologyManagerScope": "node"},
     'invalid configuration: topologyManagerScope (--topology-manager-scope) "node" must be one of: '
     '"container", or "pod"'),
    # the configuration is validated before any manager is built: policy none does not help
    ({"topologyManagerPolicy": "none", "topologyManagerScope": "bad"},
     'invalid configuration: topologyManagerScope (--topology-manager-scope) "bad" must be one of: '
     '"container", or "pod"'),
])
def test_config_validation_of_policy_and_scope(config, message):
    with pytest.raises(TopologyManagerError) as err:
        topology_manager_from_config(TWO, config)
    assert str(err.value) == message


@pytest.mark.parametrize("policy, scope, message", [
    ("strict", "container", 'unknown policy: "strict"'),
    ("restricted", "node", 'unknown scope: "node"'),
])
def test_manager_construction_errors(policy, scope, message):
    with pytest.raises(TopologyManagerError) as err:
        new_topology_manager(TWO, policy, scope)
    assert str(err.value) == message


def test_policy_none_ignores_options_and_node_count():
    tm = topology_manager_from_config(SIXTEEN, {"topologyManagerPolicy": "none", "topologyManagerScope": "pod",
                                                "topologyManagerPolicyOptions": {"bogus": "x"}})
    assert tm.name == "none"
