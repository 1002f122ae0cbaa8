# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""reservedMemory validation (every rule, exact messages) and computing strategies."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import read_topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import HugePages, NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import format_bytes, parse_quantity
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import (
    ReservationError,
    compute_reservation,
    evaluate,
    plan_reservation,
    reservation_errors,
    topology_from_any,
    validate_kubelet_config,
    validate_reservation,
)
from ansible_collections.numaguard.kubelet.tests.fleet import topologies

GI = 1 << 30
MI = 1 << 20


def _node(node_id, mem_gi=16, cpus=None, huge=None):
    pools = {}
    for name, (size, count) in (huge or {}).items():
        pools[name] = HugePages(page_size_bytes=size, total_pages=count, free_pages=count)
    return NumaNode(id=node_id, cpus=tuple(cpus if cpus is not None else (node_id * 2, node_id * 2 + 1)),
                    memory_total_bytes=mem_gi * GI, memory_free_bytes=GI, hugepages=pools)


def two_nodes(**kw):
    return Topology(nodes=(_node(0, huge={"hugepages-1Gi": (GI, 2), "hugepages-2Mi": (2 * MI, 0)}), _node(1)))


WORKED = dict(kube_reserved="memory=4Gi", system_reserved={"memory": "1Gi"}, memory_manager_policy="Static")


def errors_of(result):
    return [str(f) for f in result.errors]


def test_worked_example_validates():
    result = validate_reservation(two_nodes(), reserved_memory="0:memory=3Gi;1:memory=2148Mi", **WORKED)
    assert result.valid, errors_of(result)
    assert result.totals["memory"]["reserved"] == "5220Mi"
    assert result.totals["memory"]["node_allocatable"] == "5220Mi"
    assert result.totals["memory"]["equation"] == (
        "memory: reservedMemory 3Gi (node 0) + 2148Mi (node 1) = 5220Mi; Node Allocatable system-reserved 1Gi + "
        "kube-reserved 4Gi + hard eviction memory.available<100Mi 100Mi = 5220Mi: balanced")
    assert result.flag == "0:memory=3Gi;1:memory=2148Mi"
    assert result.reserved_memory == [{"numaNode": 0, "limits": {"memory": "3Gi"}},
                                      {"numaNode": 1, "limits": {"memory": "2148Mi"}}]
    node0, node1 = result.nodes
    assert node0["guaranteed_memory_bytes"] == 16 * GI - 3 * GI - 2 * GI
    assert node0["guaranteed_memory"] == "11Gi"
    assert node1["guaranteed_memory"] == "14236Mi"


def test_missing_eviction_is_refused_with_totals():
    result = validate_reservation(two_nodes(), reserved_memory="0:memory=3Gi;1:memory=2Gi", **WORKED)
    assert not result.valid
    assert errors_of(result) == [
        '[reserved-memory-sum] the total amount "5Gi" of type "memory" is not equal to the value "5220Mi" determined '
        'by Node Allocatable feature (memory: reservedMemory 3Gi (node 0) + 2Gi (node 1) = 5Gi; Node Allocatable '
        'system-reserved 1Gi + kube-reserved 4Gi + hard eviction memory.available<100Mi 100Mi = 5220Mi: NOT '
        'balanced; reservedMemory sums to 5368709120 bytes, Node Allocatable to 5473566720 bytes: 100Mi short). '
        'Fix: add 100Mi (did you forget the hard eviction threshold memory.available<100Mi?), e.g. '
        '--reserved-memory 0:memory=3172Mi;1:memory=2Gi (or let a strategy compute it)']
    finding = result.errors[0]
    assert finding.kubelet_message == ('the total amount "5Gi" of type "memory" is not equal to the value "5220Mi" '
                                       'determined by Node Allocatable feature')
    assert finding.fatal


