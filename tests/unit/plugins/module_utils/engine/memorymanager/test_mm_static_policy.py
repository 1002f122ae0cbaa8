# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Memory Manager Static policy: hints, NUMA groups, allocation, reuse, release, counters."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mm_helpers import GI, MI, hint, hints_plain, pod, reservation, static_config, topology  # noqa: E402

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.memory_manager import (  # noqa: E402
    new_memory_manager,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.static_policy import (  # noqa: E402
    MemoryAllocationError,
    container_requested_resources,
    pod_requested_resources,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.topology_manager import (  # noqa: E402
    new_topology_manager,
)

DOC_TOPOLOGY = topology((0, 134987354112), (1, 135286722560))
DOC_CONFIG = {
    "memoryManagerPolicy": "Static",
    "topologyManagerPolicy": "restricted",
    "kubeReserved": {"cpu": "4", "memory": "4Gi"},
    "systemReserved": {"cpu": "1", "memory": "1Gi"},
    "reservedMemory": [{"numaNode": 0, "limits": {"memory": "3Gi"}},
                       {"numaNode": 1, "limits": {"memory": "2148Mi"}}],
}


def two_nodes(reserved_node0=GI):
    """2 x 8 GiB, reservedMemory 0:memory=1Gi (a two-node example machine)."""
    return new_memory_manager(topology((0, 8 * GI), (1, 8 * GI)), static_config({0: {"memory": reserved_node0}}),
                              allocatable_reservation={"memory": reservation(memory=str(reserved_node0))["memory"]})


def table(mm, node, resource="memory"):
    return mm.memory_map()[node][resource]


# ---- the kubelet documentation example -------------------------------------------------------

def test_kubelet_documentation_example():
    mm = new_memory_manager(DOC_TOPOLOGY, DOC_CONFIG)
    tm = new_topology_manager(DOC_TOPOLOGY, "restricted", "container", providers=[mm])
    guaranteed = pod([("c", {"cpu": "2", "memory": "150Gi"})], name="doc", uid="doc-uid")
    result = tm.admit(guaranteed)
    assert result.admitted
    assert result.affinities["c"] == hint([0, 1], True)
    assert [b.to_plain() for b in mm.blocks("doc-uid", "c")] == [
        {"numaAffinity": [0, 1], "type": "memory", "size": 161061273600}]
    assert mm.memory_map() == {
        0: {"memory": {"total": 134987354112, "systemReserved": 3221225472, "allocatable": 131766128640,
                       "reserved": 131766128640, "free": 0}},
        1: {"memory": {"total": 135286722560, "systemReserved": 2252341248, "allocatable": 133034381312,
                       "reserved": 29295144960, "free": 103739236352}},
    }
    assert mm.state()["machine_state"][0]["cells"] == [0, 1]
    assert mm.state()["machine_state"][1]["numberOfAssignments"] == 1
    assert mm.counters.to_dict() == {"memory_manager_pinning_requests_total": 1,
                                     "memory_manager_pinning_errors_total": 0}


def test_documentation_example_with_empty_1gi_pools():
    """The documentation's state file also lists hugepages-1Gi tables of size 0 (pools with 0 pages)."""
    topo = topology((0, 134987354112, {GI: 0}), (1, 135286722560, {GI: 0}))
    mm = new_memory_manager(topo, DOC_CONFIG)
    tm = new_topology_manager(topo, "restricted", "container", providers=[mm])
    assert tm.admit(pod([("guaranteed", {"cpu": "2", "memory": "150Gi"})], uid="doc")).admitted
    state = mm.state()["machine_state"]
    empty = {"total": 0, "systemReserved": 0, "allocatable": 0, "reserved": 0, "free": 0}
    assert state[0]["memoryMap"]["hugepages-1Gi"] == empty and state[1]["memoryMap"]["hugepages-1Gi"] == empty
    assert state[1]["memoryMap"]["memory"]["free"] == 103739236352
    assert [state[0]["cells"], state[1]["cells"]] == [[0, 1], [0, 1]]
    assert [state[0]["numberOfAssignments"], state[1]["numberOfAssignments"]] == [1, 1]


def test_documentation_example_hints():
    mm = new_memory_manager(DOC_TOPOLOGY, DOC_CONFIG)
    guaranteed = pod([("c", {"cpu": "2", "memory": "150Gi"})])
    assert hints_plain(mm.get_topology_hints(guaranteed, guaranteed.containers[0])) == {
        "memory": [([0, 1], True)]}


# ---- a state file of that machine ---------------------------------------------------------------------

def test_spec_example_state():
    mm = two_nodes()
    tm = new_topology_manager(topology((0, 8 * GI), (1, 8 * GI)), "restricted", "container", providers=[mm])
    result = tm.admit(pod([("c1", {"memory": "2Gi"})], uid="pod-uid-1"))
    assert result.admitted and result.affinities["c1"] == hint([0], True)
    assert mm.state() == {
        "policy_name": "Static",
        "machine_state": {
            0: {"numberOfAssignments": 1, "memoryMap": {"memory": {
                "total": 8589934592, "systemReserved": 1073741824, "allocatable": 7516192768,
                "reserved": 2147483648, "free": 5368709120}}, "cells": [0]},
            1: {"numberOfAssignments": 0, "memoryMap": {"memory": {
                "total": 8589934592, "systemReserved": 0, "allocatable": 8589934592,
                "reserved": 0, "free": 8589934592}}, "cells": [1]},
        },
        "entries": {"pod-uid-1": {"c1": [{"numaAffinity": [0], "type": "memory", "size": 2147483648}]}},
        "pod_entries": {},
    }


# ---- hints ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("memory, expected", [
    ("2Gi", {"memory": [([0], True), ([1], True), ([0, 1], False)]}),
    ("7Gi", {"memory": [([0], True), ([1], True), ([0, 1], False)]}),
    ("7681Mi", {"memory": [([1], True), ([0, 1], False)]}),   # node 0 allocatable is 7Gi
    ("8Gi", {"memory": [([1], True), ([0, 1], False)]}),
    ("9Gi", {"memory": [([0, 1], True)]}),
    ("15Gi", {"memory": [([0, 1], True)]}),
    ("15361Mi", {}),                                            # beyond 15Gi allocatable: empty map
])
def test_container_hints_fresh_machine(memory, expected):
    mm = two_nodes()
    guaranteed = pod([("c", {"memory": memory})])
    assert hints_plain(mm.get_topology_hints(guaranteed, guaranteed.containers[0])) == expected


