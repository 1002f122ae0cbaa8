# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_host/resize.py: which running pod a manifest resizes, and the resize handler's verdict."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.resize import (
    find_resized,
    is_static_pod,
    judge_resize,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.running_pods import (
    combine,
    listed_pods,
    state_pods,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption

CPU_MESSAGE = 'Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"'


def manifest(name, uid=None, cpu="1", memory="1Gi", namespace="default", phase=None, annotations=None):
    meta = {"name": name, "namespace": namespace}
    if uid:
        meta["uid"] = uid
    if annotations:
        meta["annotations"] = annotations
    values = {"cpu": cpu, "memory": memory}
    document = {"apiVersion": "v1", "kind": "Pod", "metadata": meta,
                "spec": {"containers": [{"name": "c", "image": "x",
                                         "resources": {"requests": dict(values), "limits": dict(values)}}]}}
    if phase:
        document["status"] = {"phase": phase}
    return document


def running_of(listed=None, cpu_state=None, memory_state=None):
    pods = None if listed is None else listed_pods(listed)[0]
    return combine(pods, state_pods(cpu_state, memory_state), 0, ["cpu_manager_state"])


def find(desired, listed=None, cpu_state=None, memory_state=None):
    running = running_of(listed, cpu_state, memory_state)
    return find_resized(desired, Pod.from_manifest(desired), listed, running)


def test_by_uid_among_listed_pods():
    match = find(manifest("renamed", uid="u-1", cpu="2"), [manifest("web", uid="u-1"), manifest("db", uid="u-2")])
    assert (match.uid, match.name, match.matched_by) == ("u-1", "web", "uid")
    assert match.requests == {"cpu": 1000, "memory": 1 << 30}


def test_by_namespace_and_name_only_without_a_uid():
    match = find(manifest("web", cpu="2"), [manifest("web", uid="u-1")])
    assert (match.uid, match.matched_by) == ("u-1", "namespace/name")
    assert find(manifest("web", uid="u-other", cpu="2"), [manifest("web", uid="u-1")]) is None
    assert find(manifest("web", cpu="2", namespace="prod"), [manifest("web", uid="u-1")]) is None


def test_finished_pods_are_not_resized():
    assert find(manifest("web", uid="u-1", cpu="2"), [manifest("web", uid="u-1", phase="Succeeded")]) is None


def test_state_file_pods_only_by_uid():
    cpu_state = {"entries": {"u-9": {"c": "2-3"}}}
    match = find(manifest("db", uid="u-9", cpu="3"), cpu_state=cpu_state)
    assert (match.uid, match.allocated, match.sources) == ("u-9", None, ("cpu_manager_state",))
    assert match.exclusive == {"c": {"cpus": "2-3"}}
    assert find(manifest("db", cpu="3"), cpu_state=cpu_state) is None  # no uid: nothing to match in the state


def test_static_pod_annotations():
    assert is_static_pod(manifest("etcd", annotations={"kubernetes.io/config.source": "file"}))
    assert is_static_pod(manifest("etcd", annotations={"kubernetes.io/config.mirror": "abc"}))
    assert not is_static_pod(manifest("web", annotations={"kubernetes.io/config.source": "api"}))
    assert not is_static_pod(manifest("web"))


def judge(desired, listed=None, cpu_state=None, version="1.37", gates=None, cpu="static", memory="None"):
    match = find(desired, listed, cpu_state)
    return judge_resize(match, Pod.from_manifest(desired), KubeletAssumption.resolve(version, None, gates),
                        cpu, memory)


def test_static_pod_resize_is_infeasible_before_the_guaranteed_rule():
    static = manifest("etcd", uid="u-1", annotations={"kubernetes.io/config.source": "file"})
    entry = judge(manifest("etcd", uid="u-1", cpu="2"), [static])
    assert (entry["verdict"], entry["message"]) == ("infeasible", "In-place resize of static-pods is not supported")


def test_gate_off_is_not_resized_and_named():
    entry = judge(manifest("web", uid="u-1", cpu="2"), [manifest("web", uid="u-1")], version="1.37",
                  gates={"InPlacePodVerticalScaling": False})
    assert entry["verdict"] == "not_resized" and entry["message"] == "InPlacePodVerticalScaling is disabled"


@pytest.mark.parametrize("cpu_state, desired_cpu, verdict", [
    ({"entries": {"u-9": {"c": "2-3"}}}, "3", "infeasible"),   # 2 exclusive CPUs recorded, 3 asked
    ({"entries": {"u-9": {"c": "2-3"}}}, "2", "feasible"),     # same count: the CPU rule does not apply
    ({"entries": {"u-9": {"other": "2-3"}}}, "2", "cannot_check"),  # container c not recorded
])
def test_state_file_allocation_decides_or_says_it_cannot(cpu_state, desired_cpu, verdict):
    entry = judge(manifest("db", uid="u-9", cpu=desired_cpu), cpu_state=cpu_state)
    assert entry["verdict"] == verdict
    assert entry["message"] == (CPU_MESSAGE if verdict == "infeasible" else entry["message"])
