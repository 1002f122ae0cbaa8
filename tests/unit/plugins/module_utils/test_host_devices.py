# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""PCI devices and the kubelet's device-plugin inventory read from a host tree."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.admission_check import run_check
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.devices import DeviceError, device_facts, host_device_inventory
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.facts import gather
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import SysfsError
from ansible_collections.numaguard.kubelet.tests.fleet import topologies

PCI = "sys/bus/pci/devices"
CHECKPOINT = "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"
GPU = "GPU-5c3e2a1b-7d4f-4e8a-9b0c-1d2e3f405162"


@pytest.fixture()
def root(tmp_path):
    path = tmp_path / "h"
    topologies.write_tree("gpu-sriov", str(path), hostname="h01")
    return path


def _registered(root, registered):
    (root / CHECKPOINT).write_text(json.dumps({"Data": {"PodDeviceEntries": None, "RegisteredDevices": registered},
                                               "Checksum": 0}))


def test_facts_report_pci_devices_and_mapped_plugins(root):
    facts = gather(str(root))
    want = topologies.expected_devices("gpu-sriov")
    assert facts["pci_devices"] == want["pci_devices"]
    assert facts["device_plugins"]["resources"] == want["resources"]
    assert facts["device_plugins"]["unmapped"] == {"example.com/fpga": ["fpga-0"]}
    ahci = facts["pci_devices"][0]
    assert (ahci["address"], ahci["numa_node"]) == ("0000:00:1f.2", None)  # -1 reported as none
    vf = [d for d in facts["pci_devices"] if d["address"] == "0000:3b:01.1"][0]
    assert (vf["physfn"], vf["driver"], vf["iommu_group"]) == ("0000:3b:00.0", "vfio-pci", 42)
    assert facts["warnings"] == []


def test_hosts_without_devices_report_empty(tmp_path):
    root = tmp_path / "v"
    topologies.write_tree("vm-single", str(root))
    facts = gather(str(root))
    assert facts["pci_devices"] == []
    assert facts["device_plugins"] == {"checkpoint": "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint",
                                       "present": False, "error": None, "resources": {}, "unmapped": {}}
    assert host_device_inventory(str(root), "/var/lib/kubelet", (0,)) == (
        {}, "none: no /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint")


def test_replica_suffix_mig_and_unknown_addresses(root):
    _registered(root, {"nvidia.com/gpu": [GPU + "::3", "MIG-1b2c3d4e-0000-1111-2222-333344445555"],
                       "intel.com/vf": ["0000:3b:09.0", "0000:3B:01.0"]})
    warnings = []
    facts = device_facts(str(root), "/var/lib/kubelet", (0, 1), warnings)["device_plugins"]
    assert [(e["id"], e["numa_node"], e["via"]) for e in facts["resources"]["nvidia.com/gpu"]] == [
        (GPU + "::3", 1, "nvidia"), ("MIG-1b2c3d4e-0000-1111-2222-333344445555", None, None)]
    assert [(e["numa_node"], e["pci_address"]) for e in facts["resources"]["intel.com/vf"]] == [
        (None, None), (0, "0000:3b:01.0")]
    assert facts["unmapped"] == {"intel.com/vf": ["0000:3b:09.0"],
                                 "nvidia.com/gpu": ["MIG-1b2c3d4e-0000-1111-2222-333344445555"]}
    assert warnings == ["/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint: intel.com/vf device "
                        "0000:3b:09.0 is at PCI address 0000:3b:09.0, which is not in /sys/bus/pci/devices; unmapped"]


def test_corrupt_checkpoint_is_reported_not_fatal(root):
    (root / CHECKPOINT).write_text("{not json")
    facts = gather(str(root))
    assert facts["device_plugins"]["present"] and facts["device_plugins"]["resources"] == {}
    assert facts["device_plugins"]["error"].startswith("kubelet_internal_checkpoint is not valid JSON")
    assert facts["warnings"][0].startswith("/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint: cannot be read")
    inventory, source = host_device_inventory(str(root), "/var/lib/kubelet", (0, 1))
    assert inventory == {} and source.startswith("none: /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint "
                                                 "unreadable (kubelet_internal_checkpoint is not valid JSON")


