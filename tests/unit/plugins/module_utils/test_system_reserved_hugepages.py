# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""SystemReservedHugepages (KEP-6252, alpha in kubelet 1.38): hugepages in kube/systemReserved count
in the Node Allocatable reservation, so a hugepages reservedMemory entry can balance. Pairs of
tests with the gate on and off, through the one model (validator and engine alike)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.memory_manager import (
    system_reserved_from_config,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.node_allocatable import reservation_from_config
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import (
    ReservationSyntaxError,
    parse_resource_map,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import HugePages, NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import validate_reservation

GI = 1 << 30
MI = 1 << 20
GATE = "SystemReservedHugepages"


def _topology():
    pools = {"hugepages-2Mi": HugePages(page_size_bytes=2 * MI, total_pages=512, free_pages=512)}
    return Topology(nodes=(NumaNode(id=0, cpus=(0, 1), memory_total_bytes=16 * GI, memory_free_bytes=GI, hugepages=pools),
                           NumaNode(id=1, cpus=(2, 3), memory_total_bytes=16 * GI, memory_free_bytes=GI, hugepages={})))


def _kubelet(gate):
    return KubeletAssumption((1, 38, 0), "option", {GATE: True} if gate else {})


SETTINGS = dict(kube_reserved="memory=1Gi,hugepages-2Mi=512Mi", memory_manager_policy="Static",
                reserved_memory="0:memory=1124Mi,hugepages-2Mi=512Mi")


def test_gate_on_hugepages_reservation_balances():
    result = validate_reservation(_topology(), kubelet=_kubelet(True), **SETTINGS)
    assert result.valid, [str(f) for f in result.errors]
    hugepages = result.totals["hugepages-2Mi"]
    assert hugepages["balanced"] and hugepages["node_allocatable"] == "512Mi"
    assert hugepages["equation"] == ("hugepages-2Mi: reservedMemory 512Mi (node 0) = 512Mi; Node Allocatable "
                                     "kube-reserved 512Mi = 512Mi: balanced")
    assert result.totals["memory"]["node_allocatable"] == "1124Mi"  # eviction never holds hugepages


def test_gate_off_kube_reserved_refuses_hugepages():
    result = validate_reservation(_topology(), kubelet=_kubelet(False), **SETTINGS)
    assert not result.valid
    assert result.errors[0].rule == "kube-reserved-syntax"
    assert result.errors[0].kubelet_message == 'cannot reserve "hugepages-2Mi" resource'


def test_gate_default_off_in_1_38_and_unknown_before():
    assert not _kubelet(False).enabled(GATE)
    assert not KubeletAssumption((1, 37, 0), "option").enabled(GATE)


def test_gate_on_unbalanced_hugepages_is_a_sum_error():
    result = validate_reservation(_topology(), kubelet=_kubelet(True), kube_reserved="memory=1Gi,hugepages-2Mi=512Mi",
                                  memory_manager_policy="Static", reserved_memory="0:memory=1124Mi,hugepages-2Mi=256Mi")
    rules = [f.rule for f in result.errors]
    assert rules == ["reserved-memory-sum"]
    assert result.errors[0].kubelet_message == ('the total amount "256Mi" of type "hugepages-2Mi" is not equal to the '
                                                'value "512Mi" determined by Node Allocatable feature')


def test_gate_off_hugepages_entry_never_balances():
    result = validate_reservation(_topology(), kubelet=_kubelet(False), kube_reserved="memory=1Gi",
                                  memory_manager_policy="Static", reserved_memory="0:memory=1124Mi,hugepages-2Mi=512Mi")
    assert [f.rule for f in result.errors] == ["reserved-memory-hugepages"]


def test_gate_on_reservation_beyond_the_pool_fails_node_allocatable():
    result = validate_reservation(_topology(), kubelet=_kubelet(True), kube_reserved="memory=1Gi,hugepages-2Mi=2Gi",
                                  memory_manager_policy="Static", reserved_memory="0:memory=1124Mi,hugepages-2Mi=2Gi")
    assert "node-allocatable-capacity" in [f.rule for f in result.errors]


@pytest.mark.parametrize("value", ["hugepages-2Mi=3Mi", "hugepages-2Mi=1.5Mi", "hugepages-x=2Mi"])
def test_gate_on_needs_whole_pages(value):
    with pytest.raises(ReservationSyntaxError):
        parse_resource_map(value, "kube_reserved", hugepages=True)


def test_engine_pair():
    config = {"kubeReserved": {"memory": "1Gi", "hugepages-2Mi": "512Mi"}, "memoryManagerPolicy": "Static",
              "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi", "hugepages-2Mi": "512Mi"}}]}
    reserved = system_reserved_from_config(_topology(), config, feature_gates={GATE: True})
    assert reserved[0] == {"memory": 1124 * MI, "hugepages-2Mi": 512 * MI}
    with pytest.raises(StateError) as err:
        system_reserved_from_config(_topology(), config, feature_gates={})
    assert 'cannot reserve "hugepages-2Mi" resource' in str(err.value)
    totals = reservation_from_config(config, ["memory", "hugepages-2Mi"], 32 * GI, feature_gates={GATE: True})
    assert str(totals["hugepages-2Mi"]) == "512Mi" and str(totals["memory"]) == "1124Mi"


@pytest.mark.parametrize("gate, ok", [(True, True), (False, False)])
def test_kubelet_config_settings_pair(gate, ok):
    from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults
    from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.settings import validate_settings
    settings = {"kubeReserved": {"memory": "1Gi", "hugepages-2Mi": "512Mi"}}
    effective = dict(kubelet_defaults(), **settings)
    if gate:
        effective["featureGates"] = {GATE: True}
    errors, _warnings = validate_settings(settings, effective, kubelet_version="1.38.0")
    reserve_errors = [e for e in errors if e.startswith("kubeReserved.hugepages-2Mi")]
    assert (reserve_errors == []) is ok, errors
