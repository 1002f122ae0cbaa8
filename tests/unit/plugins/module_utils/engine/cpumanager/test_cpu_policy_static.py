# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""CPU manager static policy: construction, state validation, hints, allocation, reuse, release."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.checkpoint import load_cpu_manager_state
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.cpu_manager import new_cpu_manager
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.policy_static import CPUAllocationError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import AdmissionError, StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint, hint_map_to_dict
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import format_cpuset

STATE_PATH = "/var/lib/kubelet/cpu_manager_state"


def topology(nodes, smt=None, sockets=None):
    """nodes: NUMA id -> CPU ids; smt: CPU -> sibling; sockets: NUMA id -> socket id."""
    cpus = []
    for node, ids in nodes.items():
        for cpu in ids:
            sibling = (smt or {}).get(cpu)
            core = min(cpu, sibling) if sibling is not None else cpu
            cpus.append({"id": cpu, "node": node, "core": core, "socket": (sockets or {}).get(node, 0),
                         "die": 0, "online": True,
                         "siblings": sorted({cpu, sibling}) if sibling is not None else [cpu],
                         "cache_id": None})
    return Topology.from_facts({
        "nodes": [{"id": n, "cpus": sorted(ids), "memory_total_bytes": 1 << 34} for n, ids in nodes.items()],
        "cpus": sorted(cpus, key=lambda c: c["id"])})


TWO_BY_FOUR = {0: [0, 1, 2, 3], 1: [4, 5, 6, 7]}
# 2 NUMA nodes x 2 cores x 2 threads: node 0 = 0,1 + siblings 4,5; node 1 = 2,3 + 6,7
SMT = {0: [0, 1, 4, 5], 1: [2, 3, 6, 7]}
SMT_PAIRS = {0: 4, 4: 0, 1: 5, 5: 1, 2: 6, 6: 2, 3: 7, 7: 3}


