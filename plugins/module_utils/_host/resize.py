# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Is this pod a resize of a pod already on the node, and would the kubelet carry it out?

Why: a pod given to ``admission_check`` that is already running on the node is not admitted
again by the kubelet; a new spec with other requests is an in-place resize, which the kubelet
judges with its resize admit handler first (pkg/kubelet/allocation handlers.go
``podResizesAdmitHandler``; the rules per release are in :mod:`.._engine.allocation`). This
module finds the running pod (:func:`find_resized`: same uid, else the same namespace/name when
the manifest has no uid, among the listed running pods, or by uid in the state files) and judges
the resize (:func:`judge_resize`). Only the resize handler's rules and the resource fit of the
new requests against the node's other pods are simulated; the Topology Manager, CPU, memory and
device managers' handling of a resize is not.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import copy
from dataclasses import dataclass, field

try:
    from typing import Any, Dict, Mapping, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import InvalidPod, Pod
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.running_pods import (
    INACTIVE_PHASES,
    SOURCE_LISTED,
    RunningPods,
    RunningPodsError,
    _items,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import InvalidCPUSet, parse_cpuset

#: annotations that mark a static pod (kubelet types ``ConfigSourceAnnotationKey`` /
#: ``ConfigMirrorAnnotationKey``): a source other than the API server, or a mirror pod
SOURCE_ANNOTATION = "kubernetes.io/config.source"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"

#: what the kubelet checks after the resize handler admits a resize, and how far we follow it
NOT_SIMULATED = (
    "the Topology Manager, CPU, memory and device managers' handling of the resize (new CPU sets, memory "
    "blocks); the result's containers and numa_nodes are empty for a resize",
    "the eviction, sysctl and other admit handlers",
    "swap: the kubelet refuses a memory resize of a container that uses swap",
    "the requests' upper bound of older kubelets (the 1.32-1.34 sources mark a resize beyond the whole node "
    "allocatable Infeasible with 'Node didn't have enough capacity: ...'); the resource fit reports it as OutOf...",
    "the retry of a pending resize when other pods leave or shrink",
)


@dataclass
class ResizeMatch:
    """The running pod a manifest resizes. ``allocated``: the pod as allocated (from its listed
    manifest), None when only the state files show it; ``exclusive``: container -> what the state
    files record (``cpus``, ``memory``); ``requests``: what it requests now (the resource fit's
    view, base units)."""

    uid: str
    namespace: str
    name: str
    matched_by: str
    sources: Tuple[str, ...]
    allocated: Optional[Pod]
    exclusive: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    requests: Dict[str, int] = field(default_factory=dict)
    static_pod: bool = False

    def ref(self) -> Dict[str, Any]:
        return {"uid": self.uid, "namespace": self.namespace or None, "name": self.name or None,
                "matched_by": self.matched_by, "sources": list(self.sources)}


def _metadata(manifest: Any) -> Dict[str, Any]:
    meta = manifest.get("metadata") if isinstance(manifest, dict) else None
    return meta if isinstance(meta, dict) else {}


def is_static_pod(manifest: Any) -> bool:
    """The manifest is a static pod's (its mirror pod in the API): ``kubernetes.io/config.mirror``
    set, or ``kubernetes.io/config.source`` other than ``api``."""
    annotations = _metadata(manifest).get("annotations")
    if not isinstance(annotations, dict):
        return False
    source = annotations.get(SOURCE_ANNOTATION)
    return MIRROR_ANNOTATION in annotations or (source not in (None, "", "api"))


def _as_allocated(manifest: Mapping[str, Any]) -> Dict[str, Any]:
    """The listed manifest with each container's requests replaced by its status's
    ``allocatedResources`` where the status reports them (what the kubelet allocated)."""
    raw_status = manifest.get("status")
    status: Dict[str, Any] = raw_status if isinstance(raw_status, dict) else {}
    allocated: Dict[str, Any] = {}
    for key in ("containerStatuses", "initContainerStatuses"):
        for entry in status.get(key) or []:
            if isinstance(entry, dict) and isinstance(entry.get("allocatedResources"), dict) and entry.get("name"):
                allocated[str(entry["name"])] = entry["allocatedResources"]
    if not allocated:
        return dict(manifest)
    document = copy.deepcopy(dict(manifest))
    raw_spec = document.get("spec")
    spec: Dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
    for key in ("containers", "initContainers"):
        for container in spec.get(key) or []:
            if isinstance(container, dict) and container.get("name") in allocated:
                resources = container.setdefault("resources", {})
                if isinstance(resources, dict):
                    resources["requests"] = dict(allocated[container["name"]])
    return document


def find_resized(manifest: Any, pod: Pod, running_value: Any, running: RunningPods,
                 feature_gates: Optional[Mapping[str, bool]] = None) -> Optional[ResizeMatch]:
    """The running pod ``pod`` (parsed from ``manifest``) resizes, or None (a new pod).

    Same uid as a listed running pod (``running_value``: the ``running_pods`` option) or a pod of
    the state files; without ``metadata.uid`` in the manifest, the same namespace/name as a listed
    pod. ``running``: the node's running pods as combined for the resource fit.
    """
    explicit_uid = bool(_metadata(manifest).get("uid"))
    by_uid = dict((p.uid, p) for p in running.pods)
    listed: Optional[Tuple[str, Dict[str, Any], Pod]] = None
    if running_value is not None:
        for label, item in _items(running_value, "running_pods"):
            status = item.get("status") if isinstance(item.get("status"), dict) else {}
            if status.get("phase") in INACTIVE_PHASES:
                continue
            try:
                other = Pod.from_manifest(item, feature_gates=feature_gates)
            except InvalidPod as exc:
                raise RunningPodsError("%s: %s" % (label, exc))
            if explicit_uid and other.uid == pod.uid and bool(_metadata(item).get("uid")):
                listed = ("uid", item, other)
                break
            if not explicit_uid and (other.namespace, other.name) == (pod.namespace, pod.name):
                listed = ("namespace/name", item, other)
                break
    if listed is not None:
        matched_by, item, other = listed
        try:
            allocated = Pod.from_manifest(_as_allocated(item), feature_gates=feature_gates)
        except InvalidPod:
            allocated = other
        seen = by_uid.get(other.uid)
        return ResizeMatch(uid=other.uid, namespace=other.namespace, name=other.name, matched_by=matched_by,
                           sources=seen.sources if seen is not None else (SOURCE_LISTED,), allocated=allocated,
                           exclusive=dict(seen.exclusive) if seen is not None else {},
                           requests=dict(seen.requests) if seen is not None else {},
                           static_pod=is_static_pod(item) or is_static_pod(manifest))
    if explicit_uid:
        seen = by_uid.get(pod.uid)
        if seen is not None and not seen.complete:
            return ResizeMatch(uid=seen.uid, namespace="", name="", matched_by="uid", sources=seen.sources,
                               allocated=None, exclusive=dict(seen.exclusive), requests=dict(seen.requests),
                               static_pod=is_static_pod(manifest))
    return None


def _changed_from_state(exclusive: Mapping[str, Mapping[str, Any]], desired: Pod, resource: str) -> Optional[bool]:
    """Whether a resizable container's ``resource`` request differs from what the state files
    record for it (exclusive CPUs, memory blocks of type ``memory``); None when some container's
    allocation is not recorded and none differs."""
    unknown = False
    for container in desired.all_containers():
        if container.is_init and not container.restartable:
            continue
        held = exclusive.get(container.name) or {}
        want = int(container.requests.get(resource, 0))
        if resource == "cpu":
            text = held.get("cpus")
            if not text:
                unknown = True
                continue
            try:
                had = 1000 * len(parse_cpuset(str(text)))
            except InvalidCPUSet:
                unknown = True
                continue
        else:
            memory = held.get("memory") or {}
            if "memory" not in memory:
                unknown = True
                continue
            had = int(memory["memory"])
        if want != had:
            return True
    return None if unknown else False


def _changes(match: ResizeMatch, desired: Pod) -> Dict[str, Optional[bool]]:
    # imported here: as in judge_resize
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.allocation import request_changed, resources_changed

    if match.allocated is not None:
        return {"cpu": request_changed(match.allocated, desired, "cpu"),
                "memory": request_changed(match.allocated, desired, "memory"),
                "any": resources_changed(match.allocated, desired)}
    cpu = _changed_from_state(match.exclusive, desired, "cpu")
    memory = _changed_from_state(match.exclusive, desired, "memory")
    if cpu or memory:
        anything: Optional[bool] = True
    elif cpu is None or memory is None:
        anything = None
    else:
        anything = False
    return {"cpu": cpu, "memory": memory, "any": anything}


def judge_resize(match: ResizeMatch, desired: Pod, kubelet: Any, cpu_manager_policy: Optional[str],
                 memory_manager_policy: Optional[str]) -> Dict[str, Any]:
    """The resize handler's verdict on resizing ``match`` to ``desired`` for the assumed
    ``kubelet`` (a ``_k8s.versions.KubeletAssumption``).

    Returns the result's ``resize`` entry: ``of`` (the running pod), ``verdict`` (``infeasible``,
    ``not_resized`` when the kubelet resizes nothing, ``unchanged`` when the requests are the
    allocated ones, ``feasible`` when these rules let it through, ``cannot_check`` when the state
    files do not show what would decide), ``reason``, ``message``, ``metric_reason``,
    ``changed`` (cpu/memory/any), ``kubelet_version``, ``gates``, ``checked`` and ``not_simulated``.
    """
    # the resize rules are imported where a resize is judged: a run that checks new pods does not
    # compile them (issue 12)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.allocation import (
        EXCLUSIVE_CPUS_GATE,
        EXCLUSIVE_MEMORY_GATE,
        FIRST_PER_RESOURCE_RULE,
        RESIZE_GATES,
        guaranteed_rule,
        resize_not_allowed,
    )

    gates = dict((gate, bool(kubelet.gates.get(gate, False))) for gate in RESIZE_GATES)
    minor = kubelet.version[1]
    changed = _changes(match, desired)
    entry: Dict[str, Any] = {
        "of": match.ref(), "verdict": "feasible", "reason": None, "message": None, "metric_reason": None,
        "changed": changed, "kubelet_version": kubelet.text, "gates": gates,
        "checked": [], "not_simulated": list(NOT_SIMULATED),
    }
    if changed["any"] is False:
        entry["verdict"] = "unchanged"
        entry["checked"].append("requests and limits equal the allocation: nothing to resize")
        return entry
    refused = resize_not_allowed(kubelet.gates, match.static_pod)
    entry["checked"].append("InPlacePodVerticalScaling gate and static pods (IsInPlacePodVerticalScalingAllowed)")
    if refused is not None:
        entry["verdict"] = "not_resized" if refused[2] == "feature_gate_off" else "infeasible"
        entry["reason"], entry["message"], entry["metric_reason"] = refused
        return entry
    entry["checked"].append(
        "Guaranteed pods next to CPU Manager static / Memory Manager Static (%s)" % (
            "%s for both" % EXCLUSIVE_CPUS_GATE if minor < FIRST_PER_RESOURCE_RULE
            else "%s, %s" % (EXCLUSIVE_CPUS_GATE, EXCLUSIVE_MEMORY_GATE)))
    outcome, decided = guaranteed_rule(desired.qos_class, changed, cpu_manager_policy, memory_manager_policy,
                                       kubelet.gates, minor)
    if outcome is not None:
        entry["verdict"] = "infeasible"
        entry["reason"], entry["message"], entry["metric_reason"] = outcome
    elif not decided:
        entry["verdict"] = "cannot_check"
        entry["message"] = ("the state files do not record the allocation of every container of pod %s, so "
                            "whether its CPU or memory requests change is not known (give running_pods)" % match.uid)
    return entry
