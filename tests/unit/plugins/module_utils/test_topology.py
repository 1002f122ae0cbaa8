# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Topology model: fact dict round trips, validation messages, fingerprint, helpers."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import (
    CPU,
    HugePages,
    InvalidTopology,
    NumaNode,
    Topology,
    hugepage_resource_name,
)


def _two_node():
    n0 = NumaNode(0, (0, 1, 2, 3), 8 << 30, 4 << 30,
                  {"hugepages-2Mi": HugePages(2 << 20, 10, 5), "hugepages-1Gi": HugePages(1 << 30, 2, 2)},
                  {0: 10, 1: 21})
    n1 = NumaNode(1, (), 4 << 30, 1 << 30, {}, {0: 21, 1: 10})
    cpus = (CPU(0, 0, 0, 0, 0, True, (0, 2), 0), CPU(1, 0, 1, 0, 0, True, (1, 3), 0),
            CPU(2, 0, 0, 0, 0, True, (0, 2), 0), CPU(3, 0, 1, 0, 0, True, (1, 3), 0),
            CPU(4, 1, None, None, None, False))
    return Topology((n0, n1), cpus)


def test_to_facts_shape():
    facts = _two_node().to_facts()
    assert facts["nodes"][0] == {
        "id": 0, "cpus": [0, 1, 2, 3], "cpulist": "0-3", "memory_total_bytes": 8 << 30,
        "memory_free_bytes": 4 << 30,
        "hugepages": {"hugepages-2Mi": {"page_size_bytes": 2097152, "total_pages": 10, "free_pages": 5},
                      "hugepages-1Gi": {"page_size_bytes": 1073741824, "total_pages": 2, "free_pages": 2}},
        "distances": {"0": 10, "1": 21}}
    assert list(facts["nodes"][0]["hugepages"]) == ["hugepages-2Mi", "hugepages-1Gi"]
    assert facts["cpus"][4] == {"id": 4, "node": 1, "core": None, "socket": None, "die": None,
                                "online": False, "siblings": [], "cache_id": None}
    summary = dict((k, v) for k, v in facts.items() if k not in ("nodes", "cpus", "fingerprint"))
    assert summary == {"node_count": 2, "node_ids": [0, 1], "cpu_node_count": 1, "memory_only_node_ids": [1],
                       "cpu_count": 4, "online_cpus": "0-3", "offline_cpus": "4", "socket_count": 1,
                       "threads_per_core": 2, "memory_total_bytes": 12 << 30,
                       "hugepage_sizes": ["hugepages-2Mi", "hugepages-1Gi"]}
    assert facts["fingerprint"].startswith("sha256:") and len(facts["fingerprint"]) == 71


def test_round_trip_through_json_turns_int_keys_to_str():
    topo = _two_node()
    back = Topology.from_facts(json.loads(json.dumps(topo.to_facts())))
    assert back == topo
    assert hash(back) == hash(topo)
    assert back.fingerprint() == topo.fingerprint()


def test_from_facts_accepts_int_keys_and_missing_cpus():
    facts = _two_node().to_facts()
    facts["nodes"][0]["distances"] = {0: 10, 1: 21}
    del facts["cpus"]
    topo = Topology.from_facts(facts)
    assert topo.node(0).distances == {0: 10, 1: 21}
    assert [c.id for c in topo.cpus] == [0, 1, 2, 3]
    assert topo.cpu(2).core is None


def test_helpers():
    topo = _two_node()
    assert topo.node_ids() == (0, 1)
    assert topo.cpu_node_ids() == (0,)
    assert topo.hugepage_sizes() == ("hugepages-2Mi", "hugepages-1Gi")
    assert topo.kubelet_core_id(3) == 1
    assert topo.online_cpus() == (0, 1, 2, 3)
    assert topo.offline_cpus() == (4,)
    with pytest.raises(KeyError) as info:
        topo.node(7)
    assert info.value.args[0] == "NUMA node 7 does not exist (nodes: 0, 1)"


