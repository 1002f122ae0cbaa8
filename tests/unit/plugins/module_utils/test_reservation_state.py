# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""State drift: will the kubelet accept the existing memory_manager_state with this config/topology?"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.checkpoint import (
    Block,
    MemoryManagerCheckpoint,
    dump_memory_manager_state,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.machine_state import (
    default_machine_state,
    machine_state_to_plain,
    reserve,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import validate_reservation

GI = 1 << 30
WORKED = dict(kube_reserved="memory=4Gi", system_reserved="memory=1Gi", memory_manager_policy="Static",
              reserved_memory="0:memory=3Gi;1:memory=2148Mi")
RESERVED = {0: {"memory": 3 * GI}, 1: {"memory": 2148 << 20}}
FIX = ("drain the node, stop the kubelet, move /var/lib/kubelet/memory_manager_state away (keep it as a backup), "
       "start the kubelet, uncordon (the rollout role's state handling does this)")


def topo(mem0=16 * GI):
    return Topology(nodes=(NumaNode(0, (0, 1), mem0, GI), NumaNode(1, (2, 3), 16 * GI, GI)))


def state_text(topology, reserved, with_pod=True, policy="Static", version=1):
    machine = default_machine_state(topology, reserved)
    entries = {}
    if with_pod:
        reserve(machine, [0], "memory", 2 * GI)
        machine[0].number_of_assignments = 1
        entries = {"pod-uid-1": {"c1": [Block((0,), "memory", 2 * GI)]}}
    cp = MemoryManagerCheckpoint(policy_name=policy, machine_state=machine_state_to_plain(machine), entries=entries)
    return dump_memory_manager_state(cp, version)


def check(text, topology=None, **overrides):
    args = dict(WORKED)
    args.update(overrides)
    return validate_reservation(topology or topo(), memory_manager_state=text,
                                state_file="/var/lib/kubelet/memory_manager_state", **args)


def test_unchanged_state_is_accepted():
    for version in (1, 3):
        result = check(state_text(topo(), RESERVED, version=version))
        assert result.valid, [str(e) for e in result.errors]
        assert result.state["accepted"] is True


def test_reboot_drift_of_node_memory_is_predicted():
    text = state_text(topo(), RESERVED)
    result = check(text, topology=topo(mem0=16 * GI - 4096))
    assert not result.valid
    finding = result.errors[0]
    assert finding.rule == "state-drift"
    assert finding.kubelet_message == "[memorymanager] the expected machine state is different from the real one"
    assert finding.message == (
        "[memorymanager] the expected machine state is different from the real one (node 0 memory total: 17179869184 "
        "in the state, 17179865088 now (-4Ki: node memory changed, typically by KiBs to MiBs after a reboot or kernel "
        "update)): the kubelet will refuse to start with /var/lib/kubelet/memory_manager_state.")
    assert finding.fix == FIX


def test_changed_reservation_is_predicted():
    text = state_text(topo(), RESERVED)
    result = check(text, reserved_memory="0:memory=2Gi;1:memory=3172Mi")
    assert result.state["differences"] == [
        "node 0 memory systemReserved: 3221225472 in the state, 2147483648 now (-1Gi: reservedMemory changed)",
        "node 1 memory systemReserved: 2252341248 in the state, 3326083072 now (+1Gi: reservedMemory changed)"]


def test_policy_mismatch_uses_kubelet_wording():
    result = check(state_text(topo(), {}, with_pod=False, policy="None"))
    assert result.errors[0].message == (
        'could not restore state from checkpoint: [memorymanager] configured policy "Static" differs from state '
        'checkpoint policy "None", please drain this node and delete the memory manager checkpoint file '
        '"/var/lib/kubelet/memory_manager_state" before restarting Kubelet')


def test_corrupted_checksum():
    text = state_text(topo(), RESERVED).replace('"numberOfAssignments":1', '"numberOfAssignments":2')
    result = check(text)
    assert result.errors[0].message == (
        'could not restore state from checkpoint: checkpoint is corrupted, please drain this node and delete the '
        'memory manager checkpoint file "/var/lib/kubelet/memory_manager_state" before restarting Kubelet')


def test_fresh_none_state_under_none_policy_is_fine():
    text = '{"policyName":"None","machineState":{},"checksum":4236770233}'
    result = check(text, memory_manager_policy="None")
    assert result.state["accepted"] and not [e for e in result.errors if e.rule == "state-drift"]


def test_empty_machine_state_with_assignments_is_refused():
    cp = MemoryManagerCheckpoint(policy_name="Static", machine_state={},
                                 entries={"p": {"c": [Block((0,), "memory", GI)]}})
    result = check(dump_memory_manager_state(cp, 1))
    assert result.errors[0].message == "[memorymanager] machine state can not be empty when it has memory assignments" \
        ": the kubelet will refuse to start with /var/lib/kubelet/memory_manager_state."