def test_hints_not_guaranteed_or_no_request():
    mm = two_nodes()
    burstable = pod([("c", {"memory": "1Gi"})], qos="Burstable")
    assert mm.get_topology_hints(burstable, burstable.containers[0]) is None
    assert mm.get_pod_topology_hints(burstable) is None
    mm.allocate(burstable, burstable.containers[0], hint(None, True))
    assert mm.counters.requests == 0 and mm.assignments() == {}


def test_hints_preferred_is_theoretical_capacity():
    """Preferred = the smallest mask size that fits *allocatable*, even when that mask is full."""
    mm = two_nodes()
    first = pod([("c", {"memory": "6Gi"})], name="a")
    mm.allocate(first, first.containers[0], hint([1], True))
    second = pod([("c", {"memory": "5Gi"})], name="b")
    # node 1 has 2Gi free; node 0 has 7Gi; {0,1} is blocked (node 1 used by a single-node allocation)
    assert hints_plain(mm.get_topology_hints(second, second.containers[0])) == {"memory": [([0], True)]}
    third = pod([("c", {"memory": "7Gi"})], name="c")
    mm.allocate(third, third.containers[0], hint([0], True))
    fourth = pod([("c", {"memory": "1Gi"})], name="d")
    # both nodes used by single-node allocations, node 0 full: only {1}
    assert hints_plain(mm.get_topology_hints(fourth, fourth.containers[0])) == {"memory": [([1], True)]}


def test_hugepages_hints_and_state():
    topo = topology((0, 8 * GI, {2 * MI: 1024, GI: 2}), (1, 8 * GI, {2 * MI: 512, GI: 0}))
    mm = new_memory_manager(topo, static_config({0: {"memory": "1Gi"}, 1: {"hugepages-2Mi": "0"}}),
                            allocatable_reservation=reservation(memory="1Gi"))
    assert mm.memory_map() == {
        0: {"hugepages-1Gi": {"total": 2 * GI, "systemReserved": 0, "allocatable": 2 * GI, "reserved": 0,
                              "free": 2 * GI},
            "hugepages-2Mi": {"total": 2 * GI, "systemReserved": 0, "allocatable": 2 * GI, "reserved": 0,
                              "free": 2 * GI},
            "memory": {"total": 8 * GI, "systemReserved": GI, "allocatable": 3 * GI, "reserved": 0,
                       "free": 3 * GI}},
        1: {"hugepages-1Gi": {"total": 0, "systemReserved": 0, "allocatable": 0, "reserved": 0, "free": 0},
            "hugepages-2Mi": {"total": GI, "systemReserved": 0, "allocatable": GI, "reserved": 0, "free": GI},
            "memory": {"total": 8 * GI, "systemReserved": 0, "allocatable": 7 * GI, "reserved": 0,
                       "free": 7 * GI}},
    }
    p = pod([("c", {"memory": "1Gi", "hugepages-2Mi": "1536Mi", "hugepages-1Gi": "1Gi"})])
    expected = [([0], True), ([0, 1], False)]
    assert hints_plain(mm.get_topology_hints(p, p.containers[0])) == {
        "memory": expected, "hugepages-2Mi": expected, "hugepages-1Gi": expected}
    mm.allocate(p, p.containers[0], hint([0], True))
    assert sorted(b.to_plain()["type"] for b in mm.blocks(p.uid, "c")) == ["hugepages-1Gi", "hugepages-2Mi", "memory"]
    state = mm.state()["machine_state"]
    assert state[0]["numberOfAssignments"] == 3  # one per resource type
    assert state[0]["memoryMap"]["hugepages-2Mi"]["free"] == 512 * MI
    assert state[0]["memoryMap"]["hugepages-1Gi"]["reserved"] == GI
    # a 2 GiB 1Gi-page request cannot fit anywhere any more: no hints at all
    q = pod([("c", {"memory": "1Gi", "hugepages-1Gi": "2Gi"})], name="q")
    assert mm.get_topology_hints(q, q.containers[0]) == {}


