# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""reserved_memory_check decides for the host's kubelet release and feature gates (issue 9 audit):
kubelet_version picks the wording, kubelet_config featureGates the gates, and every result says
which version and gates it assumed."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_check import reserved_memory_check

GI = 1 << 30
FACTS = {
    "nodes": [
        {"id": 0, "cpus": [0, 1], "memory_total_bytes": 16 * GI, "memory_free_bytes": GI,
         "hugepages": {"hugepages-1Gi": {"page_size_bytes": GI, "total_pages": 4, "free_pages": 4}}},
    ],
    "system": {"memory_total_bytes": 16 * GI},
}
OVER = {"memoryManagerPolicy": "Static", "kubeReserved": {"memory": "20Gi"},
        "reservedMemory": [{"numaNode": 0, "limits": {"memory": "20580Mi"}}]}
DEFAULT_WARNING = ("kubelet version unknown (no kubelet_version given; set kubelet_numa_kubelet_version for the host): "
                   "decisions follow kubelet 1.37, the newest released kubelet this collection knows")


def _capacity(result):
    return [f for f in result["findings"] if f["rule"] == "node-allocatable-capacity"][0]["kubelet_message"]


def test_capacity_wording_follows_the_kubelet_version():
    old = reserved_memory_check(FACTS, kubelet_config=OVER, kubelet_version="1.28")
    new = reserved_memory_check(FACTS, kubelet_config=OVER, kubelet_version="v1.37.1")
    # kubernetes/kubernetes#119764 (1.30) rewrote validateNodeAllocatable's message
    assert "has an allocatable of" in _capacity(old) and "Expected capacity" not in _capacity(old)
    assert "has a reservation of" in _capacity(new) and "Expected capacity >= reservation." in _capacity(new)
    assert (old["kubelet_version"], old["kubelet_version_source"]) == ("1.28", "option")
    assert (new["kubelet_version"], new["kubelet_version_source"]) == ("v1.37.1", "option")
    assert DEFAULT_WARNING not in old["warnings"]


def test_no_version_assumes_the_newest_released_with_the_modules_warning():
    result = reserved_memory_check(FACTS, kubelet_config=OVER)
    assert (result["kubelet_version"], result["kubelet_version_source"]) == ("1.37", "default")
    assert result["warnings"][0] == DEFAULT_WARNING
    assert result["kubelet_warnings"] == [DEFAULT_WARNING]  # about the kubelet assumed, not the settings
    assert "Expected capacity >= reservation." in _capacity(result)
    assert reserved_memory_check(FACTS, kubelet_config=OVER, kubelet_version="")["kubelet_version_source"] == "default"


HUGE = {"memoryManagerPolicy": "Static", "systemReserved": {"memory": "1Gi", "hugepages-1Gi": "2Gi"},
        "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi", "hugepages-1Gi": "2Gi"}}]}


def test_system_reserved_hugepages_gate_from_feature_gates_balances_a_hugepage_entry():
    on = reserved_memory_check(FACTS, kubelet_config=dict(HUGE, featureGates={"SystemReservedHugepages": True}),
                               kubelet_version="1.38")
    assert on["valid"], on["errors"]
    assert on["feature_gates"]["SystemReservedHugepages"] is True
    assert on["feature_gates_set"] == {"SystemReservedHugepages": True}
    assert on["totals"]["hugepages-1Gi"]["balanced"] and on["totals"]["hugepages-1Gi"]["node_allocatable"] == "2Gi"
    off = reserved_memory_check(FACTS, kubelet_config=HUGE, kubelet_version="1.38")
    assert not off["valid"]
    assert any(e.startswith("[system-reserved-syntax]") and 'cannot reserve "hugepages-1Gi"' in e for e in off["errors"])
    assert off["feature_gates"]["SystemReservedHugepages"] is False and off["feature_gates_set"] == {}


def test_equation_only_keeps_the_assumption():
    result = reserved_memory_check(None, kubelet_config=OVER, kubelet_version="1.30")
    assert result["equation_only"] and result["kubelet_version"] == "1.30"
    assert DEFAULT_WARNING in reserved_memory_check(None, kubelet_config=OVER)["warnings"]


def test_bad_version_is_named():
    with pytest.raises(AnsibleFilterError, match=r"reserved_memory_check: kubelet_version: 'nope' is not a Kubernetes"):
        reserved_memory_check(FACTS, kubelet_config=OVER, kubelet_version="nope")
    report = reserved_memory_check(FACTS, kubelet_config=OVER, kubelet_version="1.20", errors="report")
    assert not report["valid"] and "older than the oldest release" in report["input_error"]