def test_too_much_is_refused_with_fix():
    result = validate_reservation(two_nodes(), reserved_memory="0:memory=4Gi;1:memory=2Gi", **WORKED)
    assert result.errors[0].fix == (
        "remove 924Mi, e.g. --reserved-memory 0:memory=3172Mi;1:memory=2Gi (or let a strategy compute it)")


def test_percentage_eviction_in_the_sum():
    result = validate_reservation(two_nodes(), reserved_memory="0:memory=536870920", eviction_hard="memory.available<5%",
                                  memory_capacity_bytes=10 * GI, memory_manager_policy="Static")
    assert result.valid, errors_of(result)
    result = validate_reservation(two_nodes(), reserved_memory="0:memory=512Mi", eviction_hard="memory.available<5%",
                                  memory_capacity_bytes=10 * GI, memory_manager_policy="Static")
    assert result.errors[0].kubelet_message == ('the total amount "512Mi" of type "memory" is not equal to the value '
                                                '"536870920" determined by Node Allocatable feature')


def test_format_of_totals_follows_kubelet_add():
    # sum takes the format of the last entry; node allocatable the first non-zero of system, kube, eviction
    result = validate_reservation(two_nodes(), reserved_memory="0:memory=1G;1:memory=1Gi",
                                  system_reserved="memory=1G", kube_reserved="memory=1Gi",
                                  memory_manager_policy="Static")
    assert result.errors[0].kubelet_message == (
        'the total amount "2073741824" of type "memory" is not equal to the value "2178599424" determined by Node '
        'Allocatable feature')