def test_hugepage_size_the_machine_lacks_is_refused_clearly():
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.static_policy import MissingMemoryTable
    mm = two_nodes()
    p = pod([("c", {"memory": "1Gi", "hugepages-1Gi": "1Gi"})])
    with pytest.raises(MissingMemoryTable) as err:
        mm.get_topology_hints(p, p.containers[0])
    assert str(err.value).startswith('the pod requests "hugepages-1Gi", which NUMA node(s) 0, 1 of this machine '
                                     'do not have')
    with pytest.raises(MissingMemoryTable):
        mm.allocate(p, p.containers[0], hint([0], True))
    assert mm.assignments() == {}


def test_multi_type_on_two_nodes_counts_twice():
    topo = topology((0, 4 * GI, {2 * MI: 512}), (1, 4 * GI, {2 * MI: 512}))
    mm = new_memory_manager(topo, static_config({0: {"memory": "512Mi"}}),
                            allocatable_reservation=reservation(memory="512Mi"))
    p = pod([("c", {"memory": "4Gi", "hugepages-2Mi": "1536Mi"})])
    mm.allocate(p, p.containers[0], hint([0, 1], True))
    state = mm.state()["machine_state"]
    assert state[0]["numberOfAssignments"] == 2 and state[1]["numberOfAssignments"] == 2
    assert state[0]["memoryMap"]["memory"]["free"] == 0
    assert state[1]["memoryMap"]["memory"]["reserved"] == 4 * GI - 2560 * MI
    assert state[0]["memoryMap"]["hugepages-2Mi"]["free"] == 0
    assert state[1]["memoryMap"]["hugepages-2Mi"]["reserved"] == 512 * MI


# ---- NUMA groups ----------------------------------------------------------------------------------

def four_nodes():
    topo = topology((0, 8 * GI), (1, 8 * GI), (2, 8 * GI), (3, 8 * GI))
    return new_memory_manager(topo, static_config({0: {"memory": "1Gi"}}),
                              allocatable_reservation=reservation(memory="1Gi"))


def test_group_rules_single_node_refused_on_grouped_node():
    mm = four_nodes()
    big = pod([("c", {"memory": "12Gi"})], name="big")
    mm.allocate(big, big.containers[0], hint([0, 1], True))
    assert mm.state()["machine_state"][1]["cells"] == [0, 1]
    small = pod([("c", {"memory": "1Gi"})], name="small")
    # {0} and {1} are in the group {0,1}: no single-node hint there; {0,1} is offered (the group),
    # {1,2}, {0,2}, ... are not (a grouped node joins no other group); {2,3} etc. are free nodes
    assert hints_plain(mm.get_topology_hints(small, small.containers[0])) == {"memory": [
        ([2], True), ([3], True), ([0, 1], False), ([2, 3], False)]}


def test_group_member_only_offers_its_group_under_restricted():
    topo = topology((0, 8 * GI), (1, 8 * GI))
    mm = new_memory_manager(topo, static_config({0: {"memory": "1Gi"}}),
                            allocatable_reservation=reservation(memory="1Gi"))
    tm = new_topology_manager(topo, "restricted", "container", providers=[mm])
    assert tm.admit(pod([("c", {"memory": "10Gi"})], name="big")).admitted
    result = tm.admit(pod([("c", {"memory": "1Gi"})], name="small"))
    # only {0,1} is offered and it is not preferred (one node would do): restricted rejects
    assert not result.admitted
    assert (result.reason, result.message) == ("TopologyAffinityError",
                                               "Resources cannot be allocated with Topology locality")
    best = new_topology_manager(topo, "best-effort", "container", providers=[mm])
    result = best.admit(pod([("c", {"memory": "1Gi"})], name="small2"))
    assert result.admitted and result.affinities["c"] == hint([0, 1], False)
    assert mm.state()["machine_state"][0]["numberOfAssignments"] == 2


