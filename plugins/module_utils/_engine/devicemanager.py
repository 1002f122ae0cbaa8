# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Device manager hints and allocation from a declared device inventory (pkg/kubelet/cm/devicemanager/topology_hints.go, manager.go).

The kubelet learns devices from device plugins (gRPC); we cannot ask them, so the operator
declares the inventory: extended resource name -> device id -> NUMA node(s), health, and the
devices already held by running pods. From that we reproduce exactly what the kubelet's device
manager contributes to NUMA admission:

* hints: a resource whose devices report no NUMA node is "don't care" (``None``); a request that
  cannot be met is ``[]`` (the Topology Manager rejects under restricted/single-numa-node);
  "preferred" is judged against the theoretical device count of a mask (all devices, healthy or
  not, allocated or not) -- the kubelet's rule, not free capacity;
* allocation: reusable devices of earlier regular init containers first, then devices on the
  NUMA nodes of the Topology Manager's hint, then the others, then devices without topology.
  Where the kubelet picks among equivalent devices in Go's random set order (or asks the plugin's
  optional GetPreferredAllocation), we pick in natural id order (``gpu2`` before ``gpu10``), so
  results are reproducible. That is the one documented difference.

Inventory shape (``devices`` option of ``admission_check``)::

    nvidia.com/gpu:                  # resource name
      gpu0: 0                        # device id: NUMA node
      gpu1: [0, 1]                   # several NUMA nodes
      gpu2: {numa: 1, healthy: false}
      gpu3: null                     # no topology information
    example.com/nic:                 # or a list of {id, numa, healthy}
      - {id: nic0, numa: 0}

and allocations already held (from ``kubelet_internal_checkpoint`` or declared)::

    {pod_uid: {container_name: {resource: [device ids]}}}
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import itertools

