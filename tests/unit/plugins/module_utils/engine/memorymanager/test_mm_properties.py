# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Property tests of the memory manager simulator over random machines and pod sequences.

Invariants checked after every admission (admitted or rejected, rejected pods garbage-collected
as the kubelet does before the next pod):

* per node and type: free + reserved == allocatable;
* per type: the sizes of all blocks add up to the memory reserved (init-container reuse rewrites
  block sizes exactly so that this holds);
* whenever the NUMA groups are consistent (every block on a node has that node's group as its
  affinity) the state passes the kubelet's own start-up validation (a restart would accept it).
  The kubelet itself can break the groups: Allocate never checks the single-node rule, so a
  single-node allocation on a grouped node overwrites that node's ``cells`` (pkg/kubelet/cm/memorymanager/policy_static.go Allocate does not re-check the
  group rule; e.g. a
  sidecar widened to {0,1} then an app container on {1} in pod scope), and its start-up check
  then depends on Go map order;
* removing every pod, in any order, gives back the default machine state exactly;
* on a fresh machine, allocating one container and removing it restores the state exactly.
"""

import os
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mm_helpers import MI, pod, reservation, static_config, topology  # noqa: E402

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.machine_state import (  # noqa: E402
    default_machine_state,
    machine_state_to_plain,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.memory_manager import (  # noqa: E402
    new_memory_manager,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.static_policy import (  # noqa: E402
    find_best_hint,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.validate_state import (  # noqa: E402
    validate_state,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.topology_manager import (  # noqa: E402
    new_topology_manager,
)

RESERVED = 256 * MI

nodes_strategy = st.lists(
    st.tuples(st.integers(min_value=2, max_value=32),      # memory in 256Mi units
              st.integers(min_value=0, max_value=512)),    # 2Mi hugepages
    min_size=1, max_size=4)

container_strategy = st.tuples(
    st.integers(min_value=0, max_value=48),                # memory in 128Mi units (0 = 128Mi)
    st.sampled_from([0, 0, 64, 300]),                      # 2Mi hugepages
    st.sampled_from(["app", "app", "init", "sidecar"]))

pods_strategy = st.lists(st.lists(container_strategy, min_size=1, max_size=4), min_size=1, max_size=6)


def build(nodes):
    topo = topology(*[(index, units * 256 * MI, {2 * MI: pages}) for index, (units, pages) in enumerate(nodes)])
    mm = new_memory_manager(topo, static_config({0: {"memory": "256Mi"}}),
                            allocatable_reservation=reservation(memory="256Mi"))
    return topo, mm


def make_pod(index, specs):
    apps, init = [], []
    for number, (memory, pages, kind) in enumerate(specs):
        resources = {"memory": "%dMi" % ((memory + 1) * 128)}
        if pages:
            resources["hugepages-2Mi"] = "%dMi" % (pages * 2)
        name = "c%d" % number
        if kind == "app":
            apps.append((name, resources))
        else:
            init.append((name, resources, kind == "sidecar"))
    if not apps:
        apps.append(("main", {"memory": "128Mi"}))
    return pod(apps, init=init, name="p%d" % index)


def check_invariants(mm, topo, strict):
    state = mm.machine_state()
    reserved = {}
    for node in state.values():
        for name, table in node.memory_map.items():
            assert table.free + table.reserved == table.allocatable
            reserved[name] = reserved.get(name, 0) + table.reserved
    sizes = {}
    for containers in mm.assignments().values():
        for blocks in containers.values():
            for block in blocks:
                sizes[block.type] = sizes.get(block.type, 0) + block.size
    for name, total in reserved.items():
        assert sizes.get(name, 0) == total, (name, sizes, reserved)
    consistent = all(sorted(state[n].cells) == list(block.numa_affinity)
                     for containers in mm.assignments().values() for blocks in containers.values()
                     for block in blocks for n in block.numa_affinity)
    if strict and consistent:
        validate_state(state, mm.assignments(), default_machine_state(topo, {0: {"memory": RESERVED}}))
    return consistent


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nodes=nodes_strategy, pods=pods_strategy,
       policy=st.sampled_from(["restricted", "best-effort", "none"]),
       scope=st.sampled_from(["container", "pod"]),
       removal=st.randoms(use_true_random=False))
def test_sequences_keep_invariants(nodes, pods, policy, scope, removal):
    topo, mm = build(nodes)
    initial = machine_state_to_plain(mm.machine_state())
    tm = new_topology_manager(topo, policy, scope, providers=[mm])
    admitted = []
    for index, specs in enumerate(pods):
        p = make_pod(index, specs)
        result = tm.admit(p)
        if result.admitted:
            admitted.append(p.uid)
        else:
            mm.remove_pod(p.uid)   # the kubelet's GC of a rejected pod before the next admission
        check_invariants(mm, topo, strict=True)
    removal.shuffle(admitted)
    for uid in admitted:
        mm.remove_pod(uid)
        check_invariants(mm, topo, strict=False)
    assert machine_state_to_plain(mm.machine_state()) == initial
    assert mm.assignments() == {}
    assert mm.counters.errors <= mm.counters.requests


@settings(max_examples=60, deadline=None)
@given(nodes=nodes_strategy, spec=container_strategy)
def test_allocate_then_remove_restores_exactly(nodes, spec):
    topo, mm = build(nodes)
    before = machine_state_to_plain(mm.machine_state())
    p = make_pod(0, [(spec[0], spec[1], "app")])
    container = p.containers[0]
    hints = mm.get_topology_hints(p, container)
    if not hints:
        return
    best = find_best_hint(hints["memory"])
    mm.allocate(p, container, best)
    after = machine_state_to_plain(mm.machine_state())
    for node_id in best.affinity.bits():
        assert after[node_id]["numberOfAssignments"] == len(hints)
        assert after[node_id]["cells"] == list(best.affinity.bits())
    mm.remove(p.uid, container.name)
    assert machine_state_to_plain(mm.machine_state()) == before


@settings(max_examples=40, deadline=None)
@given(nodes=nodes_strategy, memory=st.integers(min_value=1, max_value=200))
def test_hints_are_consistent(nodes, memory):
    """Every hint fits the free memory; preferred = smallest size that fits allocatable."""
    topo, mm = build(nodes)
    request = memory * 128 * MI
    p = pod([("c", {"memory": "%dMi" % (memory * 128)})])
    hints = mm.get_topology_hints(p, p.containers[0])
    state = mm.machine_state()
    fitting_sizes = []
    allocatable = dict((n, s.memory_map["memory"].allocatable) for n, s in state.items())
    from itertools import combinations
    for size in range(1, len(state) + 1):
        if any(sum(allocatable[n] for n in combo) >= request for combo in combinations(sorted(state), size)):
            fitting_sizes.append(size)
    if not fitting_sizes:
        assert hints == {}
        return
    assert hints and list(hints) == ["memory"]
    for h in hints["memory"]:
        assert sum(state[n].memory_map["memory"].free for n in h.affinity.bits()) >= request
        assert h.preferred == (h.affinity.count() == min(fitting_sizes))
