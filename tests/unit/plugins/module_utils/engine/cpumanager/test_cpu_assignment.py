# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""takeByTopology: orders and results, with the upstream unit-test tables as facts."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager import cpu_assignment as ca
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager import cpu_assignment_distributed as cad
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.cpu_topology import from_layout
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import format_cpuset, parse_cpuset


def single_socket_ht():
    """8 CPUs, 1 socket, 4 cores (CPU i and i+4 are siblings)."""
    return from_layout({0: range(8)}, cores=dict((c, (c, c + 4)) for c in range(4)),
                       uncore=dict((c, 0) for c in range(8)))


def dual_socket_ht():
    """12 CPUs, 2 sockets = 2 NUMA nodes; even cores on socket 0; CPU c and c+6 are siblings."""
    return from_layout({0: [0, 2, 4, 6, 8, 10], 1: [1, 3, 5, 7, 9, 11]}, sockets_per_node={0: 0, 1: 1},
                       cores=dict((c, (c, c + 6)) for c in range(6)),
                       uncore=dict((c, 0) for c in range(12)))


def dual_socket_no_ht():
    return from_layout({0: range(4), 1: range(4, 8)}, sockets_per_node={0: 0, 1: 1},
                       uncore=dict((c, 0) for c in range(8)))


def dual_socket_multi_numa_ht():
    """80 CPUs, 2 sockets x 2 NUMA nodes x 10 cores x 2 threads (CPU i and i+40 siblings)."""
    nodes = dict((n, [c for c in range(80) if (c % 40) // 10 == n]) for n in range(4))
    return from_layout(nodes, sockets_per_node={0: 0, 1: 0, 2: 1, 3: 1},
                       cores=dict((c, (c, c + 40)) for c in range(40)),
                       uncore=dict((c, 0) for c in range(80)))


def multi_socket_per_numa_ht():
    """80 CPUs, 2 NUMA nodes x 2 sockets each (sockets below NUMA nodes)."""
    nodes = {0: [c for c in range(80) if (c % 40) < 20], 1: [c for c in range(80) if (c % 40) >= 20]}
    topo = from_layout(nodes, cores=dict((c, (c, c + 40)) for c in range(40)),
                       uncore=dict((c, 0) for c in range(80)))
    # sockets: 0-9/40-49 -> 0, 10-19/50-59 -> 1, 20-29/60-69 -> 2, 30-39/70-79 -> 3
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.cpu_topology import CPUInfo, CPUTopology
    details = dict((c, CPUInfo(numa_node=i.numa_node, socket=(c % 40) // 10, core=i.core, uncore_cache=0))
                   for c, i in topo.details.items())
    return CPUTopology(details)


def uncore_single_socket_no_smt():
    return from_layout({0: range(16)}, uncore=dict((c, c // 4) for c in range(16)))


def uncore_dual_socket_no_smt():
    return from_layout({0: range(8), 1: range(8, 16)}, sockets_per_node={0: 0, 1: 1},
                       uncore=dict((c, c // 4) for c in range(16)))


def uncore_single_socket_multi_numa():
    return from_layout({0: range(8), 1: range(8, 16)}, sockets_per_node={0: 0, 1: 0},
                       uncore=dict((c, c // 4) for c in range(16)))


def uncore_single_socket_smt():
    return from_layout({0: range(16)}, cores=dict((c, (c, c + 8)) for c in range(8)),
                       uncore=dict((c, (c % 8) // 4) for c in range(16)))


def _acc(topo, cpus, need=0):
    return ca._Accumulator(topo, parse_cpuset(cpus), need)


@pytest.mark.parametrize("topo,cpus,expected", [
    (single_socket_ht, "0-7", [0]),
    (single_socket_ht, "1-7", []),
    (dual_socket_ht, "0-11", [0, 1]),
    (dual_socket_ht, "0-9,11", [1]),
    (dual_socket_ht, "0,2-9,11", []),
    (dual_socket_multi_numa_ht, "0-79", [0, 1]),
    (dual_socket_multi_numa_ht, "1-79", [1]),
    (dual_socket_multi_numa_ht, "1-78", []),
    (multi_socket_per_numa_ht, "0-79", [0, 1, 2, 3]),
    (multi_socket_per_numa_ht, "0-19,21-79", [0, 1, 3]),
    (multi_socket_per_numa_ht, "0-59,61-78", [0, 1]),
    (multi_socket_per_numa_ht, "1-19,21-38,41-60,61-78", [1]),
    (multi_socket_per_numa_ht, "0-40,42-49,51-68,71-79", []),
])
def test_free_sockets(topo, cpus, expected):
    acc = _acc(topo(), cpus)
    per = acc.topo.cpus_per_socket()
    free = sorted(s for s in acc.sorted_sockets() if len(acc.available & acc.topo.cpus_in_socket[s]) == per)
    assert free == expected


@pytest.mark.parametrize("topo,cpus,expected", [
    (single_socket_ht, "0-7", [0]),
    (single_socket_ht, "1-7", []),
    (dual_socket_ht, "0-11", [0, 1]),
    (dual_socket_ht, "0-9,11", [1]),
    (dual_socket_multi_numa_ht, "0-79", [0, 1, 2, 3]),
    (dual_socket_multi_numa_ht, "1-79", [1, 2, 3]),
    (dual_socket_multi_numa_ht, "1-9,11-79", [2, 3]),
    (dual_socket_multi_numa_ht, "1-9,11-59,61-79", [3]),
    (dual_socket_multi_numa_ht, "1-9,11-59,61-78", []),
    (multi_socket_per_numa_ht, "0-79", [0, 1]),
    (multi_socket_per_numa_ht, "0-9,11-79", [1]),
    (multi_socket_per_numa_ht, "0-9,11-59,61-79", []),
])
def test_free_numa_nodes_in_sorted_order(topo, cpus, expected):
    acc = _acc(topo(), cpus)
    free = [n for n in acc.sorted_numas()
            if len(acc.available & acc.topo.cpus_in_numa[n]) == len(acc.topo.cpus_in_numa[n])]
    assert free == expected


@pytest.mark.parametrize("topo,cpus,expected", [
    (single_socket_ht, "0-7", [0, 1, 2, 3]),
    (single_socket_ht, "0-2,4-6", [0, 1, 2]),
    (single_socket_ht, "0-6", [0, 1, 2]),
    (single_socket_ht, "", []),
    (single_socket_ht, "0-3", []),
    (dual_socket_ht, "0-11", [0, 2, 4, 1, 3, 5]),
    (dual_socket_ht, "1-5,7-11", [2, 4, 1, 3, 5]),
    (dual_socket_ht, "2-5,8-11", [2, 4, 3, 5]),
])
def test_free_cores_in_sorted_order(topo, cpus, expected):
    acc = _acc(topo(), cpus)
    per = acc.topo.cpus_per_core()
    assert [c for c in acc.sorted_cores() if len(acc.available & acc.topo.cpus_in_core[c]) == per] == expected


@pytest.mark.parametrize("topo,cpus,expected", [
    (single_socket_ht, "0-7", [0, 4, 1, 5, 2, 6, 3, 7]),
    (single_socket_ht, "3-7", [4, 5, 6, 3, 7]),
    (dual_socket_ht, "0-11", [0, 6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11]),
    (dual_socket_ht, "1-11", [6, 2, 8, 4, 10, 1, 7, 3, 9, 5, 11]),
    (dual_socket_ht, "1-5,7-11", [2, 8, 4, 10, 1, 7, 3, 9, 5, 11]),
])
def test_cpu_order_packed(topo, cpus, expected):
    assert _acc(topo(), cpus).sorted_cpus_packed() == expected


PACKED_CASES = [
    # (description, topology, options, available, count, error, expected) -- upstream tables
    ("more than available", single_socket_ht, {}, "0,2,4,6", 5,
     "not enough cpus available to satisfy request: requested=5, available=4", ""),
    ("zero cpus", single_socket_ht, {}, "0-7", 0, None, ""),
    ("one cpu", single_socket_ht, {}, "0-7", 1, None, "0"),
    ("one cpu, some taken", single_socket_ht, {}, "1,3,5-7", 1, None, "6"),
    ("two cpus", single_socket_ht, {}, "0-7", 2, None, "0,4"),
    ("all cpus", single_socket_ht, {}, "0-7", 8, None, "0-7"),
    ("two cpus, one core free", single_socket_ht, {}, "0-3,6", 2, None, "2,6"),
    ("a socket from dual socket HT", dual_socket_ht, {}, "0-11", 6, None, "0,2,4,6,8,10"),
    ("a socket, multi-NUMA sockets", dual_socket_multi_numa_ht, {}, "0-79", 40, None, "0-19,40-59"),
    ("a NUMA node", dual_socket_multi_numa_ht, {}, "0-79", 20, None, "0-9,40-49"),
    ("a NUMA node, one taken", dual_socket_multi_numa_ht, {}, "10-39,50-79", 20, None, "10-19,50-59"),
    ("a socket and a NUMA node", dual_socket_multi_numa_ht, {}, "0-79", 60, None, "0-29,40-69"),
    ("a socket and a NUMA node, core 0 taken", dual_socket_multi_numa_ht, {}, "1-39,41-79", 60, None,
     "10-39,50-79"),
    ("one cpu, core from socket 0", dual_socket_ht, {}, "1-5,7-11", 1, None, "2"),
    ("4 cores filling NUMA 0 first", dual_socket_ht, {}, "0-11", 8, None, "0-2,4,6-8,10"),
    ("32 cores filling 3 NUMA nodes first", dual_socket_multi_numa_ht, {}, "0-79", 64, None,
     "0-31,40-71"),
    ("two full uncore caches and a partial one", uncore_single_socket_no_smt, {"uncore": True},
     "1-15", 10, None, "1-2,4-11"),
    ("uncore: one cpu from dual socket HT", dual_socket_ht, {"uncore": True}, "1-5,7-11", 1, None, "1"),
    ("uncore: first cache of first socket", uncore_dual_socket_no_smt, {"uncore": True}, "0-15", 4,
     None, "0-3"),
    ("uncore: all of first socket", uncore_dual_socket_no_smt, {"uncore": True}, "2-15", 6, None, "2-7"),
    ("uncore: first cache of second socket", uncore_dual_socket_no_smt, {"uncore": True}, "8-15", 4,
     None, "8-11"),
    ("uncore: first cache of available NUMA", uncore_single_socket_multi_numa, {"uncore": True},
     "3-8,12", 2, None, "4-5"),
    ("uncore: best cache, SMT", uncore_single_socket_smt, {"uncore": True}, "2-7,10-15", 6, None,
     "4-6,12-14"),
    ("uncore: several caches, SMT", uncore_single_socket_smt, {"uncore": True}, "1-7,9-15", 10, None,
     "1,4-7,9,12-15"),
    ("spread: 3 cpus single socket", single_socket_ht, {"spread": True}, "0-7", 3, None, "0-2"),
    ("spread: 2 cpus dual socket", dual_socket_ht, {"spread": True}, "0-11", 2, None, "0,2"),
    ("spread: 3 cpus dual socket", dual_socket_ht, {"spread": True}, "0-11", 3, None, "0,2,4"),
    ("spread: 6 cpus dual socket", dual_socket_ht, {"spread": True}, "0-11", 6, None, "0,2,4,6,8,10"),
    ("spread: 8 cpus dual socket", dual_socket_ht, {"spread": True}, "0-11", 8, None,
     "0-4,6,8,10"),
    ("spread: 2 cpus no HT", dual_socket_no_ht, {"spread": True}, "0-7", 2, None, "0-1"),
    ("spread: multi-NUMA sockets", dual_socket_multi_numa_ht, {"spread": True}, "0-79", 8, None, "0-7"),
]


@pytest.mark.parametrize("description,topo,opts,cpus,count,error,expected", PACKED_CASES,
                         ids=[c[0] for c in PACKED_CASES])
def test_take_packed(description, topo, opts, cpus, count, error, expected):
    strategy = ca.SPREAD if opts.get("spread") else ca.PACKED
    if error:
        with pytest.raises(ca.TakeError) as info:
            ca.take_packed(topo(), parse_cpuset(cpus), count, strategy, opts.get("uncore", False))
        assert str(info.value) == error
        return
    result = ca.take_packed(topo(), parse_cpuset(cpus), count, strategy, opts.get("uncore", False))
    assert format_cpuset(result) == expected


DISTRIBUTED_CASES = [
    ("4 cores, 2 per NUMA node", dual_socket_ht, "0-11", 8, 1, "0-3,6-9"),
    ("32 cores, 8 per NUMA node", dual_socket_multi_numa_ht, "0-79", 64, 1,
     "0-7,10-17,20-27,30-37,40-47,50-57,60-67,70-77"),
    ("24 cores over the first 3 NUMA nodes", dual_socket_multi_numa_ht, "0-79", 48, 1,
     "0-7,10-17,20-27,40-47,50-57,60-67"),
    ("24 cores, all but 2 from NUMA 0", dual_socket_multi_numa_ht, "1-29,32-39,41-69,72-79", 48, 1,
     "1-8,10-17,20-27,41-48,50-57,60-67"),
    ("24 cores over the last 3 NUMA nodes", dual_socket_multi_numa_ht, "2-29,31-39,42-69,71-79", 48, 1,
     "10-17,20-27,31-38,50-57,60-67,71-78"),
    ("8 cores, 2 per NUMA node", dual_socket_multi_numa_ht, "0-2,10-12,20-22,30-32,40-41,50-51,60-61,70-71",
     16, 1, "0-1,10-11,20-21,30-31,40-41,50-51,60-61,70-71"),
    ("one cpu, socket 0 core", dual_socket_ht, "1-5,7-11", 1, 1, "1"),
    ("one cpu, group size 2 falls back to packed", dual_socket_ht, "1-5,7-11", 1, 2, "2"),
    ("13 cores over the first 2 NUMA nodes", dual_socket_multi_numa_ht, "0-79", 26, 1,
     "0-6,10-16,40-45,50-55"),
    ("13 cores over the first 2 NUMA nodes, group 2", dual_socket_multi_numa_ht, "0-79", 26, 2,
     "0-6,10-15,40-46,50-55"),
    ("31 cores, spill to NUMA 0 and 1", dual_socket_multi_numa_ht, "0-79", 62, 1,
     "0-7,10-17,20-27,30-37,40-47,50-57,60-66,70-76"),
    ("31 cores, spill to NUMA 0,1,2, group 2", dual_socket_multi_numa_ht, "0-79", 62, 2,
     "0-7,10-17,20-27,30-36,40-47,50-57,60-67,70-76"),
    ("31 cores, spill to NUMA 2 and 3 for balance", dual_socket_multi_numa_ht,
     "0-8,10-18,20-39,40-48,50-58,60-79", 62, 1, "0-7,10-17,20-27,30-37,40-46,50-56,60-67,70-77"),
    ("31 cores, spill to NUMA 0,2,3 for balance, group 2", dual_socket_multi_numa_ht,
     "0-8,10-18,20-39,40-48,50-58,60-79", 62, 2, "0-7,10-16,20-27,30-37,40-47,50-56,60-67,70-77"),
    ("remainder only on nodes that can take it", dual_socket_multi_numa_ht,
     "0-3,10-13,20-23,30-36,40-43,50-53,60-63,70-76", 34, 1,
     "0-3,10-13,20-23,30-34,40-43,50-53,60-63,70-74"),
]


@pytest.mark.parametrize("description,topo,cpus,count,group,expected", DISTRIBUTED_CASES,
                         ids=[c[0] for c in DISTRIBUTED_CASES])
def test_take_distributed(description, topo, cpus, count, group, expected):
    assert format_cpuset(cad.take_distributed(topo(), parse_cpuset(cpus), count, group)) == expected


@pytest.mark.parametrize("case", [c for c in PACKED_CASES if not c[2]], ids=lambda c: c[0])
def test_distributed_agrees_with_common_cases(case):
    """Upstream runs the common packed table through the distributed algorithm too."""
    description, topo, opts, cpus, count, error, expected = case
    if description in ("one cpu, core from socket 0", "4 cores filling NUMA 0 first",
                       "32 cores filling 3 NUMA nodes first"):
        pytest.skip("packed-only expectation")
    if error:
        with pytest.raises(ca.TakeError):
            cad.take_distributed(topo(), parse_cpuset(cpus), count, 1)
        return
    assert format_cpuset(cad.take_distributed(topo(), parse_cpuset(cpus), count, 1)) == expected


def test_balance_score_rounds_like_go():
    assert cad.balance_score([3, 6]) == 1.5
    assert cad.balance_score([1, 2, 2]) == 0.471
    assert cad._go_round(2.5) == 3.0 and cad._go_round(-2.5) == -3.0


@settings(max_examples=150, deadline=None)
@given(st.sets(st.integers(0, 79)), st.integers(0, 80), st.booleans(), st.booleans(), st.sampled_from([1, 2]),
       st.booleans())
def test_take_returns_exactly_count_from_available(available, count, distributed, spread, group, by_socket):
    topo = dual_socket_multi_numa_ht()
    strategy = ca.SPREAD if spread else ca.PACKED
    try:
        if distributed:
            result = cad.take_distributed(topo, available, count, group, strategy, by_socket)
        else:
            result = ca.take_packed(topo, available, count, strategy)
    except ca.TakeError as exc:
        assert count > len(available)
        assert str(exc) == ("not enough cpus available to satisfy request: requested=%d, available=%d"
                            % (count, len(available)))
        return
    assert len(result) == count
    assert result <= available


@pytest.mark.parametrize("by_socket,expected", [
    (False, "0-9,20-29,40-48,60-68"),   # best balance wins, across sockets
    (True, "20-39,60-68,70-78"),        # a same-socket pair beats any cross-socket pair
])
def test_distributed_with_align_by_socket(by_socket, expected):
    available = parse_cpuset("0-9,11-79")  # NUMA 1 has one CPU in use
    result = cad.take_distributed(dual_socket_multi_numa_ht(), available, 38, 1, ca.PACKED, by_socket)
    assert format_cpuset(result) == expected


def six_numa(sockets_first):
    """6 NUMA nodes x 4 cores x 2 threads; 3 sockets of 2 nodes, or 6 sockets (one per node)."""
    nodes = dict((n, [c for c in range(48) if (c % 24) // 4 == n]) for n in range(6))
    sockets = dict((n, n // 2 if sockets_first else n) for n in range(6))
    return from_layout(nodes, sockets_per_node=sockets, cores=dict((c, (c, c + 24)) for c in range(24)))


@settings(max_examples=150, deadline=None)
@given(st.sets(st.integers(0, 47), min_size=1), st.integers(1, 48), st.sampled_from([1, 2]), st.booleans(),
       st.booleans())
def test_fast_distributed_search_equals_the_literal_one(available, count, group, by_socket, sockets_first):
    topo = six_numa(sockets_first)
    try:
        fast = cad.take_distributed(topo, available, count, group, ca.PACKED, by_socket)
    except ca.TakeError as exc:
        with pytest.raises(ca.TakeError) as info:
            cad.take_distributed(topo, available, count, group, ca.PACKED, by_socket, literal=True)
        assert str(info.value) == str(exc)
        return
    assert fast == cad.take_distributed(topo, available, count, group, ca.PACKED, by_socket, literal=True)