def test_single_node_user_cannot_join_group():
    mm = four_nodes()
    a = pod([("c", {"memory": "2Gi"})], name="a")
    mm.allocate(a, a.containers[0], hint([1], True))
    big = pod([("c", {"memory": "12Gi"})], name="big")
    assert hints_plain(mm.get_topology_hints(big, big.containers[0])) == {"memory": [
        ([0, 2], True), ([0, 3], True), ([2, 3], True),
        ([0, 2, 3], False)]}
    # the allocation itself refuses a multi-node mask with a single-node user
    with pytest.raises(MemoryAllocationError) as err:
        mm.allocate(big, big.containers[0], hint([0, 1], False))
    assert err.value.reason == "UnexpectedAdmissionError"
    assert err.value.message == ("Allocate failed due to [memorymanager] preferred hint violates NUMA node "
                                 "allocation, which is unexpected")
    assert mm.counters.to_dict() == {"memory_manager_pinning_requests_total": 2,
                                     "memory_manager_pinning_errors_total": 1}


def test_group_cannot_be_split_or_merged():
    mm = four_nodes()
    big = pod([("c", {"memory": "12Gi"})], name="big")
    mm.allocate(big, big.containers[0], hint([0, 1], True))
    other = pod([("c", {"memory": "10Gi"})], name="other")
    # {1,2} (11Gi free): node 1 is in group {0,1} -> refused; {0,1,2}: group differs -> refused
    with pytest.raises(MemoryAllocationError) as err:
        mm.allocate(other, other.containers[0], hint([1, 2], False))
    assert "violates NUMA node allocation" in err.value.message
    with pytest.raises(MemoryAllocationError):
        mm.allocate(other, other.containers[0], hint([0, 1, 2], False))
    assert hints_plain(mm.get_topology_hints(other, other.containers[0])) == {"memory": [
        ([2, 3], True)]}


def test_cells_reset_when_assignments_drop_to_zero():
    mm = four_nodes()
    big = pod([("c", {"memory": "12Gi"})], name="big")
    mm.allocate(big, big.containers[0], hint([0, 1], True))
    second = pod([("c", {"memory": "1Gi"})], name="second")
    mm.allocate(second, second.containers[0], hint([0, 1], False))
    mm.remove(big.uid, "c")
    state = mm.state()["machine_state"]
    assert [state[0]["cells"], state[1]["cells"]] == [[0, 1], [0, 1]]
    assert [state[0]["numberOfAssignments"], state[1]["numberOfAssignments"]] == [1, 1]
    mm.remove(second.uid, "c")
    state = mm.state()["machine_state"]
    assert [state[n]["cells"] for n in range(4)] == [[0], [1], [2], [3]]
    assert all(state[n]["numberOfAssignments"] == 0 for n in range(4))
    assert state[0]["memoryMap"]["memory"] == {"total": 8 * GI, "systemReserved": GI, "allocatable": 7 * GI,
                                               "reserved": 0, "free": 7 * GI}
    assert mm.assignments() == {}
    small = pod([("c", {"memory": "1Gi"})], name="small")
    assert hints_plain(mm.get_topology_hints(small, small.containers[0]))["memory"][:2] == [([0], True), ([1], True)]


def test_best_effort_single_node_on_grouped_node_overwrites_cells():
    """Spec 4.2 note / 9.19: Allocate does not check the single-node rule; replicate the overwrite."""
    mm = four_nodes()
    big = pod([("c", {"memory": "12Gi"})], name="big")
    mm.allocate(big, big.containers[0], hint([0, 1], True))
    small = pod([("c", {"memory": "1Gi"})], name="small")
    mm.allocate(small, small.containers[0], hint([1], False))
    state = mm.state()["machine_state"]
    assert state[1]["cells"] == [1] and state[0]["cells"] == [0, 1]
    assert state[1]["numberOfAssignments"] == 2


