# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the node's running pods already hold: from their manifests and from the state files.

Why: the kubelet's resource-fit admission subtracts the requests of every active pod on the node
from its allocatable. Offline we see the node through two windows, and say which one we used:

* **listed pods** (``running_pods``): manifests or a list from the API (a ``v1`` ``PodList`` /
  ``List``, its ``items``, or what ``kubernetes.core.k8s_info`` returns in ``resources``). Their
  requests are complete for every QoS class. Pods in phase ``Succeeded`` or ``Failed`` are not
  active and are left out, as the kubelet leaves them out.
* **state files**: ``cpu_manager_state`` (exclusive CPUs), ``memory_manager_state`` (memory and
  hugepage blocks) and the device manager checkpoint (devices) only record the *exclusive*
  allocations of Guaranteed pods. From them we rebuild an estimate of those pods' requests: the
  union of the pod's exclusive CPUs (init containers' CPUs are reused by app containers, so a
  union does not count them twice), the sum of its containers' memory blocks per type (for a
  pod-level pod with ``podEntries``: its pod blocks, the budget, once), and its distinct devices
  per resource. Burstable and BestEffort pods are invisible there.

:func:`combine` joins both (a listed pod's manifest wins over its state-file estimate; a pod only
in the state files is still counted -- the state is what the managers hold -- and flagged) and
returns a :class:`RunningPods`: the pods, their total requests and count, the sources used, and
warnings about what could not be seen.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from dataclasses import dataclass, field

try:
    from typing import Any, Dict, List, Mapping, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import InvalidPod, Pod, pod_requests
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.resource_fit import ResourceFit, node_allocatable
from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import InvalidCPUSet, parse_cpuset

#: pod phases the kubelet no longer counts as active
INACTIVE_PHASES = ("Succeeded", "Failed")
SOURCE_LISTED = "running_pods"
SOURCE_CPU = "cpu_manager_state"
SOURCE_MEMORY = "memory_manager_state"
SOURCE_DEVICES = "device checkpoint"


class RunningPodsError(NumaguardError):
    """A running_pods input that cannot be used, naming the item."""


@dataclass(frozen=True)
class RunningPod:
    """One active pod of the node and what it requests (base units: cpu millicores, bytes, counts).

    ``complete`` is true for a listed pod (all requests known) and false for a pod rebuilt from the
    state files (exclusive allocations only). ``exclusive``: container -> ``cpus`` (cpuset),
    ``memory`` (type -> bytes), ``devices`` (resource -> ids), as the state files record them.
    """

    uid: str
    namespace: str
    name: str
    requests: Dict[str, int]
    complete: bool
    sources: Tuple[str, ...]
    exclusive: Dict[str, Dict[str, Any]] = field(default_factory=dict)

    def to_dict(self) -> Dict[str, Any]:
        return {"uid": self.uid, "namespace": self.namespace, "name": self.name,
                "requests": dict(sorted(self.requests.items())), "complete": self.complete,
                "sources": list(self.sources), "exclusive": self.exclusive}


@dataclass
class RunningPods:
    """The node's active pods as far as the inputs show them."""

    pods: List[RunningPod]
    sources: List[str]
    warnings: List[str]

    @property
    def count(self) -> int:
        return len(self.pods)

    def requested(self) -> Dict[str, int]:
        """Sum of the pods' requests per resource."""
        total: Dict[str, int] = {}
        for pod in self.pods:
            for name, value in pod.requests.items():
                total[name] = total.get(name, 0) + value
        return total

    def to_dict(self) -> Dict[str, Any]:
        return {"count": self.count, "requested": dict(sorted(self.requested().items())),
                "sources": list(self.sources), "warnings": list(self.warnings),
                "pods": [p.to_dict() for p in self.pods]}


# ---- listed pods --------------------------------------------------------------------------

def _items(value: Any, where: str) -> List[Tuple[str, Any]]:
    """Flatten the accepted shapes into (label, pod manifest) pairs."""
    if isinstance(value, list):
        out: List[Tuple[str, Any]] = []
        for index, item in enumerate(value):
            out.extend(_items(item, "%s[%d]" % (where, index)))
        return out
    if not isinstance(value, dict):
        raise RunningPodsError("%s: a pod manifest or a list of pods must be a mapping, got %s"
                               % (where, type(value).__name__))
    if "resources" in value and "kind" not in value and isinstance(value.get("resources"), list):
        return _items(value["resources"], where + ".resources")  # a kubernetes.core.k8s_info result
    kind = value.get("kind", "Pod")
    if kind in ("PodList", "List") or ("items" in value and "spec" not in value):
        items = value.get("items")
        if not isinstance(items, list):
            raise RunningPodsError("%s: %s without an items list" % (where, kind))
        return _items(items, where + ".items")
    if kind != "Pod":
        raise RunningPodsError("%s: kind %r is not a running pod (expected Pod, PodList or List)" % (where, kind))
    return [(where, value)]


