# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Running pods from manifests / API lists and rebuilt from the state files."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.checkpoint import CPUManagerCheckpoint
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.checkpoint import Block, MemoryManagerCheckpoint
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.running_pods import RunningPodsError, combine, listed_pods, state_pods

GI = 1 << 30


def manifest(name, uid, cpu="1", memory="1Gi", phase=None, limits=True):
    resources = {"requests": {"cpu": cpu, "memory": memory}}
    if limits:
        resources["limits"] = {"cpu": cpu, "memory": memory}
    pod = {"metadata": {"name": name, "namespace": "ns", "uid": uid},
           "spec": {"containers": [{"name": "c", "image": "x", "resources": resources}]}}
    if phase:
        pod["status"] = {"phase": phase}
    return pod


def test_pod_list_k8s_info_and_plain_lists_agree():
    items = [manifest("a", "u1"), manifest("b", "u2", cpu="500m", limits=False), manifest("done", "u3", phase="Succeeded")]
    as_list, inactive = listed_pods({"apiVersion": "v1", "kind": "PodList", "items": items})
    assert inactive == 1
    assert [(p.name, p.requests["cpu"]) for p in as_list] == [("a", 1000), ("b", 500)]
    assert listed_pods({"resources": items, "changed": False})[0] == as_list
    assert listed_pods(items)[0] == as_list
    assert listed_pods(items[0])[0] == as_list[:1]


def test_bad_running_pods_are_named():
    with pytest.raises(RunningPodsError, match=r"running_pods\[1\]: kind 'Deployment' is not a running pod"):
        listed_pods([manifest("a", "u1"), {"kind": "Deployment"}])
    with pytest.raises(RunningPodsError, match="has the uid u1 of"):
        listed_pods([manifest("a", "u1"), manifest("b", "u1")])
    with pytest.raises(RunningPodsError, match=r"running_pods\.items\[0\]: .*cpu"):
        listed_pods({"kind": "PodList", "items": [manifest("a", "u1", cpu="lots")]})


def test_state_files_rebuild_guaranteed_pods():
    cpu = CPUManagerCheckpoint(policy_name="static", default_cpu_set="0,5-7",
                               entries={"p1": {"init": "1-2", "app": "1-2", "side": "3"}, "p2": {"c": "4"}})
    mem = MemoryManagerCheckpoint(policy_name="Static", entries={
        "p1": {"app": [Block((0,), "memory", 2 * GI), Block((0,), "hugepages-1Gi", GI)]}})
    devices = {"p3": {"c": {"nvidia.com/gpu": ["g0", "g1"]}}}
    pods = dict((p.uid, p) for p in state_pods(cpu, mem, devices))
    assert pods["p1"].requests == {"cpu": 3000, "memory": 2 * GI, "hugepages-1Gi": GI}
    assert pods["p1"].sources == ("cpu_manager_state", "memory_manager_state")
    assert pods["p2"].requests == {"cpu": 1000}
    assert pods["p3"].requests == {"nvidia.com/gpu": 2} and not pods["p3"].complete


def test_combine_prefers_manifests_and_keeps_unlisted_state_pods():
    cpu = CPUManagerCheckpoint(policy_name="static", default_cpu_set="", entries={"u1": {"c": "1"}, "gone": {"c": "2"}})
    listed, inactive = listed_pods([manifest("a", "u1", cpu="1", memory="3Gi")])
    running = combine(listed, state_pods(cpu, None, None), inactive, ["cpu_manager_state"])
    assert running.count == 2
    assert running.requested() == {"cpu": 2000, "memory": 3 * GI}
    assert running.sources == ["running_pods", "cpu_manager_state"]
    assert "not in running_pods (uids gone)" in running.warnings[0]
    only_state = combine(None, state_pods(cpu, None, None))
    assert only_state.count == 2 and "state files only" in only_state.warnings[0]
    assert only_state.to_dict()["requested"] == {"cpu": 2000}