@pytest.mark.parametrize("size,name", [
    (2097152, "hugepages-2Mi"), (1073741824, "hugepages-1Gi"), (1536 * 1024, "hugepages-1536Ki"),
    (64 * 1024, "hugepages-64Ki"), (16 << 30, "hugepages-16Gi"), (512 << 20, "hugepages-512Mi"),
])
def test_hugepage_resource_name(size, name):
    assert hugepage_resource_name(size) == name


@pytest.mark.parametrize("bad", [0, -2048, True, "2Mi"])
def test_hugepage_resource_name_rejects(bad):
    with pytest.raises(InvalidTopology) as info:
        hugepage_resource_name(bad)
    assert str(info.value) == "hugepage size must be a positive number of bytes, got %r" % (bad,)


def _mutate(path, value):
    facts = json.loads(json.dumps(_two_node().to_facts()))
    target = facts
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return facts


BAD_FACTS = [
    (("nodes",), "x", "numa_topology.nodes must be a list, got str"),
    (("nodes", 0), [1], "nodes[0] must be a dict, got list"),
    (("nodes", 0, "id"), KeyError, "nodes[0] is missing required key 'id'"),
    (("nodes", 1, "id"), "one", "nodes[1].id must be an integer, got 'one'"),
    (("nodes", 1, "id"), True, "nodes[1].id must be an integer, got True"),
    (("nodes", 1, "id"), 1.5, "nodes[1].id must be an integer, got 1.5"),
    (("nodes", 1, "id"), 0, "node ids must be unique, got [0, 0]"),
    (("nodes", 0, "cpus"), "0-3", "nodes[0].cpus must be a list of integers, got str '0-3'"),
    (("nodes", 0, "cpus"), [0, 0], "nodes[0].cpus lists an id twice: [0, 0]"),
    (("nodes", 0, "cpus", 1), -1, "nodes[0].cpus[1] must be >= 0, got -1"),
    (("nodes", 0, "memory_total_bytes"), None, "nodes[0].memory_total_bytes must be an integer, got null None"),
    (("nodes", 0, "memory_free_bytes"), 9 << 30,
     "node 0: memory_free_bytes 9663676416 exceeds memory_total_bytes 8589934592"),
    (("nodes", 0, "hugepages"), [], "nodes[0].hugepages must be a dict, got list"),
    (("nodes", 0, "hugepages", "hugepages-2Mi", "page_size_bytes"), 0,
     "nodes[0].hugepages.hugepages-2Mi.page_size_bytes must be >= 1, got 0"),
    (("nodes", 0, "hugepages", "hugepages-2Mi", "page_size_bytes"), 4096,
     "nodes[0].hugepages.hugepages-2Mi: key 'hugepages-2Mi' does not match page_size_bytes 4096 "
     "(expected 'hugepages-4Ki')"),
    (("nodes", 0, "hugepages", "hugepages-2Mi", "free_pages"), 11,
     "node 0 hugepages-2Mi: free_pages 11 exceeds total_pages 10"),
    (("nodes", 0, "hugepages", "hugepages-2Mi", "total_pages"), KeyError,
     "nodes[0].hugepages.hugepages-2Mi is missing required key 'total_pages'"),
    (("nodes", 0, "distances"), {"x": 1}, "nodes[0].distances key 'x' must be an integer, got 'x'"),
    (("nodes", 0, "distances"), {"0": 10, "5": 21}, "node 0: distance to node 5, which does not exist"),
    (("nodes", 1, "cpus"), [3], "CPU 3 is listed in both node 0 and node 1"),
    (("cpus",), {}, "numa_topology.cpus must be a list, got dict"),
    (("cpus", 0, "online"), "yes", "cpus[0].online must be true or false, got 'yes'"),
    (("cpus", 0, "node"), 1, "CPU 0 is online and says node 1, but node 0 lists it"),
    (("cpus", 4, "online"), True, "CPU 4 is online and says node 1, but no node lists it"),
    (("cpus", 3), {"id": 9, "online": False}, "node 0 lists CPU 3, which is not in cpus"),
    (("cpus", 0, "siblings"), "0,2", "cpus[0].siblings must be a list of integers, got str '0,2'"),
]