def test_pod_scope_sidecar_hugepages_widen_and_break_groups():
    """Found by the property tests, kubelet behaviour: the pod request drops hugepages that only a
    sidecar asks for, so the pod hint is {1}; the sidecar is widened to {0,1}; the app container
    then lands on {1} (single-node masks are not checked in Allocate) and overwrites node 1's
    group -- a state whose start-up validation depends on Go map order."""
    topo = topology((0, 512 * MI, {2 * MI: 1}), (1, 512 * MI, {2 * MI: 299}))
    mm = new_memory_manager(topo, static_config({0: {"memory": "256Mi"}}),
                            allocatable_reservation=reservation(memory="256Mi"))
    tm = new_topology_manager(topo, "restricted", "pod", providers=[mm])
    p = pod([("app", {"memory": "128Mi"})], init=[("side", {"memory": "128Mi", "hugepages-2Mi": "600Mi"}, True)])
    assert pod_requested_resources(p) == {"memory": 256 * MI}
    result = tm.admit(p)
    assert result.admitted and result.affinities["app"] == hint([1], True)
    assert blocks_of(mm, p) == {"side": [((0, 1), "hugepages-2Mi", 600 * MI), ((0, 1), "memory", 128 * MI)],
                                "app": [((1,), "memory", 128 * MI)]}
    state = mm.state()["machine_state"]
    assert (state[0]["cells"], state[1]["cells"]) == ([0, 1], [1])
    # node 1's memory table wrapped around (hugepages exceed its memory): uint64 like the kubelet
    assert state[1]["memoryMap"]["memory"]["allocatable"] == (1 << 64) - 86 * MI


def test_release_is_greedy_per_node_but_group_totals_hold():
    mm = four_nodes()
    a = pod([("c", {"memory": "8Gi"})], name="a")
    mm.allocate(a, a.containers[0], hint([0, 1], True))   # node 0: 7Gi, node 1: 1Gi
    b = pod([("c", {"memory": "2Gi"})], name="b")
    mm.allocate(b, b.containers[0], hint([0, 1], False))  # node 1: +2Gi
    mm.remove(b.uid, "c")                                  # release takes node 0 first
    assert table(mm, 0)["reserved"] == 5 * GI and table(mm, 1)["reserved"] == 3 * GI
    assert table(mm, 0)["reserved"] + table(mm, 1)["reserved"] == 8 * GI


# ---- allocation paths and errors ---------------------------------------------------------------

def three_nodes_partly_used():
    """node 0: 16Gi allocatable with 10Gi taken by a single-node pod; nodes 1, 2: 4Gi each."""
    topo = topology((0, 17 * GI), (1, 4 * GI), (2, 4 * GI))
    mm = new_memory_manager(topo, static_config({0: {"memory": "1Gi"}}),
                            allocatable_reservation=reservation(memory="1Gi"))
    first = pod([("c", {"memory": "10Gi"})], name="first")
    mm.allocate(first, first.containers[0], hint([0], True))
    return mm


def test_default_hint_used_for_nil_affinity():
    mm = three_nodes_partly_used()
    p = pod([("c", {"memory": "7Gi"})])
    assert hints_plain(mm.get_topology_hints(p, p.containers[0])) == {"memory": [([1, 2], False)]}
    mm.allocate(p, p.containers[0], hint(None, False))
    assert [b.to_plain() for b in mm.blocks(p.uid, "c")] == [
        {"numaAffinity": [1, 2], "type": "memory", "size": 7 * GI}]


@pytest.mark.parametrize("affinity, error", [
    (hint(None, True), "[memorymanager] failed to find the default preferred hint"),
    (hint([0], True), "[memorymanager] failed to find NUMA nodes to extend the current topology hint"),
    (hint([1], True), "[memorymanager] failed to find the extended preferred hint"),
    (hint([0, 1], False), "[memorymanager] preferred hint violates NUMA node allocation"),
])
def test_allocation_errors(affinity, error):
    mm = three_nodes_partly_used()
    before = mm.state()
    p = pod([("c", {"memory": "7Gi"})])
    with pytest.raises(MemoryAllocationError) as err:
        mm.allocate(p, p.containers[0], affinity)
    assert err.value.error == error
    assert err.value.reason == "UnexpectedAdmissionError"
    assert err.value.message == "Allocate failed due to %s, which is unexpected" % error
    assert mm.state() == before
    assert mm.counters.to_dict() == {"memory_manager_pinning_requests_total": 2,
                                     "memory_manager_pinning_errors_total": 1}


def test_extension_of_too_narrow_hint():
    mm = three_nodes_partly_used()
    p = pod([("c", {"memory": "7Gi"})])
    mm.allocate(p, p.containers[0], hint([1], False))
    assert mm.blocks(p.uid, "c")[0].numa_affinity == (1, 2)


