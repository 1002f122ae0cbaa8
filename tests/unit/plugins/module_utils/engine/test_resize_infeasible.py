# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""In-place resize of Guaranteed pods under the static CPU / Static memory managers.

Upstream: pkg/kubelet/allocation ``podResizesAdmitHandler.Admit`` (older: ``canResizePod``)
and ``guaranteedPodResourceResizeRequired``; the message and the metric label are the
kubelet's (its unit test expects the condition PodResizePending / Infeasible with this text).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.allocation import (
    infeasible_resize_message,
    resize_infeasible,
    resize_not_allowed,
    resources_changed,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import effective_gates

CPU_MESSAGE = 'Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"'
MEMORY_MESSAGE = 'Resize is infeasible for Guaranteed Pods alongside Memory Manager policy "Static"'


def pod(cpu="1", memory="1Gi", sidecar_cpu=None, limits=True):
    def resources(c, m):
        values = {"cpu": c, "memory": m}
        return {"requests": dict(values), "limits": dict(values)} if limits else {"requests": dict(values)}
    spec = {"containers": [{"name": "app", "image": "x", "resources": resources(cpu, memory)}]}
    if sidecar_cpu is not None:
        spec["initContainers"] = [{"name": "proxy", "image": "x", "restartPolicy": "Always",
                                   "resources": resources(sidecar_cpu, "128Mi")}]
    return Pod.from_manifest({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}, "spec": spec})


def test_the_message_function_is_the_kubelets_text():
    assert infeasible_resize_message("CPU Manager", "static") == CPU_MESSAGE
    assert infeasible_resize_message("Memory Manager", "Static") == MEMORY_MESSAGE


@pytest.mark.parametrize("release", [(1, 33), (1, 36), (1, 37)])
def test_cpu_resize_of_a_guaranteed_pod_is_infeasible_under_static_with_default_gates(release):
    gates = effective_gates(release)
    assert gates["InPlacePodVerticalScalingExclusiveCPUs"] is False
    assert resize_infeasible(pod("1"), pod("2"), "static", "None", gates) == (
        "Infeasible", CPU_MESSAGE, "guaranteed_pod_cpu_manager_static_policy")


def test_the_exclusive_cpus_gate_lets_the_cpu_resize_through():
    gates = effective_gates((1, 37), {"InPlacePodVerticalScalingExclusiveCPUs": True})
    assert resize_infeasible(pod("1"), pod("2"), "static", "None", gates) is None
    # AllAlpha switches the alpha gate on too
    assert resize_infeasible(pod("1"), pod("2"), "static", "None", effective_gates((1, 37), {"AllAlpha": True})) is None


@pytest.mark.parametrize("allocated, desired, cpu_policy, expected", [
    (pod("1"), pod("2"), "none", None),                       # no exclusive CPUs: resizable
    (pod("1"), pod("1000m"), "static", None),                 # same quantity written otherwise
    (pod("1", "1Gi"), pod("1", "2Gi"), "static", None),       # memory only, memory manager None
    (pod("1", limits=False), pod("2", limits=False), "static", None),   # Burstable pod
    (pod("1", sidecar_cpu="1"), pod("1", sidecar_cpu="2"), "static", CPU_MESSAGE),  # a sidecar counts
])
def test_only_a_cpu_request_change_of_a_guaranteed_pod_under_static_is_refused(allocated, desired, cpu_policy,
                                                                               expected):
    result = resize_infeasible(allocated, desired, cpu_policy, "None", effective_gates((1, 37)))
    assert (result[1] if result else None) == expected


def test_memory_rule_follows_its_own_gate_and_comes_after_the_cpu_rule():
    gates = effective_gates((1, 37))
    assert resize_infeasible(pod("1", "1Gi"), pod("1", "2Gi"), "static", "Static", gates)[1] == MEMORY_MESSAGE
    assert resize_infeasible(pod("1", "1Gi"), pod("2", "2Gi"), "static", "Static", gates)[1] == CPU_MESSAGE
    memory_gate = effective_gates((1, 37), {"InPlacePodVerticalScalingExclusiveMemory": True})
    assert resize_infeasible(pod("1", "1Gi"), pod("1", "2Gi"), "static", "Static", memory_gate) is None


LEGACY_CPU = "Resize is infeasible for Guaranteed Pods alongside CPU Manager static policy"
LEGACY_MEMORY = "Resize is infeasible for Guaranteed Pods alongside Memory Manager static policy"


def test_before_1_32_there_is_no_rule_for_guaranteed_pods():
    gates = effective_gates((1, 31), {"InPlacePodVerticalScaling": True})
    assert resize_infeasible(pod("1"), pod("2"), "static", "Static", gates, minor=31) is None


@pytest.mark.parametrize("minor", [32, 33])
def test_1_32_and_1_33_refuse_any_resize_with_the_old_wording_behind_the_cpu_gate(minor):
    gates = effective_gates((1, minor))
    # a memory-only resize is refused for the CPU manager, as canResizePod did
    assert resize_infeasible(pod("1", "1Gi"), pod("1", "2Gi"), "static", "None", gates, minor=minor) == (
        "Infeasible", LEGACY_CPU, None)
    assert resize_infeasible(pod("1", "1Gi"), pod("2", "1Gi"), "none", "Static", gates, minor=minor) == (
        "Infeasible", LEGACY_MEMORY, None)
    # the exclusive-CPU gate lifts both; no resize at all is no refusal
    cpus = effective_gates((1, minor), {"InPlacePodVerticalScalingExclusiveCPUs": True})
    assert resize_infeasible(pod("1", "1Gi"), pod("1", "2Gi"), "static", "Static", cpus, minor=minor) is None
    assert resize_infeasible(pod("1"), pod("1000m"), "static", "Static", gates, minor=minor) is None


def test_from_1_34_the_wording_quotes_the_policy_and_only_the_resized_resource_counts():
    gates = effective_gates((1, 34))
    assert infeasible_resize_message("CPU Manager", "static", 33) == LEGACY_CPU
    assert infeasible_resize_message("CPU Manager", "static", 34) == CPU_MESSAGE
    assert resize_infeasible(pod("1", "1Gi"), pod("1", "2Gi"), "static", "None", gates, minor=34) is None


def test_resources_changed_compares_requests_and_limits_by_value():
    assert not resources_changed(pod("1"), pod("1000m"))
    assert resources_changed(pod("1"), pod("1", limits=False))
    assert resources_changed(pod("1", sidecar_cpu="1"), pod("1", sidecar_cpu="2"))


def test_resize_not_allowed_gate_then_static_pod():
    assert resize_not_allowed({"InPlacePodVerticalScaling": False}, True) == (
        "Infeasible", "InPlacePodVerticalScaling is disabled", "feature_gate_off")
    assert resize_not_allowed({"InPlacePodVerticalScaling": True}, True) == (
        "Infeasible", "In-place resize of static-pods is not supported", "static_pod")
    assert resize_not_allowed({"InPlacePodVerticalScaling": True}, False) is None


@given(old=st.integers(min_value=1, max_value=64000), new=st.integers(min_value=1, max_value=64000),
       minor=st.sampled_from([32, 33, 34, 35, 36, 37, 38]))
def test_a_guaranteed_cpu_resize_under_static_is_refused_exactly_when_the_request_changes(old, new, minor):
    gates = effective_gates((1, minor))
    outcome = resize_infeasible(pod("%dm" % old), pod("%dm" % new), "static", "None", gates, minor=minor)
    assert (outcome is not None) == (old != new)
    if outcome is not None:
        assert outcome[1] == (LEGACY_CPU if minor < 34 else CPU_MESSAGE)