RULES = [
    # (kwargs, rule, exact message, fix)
    (dict(reserved_memory="0:memory=3Gi,hugepages-1Gi=1Gi;1:memory=2148Mi"), "reserved-memory-hugepages",
     'the total amount "1Gi" of type "hugepages-1Gi" is not equal to the value "0" determined by Node Allocatable '
     'feature (hugepages-1Gi: reservedMemory 1Gi (node 0) = 1Gi; Node Allocatable nothing (kube-reserved and '
     'system-reserved cannot hold hugepages) = 0: NOT balanced; kube-reserved and system-reserved cannot hold '
     'hugepages (the kubelet accepts only cpu, memory, ephemeral-storage and pid there), so Node Allocatable for '
     'hugepages-1Gi is always 0 and a hugepages entry in reservedMemory can never balance).',
     "remove hugepages-1Gi from reservedMemory; keep pods off those hugepages by not pre-allocating them on that node "
     "instead"),
    (dict(reserved_memory="0:memory=3Gi;2:memory=2148Mi"), "reserved-memory-numa-node",
     "the reserved memory configuration references a NUMA node 2 that does not exist on this machine (host NUMA "
     "nodes: 0, 1).", "move the NUMA node 2 reservation to one of 0, 1"),
    (dict(reserved_memory="0:memory=5220Mi,hugepages-4Mi=4Mi"), "reserved-memory-hugepage-size",
     "reservedMemory for NUMA node 0 names hugepages-4Mi, which is not a hugepage size of this host (host sizes: "
     "hugepages-2Mi, hugepages-1Gi).", "remove hugepages-4Mi from reservedMemory"),
    (dict(reserved_memory="0:memory=5220Mi,hugepages-2048Ki=2Mi"), "reserved-memory-hugepage-size",
     "reservedMemory for NUMA node 0 names hugepages-2048Ki, which is not a hugepage size of this host (host sizes: "
     "hugepages-2Mi, hugepages-1Gi) (the kubelet spells this size hugepages-2Mi).",
     "remove hugepages-2048Ki from reservedMemory"),
    (dict(reserved_memory=[{"numaNode": 0, "limits": {"memory": "5220Mi", "cpu": "1"}}]), "reserved-memory-type",
     'invalid configuration: the limit type "cpu" for NUMA node 0 is not supported, only [memory '
     'hugepages-<HugePageSize>] is accepted',
     "remove cpu from NUMA node 0; only memory (and, pointlessly, hugepages) can be reserved per NUMA node"),
    (dict(reserved_memory=[{"numaNode": 0, "limits": {"memory": "5220Mi"}}, {"numaNode": 1, "limits": {"memory": "0"}}]),
     "reserved-memory-zero",
     'invalid configuration: reserved memory may not be zero for NUMA node 1 and resource "memory"',
     "drop the memory entry of NUMA node 1 instead of writing 0"),
    (dict(reserved_memory="0:memory=5000Mi;0:memory=220Mi"), "reserved-memory-duplicate",
     'invalid configuration: the reserved memory has a duplicate value for NUMA node 0 and resource "memory"',
     "merge the memory entries of NUMA node 0 into one"),
    (dict(reserved_memory="0:memory=1Gi,memory=5220Mi"), "reserved-memory-duplicate",
     'reservedMemory entry for NUMA node 0 lists "memory" more than once; the kubelet silently keeps only the last '
     'value (5220Mi).', "write each type once per NUMA node"),
    (dict(reserved_memory=None), "static-needs-reservation",
     "memoryManagerPolicy Static needs a non-empty reservedMemory: [memorymanager] you should specify the system "
     "reserved memory",
     "reserve at least kube-reserved + system-reserved + the hard eviction threshold (default "
     "memory.available<100Mi), e.g. 0:memory=100Mi"),
    (dict(reserved_memory="0:memory=5220Mi", memory_manager_policy="static"), "memory-manager-policy",
     'memoryManagerPolicy "static": unknown policy: "static"', "policy names are case-sensitive: write Static"),
    (dict(reserved_memory="0:memory=5220Mi", memory_manager_policy="BestEffort"), "memory-manager-policy",
     'memoryManagerPolicy "BestEffort": unknown policy: "BestEffort"',
     "BestEffort exists only for Windows nodes; use None or Static"),
    (dict(reserved_memory="0:memory=5000Mi;1:memory=220.5"), "reserved-memory-integer",
     "reservedMemory memory=220.5 for NUMA node 1 is not a whole number of bytes: could not covert a variable of "
     "type Quantity to int64.", "use a whole number of bytes, e.g. 221"),
    (dict(reserved_memory="0:memory=5220Mi", kube_reserved="memory=4Gi,hugepages-1Gi=1Gi"), "kube-reserved-syntax",
     'kube_reserved: cannot reserve "hugepages-1Gi" resource (hugepages cannot be held back by '
     'kube-reserved/system-reserved; that is why a hugepages entry in reservedMemory can never balance); allowed: '
     'cpu, memory, ephemeral-storage, pid',
     "kube_reserved accepts only cpu, memory, ephemeral-storage and pid with non-negative quantities, e.g. "
     "cpu=500m,memory=1Gi"),
    (dict(reserved_memory="0:memory=5220Mi", eviction_hard="memory.available<0"), "eviction-hard-syntax",
     "eviction_hard: eviction threshold memory.available must be positive: 0",
     "fix the evictionHard value; the kubelet refuses to start with it"),
    (dict(reserved_memory="0 :memory=5220Mi"), "reserved-memory-syntax",
     'reserved_memory: failed to convert the NUMA node ID, exptected integer, got 0  (in "0 :memory=5220Mi": the '
     'kubelet does not trim spaces in --reserved-memory)',
     "write each NUMA node as <id>:<type>=<quantity>[,<type>=<quantity>], nodes separated by ';' and no spaces, e.g. "
     "0:memory=3Gi;1:memory=2148Mi (the --reserved-memory flag's form; in a KubeletConfiguration such as "
     "kubelet_numa_settings reservedMemory is a list, e.g. [{numaNode: 0, limits: {memory: 3Gi}}])"),
]


