# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Device NUMA locality from the host: PCI devices and the kubelet's device-plugin devices.

* ``pci_devices``: every entry of ``/sys/bus/pci/devices`` with vendor, device, class, the
  kernel's ``numa_node`` (``-1`` -- no affinity known -- is reported as null), bound driver,
  SR-IOV parent (``physfn``) and ``sriov_totalvfs``, and IOMMU group.
* ``device_plugins``: the devices the kubelet has registered from device plugins, read from
  ``<root-dir>/device-plugins/kubelet_internal_checkpoint`` (``RegisteredDevices``: resource ->
  device ids), each mapped to a NUMA node where the id says where it is: an id that is a PCI
  address (SR-IOV network device plugin, vfio/KubeVirt plugins) through that device's
  ``numa_node``; an NVIDIA GPU UUID (``GPU-...``, with or without a time-slicing ``::N``
  replica suffix) through ``/proc/driver/nvidia/gpus/*/information`` (``GPU UUID`` ->
  ``Bus Location``). Every other id is reported as unmapped: the plugin knows its topology, we
  cannot ask it.

The checkpoint records neither health nor topology, so the inventory built here
(:func:`host_device_inventory`) treats registered devices as healthy and unmapped ones as
devices without topology. Malformed sysfs values are refused (SysfsError naming file and
content); a corrupt checkpoint is reported (``error``) and warned about, like the state files.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import os
import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.kubelet_paths import under_root
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import MAX_NUMNODES, SysfsError, read_int, read_text

PCI_DIR = "sys/bus/pci/devices"
NVIDIA_GPUS_DIR = "proc/driver/nvidia/gpus"
CHECKPOINT = os.path.join("device-plugins", "kubelet_internal_checkpoint")

#: ``DDDD:BB:DD.F``; domains are 4 hex digits, 5+ behind Intel VMD (``10000:01:00.0``).
PCI_ADDRESS = re.compile(r"^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
_HEX_ID = re.compile(r"^0x[0-9a-fA-F]{4}$")
_HEX_CLASS = re.compile(r"^0x[0-9a-fA-F]{6}$")
_GPU_UUID = re.compile(r"^(GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})(?:::\d+)?$")


class DeviceError(NumaguardError):
    """A device directory or NVIDIA information file that cannot be interpreted."""


def _hex(path: str, pattern: re.Pattern, what: str) -> str:
    content = read_text(path)
    value = content.replace("\x00", "").strip()
    if not pattern.match(value):
        example = "0x10de" if pattern is _HEX_ID else "0x030200"
        raise SysfsError("%s: expected a %s like %s, got %r" % (path, what, example, content[:120]))
    return value.lower()


def _link_name(path: str) -> Optional[str]:
    """Basename of a sysfs link (``driver`` -> ``vfio-pci``), None when absent."""
    if not os.path.islink(path):
        if os.path.lexists(path):
            raise DeviceError("%s: expected a symbolic link (copy sysfs links as links, not their targets)" % path)
        return None
    return os.path.basename(os.readlink(path).rstrip("/")) or None


def read_pci_devices(root: str, node_ids: Tuple[int, ...], warnings: List[str]) -> List[Dict[str, Any]]:
    """Every PCI device of the host, sorted by address (empty when there is no PCI bus)."""
    base = os.path.join(root, PCI_DIR)
    if not os.path.isdir(base):
        return []
    try:
        names = sorted(os.listdir(base))
    except OSError as exc:
        raise SysfsError("%s: cannot list directory: %s" % (base, exc.strerror or exc))
    devices = []
    for address in names:
        if not PCI_ADDRESS.match(address):
            raise DeviceError("%s: entry %r is not a PCI address (DDDD:BB:DD.F)" % (base, address))
        ddir = os.path.join(base, address)
        missing = [name for name in ("vendor", "device", "class") if not os.path.exists(os.path.join(ddir, name))]
        if missing:
            # one device the snapshot (or a hot-unplug) left without its identity is not the
            # machine's topology: that device is left out, the others and the nodes stay
            warnings.append("/%s/%s/%s: does not exist; device %s left out of pci_devices"
                            % (PCI_DIR, address, missing[0], address))
            continue
        numa_file = os.path.join(ddir, "numa_node")
        numa: Optional[int] = None
        if os.path.exists(numa_file):
            numa = read_int(numa_file, -1, MAX_NUMNODES - 1)
            if numa == -1:
                numa = None
            elif numa not in node_ids:
                warnings.append("/%s/%s/numa_node: node %d is not among the NUMA nodes (%s); reported as none"
                                % (PCI_DIR, address, numa, ",".join("%d" % n for n in node_ids)))
                numa = None
        physfn = _link_name(os.path.join(ddir, "physfn"))
        if physfn is not None and not PCI_ADDRESS.match(physfn):
            raise DeviceError("%s/physfn: links to %r, not a PCI address" % (ddir, physfn))
        total_vfs_file = os.path.join(ddir, "sriov_totalvfs")
        group = _link_name(os.path.join(ddir, "iommu_group"))
        if group is not None and not group.isdigit():
            raise DeviceError("%s/iommu_group: links to %r, not a group number" % (ddir, group))
        devices.append({
            "address": address,
            "vendor": _hex(os.path.join(ddir, "vendor"), _HEX_ID, "PCI vendor id"),
            "device": _hex(os.path.join(ddir, "device"), _HEX_ID, "PCI device id"),
            "class": _hex(os.path.join(ddir, "class"), _HEX_CLASS, "PCI class"),
            "numa_node": numa,
            "driver": _link_name(os.path.join(ddir, "driver")),
            "physfn": physfn,
            "sriov_totalvfs": read_int(total_vfs_file, 0, 65535) if os.path.exists(total_vfs_file) else None,
            "iommu_group": int(group) if group is not None else None,
        })
    return devices


def read_nvidia_gpus(root: str) -> Dict[str, str]:
    """GPU UUID -> PCI address from ``/proc/driver/nvidia/gpus/<bus id>/information``."""
    base = os.path.join(root, NVIDIA_GPUS_DIR)
    if not os.path.isdir(base):
        return {}
    gpus: Dict[str, str] = {}
    for entry in sorted(os.listdir(base)):
        path = os.path.join(base, entry, "information")
        if not os.path.exists(path):
            continue
        fields: Dict[str, str] = {}
        for line in read_text(path).splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        uuid = fields.get("GPU UUID", "")
        location = fields.get("Bus Location", entry).lower()
        if not _GPU_UUID.match(uuid) or not PCI_ADDRESS.match(location):
            raise DeviceError("%s: expected 'GPU UUID: GPU-<uuid>' and 'Bus Location: DDDD:BB:DD.F' lines, got "
                              "UUID %r, bus location %r" % (path, uuid, location))
        gpus[uuid.lower()] = location
    return gpus


def read_device_plugins(root: str, root_dir: str, pci: List[Dict[str, Any]],
                        warnings: List[str]) -> Dict[str, Any]:
    """The kubelet's registered device-plugin devices, each mapped to a NUMA node where possible."""
    path = os.path.join(root_dir, CHECKPOINT)
    result: Dict[str, Any] = {"checkpoint": path, "present": False, "error": None, "resources": {},
                              "unmapped": {}}
    host_path = under_root(root, path)
    if not os.path.lexists(host_path):
        return result
    result["present"] = True
    try:
        with open(host_path, "rb") as handle:
            text = handle.read().decode("utf-8")
        # imported here: a host without a device-plugin checkpoint (numa_facts) does not compile it (15 KB; issue 24)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.devicemanager_inputs import parse_device_checkpoint

        registered = parse_device_checkpoint(text)["registered"]
    except (OSError, UnicodeDecodeError, ValueError, AttributeError, TypeError) as exc:
        message = getattr(exc, "strerror", None) or str(exc)
        result["error"] = message
        warnings.append("%s: cannot be read (%s); device-plugin devices unknown" % (path, message))
        return result
    by_address = dict((d["address"], d) for d in pci)
    gpus = read_nvidia_gpus(root) if registered else {}
    for resource in sorted(registered):
        entries = []
        for device_id in registered[resource]:
            entry: Dict[str, Any] = {"id": device_id, "numa_node": None, "pci_address": None, "via": None}
            address = device_id.lower()
            gpu = _GPU_UUID.match(device_id)
            if gpu and gpu.group(1).lower() in gpus:
                address = gpus[gpu.group(1).lower()]
                entry["via"] = "nvidia"
            elif PCI_ADDRESS.match(address):
                entry["via"] = "pci"
            if entry["via"] and address in by_address:
                entry["pci_address"] = address
                entry["numa_node"] = by_address[address]["numa_node"]
            else:
                if entry["via"]:
                    warnings.append("%s: %s device %s is at PCI address %s, which is not in /%s; unmapped"
                                    % (path, resource, device_id, address, PCI_DIR))
                entry["via"] = None
                result["unmapped"].setdefault(resource, []).append(device_id)
            entries.append(entry)
        result["resources"][resource] = entries
    return result


def device_facts(root: str, root_dir: str, node_ids: Tuple[int, ...], warnings: List[str]) -> Dict[str, Any]:
    """``pci_devices`` and ``device_plugins`` for the ``numa_topology`` fact."""
    pci = read_pci_devices(root, node_ids, warnings)
    return {"pci_devices": pci, "device_plugins": read_device_plugins(root, root_dir, pci, warnings)}


def host_device_inventory(root: str, root_dir: str, node_ids: Tuple[int, ...]) -> Tuple[Dict[str, Any], str]:
    """(``devices`` inventory for the admission engine, a sentence saying where it came from)."""
    path = os.path.join(root_dir, CHECKPOINT)
    if not os.path.lexists(under_root(root, path)):
        return {}, "none: no %s" % path
    warnings: List[str] = []
    plugins = read_device_plugins(root, root_dir, read_pci_devices(root, node_ids, warnings), warnings)
    if plugins["error"]:
        return {}, "none: %s unreadable (%s)" % (plugins["checkpoint"], plugins["error"])
    inventory = dict((resource, dict((e["id"], e["numa_node"]) for e in entries))
                     for resource, entries in plugins["resources"].items())
    count = sum(len(e) for e in plugins["resources"].values())
    unmapped = sum(len(e) for e in plugins["unmapped"].values())
    return inventory, ("host: %d device(s) registered in %s, NUMA node from /%s and /%s; %d unmapped (no topology)"
                       % (count, plugins["checkpoint"], PCI_DIR, NVIDIA_GPUS_DIR, unmapped))