def test_no_memory_anywhere():
    mm = two_nodes()
    p = pod([("c", {"memory": "16Gi"})])
    assert mm.get_topology_hints(p, p.containers[0]) == {}
    with pytest.raises(MemoryAllocationError) as err:
        mm.allocate(p, p.containers[0], hint(None, False))
    assert err.value.message == ("Allocate failed due to [memorymanager] failed to get the default NUMA "
                                 "affinity, no NUMA nodes with enough memory is available, which is unexpected")


def test_empty_hint_map_passes_restricted_merge_then_fails_allocate():
    """Spec 9.1: no fitting mask = "no preference"; the rejection is UnexpectedAdmissionError."""
    topo = topology((0, 8 * GI), (1, 8 * GI))
    mm = new_memory_manager(topo, static_config({0: {"memory": "1Gi"}}),
                            allocatable_reservation=reservation(memory="1Gi"))
    tm = new_topology_manager(topo, "restricted", "container", providers=[mm])
    result = tm.admit(pod([("c", {"memory": "16Gi"})]))
    # "no preference" merges to the full mask {0,1}, which Allocate cannot widen
    assert not result.admitted
    assert (result.reason, result.message) == (
        "UnexpectedAdmissionError",
        "Allocate failed due to [memorymanager] failed to find NUMA nodes to extend the current topology "
        "hint, which is unexpected")
    # with Topology Manager policy none the memory manager picks its own default and fails there
    none_tm = new_topology_manager(topo, "none", "container", providers=[mm])
    result = none_tm.admit(pod([("c", {"memory": "16Gi"})], name="again"))
    assert not result.admitted and "failed to get the default NUMA affinity" in result.message


def test_non_integer_request():
    mm = two_nodes()
    p = pod([("c", {"memory": "1500m"})])
    assert mm.get_topology_hints(p, p.containers[0]) is None
    assert mm.get_pod_topology_hints(p) is None
    with pytest.raises(MemoryAllocationError) as err:
        mm.allocate(p, p.containers[0], hint([0], True))
    assert err.value.error == "[memorymanager] failed to represent quantity as int64"
    assert mm.counters.errors == 1


def test_allocate_is_idempotent_and_counts():
    mm = two_nodes()
    p = pod([("c", {"memory": "1Gi"})])
    mm.allocate(p, p.containers[0], hint([0], True))
    before = mm.state()
    mm.allocate(p, p.containers[0], hint([1], True))
    assert mm.state() == before
    assert mm.counters.to_dict() == {"memory_manager_pinning_requests_total": 2,
                                     "memory_manager_pinning_errors_total": 0}
    # restart / re-admission: hints regenerate from the stored blocks
    assert hints_plain(mm.get_topology_hints(p, p.containers[0])) == {"memory": [([0], True)]}
    assert hints_plain(mm.get_pod_topology_hints(p)) == {"memory": [([0], True)]}
    changed = pod([("c", {"memory": "2Gi"})])
    assert mm.get_topology_hints(changed, changed.containers[0]) is None


