# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import human_bytes
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.fleet import (
    FleetReportError,
    fleet_report,
    summarise_host,
)

GIB = 1024 ** 3


def _node(node_id, cpus, mem_gib, pages_1g=0, pages_2m=0, cpulist=None):
    node = {
        "id": node_id, "cpus": list(cpus), "memory_total_bytes": mem_gib * GIB,
        "memory_free_bytes": mem_gib * GIB // 2,
        "hugepages": {
            "hugepages-2Mi": {"page_size_bytes": 2 * 1024 * 1024, "total_pages": pages_2m, "free_pages": pages_2m},
            "hugepages-1Gi": {"page_size_bytes": GIB, "total_pages": pages_1g, "free_pages": pages_1g // 2},
        },
        "distances": {},
    }
    if cpulist is not None:
        node["cpulist"] = cpulist
    return node


def _facts(fingerprint, nodes):
    return {"fingerprint": fingerprint, "nodes": nodes, "offline_cpus": "", "socket_count": 2,
            "threads_per_core": 2}


INTEL = _facts("sha256:aaaaaaaaaaaa1111", [_node(0, range(0, 4), 192, 16, 1024, "0-3"),
                                           _node(1, range(4, 8), 192, 16, 1024, "4-7")])
INTEL_NO_1G = _facts("sha256:bbbbbbbbbbbb2222", [_node(0, range(0, 4), 192, 0, 1024, "0-3"),
                                                 _node(1, range(4, 8), 192, 0, 1024, "4-7")])
CXL = _facts("sha256:cccccccccccc3333", [_node(0, range(0, 8), 256, 0, 0), _node(1, [], 128)])


@pytest.mark.parametrize("value, text", [
    (0, "0.0 GiB"),
    (GIB, "1.0 GiB"),
    (GIB * 3 // 2, "1.5 GiB"),
    ((GIB + 19) // 20, "0.1 GiB"),   # just over 0.05 GiB rounds up
    (GIB // 20, "0.0 GiB"),          # just under 0.05 GiB rounds down
    (GIB * 25 // 10, "2.5 GiB"),
    (8129124 * 1024, "7.8 GiB"),
    (201723228160, "187.9 GiB"),
])
def test_gib(value, text):
    assert human_bytes(value, "GiB") == text


def test_summary_of_a_two_socket_host():
    summary = summarise_host("h01", INTEL)
    assert summary["node_count"] == 2
    assert summary["cpu_node_count"] == 2
    assert summary["cpu_count"] == 8
    assert summary["memory_total_bytes"] == 384 * GIB
    assert summary["hugepage_totals"] == {"hugepages-2Mi": 2048, "hugepages-1Gi": 32}
    assert summary["shape"] == "2 nodes (2 with CPUs), 8 CPUs, 384.0 GiB, hugepages 2Mi x2048, 1Gi x32"


def test_summary_formats_cpu_lists_when_facts_lack_cpulist_and_counts_memory_only_nodes():
    summary = summarise_host("h03", CXL)
    assert [n["cpulist"] for n in summary["nodes"]] == ["0-7", ""]
    assert summary["cpu_node_count"] == 1
    assert summary["shape"] == "2 nodes (1 with CPUs), 8 CPUs, 384.0 GiB, hugepages 2Mi x0, 1Gi x0"


def test_odd_host_is_flagged_against_its_group_majority():
    report = fleet_report({"h1": INTEL, "h2": INTEL, "h3": INTEL_NO_1G, "h4": CXL},
                          {"h1": ["intel"], "h2": ["intel"], "h3": ["intel"], "h4": ["cxl"]},
                          hosts=["h1", "h2", "h3", "h4"])
    assert [d["host"] for d in report["differs"]] == ["h3"]
    flagged = report["differs"][0]
    assert flagged["reason"] == "differs from the 2 other hosts of group intel"
    assert flagged["peers"] == ["h1", "h2"]
    assert "1Gi x0" in flagged["shape"] and "1Gi x32" in flagged["peer_shape"]
    assert report["groups"]["intel"]["majority"] == INTEL["fingerprint"]
    assert report["groups"]["intel"]["uniform"] is False
    assert report["groups"]["cxl"]["uniform"] is True
    assert [f["hosts"] for f in report["fingerprints"]] == [["h1", "h2"], ["h3"], ["h4"]]
    assert "    !! differs from the 2 other hosts of group intel" in report["lines"]
    assert report["lines"][0] == "NUMA topology of 4 hosts: 4 discovered, 0 failed, 3 distinct shapes"


def test_group_without_majority_flags_every_host():
    report = fleet_report({"a": INTEL, "b": INTEL_NO_1G}, {"a": ["pool"], "b": ["pool"]}, hosts=["a", "b"])
    assert [(d["host"], d["reason"], d["peers"]) for d in report["differs"]] == [
        ("a", "group pool has no majority shape", ["b"]),
        ("b", "group pool has no majority shape", ["a"]),
    ]
    assert report["groups"]["pool"]["majority"] is None


def test_all_and_ungrouped_are_not_machine_classes():
    report = fleet_report({"a": INTEL, "b": CXL}, {"a": ["all", "ungrouped"], "b": ["all", "ungrouped"]})
    assert report["differs"] == []
    assert report["groups"] == {}
    assert report["lines"][-1] == "Every inventory group is uniform (no group has two discovered hosts)."


def test_failed_hosts_are_reported_and_left_out_of_groups():
    report = fleet_report({"a": INTEL, "b": None, "c": INTEL}, {"a": ["g"], "b": ["g"], "c": ["g"]},
                          hosts=["a", "b", "c"], failed={"c": "unreachable"})
    assert report["failed"] == {
        "b": "no numa_topology facts (discovery failed or host unreachable)", "c": "unreachable"}
    assert list(report["hosts"]) == ["a"]
    assert report["groups"]["g"]["discovered"] == ["a"]
    assert "b  DISCOVERY FAILED  no numa_topology facts (discovery failed or host unreachable)" in report["lines"]
    assert report["lines"][-1] == "Discovery failed on: b, c"


def test_node_lines_show_cpus_memory_and_hugepages_per_size():
    lines = fleet_report({"h": CXL}, {"h": []})["lines"]
    assert "    node 0  cpus 0-7     256.0 GiB (128.0 free)  hugepages 2Mi/1Gi none" in lines
    assert "    node 1  memory-only  128.0 GiB (64.0 free)   hugepages 2Mi/1Gi none" in lines
    lines = fleet_report({"h": INTEL}, {"h": []})["lines"]
    assert "    node 1  cpus 4-7  192.0 GiB (96.0 free)   hugepages 2Mi 1024 (1024 free), 1Gi 16 (8 free)" in lines


def test_kubelet_line():
    facts = copy.deepcopy(INTEL)
    facts["kubelet"] = {"running": True, "pid": 42, "config": "/var/lib/kubelet/config.yaml", "config_exists": True,
                        "state_files": {"cpu_manager_state": {"present": True, "policy_name": "static",
                                                              "checksum_ok": False},
                                        "memory_manager_state": {"present": False}}}
    summary = summarise_host("h", facts)
    assert summary["kubelet"] == ("running (pid 42), config /var/lib/kubelet/config.yaml, "
                                  "cpu_manager_state policy static (CHECKSUM MISMATCH)")
    facts["kubelet"] = {"running": False, "config": None, "state_files": {}}
    assert summarise_host("h", facts)["kubelet"] == "not running, no config file found, no manager state files"


@pytest.mark.parametrize("facts, message", [
    ("x", "host h: numa_topology must be a dict, got 'x'"),
    ({"nodes": 3}, "host h: numa_topology.nodes must be a list, got 3"),
    ({"nodes": ["n"]}, "host h: numa_topology.nodes[0] must be a dict, got 'n'"),
    ({"nodes": [{"id": "zero", "cpus": []}]}, "host h: numa_topology.nodes[0].id must be an integer, got 'zero'"),
    ({"nodes": [{"id": 0, "cpus": 5}]}, "host h: numa_topology.nodes[0].cpus must be a list, got 5"),
    ({"nodes": [{"id": 0, "cpus": [], "hugepages": []}]},
     "host h: numa_topology.nodes[0].hugepages must be a dict, got []"),
    ({"nodes": [{"id": 0, "cpus": [], "hugepages": {"hugepages-2Mi": {"total_pages": "many"}}}]},
     "host h: numa_topology.nodes[0].hugepages.hugepages-2Mi.total_pages must be an integer, got 'many'"),
])
def test_bad_facts_name_host_and_field(facts, message):
    with pytest.raises(FleetReportError) as err:
        fleet_report({"h": facts}, {"h": []})
    assert str(err.value) == message


def test_ids_given_as_strings_are_accepted():
    facts = {"nodes": [{"id": "3", "cpus": [0, 1], "memory_total_bytes": str(GIB)}]}
    summary = summarise_host("h", facts)
    assert summary["nodes"][0]["id"] == 3 and summary["memory_total_bytes"] == GIB


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["fa", "fb", "fc"]), st.sampled_from(["g1", "g2"])),
                min_size=1, max_size=12))
def test_flags_are_exactly_the_non_majority_hosts(assignments):
    """Property: within a group with a strict majority fingerprint, exactly the other hosts are
    flagged; without one, every host of a non-uniform group is flagged; uniform groups never."""
    topologies, groups_of, hosts = {}, {}, []
    for index, (fingerprint, group) in enumerate(assignments):
        name = "h%02d" % index
        hosts.append(name)
        topologies[name] = _facts(fingerprint, [_node(0, [0], 1)])
        groups_of[name] = [group]
    report = fleet_report(topologies, groups_of, hosts=hosts)
    flagged = set((d["host"], d["group"]) for d in report["differs"])
    expected = set()
    for group in ("g1", "g2"):
        members = [h for h in hosts if groups_of[h] == [group]]
        counts = {}
        for host in members:
            counts[topologies[host]["fingerprint"]] = counts.get(topologies[host]["fingerprint"], 0) + 1
        if len(counts) <= 1:
            continue
        ranked = sorted(counts.values(), reverse=True)
        top = [fp for fp, n in counts.items() if n == ranked[0]]
        majority = top[0] if ranked[0] > ranked[1] else None
        expected |= set((h, group) for h in members if topologies[h]["fingerprint"] != majority)
    assert flagged == expected
    assert sum(len(f["hosts"]) for f in report["fingerprints"]) == len(hosts)
