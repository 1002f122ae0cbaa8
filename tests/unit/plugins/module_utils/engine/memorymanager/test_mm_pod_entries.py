# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pod-level memory state (KEP-5526 ``podEntries``): file round trip, restore, validateState, re-admission.

Upstream: pkg/kubelet/cm/memorymanager/state/checkpoint.go (V2 ``podEntries`` 1.36, V3 ``data`` 1.37),
state/state_checkpoint.go (restoreState keeps ``podEntries`` only with PodLevelResourceManagers on),
policy_static.go ``validateState`` (a pod with pod-level blocks is replayed from them), ``AllocatePod``
and ``GetPodTopologyHints``; kubernetes/kubernetes#141070 (hints from the pod blocks, CHANGELOG
v1.38.0-alpha.1) and #141077 (AllocatePod keeps a restored allocation; 1.37 unconfirmed).
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mm_helpers import GI, MI, hint, hints_plain, reservation, static_config, topology  # noqa: E402

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.checkpoint import (  # noqa: E402
    Block,
    MemoryManagerCheckpoint,
    dump_memory_manager_state,
    load_memory_manager_state,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.memory_manager import (  # noqa: E402
    new_memory_manager,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.static_policy import (  # noqa: E402
    UnsupportedPod,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.validate_state import (  # noqa: E402
    restored_assignments,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.running_pods import state_pods  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import effective_gates  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.state_drift import predict_state  # noqa: E402

ON = {"PodLevelResourceManagers": True}
TOPO = topology((0, 8 * GI), (1, 8 * GI))
CONFIG = static_config({0: {"memory": "1Gi"}})
RESERVED = reservation(memory="1Gi")
#: what each release's defaults plus one setting turn on (gate stage: alpha 1.36, beta 1.37, 1.38)
RELEASES = {"1.36": (1, 36), "1.37": (1, 37), "1.38": (1, 38)}


def gates(release, configured=None):
    return effective_gates(RELEASES[release], configured)


def mm(checkpoint=None, release="1.37", configured=None):
    return new_memory_manager(TOPO, CONFIG, checkpoint, feature_gates=gates(release, configured),
                              allocatable_reservation=RESERVED, version=RELEASES[release])


def pod_level_pod(release="1.37", configured=None, uid="uid-web", budget="1Gi", shared=True):
    """Budget ``budget`` memory; ``main`` 512Mi exclusive (requests = limits); ``sidecar`` in the pod shared pool."""
    containers = [{"name": "main", "resources": {"requests": {"cpu": "1", "memory": "512Mi"},
                                                 "limits": {"cpu": "1", "memory": "512Mi"}}}]
    if shared:
        containers.append({"name": "sidecar"})
    manifest = {"metadata": {"name": "web", "namespace": "default", "uid": uid},
                "spec": {"resources": {"requests": {"cpu": "2", "memory": budget},
                                       "limits": {"cpu": "2", "memory": budget}},
                         "containers": containers}}
    return Pod.from_manifest(manifest, feature_gates=gates(release, configured))


def allocated(release="1.37", configured=None, **pod_args):
    """A memory manager that has admitted the pod-level pod on NUMA node 1, and the pod."""
    manager = mm(release=release, configured=configured or ON)
    pod = pod_level_pod(release, configured or ON, **pod_args)
    manager.allocate_pod(pod, hint([1], True))
    return manager, pod


def state_text(manager, version=3):
    return dump_memory_manager_state(manager.checkpoint(), version)


# ---- the file ---------------------------------------------------------------------------------

@pytest.mark.parametrize("version", [2, 3])
def test_pod_level_state_file_round_trips_byte_for_byte(version):
    manager, _pod = allocated()
    assert manager.pod_blocks("uid-web") == [Block((1,), "memory", GI)]
    text = state_text(manager, version)
    cp = load_memory_manager_state(text)
    assert cp.version == version
    assert cp.checksum_ok is True
    assert cp.pod_entries == {"uid-web": [Block((1,), "memory", GI)]}
    assert cp.entries == {"uid-web": {"main": [Block((1,), "memory", 512 * MI)],
                                      "sidecar": [Block((1,), "memory", 512 * MI)]}}
    assert dump_memory_manager_state(cp) == text
    if version == 3:
        assert '\\"podEntries\\":{\\"uid-web\\":{\\"memoryBlocks\\":[{\\"numaAffinity\\":[1],' in text
        assert '"podEntries"' not in text.replace('\\"podEntries\\"', "")    # only inside data
    else:
        assert '"podEntries":{"uid-web":{"memoryBlocks":[{"numaAffinity":[1],"type":"memory","size":1073741824}]}}' \
            in text


def test_v2_without_pod_level_pods_hashes_an_empty_map_and_reads_back_as_v2():
    # 1.36 with the gate on writes V2 with an empty (non-nil) podEntries map: omitted in JSON, hashed as map[]
    manager = mm(release="1.36", configured=ON)
    text = state_text(manager, 2)
    assert "podEntries" not in text
    cp = load_memory_manager_state(text)
    assert (cp.version, cp.checksum_ok, cp.pod_entries) == (2, True, {})
    assert dump_memory_manager_state(cp) == text


# ---- restore and validateState ------------------------------------------------------------------

@pytest.mark.parametrize("release, configured", [("1.36", {"AllAlpha": True}), ("1.37", {"AllBeta": True}),
                                                 ("1.36", ON), ("1.37", ON)])
@pytest.mark.parametrize("version", [2, 3])
def test_gate_on_restores_the_pod_entries(release, configured, version):
    manager, _pod = allocated()
    restored = mm(load_memory_manager_state(state_text(manager, version)), release, configured)
    assert restored.pod_blocks("uid-web") == [Block((1,), "memory", GI)]
    assert restored.machine_state() == manager.machine_state()
    assert restored.memory_map()[1]["memory"]["reserved"] == GI
    assert restored.checkpoint().pod_entries == manager.checkpoint().pod_entries


@pytest.mark.parametrize("release, configured", [("1.36", None), ("1.37", None),
                                                 ("1.36", {"AllBeta": True}), ("1.37", {"AllAlpha": True})])
def test_gate_off_drops_the_pod_entries_and_the_kubelet_does_not_start(release, configured):
    # the containers' blocks (512Mi exclusive + 512Mi shared pool) replayed one by one: 2 assignments
    # where the budget made 1; the sums agree here, the count does not
    manager, _pod = allocated()
    with pytest.raises(StateError, match=r"^\[memorymanager\] the expected machine state is different") as err:
        mm(load_memory_manager_state(state_text(manager)), release, configured)
    assert err.value.detail == "NUMA node 1: numberOfAssignments is 1, the assignments account for 2"


def test_gate_off_refusal_also_when_the_shared_pool_repeats():
    # two shared containers: the pool's blocks count twice, reserved no longer adds up either
    manager = mm(configured=ON)
    pod = Pod.from_manifest({"metadata": {"name": "w2", "namespace": "default", "uid": "uid-w2"},
                             "spec": {"resources": {"requests": {"cpu": "2", "memory": "1Gi"},
                                                    "limits": {"cpu": "2", "memory": "1Gi"}},
                                      "containers": [{"name": "a"}, {"name": "b"}]}},
                            feature_gates=gates("1.37", ON))
    assert pod.has_pod_level_resources
    manager.allocate_pod(pod, hint([0], True))
    text = state_text(manager)
    with pytest.raises(StateError, match=r"^\[memorymanager\] the expected machine state is different"):
        mm(load_memory_manager_state(text))
    assert mm(load_memory_manager_state(text), configured=ON).pod_blocks("uid-w2") == [Block((0,), "memory", GI)]


def test_validate_state_replays_pod_blocks_not_container_blocks():
    manager, _pod = allocated()
    cp = manager.checkpoint()
    tampered = MemoryManagerCheckpoint(policy_name="Static", machine_state=cp.machine_state, entries=cp.entries,
                                       pod_entries={"uid-web": [Block((1,), "memory", 768 * MI)]})
    with pytest.raises(StateError, match=r"^\[memorymanager\] the expected machine state is different") as err:
        mm(tampered, configured=ON)
    assert err.value.detail == "NUMA node 1 memory: free of group [1] is %d, expected %d" % (
        8 * GI - GI, 8 * GI - 768 * MI)   # node 1 has no reserved memory
    # pod blocks on a NUMA node the machine does not have: the kubelet's message names the pod, no container
    elsewhere = MemoryManagerCheckpoint(policy_name="Static", machine_state=cp.machine_state, entries=cp.entries,
                                        pod_entries={"uid-web": [Block((3,), "memory", GI)]})
    with pytest.raises(StateError, match=r"^\[memorymanager\] \(pod: uid-web, container: \) the memory assignment "
                                         r"uses the NUMA that does not exist$"):
        mm(elsewhere, configured=ON)


def test_pod_entry_without_blocks_or_without_containers():
    manager, _pod = allocated()
    cp = manager.checkpoint()
    # an empty memoryBlocks list: the containers' blocks are replayed (and do not match)
    empty = MemoryManagerCheckpoint(policy_name="Static", machine_state=cp.machine_state, entries=cp.entries,
                                    pod_entries={"uid-web": []})
    with pytest.raises(StateError, match="different from the real one"):
        mm(empty, configured=ON)
    # a pod entry with no container entries is not replayed (upstream walks the container entries;
    # kubernetes/kubernetes#141994, open, would refuse it): the kubelet starts on a fresh machine state
    fresh = mm(configured=ON).checkpoint()
    orphan = MemoryManagerCheckpoint(policy_name="Static", machine_state=fresh.machine_state, entries={},
                                     pod_entries={"uid-web": [Block((1,), "memory", GI)]})
    restored = mm(orphan, configured=ON)
    assert restored.pod_blocks("uid-web") == [Block((1,), "memory", GI)]
    assert restored.memory_map()[1]["memory"]["reserved"] == 0


def test_restored_assignments_rule():
    entries = {"a": {"c1": ["x"], "c2": ["y"]}, "b": {"c": ["z"]}}
    pods = {"a": ["budget"], "orphan": ["o"], "b": []}
    assert restored_assignments(entries, pods, True) == {"a": {"": ["budget"]}, "b": {"c": ["z"]}}
    assert restored_assignments(entries, pods, False) == entries


# ---- re-admission of a restored pod-level pod: 1.36 vs 1.37 vs 1.38 -----------------------------

def restored_manager(release):
    manager, _pod = allocated()
    configured = {"AllAlpha": True} if release == "1.36" else {"AllBeta": True} if release == "1.37" else ON
    restored = mm(load_memory_manager_state(state_text(manager)), release, configured)
    return restored, pod_level_pod(release, configured)


def test_1_36_readmission_regenerates_from_a_container_and_reserves_the_budget_again():
    restored, pod = restored_manager("1.36")
    # first container with blocks (main, 512Mi) compared with the pod budget (1Gi): no hint
    assert restored.get_pod_topology_hints(pod) is None
    restored.allocate_pod(pod, hint([1], True))      # kubernetes/kubernetes#140906: reserved twice
    node = restored.machine_state()[1]
    assert (node.memory_map["memory"].reserved, node.number_of_assignments) == (2 * GI, 2)


def test_1_37_readmission_hints_as_1_36_allocate_pod_refused_as_unconfirmed():
    restored, pod = restored_manager("1.37")
    assert restored.get_pod_topology_hints(pod) is None           # #141070 came after 1.37.0
    with pytest.raises(UnsupportedPod, match=r"not simulated for kubelet 1\.37: .*#141077"):
        restored.allocate_pod(pod, hint([1], True))
    assert restored.memory_map()[1]["memory"]["reserved"] == GI


def test_1_38_readmission_keeps_the_restored_allocation():
    restored, pod = restored_manager("1.38")
    before = restored.checkpoint()
    assert hints_plain(restored.get_pod_topology_hints(pod)) == {"memory": [([1], True)]}
    restored.allocate_pod(pod, hint([1], True))
    assert restored.checkpoint() == before


def test_1_36_single_container_pod_regenerates_when_its_blocks_are_the_budget():
    manager, _pod = allocated(budget="512Mi", shared=False)
    restored = mm(load_memory_manager_state(state_text(manager)), "1.36", ON)
    pod = pod_level_pod("1.36", ON, budget="512Mi", shared=False)
    assert hints_plain(restored.get_pod_topology_hints(pod)) == {"memory": [([1], True)]}


def test_release_of_a_restored_pod_returns_the_budget_with_the_last_container():
    restored, _pod = restored_manager("1.38")
    restored.remove("uid-web", "main")
    assert restored.memory_map()[1]["memory"]["reserved"] == GI
    restored.remove("uid-web", "sidecar")
    assert restored.memory_map()[1]["memory"]["reserved"] == 0
    assert restored.pod_blocks("uid-web") is None


# ---- the readers next to the engine ----------------------------------------------------------

def test_state_pods_count_the_budget_once():
    manager, _pod = allocated()
    cp = load_memory_manager_state(state_text(manager))
    (pod,) = state_pods(None, cp, None)
    assert pod.requests == {"memory": GI}                  # not 1Gi + 512Mi + 512Mi
    assert pod.exclusive["main"]["memory"] == {"memory": 512 * MI}


def test_state_drift_accepts_a_pod_level_state():
    manager, _pod = allocated()
    findings, summary = predict_state(TOPO, {0: {"memory": GI}}, "Static", state_text(manager))
    assert findings == [] and summary["accepted"] is True


def test_state_drift_replays_as_validate_state_does():
    # a pod entry without container entries is not replayed by the kubelet: the state is accepted
    fresh = mm(configured=ON).checkpoint()
    orphan = MemoryManagerCheckpoint(policy_name="Static", machine_state=fresh.machine_state, entries={},
                                     pod_entries={"uid-web": [Block((1,), "memory", GI)]})
    findings, summary = predict_state(TOPO, {0: {"memory": GI}}, "Static", dump_memory_manager_state(orphan))
    assert findings == [] and summary["accepted"] is True


# ---- through the admission engine ------------------------------------------------------------

def test_admission_counts_a_restored_pod_budget():
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
    from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology
    from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults

    # TOPO with CPUs: two NUMA nodes of 8Gi and 4 CPUs
    topo = Topology.from_facts({
        "nodes": [{"id": n, "cpus": list(range(4 * n, 4 * n + 4)), "memory_total_bytes": 8 * GI,
                   "memory_free_bytes": 8 * GI, "distances": {0: 10 + 10 * n, 1: 20 - 10 * n}} for n in (0, 1)],
        "cpus": [{"id": c, "node": c // 4, "core": c, "socket": c // 4, "die": 0, "siblings": [c], "cache_id": c // 4}
                 for c in range(8)]})
    config = kubelet_defaults()
    config.update({"memoryManagerPolicy": "Static", "topologyManagerPolicy": "single-numa-node",
                   "topologyManagerScope": "pod", "systemReserved": {"memory": "924Mi"},
                   "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}],
                   "featureGates": {"AllBeta": True}})
    big = {"metadata": {"name": "big", "namespace": "default", "uid": "uid-big"},
           "spec": {"resources": {"requests": {"cpu": "2", "memory": "5Gi"}, "limits": {"cpu": "2", "memory": "5Gi"}},
                    "containers": [{"name": "c", "image": "x"}]}}
    manager = mm(configured=ON)
    manager.allocate_pod(pod_level_pod(configured=ON, budget="4Gi"), hint([0], True))
    restored = load_memory_manager_state(state_text(manager))
    placed = {}
    for label, checkpoint in (("fresh", None), ("restored", restored)):
        simulator = AdmissionSimulator(topo, config, memory_checkpoint=checkpoint, kubelet_version="1.37")
        assert simulator.feature_gates["PodLevelResourceManagers"] is True
        result = simulator.admit(simulator.pod_from_manifest(big))
        assert result["admitted"] is True, result["message"]
        placed[label] = result["pod_level_resources"]["memory_blocks"]
    assert placed == {"fresh": [{"type": "memory", "size": 5 * GI, "numa_affinity": [0]}],
                      "restored": [{"type": "memory", "size": 5 * GI, "numa_affinity": [1]}]}