@pytest.mark.parametrize("kwargs,rule,message,fix", RULES, ids=[r[1] + "-%d" % i for i, r in enumerate(RULES)])
def test_every_rule_has_its_exact_message(kwargs, rule, message, fix):
    args = dict(WORKED)
    args.update(kwargs)
    result = validate_reservation(two_nodes(), **args)
    assert not result.valid
    matching = [f for f in result.errors if f.rule == rule]
    assert matching, errors_of(result)
    assert matching[0].message == message
    assert matching[0].fix == fix


def test_node_capacity_with_hugepages_is_checked():
    topo = Topology(nodes=(_node(0, mem_gi=8, huge={"hugepages-1Gi": (GI, 6)}), _node(1, mem_gi=8)))
    result = validate_reservation(topo, reserved_memory="0:memory=3Gi;1:memory=2148Mi", **WORKED)
    finding = [f for f in result.errors if f.rule == "node-capacity"][0]
    assert finding.message == (
        "NUMA node 0: reserved memory 3Gi + hugepages 6Gi = 9Gi exceeds the node's memory 8Gi by 1Gi; the kubelet "
        "computes allocatable = total - reserved - hugepages in unsigned 64-bit arithmetic and would start with a "
        "wrapped-around allocatable of 18446744072635809792 bytes instead of refusing.")
    assert finding.fix == ("move 1Gi of the reservation to another NUMA node (strategy spread or proportional does "
                           "this), or pre-allocate fewer hugepages on node 0")
    assert result.nodes[0]["guaranteed_memory"] == "-1Gi"
    assert not finding.fatal


def test_memory_only_node_is_a_warning():
    topo = Topology(nodes=(_node(0), _node(1, cpus=())))
    result = validate_reservation(topo, reserved_memory="0:memory=3Gi;1:memory=2148Mi", **WORKED)
    assert result.valid
    assert [str(w) for w in result.warnings] == [
        "[memory-only-node] NUMA node 1 has no CPUs (memory-only, e.g. CXL or HBM) but gets reservedMemory "
        "memory=2148Mi; the kubelet allows it, but system daemons and the kubelet rarely allocate there, so the "
        "reservation may not protect them. Fix: prefer NUMA nodes with CPUs (strategy node0 or reserved_cpus)"]


def test_eviction_defaults_dropped_warning_exact_text():
    args = dict(WORKED, eviction_hard="memory.available<500Mi")
    result = validate_reservation(two_nodes(), reserved_memory="0:memory=5620Mi", **args)
    assert result.valid
    assert [str(w) for w in result.warnings] == [
        "[eviction-defaults-dropped] evictionHard sets only memory.available and mergeDefaultEvictionSettings is "
        "false, so the kubelet drops its defaults for nodefs.available, nodefs.inodesFree, imagefs.available, "
        "imagefs.inodesFree (they become 0). Fix: list every signal you want in evictionHard (defaults: "
        "memory.available<100Mi, nodefs.available<10%, nodefs.inodesFree<5%, imagefs.available<15%, "
        "imagefs.inodesFree<5%) or set mergeDefaultEvictionSettings: true"]


def test_negative_and_hugepage_pool_overflow():
    result = validate_reservation(two_nodes(), reserved_memory="0:memory=6244Mi;1:memory=-1Gi", **WORKED)
    assert [str(f) for f in result.errors if f.rule == "reserved-memory-negative"] == [
        "[reserved-memory-negative] reservedMemory memory for NUMA node 1 is negative (-1Gi); the kubelet converts it "
        "to an unsigned 64-bit number of bytes. Fix: use a positive quantity"]
    result = validate_reservation(two_nodes(), reserved_memory="0:memory=5220Mi,hugepages-1Gi=3Gi", **WORKED)
    assert [f.message for f in result.errors if f.rule == "node-capacity"] == [
        "NUMA node 0: reserved hugepages-1Gi 3Gi exceeds the node's hugepages-1Gi pool of 2Gi (2 pages); the kubelet "
        "would compute a wrapped-around allocatable."]


