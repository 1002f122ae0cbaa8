# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 23, case 6: discovery answers for four kinds of real machine, as hwloc does.

* a PCI device without one of its identity files drops that device (with a warning), not the topology;
* an empty per-CPU ``online`` file says nothing (the kernel always prints 0 or 1): the global
  ``cpu/online`` list decides, and without one the CPU is online, as a CPU without the file;
* a snapshot without ``/proc/meminfo`` answers from the nodes' ``MemTotal``;
* CPU 0 offline: every online CPU stays in its node.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.facts import gather
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import read_topology
from ansible_collections.numaguard.kubelet.tests.fleet import topologies

CPU = "sys/devices/system/cpu"
NODE = "sys/devices/system/node"
PCI = "sys/bus/pci/devices"


def tree(tmp_path, name):
    root = tmp_path / name
    topologies.write_tree(name, str(root), hostname="h01")
    return root


@pytest.mark.parametrize("attribute", ["vendor", "device", "class"])
def test_a_device_without_an_identity_file_is_dropped_with_a_warning(tmp_path, attribute):
    root = tree(tmp_path, "gpu-sriov")
    addresses = sorted(os.listdir(str(root / PCI)))
    (root / PCI / addresses[0] / attribute).unlink()
    facts = gather(str(root))
    assert [d["address"] for d in facts["pci_devices"]] == addresses[1:]
    assert "/%s/%s/%s: does not exist; device %s left out of pci_devices" % (PCI, addresses[0], attribute, addresses[0]) in \
        "\n".join(facts["warnings"])
    assert [n["id"] for n in facts["nodes"]] == [0, 1]


def test_an_empty_per_cpu_online_file_is_no_information(tmp_path):
    root = tree(tmp_path, "offline-cpus")
    base = read_topology(str(root))
    (root / CPU / "cpu3" / "online").write_text("")
    (root / CPU / "cpu13" / "online").write_text("")  # offline by the global list
    warnings = []
    topo = read_topology(str(root), warnings)
    assert topo.online_cpus() == base.online_cpus() and 3 in topo.online_cpus() and 13 not in topo.online_cpus()
    assert "/sys/devices/system/cpu/cpu{3,13}/online: empty (the kernel prints 0 or 1); the online list decides" in warnings
    # without the global list the CPU counts as online, as a CPU without the file
    (root / CPU / "online").unlink()
    topo = read_topology(str(root), [])
    assert 3 in topo.online_cpus() and 13 in topo.online_cpus()


@pytest.mark.parametrize("name", ["vm-single", "intel-2s"])
def test_a_snapshot_without_proc_meminfo_answers_from_the_nodes(tmp_path, name):
    root = tree(tmp_path, name)
    (root / "proc" / "meminfo").unlink()
    facts = gather(str(root))
    assert facts["system"]["memory_total_bytes"] == sum(n["memory_total_bytes"] for n in facts["nodes"])
    assert any(w.startswith("/proc/meminfo: does not exist; node capacity is the sum of the nodes' MemTotal")
               for w in facts["warnings"])


def _cpu0_offline(root, node_keeps_cpu0=False):
    cpu_root = root / CPU
    (cpu_root / "online").write_text("1-11\n")
    (cpu_root / "offline").write_text("0,12-15\n")
    (cpu_root / "cpu0" / "online").write_text("0\n")
    for sub in ("topology", "cache"):
        shutil.rmtree(str(cpu_root / "cpu0" / sub), ignore_errors=True)
    (root / NODE / "node0" / "cpulist").write_text("0-3,8-11\n" if node_keeps_cpu0 else "1-3,8-11\n")
    (root / NODE / "node0" / "cpumap").write_text("00000f0f\n" if node_keeps_cpu0 else "00000f0e\n")


@pytest.mark.parametrize("variant", ["x86", "node-keeps-cpu0", "no-global-online", "masks-only", "links-only"])
def test_cpu0_offline_keeps_every_online_cpu_in_its_node(tmp_path, variant):
    root = tree(tmp_path, "offline-cpus")
    _cpu0_offline(root, node_keeps_cpu0=variant == "node-keeps-cpu0")
    if variant == "no-global-online":
        (root / CPU / "online").unlink()
    if variant in ("masks-only", "links-only"):
        for node in ("node0", "node1"):
            (root / NODE / node / "cpulist").unlink()
            if variant == "links-only":
                (root / NODE / node / "cpumap").unlink()
    topo = read_topology(str(root), [])
    assert [(n.id, n.cpus) for n in topo.nodes] == [(0, (1, 2, 3, 8, 9, 10, 11)), (1, (4, 5, 6, 7))]
    assert topo.offline_cpus() == (0, 12, 13, 14, 15)