def listed_pods(value: Any, feature_gates: Optional[Mapping[str, bool]] = None,
                where: str = "running_pods") -> Tuple[List[RunningPod], int]:
    """(active pods, number of inactive pods left out) from ``running_pods``."""
    pods: List[RunningPod] = []
    inactive = 0
    seen: Dict[str, str] = {}
    for label, manifest in _items(value, where):
        status = manifest.get("status") if isinstance(manifest.get("status"), dict) else {}
        if status.get("phase") in INACTIVE_PHASES:
            inactive += 1
            continue
        try:
            pod = Pod.from_manifest(manifest, feature_gates=feature_gates)
        except InvalidPod as exc:
            raise RunningPodsError("%s: %s" % (label, exc))
        if pod.uid in seen:
            raise RunningPodsError("%s: pod %s/%s has the uid %s of %s already" % (
                label, pod.namespace, pod.name, pod.uid, seen[pod.uid]))
        seen[pod.uid] = label
        pods.append(RunningPod(uid=pod.uid, namespace=pod.namespace, name=pod.name,
                               requests=pod_requests(pod), complete=True, sources=(SOURCE_LISTED,)))
    return pods, inactive


# ---- state files --------------------------------------------------------------------------

def _field(checkpoint: Any, name: str) -> Any:
    if checkpoint is None:
        return None
    if isinstance(checkpoint, Mapping):
        return checkpoint.get(name)
    return getattr(checkpoint, name, None)


def _cpus(text: Any, where: str) -> frozenset:
    try:
        return parse_cpuset(str(text or ""))
    except InvalidCPUSet as exc:
        raise RunningPodsError("%s: %s" % (where, exc))


def _block_parts(block: Any) -> Tuple[str, int]:
    if isinstance(block, Mapping):
        return str(block.get("type")), int(block.get("size") or 0)
    return str(block.type), int(block.size)


def state_pods(cpu_checkpoint: Any = None, memory_checkpoint: Any = None,
               device_allocations: Optional[Mapping[str, Any]] = None) -> List[RunningPod]:
    """Guaranteed pods rebuilt from the restored state files' exclusive allocations.

    ``cpu_checkpoint`` / ``memory_checkpoint``: restored checkpoints (objects or mappings with
    ``entries`` and ``pod_entries``) or None; ``device_allocations``: pod uid -> container ->
    resource -> device ids (the device checkpoint's allocations).
    """
    per_pod: Dict[str, Dict[str, Any]] = {}

    def entry(uid: str) -> Dict[str, Any]:
        return per_pod.setdefault(str(uid), {"cpus": set(), "memory": {}, "devices": {}, "sources": [],
                                             "exclusive": {}})

    def note(record: Dict[str, Any], source: str) -> None:
        if source not in record["sources"]:
            record["sources"].append(source)

    for uid, containers in sorted((_field(cpu_checkpoint, "entries") or {}).items()):
        record = entry(uid)
        for name, text in sorted(containers.items()):
            cpus = _cpus(text, "cpu_manager_state entries[%s][%s]" % (uid, name))
            if cpus:
                record["cpus"].update(cpus)
                record["exclusive"].setdefault(name, {})["cpus"] = str(text)
                note(record, SOURCE_CPU)
    for uid, text in sorted((_field(cpu_checkpoint, "pod_entries") or {}).items()):
        record = entry(uid)
        cpus = _cpus(text, "cpu_manager_state podEntries[%s]" % uid)
        record["cpus"].update(cpus)
        if cpus:
            note(record, SOURCE_CPU)
    # a pod-level pod (podEntries, KEP-5526) holds its budget once; its containers' blocks are
    # slices of it (the pod shared pool appears in every container that uses it)
    pod_blocks = dict((str(uid), blocks) for uid, blocks in (_field(memory_checkpoint, "pod_entries") or {}).items()
                      if blocks)
    for uid, containers in sorted((_field(memory_checkpoint, "entries") or {}).items()):
        record = entry(uid)
        for name, blocks in sorted(containers.items()):
            for block in blocks or []:
                kind, size = _block_parts(block)
                if str(uid) not in pod_blocks:
                    record["memory"][kind] = record["memory"].get(kind, 0) + size
                held = record["exclusive"].setdefault(name, {}).setdefault("memory", {})
                held[kind] = held.get(kind, 0) + size
                note(record, SOURCE_MEMORY)
    for uid, blocks in sorted(pod_blocks.items()):
        record = entry(uid)
        for block in blocks:
            kind, size = _block_parts(block)
            record["memory"][kind] = record["memory"].get(kind, 0) + size
            note(record, SOURCE_MEMORY)
    for uid, containers in sorted((device_allocations or {}).items()):
        record = entry(uid)
        for name, resources in sorted((containers or {}).items()):
            for resource, ids in sorted((resources or {}).items()):
                record["devices"].setdefault(resource, set()).update(str(i) for i in ids or [])
                record["exclusive"].setdefault(name, {}).setdefault("devices", {})[resource] = list(ids or [])
                note(record, SOURCE_DEVICES)
    pods = []
    for uid in sorted(per_pod):
        record = per_pod[uid]
        if not record["sources"]:
            continue
        requests: Dict[str, int] = {}
        if record["cpus"]:
            requests["cpu"] = 1000 * len(record["cpus"])
        requests.update(record["memory"])
        for resource, ids in record["devices"].items():
            if ids:
                requests[resource] = len(ids)
        pods.append(RunningPod(uid=uid, namespace="", name="", requests=requests, complete=False,
                               sources=tuple(record["sources"]), exclusive=record["exclusive"]))
    return pods