def test_none_policy_turns_memory_manager_rules_into_warnings():
    args = dict(WORKED)
    args["memory_manager_policy"] = "None"
    result = validate_reservation(two_nodes(), reserved_memory="0:memory=3Gi;7:memory=2Gi", **args)
    assert result.valid
    rules = [w.rule for w in result.warnings]
    assert rules == ["reserved-memory-numa-node", "reserved-memory-sum"]
    assert result.warnings[0].message.endswith(
        "memoryManagerPolicy is None, so the kubelet ignores this today, but it will refuse to start once the policy "
        "is switched to Static.")


def test_none_policy_still_refuses_config_validation_errors():
    result = validate_reservation(two_nodes(), reserved_memory="0:memory=0", memory_manager_policy="None")
    assert [f.rule for f in result.errors] == ["reserved-memory-zero"]


def test_partial_eviction_trap_changes_the_sum_and_warns():
    args = dict(WORKED, eviction_hard={"nodefs.available": "10%"})
    result = validate_reservation(two_nodes(), reserved_memory="0:memory=3Gi;1:memory=2Gi", **args)
    assert result.valid
    assert result.warnings[0].rule == "eviction-defaults-dropped"
    # and the usual 100Mi is now too much
    result = validate_reservation(two_nodes(), reserved_memory="0:memory=3Gi;1:memory=2148Mi", **args)
    assert result.errors[0].kubelet_message == ('the total amount "5220Mi" of type "memory" is not equal to the value '
                                                '"5Gi" determined by Node Allocatable feature')


def test_merge_default_eviction_settings_keeps_100mi():
    args = dict(WORKED, eviction_hard={"nodefs.available": "10%"}, merge_default_eviction_settings=True)
    result = validate_reservation(two_nodes(), reserved_memory="0:memory=3Gi;1:memory=2148Mi", **args)
    assert result.valid and not result.warnings


def test_allocatable_ignore_eviction():
    result = validate_reservation(two_nodes(), reserved_memory="0:memory=5Gi", allocatable_ignore_eviction=True, **WORKED)
    assert result.valid


def test_kubelet_config_dict_and_adapter():
    config = {"kubeReserved": {"memory": "4Gi"}, "systemReserved": {"memory": "1Gi"}, "memoryManagerPolicy": "Static",
              "reservedMemory": [{"numaNode": 0, "limits": {"memory": "3Gi"}}, {"numaNode": 1, "limits": {"memory": "2Gi"}}]}
    assert not validate_kubelet_config(two_nodes(), config).valid
    assert validate_kubelet_config(two_nodes(), config, reserved_memory="0:memory=3Gi;1:memory=2148Mi").valid
    assert reservation_errors(config, two_nodes())[0].startswith('[reserved-memory-sum] the total amount "5Gi"')


# -- strategies --------------------------------------------------------------------------------------

def test_strategies_on_the_worked_example():
    topo = two_nodes()
    flags = {}
    for strategy in ("node0", "spread", "proportional"):
        result = plan_reservation(topo, strategy, kube_reserved="memory=4Gi", system_reserved="memory=1Gi")
        assert result.valid, errors_of(result)
        flags[strategy] = result.flag
    assert flags == {"node0": "0:memory=5220Mi", "spread": "0:memory=2610Mi;1:memory=2610Mi",
                     "proportional": "0:memory=2610Mi;1:memory=2610Mi"}


def test_spread_remainder_on_lowest_node_byte_exact():
    topo = Topology(nodes=(_node(0), _node(1), _node(2)))
    shares = compute_reservation(topo, 100 * MI, "spread", split_unit=1)
    assert [(r.numa_node, r.limits_map()["memory"].value()) for r in shares] == [
        (0, 34952534), (1, 34952533), (2, 34952533)]
    shares = compute_reservation(topo, 100 * MI, "spread")
    assert [str(r.limits_map()["memory"]) for r in shares] == ["34Mi", "33Mi", "33Mi"]