def test_pod_level_resources_ignored_without_the_gate():
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod
    manifest = {"metadata": {"name": "pl", "uid": "pl"},
                "spec": {"resources": {"requests": {"cpu": "2", "memory": "2Gi"},
                                       "limits": {"cpu": "2", "memory": "2Gi"}},
                         "containers": [{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}
    p = Pod.from_manifest(manifest)
    assert p.qos_class == "Guaranteed" and p.has_pod_level_resources
    mm = two_nodes()
    assert mm.get_topology_hints(p, p.containers[0]) is None
    assert mm.get_pod_topology_hints(p) is None
    mm.allocate(p, p.containers[0], hint([0], True))
    assert mm.assignments() == {} and mm.counters.requests == 0
    gated = new_memory_manager(topology((0, 8 * GI), (1, 8 * GI)), static_config({0: {"memory": "1Gi"}}),
                               allocatable_reservation=reservation(memory="1Gi"),
                               feature_gates={"PodLevelResourceManagers": True})
    # with the gate the pod budget (2Gi) decides the pod hints
    assert hints_plain(gated.get_pod_topology_hints(p))["memory"][0] == ([0], True)


# ---- init containers, sidecars, reuse ---------------------------------------------------------------

def admit_all(mm, p, affinity):
    for container in p.init_containers + p.containers:
        mm.allocate(p, container, affinity)


def blocks_of(mm, p):
    return dict((c.name, [(b.numa_affinity, b.type, b.size) for b in mm.blocks(p.uid, c.name)])
                for c in p.init_containers + p.containers)


def test_init_container_memory_reused_by_app():
    mm = two_nodes()
    p = pod([("app", {"memory": "2Gi"})], init=[("init", {"memory": "4Gi"})])
    mm.allocate(p, p.init_containers[0], hint([0], True))
    # node 0 now serves single-node allocations: {0,1} is no longer offered
    assert hints_plain(mm.get_topology_hints(p, p.containers[0])) == {
        "memory": [([0], True), ([1], True)]}
    mm.allocate(p, p.containers[0], hint([0], True))
    assert blocks_of(mm, p) == {"init": [((0,), "memory", 2 * GI)], "app": [((0,), "memory", 2 * GI)]}
    assert table(mm, 0)["reserved"] == 4 * GI
    assert mm.state()["machine_state"][0]["numberOfAssignments"] == 2
    assert mm.reusable_memory() == {p.uid: {(0,): {"memory": 2 * GI}}}


def test_reuse_lets_app_fit_where_free_memory_alone_would_not():
    mm = two_nodes()
    filler = pod([("c", {"memory": "1Gi"})], name="filler")
    mm.allocate(filler, filler.containers[0], hint([0], True))          # node 0: 6Gi free
    p = pod([("app", {"memory": "6Gi"})], init=[("init", {"memory": "5Gi"})])
    mm.allocate(p, p.init_containers[0], hint([0], True))               # node 0: 1Gi free
    # {0}: 1Gi free + 5Gi reusable covers 6Gi
    assert hints_plain(mm.get_topology_hints(p, p.containers[0])) == {"memory": [([0], True), ([1], True)]}
    mm.allocate(p, p.containers[0], hint([0], True))                   # 5Gi reused, 1Gi more
    assert table(mm, 0)["free"] == 0 and table(mm, 0)["reserved"] == 7 * GI
    assert blocks_of(mm, p) == {"init": [((0,), "memory", 0)], "app": [((0,), "memory", 6 * GI)]}
    # node 1 (8Gi free): an 8Gi app after a 1Gi init on {1} fits only thanks to the reuse
    big = pod([("app", {"memory": "8Gi"})], init=[("init", {"memory": "1Gi"})], name="big")
    mm.allocate(big, big.init_containers[0], hint([1], True))
    assert hints_plain(mm.get_topology_hints(big, big.containers[0])) == {"memory": [([1], True)]}


def test_two_init_containers_and_app_rewrite_blocks():
    mm = two_nodes()
    p = pod([("a1", {"memory": "2Gi"})], init=[("i1", {"memory": "4Gi"}), ("i2", {"memory": "3Gi"})])
    admit_all(mm, p, hint([0], True))
    assert blocks_of(mm, p) == {"i1": [((0,), "memory", 0)], "i2": [((0,), "memory", 2 * GI)],
                                "a1": [((0,), "memory", 2 * GI)]}
    assert table(mm, 0)["reserved"] == 4 * GI
    assert mm.state()["machine_state"][0]["numberOfAssignments"] == 3


def test_reuse_consumed_across_app_containers():
    mm = two_nodes()
    p = pod([("a1", {"memory": "3Gi"}), ("a2", {"memory": "3Gi"})], init=[("i1", {"memory": "4Gi"})])
    admit_all(mm, p, hint([0], True))
    # a1 reuses 3Gi of the init container's 4Gi, a2 the last 1Gi plus 2Gi new
    assert table(mm, 0)["reserved"] == 6 * GI
    assert blocks_of(mm, p) == {"i1": [((0,), "memory", 0)], "a1": [((0,), "memory", 3 * GI)],
                                "a2": [((0,), "memory", 3 * GI)]}
    assert mm.reusable_memory() == {p.uid: {(0,): {"memory": 0}}}


def test_sidecar_is_not_reused_and_is_long_running():
    mm = two_nodes()
    p = pod([("app", {"memory": "2Gi"})],
            init=[("side", {"memory": "1Gi"}, True), ("init", {"memory": "4Gi"})])
    assert pod_requested_resources(p) == {"memory": 5 * GI}
    admit_all(mm, p, hint([0], True))
    assert blocks_of(mm, p) == {"side": [((0,), "memory", GI)], "init": [((0,), "memory", 2 * GI)],
                                "app": [((0,), "memory", 2 * GI)]}
    assert table(mm, 0)["reserved"] == 5 * GI


def test_reuse_is_keyed_by_exact_mask():
    mm = two_nodes()
    p = pod([("app", {"memory": "2Gi"})], init=[("init", {"memory": "4Gi"})])
    mm.allocate(p, p.init_containers[0], hint([0], True))
    mm.allocate(p, p.containers[0], hint([1], True))
    assert table(mm, 0)["reserved"] == 4 * GI and table(mm, 1)["reserved"] == 2 * GI
    assert blocks_of(mm, p) == {"init": [((0,), "memory", 4 * GI)], "app": [((1,), "memory", 2 * GI)]}


def test_reusable_memory_dropped_for_other_pods():
    mm = two_nodes()
    p = pod([("app", {"memory": "2Gi"})], init=[("init", {"memory": "4Gi"})], name="p1")
    mm.allocate(p, p.init_containers[0], hint([0], True))
    q = pod([("c", {"memory": "1Gi"})], name="q")
    mm.allocate(q, q.containers[0], hint([1], True))
    assert mm.reusable_memory() == {}


@pytest.mark.parametrize("init, apps, expected", [
    ([], [("a", {"memory": "1Gi"}), ("b", {"memory": "2Gi"})], {"memory": 3 * GI}),
    ([("i", {"memory": "5Gi"})], [("a", {"memory": "1Gi"})], {"memory": 5 * GI}),
    ([("s", {"memory": "1Gi"}, True), ("i", {"memory": "2Gi"})], [("a", {"memory": "1Gi"})], {"memory": 3 * GI}),
    ([("i", {"memory": "2Gi"}), ("s", {"memory": "1Gi"}, True)], [("a", {"memory": "1Gi"})], {"memory": 2 * GI}),
    ([("i", {"memory": "1Gi", "hugepages-2Mi": "4Mi"})], [("a", {"memory": "2Gi"})], {"memory": 2 * GI}),
])
def test_pod_requested_resources(init, apps, expected):
    assert pod_requested_resources(pod(apps, init=init)) == expected


def test_container_requested_resources_keeps_zero_hugepages():
    p = pod([("c", {"memory": "1Gi", "hugepages-1Gi": "0"})])
    assert container_requested_resources(p.containers[0]) == {"memory": GI, "hugepages-1Gi": 0}


def test_pod_scope_hints_and_allocation():
    topo = topology((0, 8 * GI), (1, 8 * GI))
    mm = new_memory_manager(topo, static_config({0: {"memory": "1Gi"}}),
                            allocatable_reservation=reservation(memory="1Gi"))
    p = pod([("a", {"memory": "4Gi"}), ("b", {"memory": "4Gi"})])
    assert hints_plain(mm.get_pod_topology_hints(p)) == {"memory": [([1], True), ([0, 1], False)]}
    tm = new_topology_manager(topo, "restricted", "pod", providers=[mm])
    result = tm.admit(p)
    assert result.admitted and result.affinities == {"a": hint([1], True), "b": hint([1], True)}
    assert table(mm, 1)["reserved"] == 8 * GI
    # after restart the pod hint is regenerated from the first container's blocks vs the POD
    # total: 4Gi != 8Gi -> no preference
    assert mm.get_pod_topology_hints(p) is None


def test_remove_stale_state_and_remove_pod():
    mm = two_nodes()
    p = pod([("a", {"memory": "1Gi"}), ("b", {"memory": "1Gi"})], name="p")
    q = pod([("c", {"memory": "1Gi"})], name="q")
    admit_all(mm, p, hint([0], True))
    admit_all(mm, q, hint([1], True))
    mm.remove_stale_state({p.uid: ["a"]})
    assert sorted(mm.assignments()) == [p.uid] and sorted(mm.assignments()[p.uid]) == ["a"]
    mm.remove_pod(p.uid)
    assert mm.assignments() == {}
    assert table(mm, 0)["reserved"] == 0 and table(mm, 1)["reserved"] == 0
    mm.remove("nope", "nothing")


def test_none_policy_provider():
    mm = new_memory_manager(topology((0, 8 * GI)), {"memoryManagerPolicy": "None"})
    p = pod([("c", {"memory": "1Gi"})])
    assert mm.get_topology_hints(p, p.containers[0]) is None
    assert mm.get_pod_topology_hints(p) is None
    mm.allocate(p, p.containers[0], hint([0], True))
    assert mm.state() == {"policy_name": "None", "machine_state": {}, "entries": {}, "pod_entries": {}}
    assert mm.counters.to_dict() == {"memory_manager_pinning_requests_total": 0,
                                     "memory_manager_pinning_errors_total": 0}


def test_sparse_numa_ids():
    topo = topology((0, 8 * GI), (1, 8 * GI), (33, 8 * GI))
    mm = new_memory_manager(topo, static_config({33: {"memory": "1Gi"}}),
                            allocatable_reservation=reservation(memory="1Gi"))
    p = pod([("c", {"memory": "7681Mi"})])
    assert hints_plain(mm.get_topology_hints(p, p.containers[0])) == {"memory": [
        ([0], True), ([1], True), ([0, 1], False), ([0, 33], False), ([1, 33], False), ([0, 1, 33], False)]}
    mm.allocate(p, p.containers[0], hint([1, 33], False))
    assert mm.state()["machine_state"][33]["cells"] == [1, 33]
