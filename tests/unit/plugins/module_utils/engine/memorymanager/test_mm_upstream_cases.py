# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Scenarios whose expected outcomes are those of the kubelet's own memory manager unit tests
(pkg/kubelet/cm/memorymanager/policy_static_test.go), re-stated as our own table tests."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mm_helpers import GI, MI, hint, hints_plain, pod  # noqa: E402

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.machine_state import (  # noqa: E402
    entries_from_plain,
    machine_state_from_plain,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.static_policy import (  # noqa: E402
    MemoryManagerStatic,
)


def table(allocatable, free, reserved, system_reserved, total):
    return {"allocatable": allocatable, "free": free, "reserved": reserved, "systemReserved": system_reserved,
            "total": total}


def node(cells, count, **tables):
    return {"cells": cells, "numberOfAssignments": count,
            "memoryMap": dict((name.replace("_", "-"), value) for name, value in tables.items())}


def manager(machine_state, entries=None):
    return MemoryManagerStatic(machine_state_from_plain(machine_state), entries_from_plain(entries or {}))


def test_init_containers_7_4_apps_5_2_reuse():
    mm = manager({0: node([0], 0, memory=table(10240 * MI, 10240 * MI, 0, 512 * MI, 10 * GI),
                          hugepages_1Gi=table(10 * GI, 10 * GI, 0, 0, 10 * GI))})
    p = pod([("container1", {"memory": "5Gi", "hugepages-1Gi": "5Gi"}),
             ("container2", {"memory": "2Gi", "hugepages-1Gi": "2Gi"})],
            init=[("init-container1", {"memory": "7Gi", "hugepages-1Gi": "7Gi"}),
                  ("init-container2", {"memory": "4Gi", "hugepages-1Gi": "4Gi"})], uid="pod1")
    for container in p.init_containers + p.containers:
        mm.allocate(p, container, hint(None, False))
    entries = mm.state()["entries"]["pod1"]
    assert dict((name, sorted((b["type"], b["size"]) for b in blocks)) for name, blocks in entries.items()) == {
        "init-container1": [("hugepages-1Gi", 0), ("memory", 0)],
        "init-container2": [("hugepages-1Gi", 0), ("memory", 0)],
        "container1": [("hugepages-1Gi", 5 * GI), ("memory", 5 * GI)],
        "container2": [("hugepages-1Gi", 2 * GI), ("memory", 2 * GI)],
    }
    assert mm.state()["machine_state"][0] == node(
        [0], 8, memory=table(10240 * MI, 3072 * MI, 7 * GI, 512 * MI, 10 * GI),
        hugepages_1Gi=table(10 * GI, 3 * GI, 7 * GI, 0, 10 * GI))


def four_node_state():
    full = table(1536 * MI, 1536 * MI, 0, 512 * MI, 2 * GI)
    pages = table(GI, GI, 0, 0, GI)
    return {
        0: node([0, 1], 2, memory=table(1536 * MI, 0, 1536 * MI, 512 * MI, 2 * GI),
                hugepages_1Gi=table(GI, 0, GI, 0, GI)),
        1: node([0, 1], 2, memory=table(1536 * MI, GI, 512 * MI, 512 * MI, 2 * GI),
                hugepages_1Gi=table(GI, 0, GI, 0, GI)),
        2: node([2], 0, memory=dict(full), hugepages_1Gi=dict(pages)),
        3: node([3], 0, memory=dict(full), hugepages_1Gi=dict(pages)),
    }


def test_hints_skip_group_without_free_memory():
    mm = manager(four_node_state(), {"pod1": {"container1": [
        {"numaAffinity": [0, 1], "type": "memory", "size": 2 * GI},
        {"numaAffinity": [0, 1], "type": "hugepages-1Gi", "size": 2 * GI}]}})
    p = pod([("container2", {"memory": "1Gi", "hugepages-1Gi": "1Gi"})], uid="pod2")
    expected = [([2], True), ([3], True), ([2, 3], False)]
    assert hints_plain(mm.get_topology_hints(p, p.containers[0])) == {"memory": expected, "hugepages-1Gi": expected}


def test_group_member_hint_not_preferred_when_one_node_would_do():
    mm = manager({
        0: node([0, 1], 2, memory=table(1536 * MI, 0, 1536 * MI, 512 * MI, 2 * GI),
                hugepages_2Mi=table(20 * MI, 0, 20 * MI, 0, 20 * MI)),
        1: node([0, 1], 2, memory=table(1536 * MI, GI, 512 * MI, 512 * MI, 2 * GI),
                hugepages_2Mi=table(20 * MI, 16 * MI, 4 * MI, 0, 20 * MI)),
    }, {"pod1": {"container1": [{"numaAffinity": [0, 1], "type": "memory", "size": 2 * GI},
                                {"numaAffinity": [0, 1], "type": "hugepages-2Mi", "size": 24 * MI}]}})
    p = pod([("container2", {"memory": "1Gi", "hugepages-2Mi": "16Mi"})], uid="pod2")
    assert hints_plain(mm.get_topology_hints(p, p.containers[0])) == {
        "memory": [([0, 1], False)], "hugepages-2Mi": [([0, 1], False)]}


@pytest.mark.parametrize("blocks", [
    [{"numaAffinity": [0], "type": "memory", "size": GI}],                                 # fewer blocks
    [{"numaAffinity": [0], "type": "memory", "size": GI},
     {"numaAffinity": [0], "type": "hugepages-2Mi", "size": GI}],                          # other type
    [{"numaAffinity": [0], "type": "memory", "size": 512 * MI},
     {"numaAffinity": [0], "type": "hugepages-1Gi", "size": GI}],                          # other size
])
def test_regenerate_mismatch_gives_no_preference(blocks):
    mm = manager({0: node([0], 2, memory=table(1536 * MI, 512 * MI, GI, 512 * MI, 2 * GI),
                          hugepages_1Gi=table(GI, 0, GI, 0, GI))}, {"pod1": {"container1": blocks}})
    p = pod([("container1", {"memory": "1Gi", "hugepages-1Gi": "1Gi"})], uid="pod1")
    assert mm.get_topology_hints(p, p.containers[0]) is None


def test_regenerate_matching_blocks():
    mm = manager({0: node([0], 2, memory=table(1536 * MI, 512 * MI, GI, 512 * MI, 2 * GI),
                          hugepages_1Gi=table(GI, 0, GI, 0, GI))},
                 {"pod1": {"container1": [{"numaAffinity": [0], "type": "memory", "size": GI},
                                          {"numaAffinity": [0], "type": "hugepages-1Gi", "size": GI}]}})
    p = pod([("container1", {"memory": "1Gi", "hugepages-1Gi": "1Gi"})], uid="pod1")
    assert hints_plain(mm.get_topology_hints(p, p.containers[0])) == {
        "memory": [([0], True)], "hugepages-1Gi": [([0], True)]}


def test_remove_cross_numa_container():
    mm = manager({
        0: node([0, 1], 2, memory=table(512 * MI, 0, 512 * MI, 512 * MI, GI), hugepages_1Gi=table(GI, 0, GI, 0, GI)),
        1: node([0, 1], 2, memory=table(512 * MI, 0, 512 * MI, 512 * MI, GI), hugepages_1Gi=table(GI, GI, 0, 0, GI)),
    }, {"pod1": {"container1": [{"numaAffinity": [0, 1], "type": "memory", "size": GI},
                                {"numaAffinity": [0, 1], "type": "hugepages-1Gi", "size": GI}]}})
    mm.remove("pod1", "container1")
    assert mm.state()["machine_state"] == {
        0: node([0], 0, memory=table(512 * MI, 512 * MI, 0, 512 * MI, GI), hugepages_1Gi=table(GI, GI, 0, 0, GI)),
        1: node([1], 0, memory=table(512 * MI, 512 * MI, 0, 512 * MI, GI), hugepages_1Gi=table(GI, GI, 0, 0, GI)),
    }
    assert mm.state()["entries"] == {}