@pytest.mark.parametrize("rel,content,message", [
    (PCI + "/0000:d8:00.0/vendor", b"\xff\xfe", "{p}: not ASCII text: b'\\xff\\xfe'"),
    (PCI + "/0000:d8:00.0/class", b"0x03\n", "{p}: expected a PCI class like 0x030200, got '0x03\\n'"),
    (PCI + "/0000:d8:00.0/numa_node", b"4096\n", "{p}: expected an integer between -1 and 1023, got '4096\\n'"),
    (PCI + "/0000:3b:00.0/sriov_totalvfs", b"1" * 23, None),
])
def test_bad_pci_values_are_refused(root, rel, content, message):
    target = root / rel
    target.write_bytes(content)
    with pytest.raises(SysfsError) as info:
        gather(str(root))
    if message:
        assert str(info.value) == message.format(p=target)
    else:
        assert str(info.value).startswith(str(target) + ": expected an integer between 0 and 65535")


def test_bad_pci_layout_is_refused(root):
    (root / PCI / "bogus").mkdir()
    with pytest.raises(DeviceError, match="entry 'bogus' is not a PCI address"):
        gather(str(root))
    shutil.rmtree(str(root / PCI / "bogus"))
    os.remove(str(root / PCI / "0000:3b:01.0" / "physfn"))
    (root / PCI / "0000:3b:01.0" / "physfn").mkdir()
    with pytest.raises(DeviceError, match="physfn: expected a symbolic link"):
        gather(str(root))


def test_numa_node_outside_the_nodes_is_warned(root):
    (root / PCI / "0000:d8:00.0" / "numa_node").write_text("7\n")
    facts = gather(str(root))
    assert [d["numa_node"] for d in facts["pci_devices"] if d["address"] == "0000:d8:00.0"] == [None]
    assert facts["warnings"] == ["/sys/bus/pci/devices/0000:d8:00.0/numa_node: node 7 is not among the NUMA "
                                 "nodes (0,1); reported as none"]


def test_nvidia_information_file_must_name_uuid_and_bus(root):
    info = root / "proc/driver/nvidia/gpus/0000:d8:00.0/information"
    info.write_text("Model: X\nGPU UUID: nope\n")
    with pytest.raises(DeviceError, match="expected 'GPU UUID: GPU-<uuid>'"):
        gather(str(root))


CONFIG = """apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
topologyManagerPolicy: single-numa-node
reservedSystemCPUs: "0"
"""


def _pod(name, resources):
    limits = {"cpu": "2", "memory": "1Gi"}
    limits.update(resources)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"limits": limits}}]}}


def test_admission_check_uses_the_host_inventory(root):
    (root / "var/lib/kubelet/config.yaml").write_text(CONFIG)
    params = {"root": str(root), "pod": [_pod("gpu", {"nvidia.com/gpu": "1"}),
                                         _pod("vf", {"intel.com/e810_vf": "2"})],
              "pod_file": None, "pod_file_content": None, "topology": None, "kubelet_config": None,
              "kubelet_config_dir": None, "kubelet_flags": None, "memory_manager_state": None,
              "cpu_manager_state": None, "devices": None, "device_allocations": None, "return_state": False,
              "merge_method": "fast"}
    result = run_check(params)
    gpu, vf = result["pods"]
    assert gpu["admitted"] and gpu["numa_nodes"] == [1]
    assert gpu["containers"][0]["devices"] == {"nvidia.com/gpu": [GPU]}
    assert vf["admitted"] and vf["numa_nodes"] == [0]
    assert vf["containers"][0]["devices"] == {"intel.com/e810_vf": ["0000:3b:01.0", "0000:3b:01.1"]}
    assert result["sources"]["devices"] == (
        "host: 6 device(s) registered in /var/lib/kubelet/device-plugins/kubelet_internal_checkpoint, NUMA node "
        "from /sys/bus/pci/devices and /proc/driver/nvidia/gpus; 1 unmapped (no topology)")
    params["devices"] = {"nvidia.com/gpu": {"g": 0}}
    params["pod"] = _pod("gpu", {"nvidia.com/gpu": "1"})
    assert run_check(params)["sources"]["devices"] == "option"
