# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kubelet's resource-fit admission: does the pod fit in what the node has left?

Why: after the Topology Manager admit handler the kubelet runs its predicate admit handler
(pkg/kubelet/lifecycle/predicate.go), which first refuses restartable init containers while
``SidecarContainers`` is off (:func:`restartable_init_refusal`, 1.28+), then asks the scheduler's ``noderesources.Fits``
(pkg/scheduler/framework/plugins/noderesources/fit.go) whether the pod's requests fit in the node
allocatable minus the requests of the node's other active pods. A NUMA-perfect pod on a 4-CPU host
still fails there with ``OutOfcpu``; a pod asking for a hugepage size the host has no pool of fails
with ``OutOfhugepages-1Gi``.

What is reproduced:

* node allocatable as the kubelet publishes it (pkg/kubelet/nodestatus/setters.go MachineInfo):
  capacity (online CPUs, MemTotal, the machine's hugepage pools, maxPods limited by podsPerCore,
  device plugin devices) minus systemReserved + kubeReserved + hard eviction, clamped at zero, and
  memory further minus every hugepage pool;
* the fit order and the first reason the kubelet reports: pods count, cpu, memory,
  ephemeral-storage, then the other scalar resources (hugepages-*, extended resources) -- Go map
  order, so with several failing scalars the kubelet names one of them at random (we name the
  first in sorted order and say so);
* extended resources the node does not have at all are dropped from the pod before the check
  (``removeMissingExtendedResources``), exactly like the kubelet; but when we do not *know* the
  node's device plugins we cannot tell "absent" from "present", so such a request is unchecked;
* the reason ``OutOf<resource>`` (``OutOfcpu``, ``OutOfmemory``, ``OutOfpods``,
  ``OutOfhugepages-1Gi``, ...) and the message ``Node didn't have enough resource: cpu, requested:
  8000, used: 0, capacity: 4000`` (cpu in millicores, the rest in bytes or counts).

Not reproduced (the result says so): node affinity / selectors, taints, host ports, the OS checks,
and the critical-pod preemption the kubelet tries before rejecting a critical pod.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Dict, List, Mapping, Optional  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.node_allocatable import reservation_from_config
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import is_extended
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import InvalidCPUSet, parse_cpuset
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import InvalidQuantity, parse_quantity
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import (
    INIT_CONTAINER_RESTART_POLICY_FIELD,
    INIT_CONTAINER_RESTART_POLICY_FORBIDDEN,
    INIT_CONTAINER_RESTART_POLICY_FORBIDDEN_REASON,
    behaviour,
    kubelet_text,
)

#: the kubelet's default ``maxPods``
DEFAULT_MAX_PODS = 110
#: resources checked before the scalar ones, in fitsRequest's order
_FIRST = (CPU, MEMORY, EPHEMERAL_STORAGE)

NOT_SIMULATED = ("node affinity and node selectors", "NoExecute taints", "host ports", "the pod OS checks",
                 "critical-pod preemption")


class ResourceFitError(StateError):
    """A node capacity input that cannot be used (bad maxPods, bad node_allocatable value)."""


def _int_field(config: Mapping[str, Any], name: str, default: int) -> int:
    value = config.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            value = int(str(value), 10)
        except ValueError:
            raise ResourceFitError("%s must be an integer, got %r" % (name, config.get(name)))
    if value < 0:
        raise ResourceFitError("%s must not be negative, got %d" % (name, value))
    return value


def _base_units(name: str, raw: Any, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, (int, str, float)):
        raise ResourceFitError("%s: invalid quantity %r" % (where, raw))
    try:
        quantity = parse_quantity(repr(raw) if isinstance(raw, float) else raw)
    except (InvalidQuantity, ValueError) as exc:
        raise ResourceFitError("%s: invalid quantity %r: %s" % (where, raw, exc))
    return quantity.milli_value() if name == CPU else quantity.value()


