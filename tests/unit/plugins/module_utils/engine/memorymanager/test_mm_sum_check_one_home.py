# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""validateReservedMemory's per-type comparison has one home (memory_type_sum_check): the engine's
start-up raises its message, the validator (_reservation) words its finding around the same one."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.reserved import (
    MemoryReservation,
    ReservedMemoryError,
    memory_type_sum_check,
    validate_reserved_memory,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import parse_quantity
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import evaluate

GI = 1 << 30


def test_equal_sides_whatever_their_format():
    reserved, wanted, message = memory_type_sum_check("memory", parse_quantity("1Gi"), parse_quantity("1073741824"))
    assert message is None and reserved == wanted


def test_a_missing_side_is_zero_and_the_message_is_the_kubelets():
    assert memory_type_sum_check("hugepages-2Mi", parse_quantity("512Mi"), None)[2] == (
        'the total amount "512Mi" of type "hugepages-2Mi" is not equal to the value "0" determined by Node '
        'Allocatable feature')


def test_engine_and_validator_carry_the_same_message():
    reservations = [MemoryReservation(0, (("memory", parse_quantity("1Gi")),))]
    with pytest.raises(ReservedMemoryError) as raised:
        validate_reserved_memory([0], {"memory": parse_quantity("1124Mi")}, reservations)
    topo = Topology(nodes=(NumaNode(id=0, cpus=(0, 1), memory_total_bytes=16 * GI, memory_free_bytes=GI),))
    result = evaluate(topo, kube_reserved="memory=1Gi", reserved_memory="0:memory=1Gi",
                      memory_manager_policy="Static").to_dict()
    finding = [f for f in result["findings"] if f["rule"] == "reserved-memory-sum"][0]
    assert finding["kubelet_message"] == str(raised.value)
    assert finding["message"].startswith(str(raised.value) + " (memory: reservedMemory 1Gi (node 0)")
