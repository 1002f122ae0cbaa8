# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the device plugins registered, as the device manager reads it: the declared inventory
(:class:`DeviceInventory`), the devices held by running pods (:func:`read_allocations`), the
kubelet's ``kubelet_internal_checkpoint`` (:func:`parse_device_checkpoint`), and the device
manager of a node where no plugin registered any device (:class:`NoDeviceManager`).

Shapes are described in :mod:`.devicemanager`. Its own small module so that a module run on a
host without device plugins reads its inputs without compiling the device manager's hint
generation and allocation (pkg/kubelet/cm/devicemanager/manager.go, checkpoint/).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re

try:
    from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Set, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError


class InvalidDeviceInventory(NumaguardError):
    """A device inventory or allocation list that cannot be read, naming the bad entry."""


_NATURAL = re.compile(r"(\d+)")


def natural_key(device_id: str) -> Tuple[Any, ...]:
    """Sort key putting ``gpu2`` before ``gpu10``."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in _NATURAL.split(device_id) if part != "")


def sorted_ids(ids: Iterable[str]) -> List[str]:
    """Device ids in natural order (``gpu2`` before ``gpu10``)."""
    return sorted(ids, key=natural_key)


def _numa_list(value: Any, where: str) -> FrozenSet[int]:
    if value is None:
        return frozenset()
    if isinstance(value, bool):
        raise InvalidDeviceInventory("%s: NUMA node must be an integer or a list, got %r" % (where, value))
    if isinstance(value, int):
        value = [value]
    elif isinstance(value, str):
        text = value.strip()
        value = [] if not text else [part.strip() for part in text.split(",")]
    if not isinstance(value, (list, tuple)):
        raise InvalidDeviceInventory("%s: NUMA node must be an integer or a list, got %r" % (where, value))
    nodes = set()
    for item in value:
        if isinstance(item, bool):
            raise InvalidDeviceInventory("%s: NUMA node must be an integer, got %r" % (where, item))
        try:
            node = int(item)
        except (TypeError, ValueError):
            raise InvalidDeviceInventory("%s: NUMA node must be an integer, got %r" % (where, item))
        if node < 0 or node > 63:
            raise InvalidDeviceInventory("%s: NUMA node %d out of range 0-63" % (where, node))
        nodes.add(node)
    return frozenset(nodes)


def _device_entry(device_id: str, value: Any, where: str) -> Tuple[FrozenSet[int], bool]:
    if isinstance(value, dict):
        unknown = set(value) - {"id", "numa", "numa_nodes", "healthy"}
        if unknown:
            raise InvalidDeviceInventory("%s: unknown key(s) %s (expected numa, healthy)"
                                         % (where, ", ".join(sorted(map(str, unknown)))))
        numa = value.get("numa", value.get("numa_nodes"))
        healthy = value.get("healthy", True)
        if not isinstance(healthy, bool):
            raise InvalidDeviceInventory("%s.healthy must be true or false, got %r" % (where, healthy))
        return _numa_list(numa, where + ".numa"), healthy
    return _numa_list(value, where), True


class DeviceInventory:
    """Devices per resource: id -> NUMA nodes (empty = no topology), and health."""

    def __init__(self,
                 devices: Optional[Dict[str, Dict[str, FrozenSet[int]]]] = None,
                 healthy: Optional[Dict[str, Set[str]]] = None) -> None:
        self.devices = dict((r, dict(d)) for r, d in (devices or {}).items())
        self.healthy = dict((r, set(h)) for r, h in (healthy or {}).items())
        for resource, devs in self.devices.items():
            self.healthy.setdefault(resource, set(devs))

    @classmethod
    def from_spec(cls, spec: Any) -> DeviceInventory:
        """Read the declared inventory (see module docstring); raise InvalidDeviceInventory."""
        if spec is None:
            return cls()
        if not isinstance(spec, dict):
            raise InvalidDeviceInventory("devices must be a mapping of resource name to devices, "
                                         "got %s" % type(spec).__name__)
        devices: Dict[str, Dict[str, FrozenSet[int]]] = {}
        healthy: Dict[str, Set[str]] = {}
        for resource, entries in spec.items():
            if not isinstance(resource, str) or "/" not in resource:
                raise InvalidDeviceInventory("devices: resource name %r must be a fully-qualified "
                                             "extended resource name such as nvidia.com/gpu"
                                             % (resource,))
            where = "devices[%s]" % resource
            items: List[Tuple[str, Any]] = []
            if isinstance(entries, dict):
                items = [(str(k), v) for k, v in entries.items()]
            elif isinstance(entries, list):
                for index, entry in enumerate(entries):
                    if not isinstance(entry, dict) or not isinstance(entry.get("id"), (str, int)) \
                            or isinstance(entry.get("id"), bool):
                        raise InvalidDeviceInventory("%s[%d]: each device needs an id" % (where, index))
                    items.append((str(entry["id"]), entry))
            elif entries is None:
                items = []
            else:
                raise InvalidDeviceInventory("%s must be a mapping of device id to NUMA node(s) or a "
                                             "list of devices, got %r" % (where, entries))
            devices[resource] = {}
            healthy[resource] = set()
            for device_id, value in items:
                if device_id in devices[resource]:
                    raise InvalidDeviceInventory("%s: device %r is listed twice" % (where, device_id))
                numa, ok = _device_entry(device_id, value, "%s[%s]" % (where, device_id))
                devices[resource][device_id] = numa
                if ok:
                    healthy[resource].add(device_id)
        return cls(devices, healthy)

    def resources(self) -> List[str]:
        return sorted(self.devices)

    def has_topology(self, resource: str) -> bool:
        """``deviceHasTopologyAlignment``: at least one device reports a NUMA node."""
        return any(self.devices.get(resource, {}).values())

    def to_dict(self) -> Dict[str, Any]:
        return dict((r, dict((d, {"numa": sorted(n), "healthy": d in self.healthy.get(r, ())})
                             for d, n in sorted(self.devices[r].items(), key=lambda kv: natural_key(kv[0]))))
                    for r in self.resources())


def read_allocations(spec: Any) -> Dict[str, Dict[str, Dict[str, List[str]]]]:
    """Validate ``{pod_uid: {container: {resource: [ids]}}}``."""
    if spec is None:
        return {}
    if not isinstance(spec, dict):
        raise InvalidDeviceInventory("device allocations must be a mapping pod uid -> container -> "
                                     "resource -> device ids, got %s" % type(spec).__name__)
    out: Dict[str, Dict[str, Dict[str, List[str]]]] = {}
    for pod_uid, containers in spec.items():
        if not isinstance(containers, dict):
            raise InvalidDeviceInventory("device allocations[%s] must be a mapping of container "
                                         "names" % (pod_uid,))
        for name, resources in containers.items():
            if not isinstance(resources, dict):
                raise InvalidDeviceInventory("device allocations[%s][%s] must be a mapping of "
                                             "resource names" % (pod_uid, name))
            for resource, ids in resources.items():
                if isinstance(ids, str):
                    ids = [ids]
                if not isinstance(ids, list) or not all(isinstance(i, (str, int)) for i in ids):
                    raise InvalidDeviceInventory("device allocations[%s][%s][%s] must be a list of "
                                                 "device ids" % (pod_uid, name, resource))
                out.setdefault(str(pod_uid), {}).setdefault(str(name), {})[str(resource)] = \
                    [str(i) for i in ids]
    return out


def parse_device_checkpoint(text: str) -> Dict[str, Any]:
    """Read ``kubelet_internal_checkpoint``: allocations and registered device ids.

    Returns ``{"allocations": {pod: {container: {resource: [ids]}}}, "registered": {resource:
    [ids]}}``. The checksum is not verified (its Go struct hash is not specified here); the NUMA
    node of each device is not in this file, so it still comes from the declared inventory.
    """
    import json  # here: a run without a device checkpoint does not import it (issue 12)

    try:
        document = json.loads(text)
    except ValueError as exc:
        raise StateError("kubelet_internal_checkpoint is not valid JSON: %s" % exc)
    data = document.get("Data") if isinstance(document, dict) else None
    if not isinstance(data, dict):
        raise StateError("kubelet_internal_checkpoint has no Data object")
    allocations: Dict[str, Dict[str, Dict[str, List[str]]]] = {}
    for index, entry in enumerate(data.get("PodDeviceEntries") or []):
        if not isinstance(entry, dict):
            raise StateError("kubelet_internal_checkpoint: PodDeviceEntries[%d] is not an object" % index)
        ids = entry.get("DeviceIDs") or {}
        flat: List[str] = []
        if isinstance(ids, dict):  # newer files: NUMA node -> ids
            for key in sorted(ids, key=str):
                flat.extend(str(i) for i in ids[key] or [])
        elif isinstance(ids, list):  # older files: plain list
            flat = [str(i) for i in ids]
        pod_uid = str(entry.get("PodUID", ""))
        name = str(entry.get("ContainerName", ""))
        resource = str(entry.get("ResourceName", ""))
        bucket = allocations.setdefault(pod_uid, {}).setdefault(name, {}).setdefault(resource, [])
        for device in flat:
            if device not in bucket:
                bucket.append(device)
    registered: Dict[str, List[str]] = {}
    for resource, ids in (data.get("RegisteredDevices") or {}).items():
        registered[str(resource)] = [str(i) for i in ids or []]
    return {"allocations": allocations, "registered": registered}


class NoDeviceManager:
    """The device manager of a node where no device plugin registered a device and no pod
    holds one: every resource is "not a device-plugin resource", so it gives no hints
    (``{}``: no preference), allocates nothing and holds nothing -- what
    :class:`.devicemanager.DeviceManager` does with an empty inventory, without its code."""

    def __init__(self, numa_node_ids: Iterable[int], device_numa_nodes_only: bool = True) -> None:
        self.numa_node_ids = tuple(sorted(numa_node_ids))
        self.device_numa_nodes_only = device_numa_nodes_only
        self.inventory = DeviceInventory()
        self.pod_devices: Dict[str, Dict[str, Dict[str, List[str]]]] = {}
        self.devices_to_reuse: Dict[str, Dict[str, Set[str]]] = {}

    def get_topology_hints(self, pod: Any, container: Any) -> Dict[str, Any]:
        return {}

    def get_pod_topology_hints(self, pod: Any) -> Dict[str, Any]:
        return {}

    def allocate(self, pod: Any, container: Any, affinity: Any) -> Dict[str, List[str]]:
        return {}

    def container_devices(self, pod_uid: str, container_name: str, resource: str) -> List[str]:
        return []

    def remove(self, pod_uid: str, container_name: str) -> None:
        return None

    def remove_pod(self, pod_uid: str) -> None:
        return None

    def remove_stale_state(self, active_pod_uids: Iterable[str]) -> None:
        return None

    def state(self) -> Dict[str, Any]:
        return {"allocations": {}, "free": {}}


def has_devices(devices: Any, allocations: Any) -> bool:
    """False when neither an inventory nor allocations are given (None or empty mappings): the
    node's device manager is then :class:`NoDeviceManager`."""
    return not (devices is None or devices == {}) or not (allocations is None or allocations == {})
