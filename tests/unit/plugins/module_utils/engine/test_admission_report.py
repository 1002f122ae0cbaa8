# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fleet report of admission_check results (the filter is tested in tests/unit/plugins/filter)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._report.admission import AdmissionReportError, admission_report, describe_pod

ADMITTED = {"name": "db", "namespace": "shop", "admitted": True, "reason": "", "message": "", "numa_nodes": [1],
            "containers": [{"name": "c", "cpus": "4-5", "devices": {"nvidia.com/gpu": ["gpu1"]},
                            "memory_blocks": [{"type": "memory", "size": 8 << 30, "numa_affinity": [1]},
                                              {"type": "hugepages-2Mi", "size": 3 << 20, "numa_affinity": [1]}]}]}
REJECTED = {"name": "db", "namespace": "shop", "admitted": False, "reason": "TopologyAffinityError",
            "message": "Resources cannot be allocated with Topology locality", "numa_nodes": [], "containers": []}
PLAIN = {"name": "web", "namespace": "default", "admitted": True, "reason": "", "message": "", "numa_nodes": [],
         "containers": [{"name": "c", "cpus": "", "memory_blocks": [], "devices": {}}]}


def test_describe_pod():
    assert describe_pod(ADMITTED) == ("shop/db admitted on NUMA 1 (cpus 4-5; 3Mi hugepages-2Mi on 1; "
                                      "8Gi memory on 1; nvidia.com/gpu gpu1)")
    assert describe_pod(REJECTED) == ("shop/db rejected: TopologyAffinityError: Resources cannot be allocated "
                                      "with Topology locality")
    assert describe_pod(PLAIN) == "default/web admitted (no exclusive CPUs, NUMA memory or aligned devices)"


def test_an_unaligned_admission_says_which_policies_and_qos_left_it_unaligned():
    node = {"cpu_manager_policy": "none", "memory_manager_policy": "None", "topology_manager_policy": "none"}
    assert describe_pod(dict(PLAIN, qos_class="Guaranteed"), node) == (
        "default/web admitted without NUMA alignment (Guaranteed pod; CPU/Memory/Topology Manager policies "
        "none/None/none)")
    static = {"cpu_manager_policy": "static", "memory_manager_policy": "Static", "topology_manager_policy": "restricted"}
    assert describe_pod(dict(PLAIN, qos_class="Burstable"), static) == (
        "default/web admitted without NUMA alignment (Burstable pod; CPU/Memory/Topology Manager policies "
        "static/Static/restricted)")
    assert describe_pod(ADMITTED, node).startswith("shop/db admitted on NUMA 1 (")  # aligned: placement, not policies


def test_report_statuses_and_lines():
    results = {
        "h1": {"changed": False, "pods": [ADMITTED]},
        "h2": {"changed": False, "pods": [REJECTED]},
        "h3": {"failed": True, "msg": "could not restore state from checkpoint: checkpoint is corrupted"},
        "h4": None,
        "h5": {"changed": False, "pods": [PLAIN, REJECTED]},
    }
    report = admission_report(results, ["h1", "h2", "h3", "h4", "h5"], active=["h1", "h2", "h3", "h5"])
    assert report["admitted"] == ["h1"]
    assert report["rejected"] == ["h2", "h5"]
    assert report["errors"] == ["h3", "h4"]
    assert report["hosts"]["h4"]["error"] == "unreachable or failed before the check"
    assert report["lines"][0] == "admitted on 1 of 5 host(s): h1 (NUMA 1)"
    assert "h3: cannot check: could not restore state from checkpoint: checkpoint is corrupted" in report["lines"]
    assert "h5: default/web admitted (no exclusive CPUs, NUMA memory or aligned devices)" in report["lines"]


def test_rejection_is_explained():
    merge = {"containers": ["c"], "merged_hint": {"numa_affinity": [0, 1], "preferred": False},
             "hints": {"cpu": {"cpu": [{"numa_affinity": [0], "preferred": True}]},
                       "memory": {"memory": [{"numa_affinity": [0, 1], "preferred": True}]}}}
    pod = dict(REJECTED, merges=[merge])
    assert describe_pod(pod) == (
        "shop/db rejected: TopologyAffinityError: Resources cannot be allocated with Topology locality "
        "(container(s) c: cpu: preferred [0]; memory: preferred [0,1] -> best [0,1] not preferred)")


def test_report_bad_input():
    with pytest.raises(AdmissionReportError):
        admission_report([], ["h1"])


def test_resize_lines():
    base = {"name": "web", "namespace": "shop", "numa_nodes": [], "containers": []}
    infeasible = dict(base, admitted=False, verdict="rejected", reason="Infeasible",
                      message='Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"',
                      resize={"verdict": "infeasible", "kubelet_version": "1.37", "reason": "Infeasible",
                              "of": {"uid": "u-1", "namespace": "shop", "name": "web"},
                              "message": 'Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"'})
    assert describe_pod(infeasible) == ('shop/web resize of shop/web: infeasible (kubelet 1.37): Infeasible: Resize is '
                                        'infeasible for Guaranteed Pods alongside CPU Manager policy "static"')
    feasible = dict(base, admitted=True, verdict="admitted", reason="", message="",
                    resize={"verdict": "feasible", "kubelet_version": "1.37", "reason": None, "message": None,
                            "of": {"uid": "u-1"}})
    assert describe_pod(feasible) == ("shop/web resize of uid u-1: feasible (kubelet 1.37), fits (the managers' "
                                      "re-allocation is not simulated)")
    too_big = dict(feasible, admitted=False, verdict="rejected", reason="OutOfcpu", message="Node didn't ...")
    assert describe_pod(too_big) == ("shop/web resize of uid u-1: feasible (kubelet 1.37), does not fit: OutOfcpu: "
                                     "Node didn't ...")
    report = admission_report({"h1": {"pods": [infeasible]}}, ["h1"])
    assert report["rejected"] == ["h1"]
    assert report["hosts"]["h1"]["pods"][0]["resize"]["verdict"] == "infeasible"
    assert report["lines"][1].startswith("h1: shop/web resize of shop/web: infeasible")