@pytest.mark.parametrize("path,value,message", BAD_FACTS)
def test_from_facts_errors_name_the_field(path, value, message):
    with pytest.raises(InvalidTopology) as info:
        Topology.from_facts(_mutate(path, value))
    assert str(info.value) == message


def test_from_facts_rejects_non_dict():
    with pytest.raises(InvalidTopology) as info:
        Topology.from_facts([])
    assert str(info.value) == "numa_topology must be a dict, got list"


def test_offline_cpu_listed_by_node():
    facts = _mutate(("nodes", 1, "cpus"), [4])
    with pytest.raises(InvalidTopology) as info:
        Topology.from_facts(facts)
    assert str(info.value) == "CPU 4 is offline but node 1 lists it among its online CPUs"


def test_fingerprint_ignores_free_memory_and_cpu_details():
    base = _two_node()
    facts = base.to_facts()
    facts["nodes"][0]["memory_free_bytes"] = 1
    facts["nodes"][0]["hugepages"]["hugepages-2Mi"]["free_pages"] = 0
    facts["cpus"][0]["cache_id"] = 99
    facts["nodes"][0]["memory_total_bytes"] += 100 * 1024  # below half a MiB: same MiB
    assert Topology.from_facts(facts).fingerprint() == base.fingerprint()


@pytest.mark.parametrize("path,value", [
    (("nodes", 0, "memory_total_bytes"), (8 << 30) + (1 << 20)),
    (("nodes", 0, "hugepages", "hugepages-2Mi", "total_pages"), 11),
    (("nodes", 0, "distances", "1"), 20),
    (("nodes", 1, "distances", "0"), 20),
])
def test_fingerprint_changes_with_shape(path, value):
    assert Topology.from_facts(_mutate(path, value)).fingerprint() != _two_node().fingerprint()


def test_fingerprint_is_stable_across_releases():
    """Pinned value: a change here breaks fleet grouping against stored facts; bump
    FINGERPRINT_VERSION deliberately instead."""
    assert _two_node().fingerprint() == _PINNED


_PINNED = "sha256:a557f78e87ab84ca89f9b9bacb86c44c45bf50fc886d9e2d14ddb3b08073b8e4"


@st.composite
def topologies(draw):
    ids = sorted(draw(st.sets(st.integers(0, 63), min_size=1, max_size=8)))
    next_cpu = 0
    nodes = []
    cpus = []
    for node_id in ids:
        count = draw(st.integers(0, 6))
        node_cpus = tuple(range(next_cpu, next_cpu + count))
        next_cpu += count
        total = draw(st.integers(0, 1 << 40))
        free = draw(st.integers(0, total))
        pages = {}
        for size in draw(st.sets(st.sampled_from([64 << 10, 2 << 20, 32 << 20, 512 << 20, 1 << 30, 16 << 30]))):
            total_pages = draw(st.integers(0, 4096))
            pool = HugePages(size, total_pages, draw(st.integers(0, total_pages)))
            pages[pool.resource_name] = pool
        distances = dict((peer, 10 if peer == node_id else draw(st.integers(11, 254))) for peer in ids)
        nodes.append(NumaNode(node_id, node_cpus, total, free, pages, distances))
        for cpu in node_cpus:
            cpus.append(CPU(cpu, node_id, cpu // 2, 0, 0, True, (cpu,), draw(st.none() | st.integers(0, 9))))
    for extra in range(draw(st.integers(0, 3))):
        cpus.append(CPU(next_cpu + extra, draw(st.none() | st.sampled_from(ids)), None, None, None, False))
    return Topology(tuple(nodes), tuple(cpus))


@settings(max_examples=150, deadline=None)
@given(topologies())
def test_property_fact_round_trip(topo):
    facts = json.loads(json.dumps(topo.to_facts()))
    back = Topology.from_facts(facts)
    assert back == topo
    assert back.to_facts() == topo.to_facts()
    assert Topology.from_facts(copy.deepcopy(facts)).fingerprint() == topo.fingerprint()
