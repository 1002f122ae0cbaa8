# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kubelet's resource-fit admission: node allocatable, fit order, reasons and messages.

Reasons and message format follow pkg/kubelet/lifecycle/predicate.go (OutOf<resource>,
"Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d") and the order of
pkg/scheduler/framework/plugins/noderesources/fit.go fitsRequest (pods, cpu, memory,
ephemeral-storage, scalar resources).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.resource_fit import ResourceFit, ResourceFitError, node_allocatable
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology

GI = 1 << 30


def topo(cpus=4, memory=16 * GI, hugepages=None):
    node = {"id": 0, "cpus": list(range(cpus)), "memory_total_bytes": memory, "memory_free_bytes": memory,
            "hugepages": hugepages or {}, "distances": {"0": 10}}
    return Topology.from_facts({"nodes": [node]})


def test_allocatable_subtracts_reservations_eviction_and_hugepages():
    t = topo(8, 64 * GI, {"hugepages-1Gi": {"page_size_bytes": GI, "total_pages": 4, "free_pages": 4}})
    alloc = node_allocatable(t, {"kubeReserved": {"cpu": "500m", "memory": "1Gi"},
                                 "systemReserved": {"cpu": "500m", "memory": "1Gi"}})
    assert alloc["cpu"] == 7000
    # 64Gi - 2Gi reserved - 100Mi default hard eviction - 4Gi of 1Gi pages
    assert alloc["memory"] == 64 * GI - 2 * GI - 100 * (1 << 20) - 4 * GI
    assert alloc["hugepages-1Gi"] == 4 * GI
    assert alloc["pods"] == 110


def test_reserved_system_cpus_replace_the_cpu_reservation_and_pods_per_core():
    alloc = node_allocatable(topo(8), {"reservedSystemCPUs": "0-1", "kubeReserved": {"cpu": "3"},
                                       "maxPods": 20, "podsPerCore": 2})
    assert alloc["cpu"] == 6000
    assert alloc["pods"] == 16


def test_overrides_and_bad_values():
    alloc = node_allocatable(topo(), {}, overrides={"ephemeral-storage": "10Gi", "cpu": "3500m"})
    assert alloc["ephemeral-storage"] == 10 * GI and alloc["cpu"] == 3500
    with pytest.raises(ResourceFitError, match="maxPods must be an integer"):
        node_allocatable(topo(), {"maxPods": "many"})
    with pytest.raises(ResourceFitError, match="node_allocatable.cpu: invalid quantity"):
        node_allocatable(topo(), {}, overrides={"cpu": "lots"})


def test_out_of_cpu_with_the_kubelet_message():
    fit = ResourceFit(node_allocatable(topo(4), {}))
    result = fit.check({"cpu": 8000, "memory": GI})
    assert not result["fits"]
    assert result["reason"] == "OutOfcpu"
    assert result["message"] == "Node didn't have enough resource: cpu, requested: 8000, used: 0, capacity: 4000"
    assert [i["reason"] for i in result["insufficient"]] == ["Insufficient cpu"]


def test_missing_hugepage_size_is_out_of_hugepages():
    fit = ResourceFit(node_allocatable(topo(4), {}))
    result = fit.check({"cpu": 1000, "hugepages-1Gi": 4 * GI})
    assert result["reason"] == "OutOfhugepages-1Gi"
    assert result["message"] == ("Node didn't have enough resource: hugepages-1Gi, requested: 4294967296, "
                                 "used: 0, capacity: 0")


def test_pods_count_comes_first():
    fit = ResourceFit({"cpu": 1000, "memory": GI, "pods": 2}, used={"cpu": 500}, pod_count=2)
    result = fit.check({"cpu": 1000})
    assert result["reason"] == "OutOfpods"
    assert result["message"] == "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"
    assert [i["resource"] for i in result["insufficient"]] == ["pods", "cpu"]
    assert result["insufficient"][0]["reason"] == "Too many pods"


def test_used_counts_and_add():
    fit = ResourceFit({"cpu": 4000, "memory": 4 * GI, "pods": 110})
    assert fit.check({"cpu": 3000})["fits"]
    fit.add({"cpu": 3000})
    result = fit.check({"cpu": 2000})
    assert result["message"] == "Node didn't have enough resource: cpu, requested: 2000, used: 3000, capacity: 4000"


def test_extended_resources_unknown_dropped_or_checked():
    unknown = ResourceFit({"cpu": 4000, "memory": GI, "pods": 110})
    result = unknown.check({"cpu": 1000, "example.com/gpu": 1})
    assert result["fits"] and [u["resource"] for u in result["unchecked"]] == ["example.com/gpu"]
    known = ResourceFit({"cpu": 4000, "memory": GI, "pods": 110, "nvidia.com/gpu": 1}, extended_known=True)
    assert known.check({"example.com/fpga": 1})["dropped"] == ["example.com/fpga"]
    assert known.check({"example.com/fpga": 1})["unchecked"] == []
    result = known.check({"nvidia.com/gpu": 2})
    assert result["reason"] == "OutOfnvidia.com/gpu"


def test_ephemeral_storage_unknown_unless_given():
    fit = ResourceFit({"cpu": 4000, "memory": GI, "pods": 110})
    assert [u["resource"] for u in fit.check({"ephemeral-storage": GI})["unchecked"]] == ["ephemeral-storage"]
    fit = ResourceFit({"cpu": 4000, "memory": GI, "pods": 110, "ephemeral-storage": GI})
    assert fit.check({"ephemeral-storage": 2 * GI})["reason"] == "OutOfephemeral-storage"


def test_several_failing_scalars_are_flagged_as_random():
    fit = ResourceFit({"cpu": 4000, "memory": GI, "pods": 110})
    result = fit.check({"hugepages-1Gi": GI, "hugepages-2Mi": 2 << 20})
    assert result["reason"] == "OutOfhugepages-1Gi"
    assert "Go map order" in result["note"]


@given(st.integers(0, 64), st.integers(0, 64000), st.integers(0, 64000))
def test_fit_is_exactly_requested_le_free(cpus, used, requested):
    fit = ResourceFit({"cpu": cpus * 1000, "memory": GI, "pods": 110}, used={"cpu": used})
    result = fit.check({"cpu": requested})
    assert result["fits"] == (requested == 0 or requested <= cpus * 1000 - used)
