# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the kubelet's managers align for a pod, what they leave unaligned, and where DRA devices sit.

Why: operators assume ``single-numa-node`` aligns everything a pod asks for. The kubelet's Topology
Manager merges hints only from its hint providers, and the kubelet registers three: the device
manager (device plugins), the CPU manager and the memory manager
(pkg/kubelet/cm/container_manager_linux.go ``NewContainerManager``: ``AddHintProvider`` for those
three; the DRA manager is created there but never added). So:

* a pod's ``spec.resourceClaims`` (Dynamic Resource Allocation) are never part of the NUMA decision:
  DRA devices are prepared after admission, wherever the scheduler's allocation put them;
* an extended resource whose device plugin reports no topology (or that no device plugin
  registered: a node-level extended resource) gets no hint (devicemanager/topology_hints.go);
* CPUs and memory are aligned only when their manager gives the pod exclusive resources (static
  CPU Manager and a Guaranteed container with integer CPUs; Static Memory Manager and a Guaranteed
  pod), and only across managers when the Topology Manager's policy is not ``none``.

Given a claim's allocated devices and a NUMA attribute for them (a ResourceClaim's
``status.allocation.devices.results`` plus the ResourceSlices that publish those devices, or an
attribute on the result itself), :func:`pod_alignment` compares the devices' NUMA nodes with the
NUMA nodes of the pod's exclusive CPUs and memory and warns, naming both, when they differ.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Dict, List, Mapping, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError

#: The standard attribute name of a device's NUMA node (``StandardDeviceAttributeNUMANode`` of
#: k8s.io/dynamic-resource-allocation/deviceattribute); drivers also publish it under their own
#: domain (``dra.net/numaNode``, ``dra.cpu/numaNode``, ...).
STANDARD_NUMA_ATTRIBUTE = "resource.kubernetes.io/numaNode"
#: Unqualified attribute names taken as a NUMA node (compared case-insensitively), after the standard one.
NUMA_ATTRIBUTE_NAMES = ("numanode", "numa", "numanodeid", "numa_node", "numa-node")

WHY_DRA = ("Dynamic Resource Allocation: the Topology Manager has no hint provider for DRA (the kubelet registers "
           "only the device, CPU and memory managers); the devices are prepared after admission")
WHY_NO_PLUGIN = ("no device plugin registered it (a node-level extended resource): the device manager gives no "
                 "topology hint")
WHY_NO_TOPOLOGY = "its device plugin reports no NUMA topology for the devices: the device manager gives no hint"
WHY_TM_NONE = "topologyManagerPolicy none: no manager aligns it with the pod's other resources"
NOT_NUMA = frozenset(("ephemeral-storage", "pods", "storage"))


class DRAInputError(NumaguardError):
    """A ResourceClaim / ResourceSlice input that cannot be used, named precisely."""


# ---- DRA objects ---------------------------------------------------------------------------------