def test_proportional_and_sparse_ids():
    topo = Topology(nodes=(_node(0, mem_gi=32), _node(33, mem_gi=16, cpus=(100,)), _node(34, mem_gi=16, cpus=(101,))))
    shares = compute_reservation(topo, 1000 * MI, "proportional")
    assert [(r.numa_node, str(r.limits_map()["memory"])) for r in shares] == [(0, "500Mi"), (33, "250Mi"), (34, "250Mi")]


def test_reserved_cpus_strategy():
    topo = Topology(nodes=(_node(0, cpus=(0, 1, 2, 3)), _node(1, cpus=(4, 5, 6, 7))))
    shares = compute_reservation(topo, 300 * MI, "reserved_cpus", reserved_cpus="0-1,4")
    assert [(r.numa_node, str(r.limits_map()["memory"])) for r in shares] == [(0, "200Mi"), (1, "100Mi")]
    with pytest.raises(ReservationError) as info:
        compute_reservation(topo, 300 * MI, "reserved_cpus", reserved_cpus="0,9")
    assert str(info.value) == ("reservedSystemCPUs 0,9 includes CPUs that are not online on this host: 9 "
                               "(online: 0-7)")
    with pytest.raises(ReservationError) as info:
        compute_reservation(topo, 300 * MI, "reserved_cpus")
    assert str(info.value).startswith("strategy reserved_cpus needs reservedSystemCPUs")


def test_spread_spills_around_hugepages():
    topo = Topology(nodes=(_node(0, mem_gi=8, huge={"hugepages-1Gi": (GI, 7)}), _node(1, mem_gi=8)))
    shares = compute_reservation(topo, 4 * GI, "spread")
    assert [(r.numa_node, str(r.limits_map()["memory"])) for r in shares] == [(0, "1Gi"), (1, "3Gi")]


def test_node0_that_does_not_fit_is_refused():
    topo = Topology(nodes=(_node(0, mem_gi=4), _node(1, mem_gi=16)))
    result = plan_reservation(topo, "node0", kube_reserved="memory=4Gi", system_reserved="memory=1Gi")
    assert errors_of(result) == [
        "[strategy] strategy node0: strategy node0 cannot place 5220Mi: NUMA node(s) 0 have only 4Gi of memory left "
        "after hugepages Fix: pick another strategy (spread and proportional use every node with memory) or lower "
        "kube-reserved/system-reserved"]


def test_evaluate_rejects_strategy_plus_reservation():
    with pytest.raises(ReservationError) as info:
        evaluate(two_nodes(), strategy="spread", reserved_memory="0:memory=1Gi")
    assert str(info.value) == ("give either reserved_memory (to validate) or a computing strategy (spread), not both")


def test_evaluate_uses_kubelet_config_and_facts_capacity():
    facts = two_nodes().to_facts()
    facts["system"] = {"memory_total_bytes": 10 * GI}
    config = {"kubeReserved": {"memory": "1Gi"}, "evictionHard": {"memory.available": "5%"}, "memoryManagerPolicy": "Static",
              "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1610612744"}}]}
    assert evaluate({"ansible_facts": {"numa_topology": facts}}, kubelet_config=config).valid
    topo, capacity = topology_from_any({"numa_topology": facts})
    assert capacity == 10 * GI and topo.node_ids() == (0, 1)


# -- properties ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fleet_topologies(tmp_path_factory):
    names = sorted(topologies.TOPOLOGIES)
    result = {}
    for name in names:
        root = str(tmp_path_factory.mktemp(name))
        topologies.write_tree(name, root, force=True)
        result[name] = read_topology(root)
    return result


_reserved = st.tuples(st.integers(0, 8 * 1024), st.integers(0, 8 * 1024), st.integers(0, 2048),
                      st.sampled_from([None, "100Mi", "500Mi", "1%", "5%", "7.5%"]))