def node_allocatable(topology: Any,
                     kubelet_config: Mapping[str, Any],
                     memory_capacity_bytes: Optional[int] = None,
                     hugepages_capacity: Optional[Mapping[str, int]] = None,
                     extended_capacity: Optional[Mapping[str, int]] = None,
                     overrides: Optional[Mapping[str, Any]] = None) -> Dict[str, int]:
    """The node's allocatable resources in base units (cpu in millicores, bytes, counts).

    ``topology``: the host topology (online CPUs; per-node hugepages when ``hugepages_capacity``,
    the machine's pools from /sys/kernel/mm/hugepages, is not given); ``memory_capacity_bytes``:
    MemTotal (default: the sum of the NUMA nodes); ``extended_capacity``: device plugin resources
    (healthy devices); ``overrides``: values from the node object (``status.allocatable``) that
    replace the computed ones.
    """
    cpus = len(topology.online_cpus())
    memory = memory_capacity_bytes if memory_capacity_bytes is not None else topology.memory_total_bytes()
    if hugepages_capacity is None:
        pools: Dict[str, int] = {}
        for node in topology.nodes:
            for name, pool in node.hugepages.items():
                pools[name] = pools.get(name, 0) + pool.total_bytes
        hugepages_capacity = pools
    max_pods = _int_field(kubelet_config, "maxPods", DEFAULT_MAX_PODS)
    per_core = _int_field(kubelet_config, "podsPerCore", 0)
    pods = min(max_pods, per_core * cpus) if per_core > 0 else max_pods
    capacity: Dict[str, int] = {CPU: cpus * 1000, MEMORY: memory, PODS: pods}
    capacity.update(hugepages_capacity)
    reserved_cpus = kubelet_config.get("reservedSystemCPUs") or ""
    reserved_count = None
    if reserved_cpus:
        try:
            reserved_count = len(parse_cpuset(str(reserved_cpus)))
        except InvalidCPUSet as exc:
            raise ResourceFitError("reservedSystemCPUs: %s" % exc)
    try:
        reservation = reservation_from_config(kubelet_config, [CPU, MEMORY] + sorted(hugepages_capacity),
                                              memory, reserved_count)
    except ValueError as exc:
        raise ResourceFitError(str(exc))
    allocatable: Dict[str, int] = {}
    for name, value in capacity.items():
        held = reservation.get(name)
        if held is not None:
            value -= held.milli_value() if name == CPU else held.value()
        allocatable[name] = max(value, 0)
    allocatable[MEMORY] = max(allocatable[MEMORY] - sum(hugepages_capacity.values()), 0)
    for name, count in (extended_capacity or {}).items():
        allocatable[name] = int(count)
    for name, raw in (overrides or {}).items():
        allocatable[str(name)] = _base_units(str(name), raw, "node_allocatable.%s" % name)
    return allocatable


def restartable_init_refusal(pod: Any, version: Any, gates: Mapping[str, Any]) -> Optional[Dict[str, str]]:
    """The predicate admit handler's first check (pkg/kubelet/lifecycle/predicate.go, 1.28+): with
    ``SidecarContainers`` off, a pod with a restartable init container (``restartPolicy:
    Always``) is refused before the resource fit, naming the first such container. Releases whose
    API types have no such field (before 1.28) decode it away and never refuse.

    Returns ``{"reason", "message"}`` or None."""
    if not behaviour(INIT_CONTAINER_RESTART_POLICY_FIELD, version) or gates.get("SidecarContainers", False):
        return None
    for container in pod.init_containers:
        if container.restartable:
            return {"reason": INIT_CONTAINER_RESTART_POLICY_FORBIDDEN_REASON,
                    "message": kubelet_text(INIT_CONTAINER_RESTART_POLICY_FORBIDDEN, version, name=container.name)}
    return None


def _insufficient(name: str, requested: int, used: int, capacity: int) -> Dict[str, Any]:
    return {"resource": name, "reason": "Insufficient %s" % name, "requested": requested, "used": used,
            "capacity": capacity}