try:
    from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.mask_table import table_for
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.devicemanager_inputs import DeviceInventory, sorted_ids
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import AdmissionError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import pod_limits
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import (
    BitMask,
    iterate_bitmask_values,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import HintList, TopologyHint, implicit_for


class DeviceAllocationError(AdmissionError):
    """A device manager allocation failure (reported as UnexpectedAdmissionError)."""


class DeviceManager:
    """Stateful device manager simulator implementing the hint-provider protocol."""

    def __init__(self,
                 numa_node_ids: Iterable[int],
                 inventory: Optional[DeviceInventory] = None,
                 allocations: Optional[Dict[str, Dict[str, Dict[str, List[str]]]]] = None,
                 device_numa_nodes_only: bool = True,
                 sidecar_aware: bool = True) -> None:
        """``device_numa_nodes_only``: the kubelet >= 1.36 hint generation (kubernetes/kubernetes
        #138244, ``versions.DEVICE_HINTS_FROM_DEVICE_NUMA_NODES``): masks over the NUMA nodes that
        host registered devices of the resource only, plus one non-preferred hint spanning every
        node; False: every mask of every node (<= 1.35).
        ``sidecar_aware``: the kubelet >= 1.29 keeps a restartable init container's devices
        (kubernetes/kubernetes#120461, ``versions.MANAGERS_SIDECAR_AWARE``); False: every init
        container's devices become reusable by the pod's later containers (1.28)."""
        self.numa_node_ids = tuple(sorted(numa_node_ids))
        self.device_numa_nodes_only = device_numa_nodes_only
        self.sidecar_aware = sidecar_aware
        self.inventory = inventory or DeviceInventory()
        #: pod uid -> container -> resource -> device ids (kubelet ``podDevices``)
        self.pod_devices: Dict[str, Dict[str, Dict[str, List[str]]]] = {}
        for pod_uid, containers in (allocations or {}).items():
            for name, resources in containers.items():
                for resource, ids in resources.items():
                    self.pod_devices.setdefault(pod_uid, {}).setdefault(name, {})[resource] = list(ids)
        #: pod uid -> resource -> ids reusable by later containers (regular init containers')
        self.devices_to_reuse: Dict[str, Dict[str, Set[str]]] = {}

    # -- bookkeeping -------------------------------------------------------------------------
    def allocated_devices(self, resource: str) -> Set[str]:
        out: Set[str] = set()
        for containers in self.pod_devices.values():
            for resources in containers.values():
                out.update(resources.get(resource, ()))
        return out

    def is_device_plugin_resource(self, resource: str) -> bool:
        return resource in self.inventory.devices or bool(self.allocated_devices(resource))

    def available_devices(self, resource: str) -> Set[str]:
        return self.inventory.healthy.get(resource, set()) - self.allocated_devices(resource)

    def container_devices(self, pod_uid: str, container_name: str, resource: str) -> List[str]:
        return list(self.pod_devices.get(pod_uid, {}).get(container_name, {}).get(resource, []))

    def pod_resource_devices(self, pod_uid: str, resource: str) -> Set[str]:
        out: Set[str] = set()
        for resources in self.pod_devices.get(pod_uid, {}).values():
            out.update(resources.get(resource, ()))
        return out

    def container_request(self, container: Any) -> Dict[str, int]:
        """``getContainerDeviceRequest``: limits of device-plugin resources."""
        return dict((r, v) for r, v in container.limits.items() if self.is_device_plugin_resource(r))

    def pod_request(self, pod: Any) -> Dict[str, int]:
        """``getPodDeviceRequest``: PodLimits without overhead, device-plugin resources only."""
        return dict((r, v) for r, v in pod_limits(pod, exclude_overhead=True).items()
                    if self.is_device_plugin_resource(r))

    # -- hints -------------------------------------------------------------------------------
    def _device_sums(self,
                     table: Any,
                     numa_of: Dict[str, FrozenSet[int]],
                     devices: Iterable[str]) -> List[int]:
        """Per compact mask: how many of ``devices`` touch it (devices without topology never do)."""
        singles = [0] * len(table.ids)
        multi: List[int] = []
        for device in devices:
            compact = table.compact(numa_of.get(device, ()))
            if compact and compact & (compact - 1) == 0:
                singles[compact.bit_length() - 1] += 1
            elif compact:
                multi.append(compact)
        sums = table.sums(singles)
        for compact in multi:
            sums = [x + 1 if m & compact else x for m, x in enumerate(sums)]
        return sums

    def device_numa_nodes(self, resource: str) -> Tuple[int, ...]:
        """``deviceNUMANodes``: NUMA nodes of every registered device of the resource (allocated
        or not, healthy or not), restricted to the machine's nodes."""
        known = set(self.numa_node_ids)
        found: Set[int] = set()
        for nodes in self.inventory.devices.get(resource, {}).values():
            found.update(n for n in nodes if n in known)
        return tuple(sorted(found))

    def topology_hints(self, resource: str, available: Set[str], reusable: Set[str], request: int) -> Any:
        """``generateDeviceTopologyHints`` of the kubelet release (see ``device_numa_nodes_only``)."""
        if self.device_numa_nodes_only:
            candidates = self.device_numa_nodes(resource)
            if len(candidates) < len(self.numa_node_ids):
                # generate over the device nodes only: the mask walk reads numa_node_ids (and a
                # per-resource cache of the whole machine, set aside meanwhile)
                whole, cache = self.numa_node_ids, self.__dict__.pop("_everything", None)
                self.numa_node_ids = candidates
                try:
                    inner = self._all_masks_hints(resource, available, reusable, request)
                finally:
                    self.numa_node_ids = whole
                    self.__dict__.pop("_everything", None)
                    if cache is not None:
                        self.__dict__["_everything"] = cache
                if not isinstance(inner, HintList):
                    # an implicit hint set (>= 13 device nodes), never empty: the same fallback hint
                    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hint_sets import (
                        FallbackHintSet,
                    )
                    return FallbackHintSet(inner, self.numa_node_ids)
                hints = list(inner)
                if hints:
                    hints.append(TopologyHint(BitMask.from_value(_mask(self.numa_node_ids)), False))
                return HintList(hints, inner.kubelet_masks)
        return self._all_masks_hints(resource, available, reusable, request)

    def _all_masks_hints(self, resource: str, available: Set[str], reusable: Set[str], request: int) -> Any:
        """Every mask of ``numa_node_ids``: a hint list, or on big machines a hint set (same hints)."""
        walked = (1 << len(self.numa_node_ids)) - 1
        if implicit_for(len(self.numa_node_ids)):
            return self.hint_set(resource, available, reusable, request)
        return HintList(self.generate_hints(resource, available, reusable, request), walked)

    def _touch_need(self, numa_of: Dict[str, FrozenSet[int]], devices: Iterable[str], need: int) -> Any:
        """Devices touching a mask as a :class:`Need`: one-node devices per node, others by mask."""
        # imported here: as in topology_hints (hint sets only on big machines)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hint_sets import Need
        singles: Dict[int, int] = {}
        multi: List[int] = []
        known = set(self.numa_node_ids)
        for device in devices:
            nodes = [n for n in numa_of.get(device, ()) if n in known]
            if len(nodes) == 1:
                singles[nodes[0]] = singles.get(nodes[0], 0) + 1
            elif nodes:
                multi.append(_mask(nodes))
        return Need(singles, need, multi=multi)

    def hint_set(self, resource: str, available: Set[str], reusable: Set[str], request: int) -> Any:
        """The hints of :meth:`generate_hints_literal` as a rule: masks touching every reusable
        device (with topology) whose touching devices, reusable ones included, reach the request;
        preferred = the fewest nodes touched by enough devices of the resource (healthy or not)."""
        # imported here: as in topology_hints (hint sets only on big machines)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hint_sets import ThresholdHintSet
        ids = self.numa_node_ids
        walked = (1 << len(ids)) - 1
        numa_of = self.inventory.devices.get(resource, {})
        required = 0
        touching: List[int] = []
        counted = 0
        known = set(ids)
        for device in reusable:
            nodes = numa_of.get(device, frozenset())
            if not nodes:
                continue  # reusable devices without topology are neither required nor counted
            inside = [n for n in nodes if n in known]
            if not inside:
                return HintList([], walked)  # never inside a mask of this machine
            counted += 1
            if len(inside) == 1:
                required |= 1 << inside[0]
            else:
                touching.append(_mask(inside))
        everything = ThresholdHintSet(ids, [self._touch_need(numa_of, numa_of, request)], None)
        min_affinity = everything.min_size()
        hint_set = ThresholdHintSet(ids, [self._touch_need(numa_of, available, request - counted)],
                                    len(ids) if min_affinity is None else min_affinity,
                                    required=required, touching=touching)
        if hint_set.is_empty():
            return HintList([], walked)
        return hint_set

    def generate_hints(self,
                       resource: str,
                       available: Set[str],
                       reusable: Set[str],
                       request: int) -> List[TopologyHint]:
        """``generateDeviceTopologyHints`` (pkg/kubelet/cm/devicemanager/topology_hints.go), all mask counts at once.

        Same result as :meth:`generate_hints_literal` (the kubelet's per-mask loop).
        """
        numa_of = self.inventory.devices.get(resource, {})
        table = table_for(self.numa_node_ids)
        cache = self.__dict__.setdefault("_everything", {})
        everything = cache.get(resource)
        if everything is None:
            everything = cache[resource] = self._device_sums(table, numa_of, numa_of)
        free = self._device_sums(table, numa_of, available)
        required = 0
        touching: List[int] = []
        counted = 0
        for device in reusable:
            nodes = numa_of.get(device, frozenset())
            if not nodes:
                continue  # reusable devices without topology are neither required nor counted
            compact = table.compact(nodes)
            if not compact:
                return []  # a device on a node the machine does not have never matches a mask
            counted += 1
            if compact & (compact - 1) == 0:
                required |= compact
            else:
                touching.append(compact)
        min_affinity = table.min_affinity(everything, request)
        selected = table.select(free, request - counted, required, touching, monotone=True)
        return list(itertools.compress(table.all_hints(min_affinity), selected))

    def generate_hints_literal(self,
                               resource: str,
                               available: Set[str],
                               reusable: Set[str],
                               request: int) -> List[TopologyHint]:
        """The kubelet's per-mask loop, kept as the reference for :meth:`generate_hints`."""
        numa_of = self.inventory.devices.get(resource, {})
        masks = dict((d, _mask(numa_of.get(d, frozenset()))) for d in set(numa_of) | available | reusable)
        min_affinity = len(self.numa_node_ids)
        found: List[int] = []
        for mask in iterate_bitmask_values(self.numa_node_ids):
            in_mask = sum(1 for d in numa_of if masks[d] & mask)
            if in_mask >= request and bin(mask).count("1") < min_affinity:
                min_affinity = bin(mask).count("1")
            matching = 0
            skip = False
            for device in reusable:
                if not masks[device]:
                    continue
                if not masks[device] & mask:
                    skip = True
                    break
                matching += 1
            if skip:
                continue
            matching += sum(1 for d in available if masks[d] & mask)
            if matching < request:
                continue
            found.append(mask)
        return [TopologyHint(BitMask.from_value(m), bin(m).count("1") == min_affinity) for m in found]

    def get_topology_hints(self,
                           pod: Any,
                           container: Any) -> Dict[str, Optional[List[TopologyHint]]]:
        container = pod.container(container) if isinstance(container, str) else container
        hints: Dict[str, Optional[List[TopologyHint]]] = {}
        for resource, requested in sorted(self.container_request(container).items()):
            if not self.inventory.has_topology(resource):
                hints[resource] = None
                continue
            allocated = set(self.container_devices(pod.uid, container.name, resource))
            reusable = self.devices_to_reuse.get(pod.uid, {}).get(resource, set())
            hints[resource] = self._resource_hints(resource, allocated, reusable, requested)
        return hints

    def get_pod_topology_hints(self, pod: Any) -> Dict[str, Optional[List[TopologyHint]]]:
        hints: Dict[str, Optional[List[TopologyHint]]] = {}
        for resource, requested in sorted(self.pod_request(pod).items()):
            if not self.inventory.has_topology(resource):
                hints[resource] = None
                continue
            allocated = self.pod_resource_devices(pod.uid, resource)
            hints[resource] = self._resource_hints(resource, allocated, set(), requested)
        return hints

    def _resource_hints(self, resource: str, allocated: Set[str], reusable: Set[str],
                        requested: int) -> List[TopologyHint]:
        """One resource's hints: regenerated from devices already allocated (none when their count
        differs from the request), else from the free devices plus those reusable from init containers."""
        if allocated:
            if len(allocated) != requested:
                return []
            return self.topology_hints(resource, allocated, set(), requested)
        available = self.available_devices(resource)
        if len(available | reusable) < requested:
            return []
        return self.topology_hints(resource, available, reusable, requested)

    # -- allocation --------------------------------------------------------------------------
    def allocate(self,
                 pod: Any,
                 container: Any,
                 affinity: Optional[TopologyHint]) -> Dict[str, List[str]]:
        """``Allocate``: devices for every device-plugin resource of the container's limits.

        Returns resource -> device ids newly allocated; raises :class:`DeviceAllocationError`.
        """
        container = pod.container(container) if isinstance(container, str) else container
        for uid in list(self.devices_to_reuse):
            if uid != pod.uid:
                del self.devices_to_reuse[uid]
        reuse = self.devices_to_reuse.setdefault(pod.uid, {})
        result: Dict[str, List[str]] = {}
        for resource, needed in sorted(self.container_request(container).items()):
            chosen = self._devices_to_allocate(pod.uid, container.name, resource, needed,
                                               reuse.get(resource, set()), affinity)
            if not chosen:
                continue
            self.pod_devices.setdefault(pod.uid, {}).setdefault(container.name, {})[resource] = chosen
            reuse[resource] = reuse.get(resource, set()) - set(chosen)
            result[resource] = chosen
        held = self.pod_devices.get(pod.uid, {}).get(container.name, {})
        for resource, ids in held.items():
            if container.is_init and not (container.restartable and self.sidecar_aware):
                reuse[resource] = reuse.get(resource, set()) | set(ids)
            else:
                reuse[resource] = reuse.get(resource, set()) - set(ids)
        return result

    def _devices_to_allocate(self,
                             pod_uid: str,
                             container_name: str,
                             resource: str,
                             required: int,
                             reusable: Set[str],
                             affinity: Optional[TopologyHint]) -> List[str]:
        existing = self.container_devices(pod_uid, container_name, resource)
        if existing:
            if len(existing) != required:
                raise DeviceAllocationError.unexpected(
                    'pod "%s" container "%s" changed request for resource "%s" from %d to %d'
                    % (pod_uid, container_name, resource, len(existing), required))
            if set(existing) - self.inventory.healthy.get(resource, set()):
                raise DeviceAllocationError.unexpected(
                    "previously allocated devices are no longer healthy; cannot allocate "
                    "unhealthy devices %s" % resource)
            return []
        if resource not in self.inventory.devices:
            raise DeviceAllocationError.unexpected("cannot allocate unregistered device %s" % resource)
        if not self.inventory.healthy.get(resource):
            raise DeviceAllocationError.unexpected(
                "no healthy devices present; cannot allocate unhealthy devices %s" % resource)
        if required == 0:
            return []
        allocated: List[str] = []
        state = {"needed": required}

        def take_from(candidates: Iterable[str]) -> bool:
            for device in sorted_ids(set(candidates) - set(allocated)):
                allocated.append(device)
                state["needed"] -= 1
                if state["needed"] == 0:
                    return True
            return False

        if take_from(reusable):
            return allocated
        available = self.available_devices(resource) - set(allocated)
        if len(available) < state["needed"]:
            raise DeviceAllocationError.unexpected(
                "requested number of devices unavailable for %s. Requested: %d, Available: %d"
                % (resource, state["needed"], len(available)))
        aligned, unaligned, no_topology = self._filter_by_affinity(resource, available, affinity)
        if state["needed"] < len(aligned):
            if take_from(aligned):
                return allocated
        else:
            if take_from(aligned) or take_from(unaligned) or take_from(no_topology):
                return allocated
        raise DeviceAllocationError.unexpected(
            "unexpectedly allocated less resources than required. Requested: %d, Got: %d"
            % (required, required - state["needed"]))

    def _filter_by_affinity(self,
                            resource: str,
                            available: Set[str],
                            affinity: Optional[TopologyHint]) -> Tuple[Set[str], Set[str], Set[str]]:
        mask = affinity.affinity if affinity is not None else None
        if not self.inventory.has_topology(resource) or mask is None:
            return set(), set(), set(available)
        numa_of = self.inventory.devices.get(resource, {})
        aligned: Set[str] = set()
        unaligned: Set[str] = set()
        none: Set[str] = set()
        for device in available:
            nodes = numa_of.get(device, frozenset())
            if not nodes:
                none.add(device)
            elif any(mask.is_set(n) for n in nodes):
                aligned.add(device)
            else:
                unaligned.add(device)
        return aligned, unaligned, none

    # -- release -----------------------------------------------------------------------------
    def remove(self, pod_uid: str, container_name: str) -> None:
        """Forget one container's devices (used by failed-admission cleanup)."""
        containers = self.pod_devices.get(pod_uid)
        if containers is None:
            return
        containers.pop(container_name, None)
        if not containers:
            del self.pod_devices[pod_uid]

    def remove_pod(self, pod_uid: str) -> None:
        self.pod_devices.pop(pod_uid, None)
        self.devices_to_reuse.pop(pod_uid, None)

    def remove_stale_state(self, active_pod_uids: Iterable[str]) -> None:
        """``UpdateAllocatedDevices``: free devices of pods that are no longer active."""
        active = set(active_pod_uids)
        for pod_uid in list(self.pod_devices):
            if pod_uid not in active:
                del self.pod_devices[pod_uid]

    def state(self) -> Dict[str, Any]:
        """Plain data: allocations per pod/container/resource and free devices per resource."""
        return {
            "allocations": dict((p, dict((c, dict((r, list(ids)) for r, ids in sorted(res.items())))
                                         for c, res in sorted(cs.items())))
                                for p, cs in sorted(self.pod_devices.items())),
            "free": dict((r, sorted_ids(self.available_devices(r))) for r in self.inventory.resources()),
        }


def _mask(nodes: Iterable[int]) -> int:
    value = 0
    for node in nodes:
        value |= 1 << node
    return value