def _check_strategy_result(topo, strategy, kube, system, eviction, unit):
    result = plan_reservation(topo, strategy, kube_reserved={"memory": "%dMi" % kube},
                              system_reserved={"memory": "%dMi" % system},
                              eviction_hard=None if eviction is None else {"memory.available": eviction},
                              merge_default_eviction_settings=True, reserved_cpus=_reserved_cpus(topo),
                              split_unit=unit)
    if not result.valid:
        # only acceptable reason: the strategy's nodes cannot hold the total
        assert [f.rule for f in result.errors] in (["strategy"], ["static-needs-reservation"]), errors_of(result)
        return None
    total = sum(r.limits_map()["memory"].value() for r in result.reservations)
    assert total == result.expected["memory"].value()  # byte-exact
    for node in result.nodes:
        assert node["guaranteed_memory_bytes"] >= 0  # nothing over capacity
    return result


def _reserved_cpus(topo):
    online = topo.online_cpus()
    return ",".join("%d" % c for c in online[:2]) if online else None


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), reserved=_reserved, unit=st.sampled_from([1, MI, 4 * MI]))
def test_every_strategy_validates_on_every_bundled_fleet_topology(fleet_topologies, data, reserved, unit):
    name = data.draw(st.sampled_from(sorted(fleet_topologies)))
    topo = fleet_topologies[name]
    kube, system, _unused, eviction = reserved
    for strategy in ("node0", "spread", "proportional", "reserved_cpus"):
        _check_strategy_result(topo, strategy, kube, system, eviction, unit)


def test_spread_and_proportional_always_fit_on_fleet(fleet_topologies):
    for name, topo in sorted(fleet_topologies.items()):
        for strategy in ("spread", "proportional", "node0", "reserved_cpus"):
            result = _check_strategy_result(topo, strategy, 4096, 1024, "100Mi", MI)
            assert result is not None, (name, strategy)


