# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Snapshot trees for the kernel/platform classes that need a discovery fallback.

Each class starts from a tree written by ``topologies.write_tree`` (the project's own fake
machines) and changes exactly what that kind of kernel or platform does differently. The
unit tests read each tree and check the answer, and that a warning names what was missing.

``QUIRKS[name] = Quirk(base, description, platforms, apply)``; :func:`write_quirk_tree`.
Standard library only.
"""
from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from typing import Callable, Dict

from ansible_collections.numaguard.kubelet.tests.fleet import topologies

NODE = os.path.join("sys", "devices", "system", "node")
CPU = os.path.join("sys", "devices", "system", "cpu")


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    elif os.path.lexists(path):
        os.remove(path)


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def _cpu_dirs(root: str):
    base = os.path.join(root, CPU)
    for name in sorted(os.listdir(base)):
        if name.startswith("cpu") and name[3:].isdigit():
            yield os.path.join(base, name)


def _node_dirs(root: str):
    base = os.path.join(root, NODE)
    for name in sorted(os.listdir(base)):
        if name.startswith("node") and name[4:].isdigit():
            yield os.path.join(base, name)


def masks_only(root: str) -> None:
    """Kernels before the ``*_list`` files (2.6.9-2.6.2x, e.g. RHEL 4/5): only hex masks."""
    for cpu_dir in _cpu_dirs(root):
        topo = os.path.join(cpu_dir, "topology")
        if os.path.isdir(topo):
            for name in os.listdir(topo):
                if name.endswith("_list"):
                    os.remove(os.path.join(topo, name))
    for node_dir in _node_dirs(root):
        _remove(os.path.join(node_dir, "cpulist"))


def links_only(root: str) -> None:
    """Node directories with neither cpulist nor cpumap, only ``cpuN`` links (ia64, old SGI)."""
    for node_dir in _node_dirs(root):
        _remove(os.path.join(node_dir, "cpulist"))
        _remove(os.path.join(node_dir, "cpumap"))


def empty_online(root: str) -> None:
    """``cpu/online`` present but empty (container sysfs views: LXCFS, gVisor, some VMs)."""
    _write(os.path.join(root, CPU, "online"), "")


def cpu_in_no_node(root: str) -> None:
    """An online CPU that no node lists but that links to its node (hot-added CPU on firmware
    without an SRAT entry for it; seen on ia64 and early arm64 ACPI)."""
    cpulist = os.path.join(root, NODE, "node1", "cpulist")
    ids = sorted(topologies_cpus(cpulist))
    ids.remove(ids[-1])
    _write(cpulist, topologies._cpulist(ids) + "\n")
    _remove(os.path.join(root, NODE, "node1", "cpumap"))


def topologies_cpus(path: str):
    from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import parse_cpuset
    with open(path) as handle:
        return parse_cpuset(handle.read().strip())


def offline_node0(root: str) -> None:
    """Node 0 offline (no directory) while node 1's distance row still covers the possible
    nodes 0-1 (memory hot-remove, POWER LPARs whose node 0 has no resources)."""
    node0 = os.path.join(root, NODE, "node0")
    # node 0's CPUs go offline with it: mark them so and move nothing else.
    cpus = topologies_cpus(os.path.join(node0, "cpulist"))
    _remove(node0)
    online = topologies_cpus(os.path.join(root, CPU, "online")) - cpus
    _write(os.path.join(root, CPU, "online"), topologies._cpulist(sorted(online)) + "\n")
    for cpu in cpus:
        cdir = os.path.join(root, CPU, "cpu%d" % cpu)
        if cpu != 0:
            _write(os.path.join(cdir, "online"), "0\n")
        for sub in ("topology", "cache", "node0"):
            _remove(os.path.join(cdir, sub))
    _write(os.path.join(root, NODE, "online"), "1\n")
    _write(os.path.join(root, NODE, "has_cpu"), "1\n")
    _write(os.path.join(root, NODE, "has_memory"), "1\n")
    _write(os.path.join(root, NODE, "has_normal_memory"), "1\n")


def hmat(root: str) -> None:
    """ACPI HMAT memory initiator/target entries beside the nodes (kernel 5.2+ on CXL/HBM
    platforms): ``nodeN/access0/{initiators,targets}/nodeM`` links and ``memory_side_cache``."""
    for node_dir in _node_dirs(root):
        node = os.path.basename(node_dir)
        for kind in ("initiators", "targets"):
            base = os.path.join(node_dir, "access0", kind)
            os.makedirs(base)
            for name in ("read_bandwidth", "write_bandwidth", "read_latency", "write_latency"):
                if kind == "initiators":
                    _write(os.path.join(base, name), "100\n")
            os.symlink("../../../%s" % node, os.path.join(base, node))
        cache = os.path.join(node_dir, "memory_side_cache", "index1")
        for name, value in (("size", "1073741824"), ("indexing", "0"), ("line_size", "64")):
            _write(os.path.join(cache, name), value + "\n")


def no_meminfo(root: str) -> None:
    """A snapshot taken without ``/proc/meminfo`` (sysfs-only must-gather copies)."""
    _remove(os.path.join(root, "proc", "meminfo"))


@dataclass(frozen=True)
class Quirk:
    base: str
    description: str
    platforms: str
    apply: Callable[[str], None]


QUIRKS: Dict[str, Quirk] = {
    "masks-only": Quirk("offline-cpus", "hex masks only (thread_siblings, core_siblings, nodeN/cpumap)",
                        "kernels before the *_list files (2.6.9 to about 2.6.26; RHEL 4/5)", masks_only),
    "links-only": Quirk("offline-cpus", "node directories with cpuN links only (no cpulist, no cpumap)",
                        "ia64 / very old kernels (the bundled legacy-2s keeps cpumap off too)", links_only),
    "empty-online": Quirk("offline-cpus", "empty /sys/devices/system/cpu/online",
                          "container sysfs views (LXCFS, gVisor), some hypervisors", empty_online),
    "cpu-in-no-node": Quirk("offline-cpus", "an online CPU that no node lists (only its cpuN/nodeM link)",
                            "hot-added CPUs without SRAT affinity (ia64, early arm64 ACPI)", cpu_in_no_node),
    "offline-node0": Quirk("offline-cpus", "node 0 offline; node1/distance covers the possible nodes 0-1",
                           "POWER LPARs / memory hot-remove (possible != online nodes)", offline_node0),
    "hmat": Quirk("offline-cpus", "HMAT access0 initiator/target links and memory_side_cache beside nodes",
                  "kernel 5.2+ with ACPI HMAT (CXL, HBM, Optane platforms)", hmat),
    "no-meminfo": Quirk("offline-cpus", "snapshot without /proc/meminfo", "hand-made sysfs-only captures",
                        no_meminfo),
}


def write_quirk_tree(name: str, root: str, hostname: str = "h01") -> None:
    quirk = QUIRKS[name]
    topologies.write_tree(quirk.base, root, hostname=hostname)
    quirk.apply(root)