def config(**extra):
    cfg = {"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "1"}}
    cfg.update(extra)
    return cfg


def pod(name="p", cpu="2", memory="1Gi", init=(), sidecars=(), apps=None, limits=True):
    def res(value):
        if value is None:
            return {}
        block = {"cpu": value, "memory": memory}
        return {"limits": block} if limits else {"requests": block}
    spec = {"containers": [{"name": n, "resources": res(v)} for n, v in (apps or [("c", cpu)])]}
    inits = [{"name": n, "resources": res(v)} for n, v in init]
    inits += [{"name": n, "restartPolicy": "Always", "resources": res(v)} for n, v in sidecars]
    if inits:
        spec["initContainers"] = inits
    return Pod.from_manifest({"metadata": {"name": name, "uid": name + "-uid"}, "spec": spec})


def hints(manager, p, name="c"):
    return hint_map_to_dict(manager.get_topology_hints(p, p.container(name)))


def h(*nodes, preferred=True):
    return {"numa_affinity": list(nodes), "preferred": preferred}


# -- construction ------------------------------------------------------------------------------

CONSTRUCTION_ERRORS = [
    ({"cpuManagerPolicy": "dynamic"}, 'unknown policy: "dynamic"'),
    ({"cpuManagerPolicy": "none", "cpuManagerPolicyOptions": {"full-pcpus-only": True}},
     "new none policy error: None policy: received unsupported options=map[full-pcpus-only:true]"),
    ({"cpuManagerPolicy": "static"},
     "[cpumanager] unable to determine reserved CPU resources for static policy"),
    ({"cpuManagerPolicy": "static", "kubeReserved": {"cpu": "0"}, "systemReserved": {"cpu": "0m"}},
     "[cpumanager] unable to determine reserved CPU resources for static policy"),
    (config(cpuManagerPolicyOptions={"turbo": "true"}),
     'new static policy error: unknown CPU Manager Policy option: "turbo"'),
    (config(cpuManagerPolicyOptions={"align-by-socket": "true"}),
     'new static policy error: CPU Manager Policy Alpha-level Options not enabled, but option '
     '"align-by-socket" provided'),
    (config(cpuManagerPolicyOptions={"distribute-cpus-across-numa": "true"},
            featureGates={"CPUManagerPolicyBetaOptions": False}),
     'new static policy error: CPU Manager Policy Beta-level Options not enabled, but option '
     '"distribute-cpus-across-numa" provided'),
    (config(cpuManagerPolicyOptions={"full-pcpus-only": "yes"}),
     'new static policy error: bad value for option "full-pcpus-only": strconv.ParseBool: '
     'parsing "yes": invalid syntax'),
    (config(cpuManagerPolicyOptions={"full-pcpus-only": "true", "distribute-cpus-across-cores": "true"},
            featureGates={"CPUManagerPolicyAlphaOptions": True}),
     "new static policy error: static policy options full-pcpus-only and "
     "distribute-cpus-across-cores can not be used at the same time"),
    (config(cpuManagerPolicyOptions={"prefer-align-cpus-by-uncorecache": "true",
                                     "distribute-cpus-across-numa": "true"}),
     "new static policy error: static policy options prefer-align-cpus-by-uncorecache and "
     "distribute-cpus-across-numa can not be used at the same time"),
    (config(cpuManagerPolicyOptions={"align-by-socket": "true"}, topologyManagerPolicy="single-numa-node",
            featureGates={"CPUManagerPolicyAlphaOptions": True}),
     "new static policy error: Topolgy manager single-numa-node policy is incompatible with "
     "CPUManager align-by-socket policy option"),
    (config(reservedSystemCPUs="0,9"),
     "new static policy error: [cpumanager] unable to build the reserved physical CPUs from the "
     "reserved set: unknown CPU ID: 9"),
    (config(kubeReserved={"cpu": "9"}),
     "new static policy error: [cpumanager] unable to reserve the required amount of CPUs (size of  "
     "did not equal 9)"),
    (config(kubeReserved={"cpu": "lots"}),
     "kubeReserved.cpu: invalid quantity 'lots': quantity 'lots' has an unknown suffix 'lots' "
     "(expected one of Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, M, G, T, P, E or an exponent such as "
     "e3; suffixes are case-sensitive)"),
]


@pytest.mark.parametrize("cfg,message", CONSTRUCTION_ERRORS, ids=[case[-1] for case in CONSTRUCTION_ERRORS])
def test_construction_errors(cfg, message):
    with pytest.raises(StateError) as info:
        new_cpu_manager(topology(TWO_BY_FOUR), cfg)
    assert str(info.value) == message


@pytest.mark.parametrize("release", [(1, 36), (1, 37)])
def test_pod_level_resource_managers_gate_builds_the_manager(release):
    # the pod-level path is simulated (tests/unit/.../engine/test_pod_level_resource_managers.py)
    manager = new_cpu_manager(topology(TWO_BY_FOUR), config(featureGates={"PodLevelResourceManagers": True}),
                              version=release)
    assert manager.policy.feature_gates == {"PodLevelResourceManagers": True}


@pytest.mark.parametrize("release, refused", [((1, 34), True), ((1, 35), False)])
def test_strict_cpu_reservation_needs_the_beta_gate_until_it_is_ga_in_1_35(release, refused):
    cfg = config(cpuManagerPolicyOptions={"strict-cpu-reservation": "true"},
                 featureGates={"CPUManagerPolicyBetaOptions": False})
    if refused:
        with pytest.raises(StateError) as info:
            new_cpu_manager(topology(TWO_BY_FOUR), cfg, version=release)
        assert str(info.value) == ('new static policy error: CPU Manager Policy Beta-level Options not enabled, '
                                   'but option "strict-cpu-reservation" provided')
    else:
        assert new_cpu_manager(topology(TWO_BY_FOUR), cfg, version=release).policy.options.strict_cpu_reservation


def test_align_by_socket_refused_when_sockets_outnumber_numa_nodes():
    topo = topology({0: [0, 1, 2, 3]}, sockets={0: 0})
    # two sockets inside one NUMA node
    facts = topo.to_facts()
    for cpu in facts["cpus"]:
        cpu["socket"] = cpu["id"] // 2
    with pytest.raises(StateError) as info:
        new_cpu_manager(Topology.from_facts(facts), config(
            cpuManagerPolicyOptions={"align-by-socket": "true"}, featureGates={"CPUManagerPolicyAlphaOptions": True}))
    assert str(info.value) == ("new static policy error: Align by socket is not compatible with hardware "
                               "where number of sockets are more than number of NUMA")


@pytest.mark.parametrize("cfg,reserved,default", [
    (config(), "0", "0-7"),
    (config(kubeReserved={"cpu": "1"}, systemReserved={"cpu": "500m"}), "0,4", "0-7"),
    (config(kubeReserved={"cpu": "100m"}), "0", "0-7"),
    (config(reservedSystemCPUs="3,7", kubeReserved={"cpu": "4"}), "3,7", "0-7"),
    (config(cpuManagerPolicyOptions={"strict-cpu-reservation": "true"}), "0", "1-7"),
    (config(kubeReserved={"cpu": "2"}, cpuManagerPolicyOptions={"distribute-cpus-across-numa": "true"}),
     "0,4", "0-7"),
])
def test_reserved_cpus_and_fresh_state(cfg, reserved, default):
    manager = new_cpu_manager(topology(SMT, SMT_PAIRS), cfg)
    assert format_cpuset(manager.reserved_cpus) == reserved
    assert manager.state() == {"policy_name": "static", "default_cpu_set": default, "entries": {},
                               "pod_entries": {}}


def test_none_policy_is_a_do_nothing_provider():
    manager = new_cpu_manager(topology(TWO_BY_FOUR), {"cpuManagerPolicy": "none"})
    p = pod(cpu="2")
    assert manager.get_topology_hints(p, p.containers[0]) is None
    assert manager.get_pod_topology_hints(p) is None
    manager.allocate(p, p.containers[0], TopologyHint(BitMask(0), True))
    assert manager.state() == {"policy_name": "none", "default_cpu_set": "", "entries": {}, "pod_entries": {}}


# -- state restore and validateState --------------------------------------------------------------

def cp(default, entries=None, policy="static"):
    return {"policy_name": policy, "default_cpu_set": default, "entries": entries or {}}


STATE_ERRORS = [
    (config(), cp("0-7", policy="none"),
     'could not restore state from checkpoint: configured policy "static" differs from state checkpoint '
     'policy "none", please drain this node and delete the CPU manager checkpoint file '
     '"/var/lib/kubelet/cpu_manager_state" before restarting Kubelet'),
    (config(), cp("0-x"),
     'could not restore state from checkpoint: could not parse default cpu set "0-x": invalid CPU list '
     "'0-x': cannot parse '0-x', please drain this node and delete the CPU manager checkpoint file "
     '"/var/lib/kubelet/cpu_manager_state" before restarting Kubelet'),
    (config(), cp("", {"p": {"c": "1"}}), "default cpuset cannot be empty"),
    (config(), cp("1-7"), 'not all reserved cpus: "0" are present in defaultCpuSet: "1-7"'),
    (config(cpuManagerPolicyOptions={"strict-cpu-reservation": "true"}), cp("0-7"),
     'some of strictly reserved cpus: "0" are present in defaultCpuSet: "0-7"'),
    (config(), cp("0-3,5-7", {"p": {"c": "3-4"}}),
     'pod: p, container: c cpuset: "3-4" overlaps with default cpuset "0-3,5-7"'),
    (config(), cp("0-6"), 'current set of available CPUs "0-7" doesn\'t match with CPUs in state "0-6"'),
    (config(), cp("0-9"), 'current set of available CPUs "0-7" doesn\'t match with CPUs in state "0-9"'),
]


@pytest.mark.parametrize("cfg,checkpoint,message", STATE_ERRORS, ids=[case[-1] for case in STATE_ERRORS])
def test_state_errors(cfg, checkpoint, message):
    with pytest.raises(StateError) as info:
        new_cpu_manager(topology(TWO_BY_FOUR), cfg, checkpoint, STATE_PATH)
    assert str(info.value) == message


def test_restores_a_v4_file_and_allows_overlapping_assignments():
    # a V4 pkg/kubelet/cm/cpumanager/state/checkpoint.go file (its dataChecksum is verified by the checkpoint reader)
    text = ('{"policyName":"static","defaultCpuSet":"0-1,4-7","entries":{"pod-uid-1":{"c1":"2-3"}},'
            '"checksum":0,"data":"{\\"policyName\\":\\"static\\",\\"defaultCpuSet\\":\\"0-1,4-7\\",'
            '\\"entries\\":{\\"pod-uid-1\\":{\\"c1\\":\\"2-3\\"}}}","dataChecksum":1750030131}')
    manager = new_cpu_manager(topology(TWO_BY_FOUR), config(), load_cpu_manager_state(text))
    assert manager.state()["entries"] == {"pod-uid-1": {"c1": "2-3"}}
    # init-container reuse: two containers of one pod may share CPUs
    shared = cp("0-1,4-7", {"p": {"init": "2-3", "app": "2-3"}})
    assert new_cpu_manager(topology(TWO_BY_FOUR), config(), shared).state()["entries"]["p"] == {
        "app": "2-3", "init": "2-3"}


def test_state_hands_back_a_checkpoint_the_writer_accepts():
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.checkpoint import dump_cpu_manager_state
    manager = new_cpu_manager(topology(TWO_BY_FOUR), config(), None)
    assert dump_cpu_manager_state(manager.to_checkpoint(2)) == (
        '{"policyName":"static","defaultCpuSet":"0-7","checksum":14413152}')
    p = pod(cpu="2")
    manager.allocate(p, p.containers[0], TopologyHint(BitMask(1), True))
    assert dump_cpu_manager_state(manager.to_checkpoint(2)).startswith(
        '{"policyName":"static","defaultCpuSet":"0-3,6-7","entries":{"p-uid":{"c":"4-5"}},"checksum":')


# -- hints ---------------------------------------------------------------------------------------

def test_spec_worked_example_one_free_cpu_on_node_zero():
    # node 0: CPU 0 reserved, 1-2 taken, 3 free; node 1: all four free
    manager = new_cpu_manager(topology(TWO_BY_FOUR), config(), cp("0,3-7", {"other": {"x": "1-2"}}))
    assert hints(manager, pod(cpu="2")) == {"cpu": [h(1), h(0, 1, preferred=False)]}


@pytest.mark.parametrize("p,expected", [
    (pod(cpu="1"), {"cpu": [h(0), h(1), h(0, 1, preferred=False)]}),
    (pod(cpu="4"), {"cpu": [h(1), h(0, 1, preferred=False)]}),   # node 0 has the reserved CPU
    (pod(cpu="5"), {"cpu": [h(0, 1)]}),
    (pod(cpu="8"), {"cpu": []}),                                 # preferred size 2, nothing fits
    (pod(cpu="1500m"), None),                                    # non-integral: no exclusive CPUs
    (pod(cpu="2", limits=False), None),                          # Burstable
    (pod(cpu=None), None),                                       # BestEffort
])
def test_container_hints(p, expected):
    manager = new_cpu_manager(topology(TWO_BY_FOUR), config())
    assert hints(manager, p) == expected


def test_hints_ignore_memory_only_nodes_and_keep_sparse_ids():
    topo = Topology.from_facts({"nodes": [
        {"id": 0, "cpus": [0, 1], "memory_total_bytes": 1 << 30},
        {"id": 2, "cpus": [], "memory_total_bytes": 1 << 30},
        {"id": 33, "cpus": [2, 3], "memory_total_bytes": 1 << 30}]})
    manager = new_cpu_manager(topo, config())
    assert hints(manager, pod(cpu="2")) == {"cpu": [h(33), h(0, 33, preferred=False)]}
    assert hints(manager, pod(cpu="3")) == {"cpu": [h(0, 33)]}


def test_regenerated_hints_for_an_existing_assignment():
    manager = new_cpu_manager(topology(TWO_BY_FOUR), config(), cp("0-3,6-7", {"p-uid": {"c": "4-5"}}))
    assert hints(manager, pod(cpu="2")) == {"cpu": [h(1), h(0, 1, preferred=False)]}
    assert hints(manager, pod(cpu="3")) == {"cpu": []}


def test_align_by_socket_marks_same_socket_hints_preferred():
    nodes = {0: [0, 1], 1: [2, 3], 2: [4, 5], 3: [6, 7]}
    manager = new_cpu_manager(topology(nodes, sockets={0: 0, 1: 0, 2: 1, 3: 1}), config(
        cpuManagerPolicyOptions={"align-by-socket": "true"}, featureGates={"CPUManagerPolicyAlphaOptions": True}))
    result = hints(manager, pod(cpu="2"))["cpu"]
    preferred = [x["numa_affinity"] for x in result if x["preferred"]]
    assert preferred == [[1], [2], [3], [0, 1], [2, 3]]


def test_pod_scope_hints_count_init_sidecar_and_apps():
    manager = new_cpu_manager(topology(TWO_BY_FOUR), config())
    # max(init 3 + sidecar 0 declared before it? no: sidecar after), apps 1+1 + sidecar 2 = 4
    p = pod(init=[("i", "3")], sidecars=[("s", "2")], apps=[("a", "1"), ("b", "1")])
    assert manager.policy.pod_guaranteed_cpus(p) == 4
    assert hint_map_to_dict(manager.get_pod_topology_hints(p)) == {"cpu": [h(1), h(0, 1, preferred=False)]}


# -- allocation ----------------------------------------------------------------------------------

def test_allocation_follows_the_hint_and_spills_when_the_mask_lacks_cpus():
    manager = new_cpu_manager(topology(TWO_BY_FOUR), config())
    p = pod(cpu="5")
    manager.allocate(p, p.containers[0], TopologyHint(BitMask(1), False))
    # all of node 1, then the lowest free CPU elsewhere (CPU 0 is reserved)
    assert format_cpuset(manager.assigned_cpus("p-uid", "c")) == "1,4-7"
    assert format_cpuset(manager.default_cpu_set()) == "0,2-3"


def test_allocation_without_affinity_packs_by_topology():
    manager = new_cpu_manager(topology(SMT, SMT_PAIRS), config())
    p = pod(cpu="2")
    manager.allocate(p, p.containers[0], TopologyHint(None, True))
    # reserved CPU 0 leaves core {0,4} partially used: whole core {1,5} is taken first
    assert format_cpuset(manager.assigned_cpus("p-uid", "c")) == "1,5"


@pytest.mark.parametrize("cpu,reason,message", [
    ("3", "SMTAlignmentError", "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"),
    ("8", "SMTAlignmentError", "SMT Alignment Error: not enough free physical CPUs: available physical "
                               "CPUs = 6, requested CPUs = 8, CPUs per core = 2"),
])
def test_full_pcpus_only(cpu, reason, message):
    manager = new_cpu_manager(topology(SMT, SMT_PAIRS), config(cpuManagerPolicyOptions={"full-pcpus-only": "true"}))
    p = pod(cpu=cpu)
    with pytest.raises(AdmissionError) as info:
        manager.allocate(p, p.containers[0], TopologyHint(None, True))
    assert (info.value.reason, info.value.message) == (reason, message)
    assert manager.summary()["pinning_errors_total"] == 1


def test_not_enough_cpus_is_an_unexpected_admission_error():
    manager = new_cpu_manager(topology(TWO_BY_FOUR), config())
    p = pod(cpu="8")
    with pytest.raises(CPUAllocationError) as info:
        manager.allocate(p, p.containers[0], TopologyHint(None, True))
    assert info.value.reason == "UnexpectedAdmissionError"
    assert info.value.message == ("Allocate failed due to not enough cpus available to satisfy request: "
                                  "requested=8, available=7, which is unexpected")
    assert manager.state()["default_cpu_set"] == "0-7"


def test_init_container_cpus_are_reused_by_app_containers():
    manager = new_cpu_manager(topology(TWO_BY_FOUR), config())
    p = pod(init=[("i", "3")], apps=[("a", "2"), ("b", "2")])
    manager.allocate(p, "i", TopologyHint(BitMask(1), True))
    assert format_cpuset(manager.assigned_cpus(p.uid, "i")) == "4-6"
    # the app's hints must contain the reusable CPUs' node
    assert hints(manager, p, "a") == {"cpu": [h(1), h(0, 1, preferred=False)]}
    manager.allocate(p, "a", TopologyHint(BitMask(1), True))
    assert format_cpuset(manager.assigned_cpus(p.uid, "a")) == "4-5"
    manager.allocate(p, "b", TopologyHint(BitMask(1), True))
    assert format_cpuset(manager.assigned_cpus(p.uid, "b")) == "6-7"
    assert manager.state()["default_cpu_set"] == "0-3"


def test_sidecars_never_donate_cpus():
    manager = new_cpu_manager(topology(TWO_BY_FOUR), config())
    p = pod(init=[("i", "2")], sidecars=[("s", "1")], apps=[("a", "2")])
    for name in ("i", "s", "a"):
        manager.allocate(p, name, TopologyHint(BitMask(1), True))
    entries = manager.state()["entries"][p.uid]
    # the sidecar takes one of the init container's CPUs, the app the other plus a fresh one
    assert entries == {"i": "4-5", "s": "4", "a": "5-6"}
    assert manager.policy.cpus_to_reuse[p.uid] == frozenset()


def test_release_returns_cpus_not_held_by_siblings():
    manager = new_cpu_manager(topology(TWO_BY_FOUR), config())
    p = pod(init=[("i", "2")], apps=[("a", "2")])
    manager.allocate(p, "i", TopologyHint(BitMask(1), True))
    manager.allocate(p, "a", TopologyHint(BitMask(1), True))
    manager.remove(p.uid, "i")
    assert manager.state()["default_cpu_set"] == "0-3,6-7"
    manager.remove_stale_state([])
    assert manager.state() == {"policy_name": "static", "default_cpu_set": "0-7", "entries": {},
                               "pod_entries": {}}


def test_allocate_is_idempotent_for_an_assigned_container():
    manager = new_cpu_manager(topology(TWO_BY_FOUR), config())
    p = pod(cpu="2")
    manager.allocate(p, p.containers[0], TopologyHint(BitMask(0), True))
    before = manager.state()
    manager.allocate(p, p.containers[0], TopologyHint(BitMask(1), True))
    assert manager.state() == before


# -- properties ----------------------------------------------------------------------------------

POD_SPECS = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 3), st.booleans()), min_size=1, max_size=8)
OPTION_SETS = [{}, {"full-pcpus-only": "true"}, {"distribute-cpus-across-numa": "true"},
               {"strict-cpu-reservation": "true"}]