@st.composite
def random_topologies(draw):
    count = draw(st.integers(1, 6))
    ids = sorted(draw(st.sets(st.integers(0, 40), min_size=count, max_size=count)))
    nodes = []
    cpu = 0
    for node_id in ids:
        ncpus = draw(st.integers(0, 4))
        cpus = tuple(range(cpu, cpu + ncpus))
        cpu += ncpus
        mem = draw(st.integers(0, 64 * 1024)) * MI + draw(st.integers(0, 4095))
        pools = {}
        # a real node's hugepages come out of its memory
        if draw(st.booleans()):
            pools["hugepages-2Mi"] = HugePages(2 * MI, draw(st.integers(0, min(2048, mem // (4 * MI)))), 0)
        if draw(st.booleans()):
            pools["hugepages-1Gi"] = HugePages(GI, draw(st.integers(0, min(8, mem // (2 * GI)))), 0)
        nodes.append(NumaNode(id=node_id, cpus=cpus, memory_total_bytes=mem, memory_free_bytes=0, hugepages=pools))
    assume(any(n.cpus for n in nodes))
    return Topology(nodes=tuple(nodes))


@settings(max_examples=150, deadline=None)
@given(topo=random_topologies(), reserved=_reserved, unit=st.sampled_from([1, 4096, MI]))
def test_strategies_on_random_topologies(topo, reserved, unit):
    kube, system, _unused, eviction = reserved
    for strategy in ("node0", "spread", "proportional", "reserved_cpus"):
        result = _check_strategy_result(topo, strategy, kube, system, eviction, unit)
        if strategy in ("spread", "proportional") and result is None:
            room = sum(max(0, n.memory_total_bytes - sum(p.page_size_bytes * p.total_pages for p in n.hugepages.values()))
                       for n in topo.nodes if n.memory_total_bytes > 0)
            probe = plan_reservation(topo, None, kube_reserved={"memory": "%dMi" % kube},
                                     system_reserved={"memory": "%dMi" % system},
                                     eviction_hard=None if eviction is None else {"memory.available": eviction},
                                     merge_default_eviction_settings=True, memory_manager_policy="None")
            wanted = probe.expected.get("memory")
            # spread/proportional only give up when the whole host cannot hold it
            assert wanted is not None and wanted.value() > room


@settings(max_examples=150, deadline=None)
@given(topo=random_topologies(), parts=st.lists(st.integers(1, 4096), min_size=1, max_size=4))
def test_validation_accepts_exactly_the_balanced_reservations(topo, parts):
    ids = topo.node_ids()
    entries = ["%d:memory=%dMi" % (ids[i % len(ids)], p) for i, p in enumerate(parts) if i < len(ids)]
    total = sum(p for i, p in enumerate(parts) if i < len(ids))
    ok = validate_reservation(topo, reserved_memory=";".join(entries), kube_reserved="memory=%dMi" % total,
                              eviction_hard={}, memory_manager_policy="Static")
    sum_errors = [f for f in ok.errors if f.rule == "reserved-memory-sum"]
    assert not sum_errors
    off = validate_reservation(topo, reserved_memory=";".join(entries), kube_reserved="memory=%dMi" % (total + 1),
                               eviction_hard={}, memory_manager_policy="Static")
    assert [f.rule for f in off.errors if f.rule == "reserved-memory-sum"] == ["reserved-memory-sum"]
    assert off.totals["memory"]["difference_bytes"] == MI
    # the suggested fix, applied, balances
    fix = [f for f in off.errors if f.rule == "reserved-memory-sum"][0].fix
    fixed = fix.split("--reserved-memory ")[1].split(" ")[0]
    again = validate_reservation(topo, reserved_memory=fixed, kube_reserved="memory=%dMi" % (total + 1),
                                 eviction_hard={}, memory_manager_policy="Static")
    assert not [f for f in again.errors if f.rule == "reserved-memory-sum"]
    assert format_bytes(parse_quantity("%dMi" % (total + 1)).value()) == again.totals["memory"]["reserved"]


# -- agreement with the admission engine's own start-up maths (two implementations, one kubelet) ------

_engine_qty = st.sampled_from(["1Gi", "100Mi", "2148Mi", "1G", "5", "512Ki", "1.5Gi", "3072Mi"])


@settings(max_examples=200, deadline=None)
@given(entries=st.lists(st.tuples(st.sampled_from([0, 1]),
                                  st.dictionaries(st.sampled_from(["memory", "hugepages-2Mi", "hugepages-1Gi"]),
                                                  _engine_qty, min_size=1, max_size=2)),
                        max_size=4),
       kube=st.sampled_from([None, "1Gi", "4Gi", "100Mi", "1G"]), system=st.sampled_from([None, "1Gi", "512Mi"]),
       eviction=st.sampled_from([None, {}, {"memory.available": "100Mi"}, {"memory.available": "5%"}]))
def test_sum_verdict_matches_the_engine(entries, kube, system, eviction):
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager import reserved as engine

    topo = two_nodes()
    config = [{"numaNode": n, "limits": limits} for n, limits in entries]
    result = validate_reservation(topo, reserved_memory=config, kube_reserved={"memory": kube} if kube else None,
                                  system_reserved={"memory": system} if system else None, eviction_hard=eviction,
                                  memory_manager_policy="Static", memory_capacity_bytes=10 * GI)
    mine = [f.kubelet_message for f in result.errors if f.rule in ("reserved-memory-sum", "reserved-memory-hugepages")]
    allocatable = dict(result.expected)
    try:
        engine.validate_reserved_memory(topo.node_ids(), allocatable, engine.parse_reserved_memory(config))
        theirs = None
    except StateError as exc:
        theirs = str(exc)
    if theirs is None:
        assert mine == []
    else:
        assert theirs in mine