class ResourceFit:
    """The node's allocatable and what its active pods already request; admits pods one by one.

    ``allocatable``: :func:`node_allocatable` (a resource absent from it has no capacity, except
    ephemeral-storage, which is then unknown); ``extended_known``: whether the node's device plugin
    resources are known (then an extended resource the node lacks is dropped from the pod as the
    kubelet does; otherwise it cannot be checked); ``used``: requests of the running pods
    (resource -> base units) and ``pod_count`` their number.
    """

    def __init__(self, allocatable: Mapping[str, int], extended_known: bool = False,
                 used: Optional[Mapping[str, int]] = None, pod_count: int = 0) -> None:
        self.allocatable = dict(allocatable)
        self.extended_known = extended_known
        self.used: Dict[str, int] = dict(used or {})
        self.pod_count = pod_count

    def check(self, requests: Mapping[str, int]) -> Dict[str, Any]:
        """The fit of a pod with ``requests`` (base units); changes nothing.

        Returns ``fits`` (bool), ``reason`` / ``message`` (the kubelet's, first failure),
        ``insufficient`` (every failing resource, as the scheduler lists them), ``unchecked``
        (resources whose node capacity is unknown, with why), ``requested`` and ``allocatable``.
        """
        insufficient: List[Dict[str, Any]] = []
        unchecked: List[Dict[str, str]] = []
        allowed = self.allocatable.get(PODS, DEFAULT_MAX_PODS)
        if self.pod_count + 1 > allowed:
            insufficient.append(dict(_insufficient(PODS, 1, self.pod_count, allowed), reason="Too many pods"))
        requested = dict((k, int(v)) for k, v in requests.items() if int(v) != 0)
        dropped = sorted(n for n in requested if is_extended(n) and self.extended_known and n not in self.allocatable)
        for name in dropped:
            del requested[name]
        for name in _FIRST:
            if name not in requested:
                continue
            if name not in self.allocatable:
                unchecked.append({"resource": name, "why": "the node's allocatable %s is not known here "
                                  "(give it in node_allocatable)" % name})
                continue
            free = self.allocatable.get(name, 0) - self.used.get(name, 0)
            if requested[name] > free:
                insufficient.append(_insufficient(name, requested[name], self.used.get(name, 0),
                                                  self.allocatable.get(name, 0)))
        scalars = sorted(n for n in requested if n not in _FIRST)
        failing_scalars = []
        for name in scalars:
            if name not in self.allocatable and is_extended(name):
                unchecked.append({"resource": name, "why": "no device inventory (devices) for %s: the kubelet "
                                  "ignores it when no device plugin serves it and checks it otherwise" % name})
                continue
            free = self.allocatable.get(name, 0) - self.used.get(name, 0)
            if requested[name] > free:
                failing_scalars.append(name)
                insufficient.append(_insufficient(name, requested[name], self.used.get(name, 0),
                                                  self.allocatable.get(name, 0)))
        result: Dict[str, Any] = {
            "fits": not insufficient,
            "reason": "",
            "message": "",
            "insufficient": insufficient,
            "unchecked": unchecked,
            "requested": requested,
            "dropped": dropped,
            "note": "",
        }
        if insufficient:
            first = insufficient[0]
            result["reason"] = "OutOf%s" % first["resource"]
            result["message"] = "Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d" % (
                first["resource"], first["requested"], first["used"], first["capacity"])
            if first["resource"] in failing_scalars and len(failing_scalars) > 1:
                result["note"] = ("several resources do not fit (%s); the kubelet names one of them, picked in Go "
                                  "map order (random)" % ", ".join(failing_scalars))
        return result

    def add(self, requests: Mapping[str, int]) -> None:
        """Count an admitted pod's requests as used."""
        self.pod_count += 1
        for name, value in requests.items():
            self.used[name] = self.used.get(name, 0) + int(value)

    def summary(self) -> Dict[str, Any]:
        return {"allocatable": dict(sorted(self.allocatable.items())), "used": dict(sorted(self.used.items())),
                "pods": self.pod_count, "not_simulated": list(NOT_SIMULATED)}