@settings(max_examples=60, deadline=None)
@given(POD_SPECS, st.sampled_from(OPTION_SETS),
       st.lists(st.sampled_from([None, 0, 1]), min_size=8, max_size=8))
def test_allocations_never_overlap_never_use_reserved_and_release_restores(specs, options, masks):
    topo = topology({0: [0, 1, 4, 5], 1: [2, 3, 6, 7], 3: [8, 9, 10, 11]},
                    dict(list(SMT_PAIRS.items()) + [(8, 10), (10, 8), (9, 11), (11, 9)]))
    manager = new_cpu_manager(topo, config(kubeReserved={"cpu": "2"}, cpuManagerPolicyOptions=options))
    reserved = manager.reserved_cpus
    everything = frozenset(range(12))
    held = {}
    for index, (app_cpus, init_cpus, guaranteed) in enumerate(specs):
        p = pod(name="p%d" % index, init=[("i", str(init_cpus))] if init_cpus else (),
                apps=[("a", str(app_cpus))], limits=guaranteed)
        mask = masks[index]
        hint = TopologyHint(None if mask is None else BitMask(mask if mask != 2 else 3), True)
        try:
            for c in p.all_containers():
                manager.allocate(p, c, hint)
        except AdmissionError:
            manager.remove_pod(p.uid)
            continue
        app = manager.assigned_cpus(p.uid, "a")
        if app is not None:
            assert not app & reserved
            for other in held.values():
                assert not app & other
            held[p.uid] = app
        state = manager.state()
        assigned = set()
        for containers in manager._state.entries.values():
            for cpus in containers.values():
                assigned |= cpus
        assert not assigned & manager.default_cpu_set()
        assert assigned | manager.default_cpu_set() == manager.policy.all_cpus()
        assert state["policy_name"] == "static"
    for uid in list(held):
        manager.remove_pod(uid)
    manager.remove_stale_state([])
    expected = everything - reserved if options.get("strict-cpu-reservation") else everything
    assert manager.default_cpu_set() == expected


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 15)), st.sets(st.integers(0, 15), max_size=3), st.integers(0, 17), st.booleans())
def test_fast_hints_equal_the_literal_per_mask_loop(available, reusable, request, align):
    nodes = {0: [0, 1, 2], 2: [3, 4, 5, 6], 5: [7, 8], 9: [9, 10, 11, 12, 13], 11: [14, 15]}
    options = {"align-by-socket": "true"} if align else {}
    manager = new_cpu_manager(topology(nodes, sockets={0: 0, 2: 0, 5: 1, 9: 1, 11: 2}), config(
        cpuManagerPolicyOptions=options, featureGates={"CPUManagerPolicyAlphaOptions": True}))
    policy = manager.policy
    fast = policy.generate_hints(frozenset(available), frozenset(reusable), request)
    literal = policy.generate_hints_literal(frozenset(available), frozenset(reusable), request)
    assert fast == literal