# ---- both ---------------------------------------------------------------------------------

def combine(listed: Optional[List[RunningPod]], from_state: List[RunningPod], inactive: int = 0,
            state_sources: Optional[List[str]] = None) -> RunningPods:
    """The node's active pods: listed pods (when given) plus state-file pods not listed.

    ``listed`` None means no ``running_pods`` were given: the state files are all we see.
    ``state_sources``: the state files actually read (named in ``sources``).
    """
    sources = list(state_sources or [])
    warnings: List[str] = []
    by_uid = dict((p.uid, p) for p in from_state)
    pods: List[RunningPod] = []
    if listed is None:
        pods = list(from_state)
        warnings.append("running pods rebuilt from the state files only: they show the exclusive CPUs, memory and "
                        "devices of Guaranteed pods; other pods' requests and the pod count are not known "
                        "(give running_pods)")
    else:
        sources.insert(0, SOURCE_LISTED)
        if inactive:
            warnings.append("%d listed pod(s) in phase Succeeded or Failed left out (not active)" % inactive)
        for pod in listed:
            state = by_uid.pop(pod.uid, None)
            if state is not None:
                pod = RunningPod(uid=pod.uid, namespace=pod.namespace, name=pod.name, requests=pod.requests,
                                 complete=True, sources=pod.sources + state.sources, exclusive=state.exclusive)
            pods.append(pod)
        if by_uid:
            warnings.append("%d pod(s) hold exclusive resources in the state files but are not in running_pods "
                            "(uids %s): counted, as the managers still hold them; the kubelet drops stale entries "
                            "at its next reconcile" % (len(by_uid), ", ".join(sorted(by_uid))))
            pods.extend(by_uid[uid] for uid in sorted(by_uid))
    return RunningPods(pods=pods, sources=sources, warnings=warnings)


def resource_fit_for_node(topology: Any, kubelet_config: Mapping[str, Any], running: RunningPods,
                          inventory: Any = None, memory_capacity_bytes: Optional[int] = None,
                          hugepages_capacity: Optional[Mapping[str, int]] = None,
                          node_allocatable_overrides: Optional[Mapping[str, Any]] = None) -> ResourceFit:
    """The :class:`ResourceFit` of a node: its allocatable (topology, configuration, the device
    inventory's healthy devices, overrides from the node object) minus what ``running`` holds."""
    extended = None
    if inventory is not None and inventory.resources():
        extended = dict((r, len(inventory.healthy.get(r, ()))) for r in inventory.resources())
    allocatable = node_allocatable(topology, kubelet_config, memory_capacity_bytes, hugepages_capacity,
                                   extended, node_allocatable_overrides)
    return ResourceFit(allocatable, extended_known=extended is not None, used=running.requested(),
                       pod_count=running.count)