def _sub(obj: Any, key: str) -> Mapping[str, Any]:
    """``obj[key]`` when both are mappings, else an empty mapping."""
    value = obj.get(key) if isinstance(obj, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _int_value(value: Any) -> Optional[int]:
    """A device attribute's value as a NUMA node id: ``{int: 1}`` (the API's JSON), ``{intValue: 1}``
    (the Go field), the list form ``{ints: [1, 0]}`` (k8s.io/dynamic-resource-allocation/deviceattribute
    publishes the device's own node first, then same-socket nodes at the nearest distance; alpha gate
    DRAListTypeAttributes), a plain int, or a decimal string; else None."""
    if isinstance(value, Mapping):
        for key in ("int", "intValue", "IntValue"):
            if key in value:
                return _int_value(value[key])
        for key in ("ints", "intValues", "IntValues"):
            if isinstance(value.get(key), list) and value[key]:
                return _int_value(value[key][0])
        for key in ("string", "stringValue", "StringValue"):
            if key in value:
                return _int_value(value[key])
        return None
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def device_numa_node(attributes: Any, driver: str = "") -> Tuple[Optional[int], str]:
    """(NUMA node, attribute name) from a device's attributes, or (None, "").

    Order: ``resource.kubernetes.io/numaNode``; then the driver's own ``<driver>/numaNode`` (or an
    unqualified name, which the API qualifies with the driver's name); then any other domain's
    ``.../numaNode`` (``numa``, ``numaNodeID``, ``numa_node`` are accepted alike)."""
    if not isinstance(attributes, Mapping):
        return None, ""
    ranked = []
    for name, value in attributes.items():
        text = str(name)
        domain, _slash, short = text.rpartition("/")
        if short.lower() not in NUMA_ATTRIBUTE_NAMES:
            continue
        node = _int_value(value)
        if node is None:
            continue
        if text == STANDARD_NUMA_ATTRIBUTE:
            rank = 0
        elif not domain or domain == driver:
            rank = 1
        else:
            rank = 2
        ranked.append((rank, text, node))
    if not ranked:
        return None, ""
    rank, name, node = sorted(ranked)[0]
    return node, name


def _documents(objects: Any, where: str) -> List[Tuple[str, Dict[str, Any]]]:
    out: List[Tuple[str, Dict[str, Any]]] = []
    if objects is None:
        return out
    if not isinstance(objects, list):
        objects = [objects]
    for index, item in enumerate(objects):
        label = "%s[%d]" % (where, index)
        if item is None:
            continue
        if not isinstance(item, Mapping):
            raise DRAInputError("%s: a ResourceClaim or ResourceSlice must be a mapping, got %s"
                                % (label, type(item).__name__))
        kind = item.get("kind")
        if isinstance(kind, str) and kind.endswith("List"):
            out.extend(_documents(item.get("items") or [], label + ".items"))
        elif kind in ("ResourceClaim", "ResourceSlice"):
            out.append((label, dict(item)))
        else:
            raise DRAInputError("%s: kind %r is neither ResourceClaim nor ResourceSlice (nor a List of them)"
                                % (label, kind))
    return out


class DRAObjects:
    """ResourceClaims (by namespace and name) and the NUMA node of published devices
    (by driver, pool, device)."""

    def __init__(self, objects: Any = None, where: str = "dra_objects") -> None:
        self.claims: Dict[Tuple[str, str], Dict[str, Any]] = {}
        self.device_numa: Dict[Tuple[str, str, str], Tuple[int, str]] = {}
        for label, document in _documents(objects, where):
            if document.get("kind") == "ResourceClaim":
                self._add_claim(label, document)
            else:
                self._add_slice(label, document)

    def __bool__(self) -> bool:
        return bool(self.claims or self.device_numa)

    def _add_claim(self, label: str, claim: Mapping[str, Any]) -> None:
        meta = _sub(claim, "metadata")
        name = meta.get("name")
        if not isinstance(name, str) or not name:
            raise DRAInputError("%s: ResourceClaim without metadata.name" % label)
        namespace = str(meta.get("namespace") or "default")
        status = _sub(claim, "status")
        allocation = _sub(status, "allocation")
        devices = _sub(allocation, "devices")
        results = devices.get("results") or []
        if not isinstance(results, list):
            raise DRAInputError("%s: status.allocation.devices.results must be a list" % label)
        allocated = []
        for index, result in enumerate(results):
            if not isinstance(result, Mapping) or not result.get("device"):
                raise DRAInputError("%s: status.allocation.devices.results[%d] has no device" % (label, index))
            allocated.append({"request": str(result.get("request") or ""), "driver": str(result.get("driver") or ""),
                              "pool": str(result.get("pool") or ""), "device": str(result["device"]),
                              "attributes": result.get("attributes")})
        self.claims[(namespace, name)] = {"name": name, "namespace": namespace, "allocated": bool(allocation),
                                          "devices": allocated}

    def _add_slice(self, label: str, resource_slice: Mapping[str, Any]) -> None:
        spec = _sub(resource_slice, "spec")
        if not spec:
            raise DRAInputError("%s: ResourceSlice without spec" % label)
        driver = str(spec.get("driver") or "")
        pool = _sub(spec, "pool")
        pool_name = str(pool.get("name") or "")
        devices = spec.get("devices") or []
        if not isinstance(devices, list):
            raise DRAInputError("%s: spec.devices must be a list" % label)
        for index, device in enumerate(devices):
            if not isinstance(device, Mapping) or not device.get("name"):
                raise DRAInputError("%s: spec.devices[%d] has no name" % (label, index))
            attributes = device.get("attributes")
            if attributes is None:  # v1alpha3 / v1beta1: devices[].basic.attributes
                attributes = _sub(device, "basic").get("attributes")
            node, name = device_numa_node(attributes, driver)
            if node is not None:
                self.device_numa[(driver, pool_name, str(device["name"]))] = (node, name)

    def claim(self, namespace: str, name: str) -> Optional[Dict[str, Any]]:
        return self.claims.get((namespace, name))

    def numa_of(self, device: Mapping[str, Any]) -> Tuple[Optional[int], str]:
        """A claim result's device NUMA node: its own attributes first, then the ResourceSlices."""
        node, name = device_numa_node(device.get("attributes"), device.get("driver") or "")
        if node is not None:
            return node, name
        found = self.device_numa.get((device.get("driver") or "", device.get("pool") or "", device.get("device") or ""))
        if found is None:  # a slice that names no pool: match on driver and device
            for (driver, _pool, dev), value in sorted(self.device_numa.items()):
                if driver == device.get("driver") and dev == device.get("device"):
                    return value
            return None, ""
        return found


# ---- pod claims ----------------------------------------------------------------------------------

def pod_claims(manifest: Any) -> List[Dict[str, Any]]:
    """The pod's ``spec.resourceClaims``: name, the ResourceClaim it names (``resourceClaimName``, or
    the generated one from ``status.resourceClaimStatuses``), its template, and the containers
    that use it (``resources.claims``)."""
    if not isinstance(manifest, Mapping):
        return []
    spec = _sub(manifest, "spec")
    status = _sub(manifest, "status")
    generated = {}
    for entry in status.get("resourceClaimStatuses") or []:
        if isinstance(entry, Mapping) and entry.get("name") and entry.get("resourceClaimName"):
            generated[str(entry["name"])] = str(entry["resourceClaimName"])
    users: Dict[str, List[str]] = {}
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            if not isinstance(container, Mapping):
                continue
            resources = _sub(container, "resources")
            for claim in resources.get("claims") or []:
                if isinstance(claim, Mapping) and claim.get("name"):
                    users.setdefault(str(claim["name"]), []).append(str(container.get("name") or "?"))
    out = []
    for entry in spec.get("resourceClaims") or []:
        if not isinstance(entry, Mapping) or not entry.get("name"):
            continue
        name = str(entry["name"])
        out.append({"name": name,
                    "resource_claim": str(entry.get("resourceClaimName") or generated.get(name) or ""),
                    "template": str(entry.get("resourceClaimTemplateName") or ""),
                    "containers": users.get(name, [])})
    return out


# ---- alignment -----------------------------------------------------------------------------------

def _qualified(name: str) -> bool:
    return "/" in name and not name.startswith(("hugepages-", "kubernetes.io/"))


def pod_alignment(manifest: Any,
                  requests: Mapping[str, int],
                  result: Mapping[str, Any],
                  policies: Mapping[str, Any],
                  inventory: Any,
                  objects: Optional[DRAObjects] = None) -> Dict[str, Any]:
    """What the kubelet's managers align for one admission ``result`` and what they do not.

    ``requests``: the pod's effective requests (``pod_requests``); ``policies``: the simulator's
    ``summary()`` (the three managers' policies); ``inventory``: the device manager's
    ``DeviceInventory``; ``objects``: ResourceClaims and ResourceSlices, when known.
    Returns ``aligned`` ([{resource, by, numa_nodes}]), ``not_aligned`` ([{resource, why}]),
    ``claims`` (per pod claim: its devices with their NUMA node and the comparison) and
    ``mismatches`` (per DRA device on another NUMA node than something the pod pinned: ``pod``,
    ``claim``, ``device``, ``driver``, ``numa_node``, ``pinned`` ("cpu" for the exclusive CPUs, else
    the memory type) and ``pod_numa_nodes``; the report layer words them,
    ``_report/admission_table.alignment_warnings``).
    """
    tm_policy = str(policies.get("topology_manager_policy") or "none")
    cpu_policy = str(policies.get("cpu_manager_policy") or "none")
    mem_policy = str(policies.get("memory_manager_policy") or "None")
    admitted = bool(result.get("admitted"))
    containers = list(result.get("containers") or [])
    cpu_nodes = sorted(set(n for c in containers for n in c.get("cpu_numa_nodes") or []))
    mem_nodes: Dict[str, List[int]] = {}
    for c in containers:
        for block in c.get("memory_blocks") or []:
            mem_nodes.setdefault(str(block.get("type")), [])
            mem_nodes[str(block.get("type"))] = sorted(set(mem_nodes[str(block.get("type"))])
                                                       | set(block.get("numa_affinity") or []))
    dev_nodes: Dict[str, List[int]] = {}
    for c in containers:
        for resource, nodes in (c.get("device_numa_nodes") or {}).items():
            dev_nodes[resource] = sorted(set(dev_nodes.get(resource, [])) | set(nodes))
    aligned: List[Dict[str, Any]] = []
    not_aligned: List[Dict[str, str]] = []
    qos = str(result.get("qos_class") or "?")
    for resource in sorted(requests):
        if resource in NOT_NUMA or not requests[resource]:
            continue
        if not admitted:
            not_aligned.append({"resource": resource, "why": "pod not admitted"})
            continue
        if resource == "cpu":
            if cpu_nodes:
                entry = {"resource": resource, "by": "CPU manager (exclusive CPUs)", "numa_nodes": cpu_nodes}
            else:
                why = ("shared CPU pool: cpuManagerPolicy %s gives exclusive CPUs only to Guaranteed containers with "
                       "integer CPU requests under the static policy (this pod: %s)" % (cpu_policy, qos))
                not_aligned.append({"resource": resource, "why": why})
                continue
        elif resource == "memory" or resource.startswith("hugepages-"):
            if resource in mem_nodes:
                entry = {"resource": resource, "by": "memory manager", "numa_nodes": mem_nodes[resource]}
            else:
                why = ("no NUMA memory: memoryManagerPolicy %s pins memory only for Guaranteed pods under the Static "
                       "policy (this pod: %s)" % (mem_policy, qos))
                not_aligned.append({"resource": resource, "why": why})
                continue
        elif _qualified(resource):
            devices = getattr(inventory, "devices", {}).get(resource)
            if devices is None:
                not_aligned.append({"resource": resource, "why": WHY_NO_PLUGIN})
                continue
            if not any(devices.values()):
                not_aligned.append({"resource": resource, "why": WHY_NO_TOPOLOGY})
                continue
            entry = {"resource": resource, "by": "device manager", "numa_nodes": dev_nodes.get(resource, [])}
        else:
            continue
        if tm_policy == "none":
            not_aligned.append({"resource": resource, "why": WHY_TM_NONE})
        else:
            aligned.append(entry)
    name = "%s/%s" % (result.get("namespace") or "default", result.get("name") or "?")
    namespace = str(result.get("namespace") or "default")
    claims = []
    mismatches: List[Dict[str, Any]] = []
    for claim in pod_claims(manifest):
        not_aligned.append({"resource": "claim %s" % claim["name"], "why": WHY_DRA})
        entry = dict(claim, devices=[], status="unknown", note="")
        found = objects.claim(namespace, claim["resource_claim"]) if objects and claim["resource_claim"] else None
        if found is None:
            entry["note"] = ("no ResourceClaim %s/%s given" % (namespace, claim["resource_claim"]) if claim["resource_claim"]
                             else "claim from template %s: give the pod's status.resourceClaimStatuses to name the "
                                  "generated ResourceClaim" % (claim["template"] or "?"))
            claims.append(entry)
            continue
        if not found["allocated"]:
            entry["note"] = "ResourceClaim %s/%s is not allocated yet" % (namespace, found["name"])
            claims.append(entry)
            continue
        for device in found["devices"]:
            node, attribute = objects.numa_of(device) if objects else (None, "")
            entry["devices"].append({"request": device["request"], "driver": device["driver"], "pool": device["pool"],
                                     "device": device["device"], "numa_node": node, "attribute": attribute})
        known = [d for d in entry["devices"] if d["numa_node"] is not None]
        if not known:
            entry["note"] = "no NUMA attribute for the claim's devices (ResourceSlice attribute %s or <driver>/numaNode)" \
                % STANDARD_NUMA_ATTRIBUTE
            claims.append(entry)
            continue
        pinned = [("cpu", cpu_nodes)] if cpu_nodes else []
        pinned += sorted(mem_nodes.items())
        if not admitted or not pinned:
            entry["note"] = ("pod not admitted" if not admitted else
                             "the pod has no exclusive CPUs or NUMA memory: nothing to compare with")
            claims.append(entry)
            continue
        entry["status"] = "aligned"
        for device in known:
            for what, nodes in pinned:
                if device["numa_node"] not in nodes:
                    entry["status"] = "mismatch"
                    mismatches.append({"pod": name, "claim": claim["name"], "device": device["device"],
                                       "driver": device["driver"], "numa_node": device["numa_node"], "pinned": what,
                                       "pod_numa_nodes": list(nodes)})
        claims.append(entry)
    return {"topology_manager_policy": tm_policy, "aligned": aligned, "not_aligned": not_aligned,
            "claims": claims, "mismatches": mismatches}
