# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Bundled fake host trees of real machine classes, for the simulated fleet and the tests.

Each entry of :data:`TOPOLOGIES` describes one machine class; :func:`write_tree` writes a
complete, self-consistent host tree (``sys/devices/system/{node,cpu}``, ``sys/kernel/mm/hugepages``,
``proc/meminfo``, empty ``var/lib/kubelet`` and ``etc/kubernetes``) that looks like what the
kernel shows on such a machine, quirks included (sparse node ids, CPU-less nodes, offline CPUs
without ``topology/``, old kernels without ``cpulist``/``die_id``/per-node hugepages, arm64
without cache ids, padded files). :func:`expected` returns what ``numaguard.kubelet.numa_facts``
must report for a tree, computed from the description independently of the reader.

CLI::

    python3 tests/fleet/topologies.py --list
    python3 tests/fleet/topologies.py --topology intel-2s --root DIR [--hostname h01]
        [--hugepages 2Mi=512] [--force]

Standard library only (the fleet scripts run it with the system python3).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

KIB = 1024
GIB_KB = 1024 * 1024  # one GiB in kB


@dataclass(frozen=True)
class CpuSpec:
    """One logical CPU as the kernel would show it."""

    id: int
    node: int
    core_id: int
    socket: int
    die: int
    siblings: Tuple[int, ...]
    llc_id: int
    online: bool = True


@dataclass(frozen=True)
class NodeSpec:
    """One NUMA node: MemTotal in kB and hugepage pools {page size kB: nr pages}."""

    id: int
    mem_total_kb: int
    hugepages: Dict[int, int] = field(default_factory=dict)


@dataclass(frozen=True)
class PciSpec:
    """One PCI function as sysfs shows it (and, for NVIDIA GPUs, /proc/driver/nvidia)."""

    address: str
    vendor: str
    device: str
    pci_class: str
    numa_node: int                     # -1: the firmware gave no affinity
    driver: Optional[str] = None
    iommu_group: Optional[int] = None
    physfn: Optional[str] = None       # VF: address of its PF
    totalvfs: Optional[int] = None     # PF: sriov_totalvfs
    gpu_uuid: Optional[str] = None     # NVIDIA GPU: written to /proc/driver/nvidia/gpus/<addr>/information
    model: str = ""


@dataclass(frozen=True)
class MachineSpec:
    """A machine class; the flags switch on the kernel quirks of that class."""

    name: str
    description: str
    nodes: Tuple[NodeSpec, ...]
    cpus: Tuple[CpuSpec, ...]
    distance: Callable[[int, int], int]
    numa_kernel: bool = True          # False: CONFIG_NUMA off, no sys/devices/system/node at all
    node_cpulist: bool = True         # False: old kernel, node dirs only have cpuN links
    node_hugepages: bool = True       # False: hugepages only under /sys/kernel/mm/hugepages
    die_id: bool = True               # False: kernel older than 5.2, no topology/die_id
    cache_id: bool = True             # False: arm64/old kernels, no cache/index*/id
    global_hugepages: Optional[Dict[int, int]] = None  # for trees without per-node pools
    hugepage_sizes_kb: Tuple[int, ...] = (2048, 1048576)  # every pool size the kernel offers
    pci_devices: Tuple[PciSpec, ...] = ()
    #: RegisteredDevices of the kubelet's device-plugin checkpoint: (resource, device ids)
    device_plugins: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()


# -- builders ---------------------------------------------------------------------------------

def _x86_cpus(sockets: int, nodes_per_socket: int, cores_per_node: int, threads: int, cores_per_llc: int,
              node_ids: Optional[Sequence[int]] = None, offline: Sequence[int] = ()) -> Tuple[CpuSpec, ...]:
    """Enumerate CPUs the way x86 firmware does: all first threads socket by socket, then the
    second threads (2S x 4C x 2T: 0-3 s0, 4-7 s1, 8-11 s0 sibling threads, 12-15 s1)."""
    node_ids = list(node_ids if node_ids is not None else range(sockets * nodes_per_socket))
    cores_per_socket = nodes_per_socket * cores_per_node
    total_cores = sockets * cores_per_socket
    cpus = []
    for thread in range(threads):
        for socket in range(sockets):
            for core in range(cores_per_socket):
                cpu_id = thread * total_cores + socket * cores_per_socket + core
                global_core = socket * cores_per_socket + core
                siblings = tuple(t * total_cores + global_core for t in range(threads)
                                 if t * total_cores + global_core not in offline)
                cpus.append(CpuSpec(
                    id=cpu_id, node=node_ids[socket * nodes_per_socket + core // cores_per_node],
                    core_id=core, socket=socket, die=0, siblings=siblings,
                    llc_id=global_core // cores_per_llc, online=cpu_id not in offline))
    return tuple(sorted(cpus, key=lambda c: c.id))


def _power_cpus(node_ids: Sequence[int], cores_per_node: int, smt: int) -> Tuple[CpuSpec, ...]:
    """POWER numbering: the SMT threads of a core are consecutive; core_id is the first thread's
    hardware id; one chip (package) per node; the generic die_id is -1."""
    cpus = []
    cpu_id = 0
    for node in node_ids:
        for _core in range(cores_per_node):
            first = cpu_id
            siblings = tuple(range(first, first + smt))
            for _dummy in range(smt):
                cpus.append(CpuSpec(id=cpu_id, node=node, core_id=first, socket=node, die=-1,
                                    siblings=siblings, llc_id=first // smt))
                cpu_id += 1
    return tuple(cpus)


def _matrix(groups: Dict[int, int], local: int, near: int, far: int) -> Callable[[int, int], int]:
    """Distance function: ``local`` on the diagonal, ``near`` within a group, ``far`` across."""
    def distance(a, b):
        if a == b:
            return local
        return near if groups[a] == groups[b] else far
    return distance


def _node(node_id: int, mem_kb: int, **pages: int) -> NodeSpec:
    return NodeSpec(node_id, mem_kb, dict((int(k[1:]), v) for k, v in pages.items()))


def _build() -> Dict[str, MachineSpec]:
    machines = []

    # A small cloud VM (4 vCPUs, 16 GiB) on a NUMA-enabled guest kernel: one node 0, one
    # vCPU per core, an empty 2Mi pool. MemTotal is below 16 GiB as on any real guest.
    machines.append(MachineSpec(
        name="vm-single",
        description="cloud VM, 4 vCPU / 16 GiB, NUMA kernel with a single node 0",
        nodes=(_node(0, 16370456, k2048=0),),
        cpus=_x86_cpus(1, 1, 4, 1, 4),
        distance=_matrix({0: 0}, 10, 10, 10),
        hugepage_sizes_kb=(2048,)))

    # A minimal VM whose kernel is built without CONFIG_NUMA: no /sys/devices/system/node at
    # all; the kubelet then sees one node holding every CPU and /proc/meminfo's memory. Hugepages
    # exist only in the global pool.
    machines.append(MachineSpec(
        name="vm-nonuma",
        description="small VM, 2 vCPU / 8 GiB, kernel without CONFIG_NUMA (no node directory)",
        nodes=(_node(0, 8129124),),
        cpus=_x86_cpus(1, 1, 2, 1, 2),
        distance=_matrix({0: 0}, 10, 10, 10),
        numa_kernel=False, node_hugepages=False, global_hugepages={2048: 64},
        hugepage_sizes_kb=(2048,)))

    # Two-socket Intel Xeon (Ice Lake-SP class, 24 cores/socket, HT on), 192 GiB per socket,
    # 1Gi pages reserved at boot and 2Mi pages at runtime; SLIT distances 10/20 as Intel BIOSes
    # report. Node 0 holds the kernel, so its MemTotal is a bit lower.
    machines.append(MachineSpec(
        name="intel-2s",
        description="2-socket Intel Xeon, 2x24 cores, HT, 2x192 GiB, 2Mi and 1Gi hugepages",
        nodes=(_node(0, 196995340, k2048=1024, k1048576=16), _node(1, 198134616, k2048=1024, k1048576=16)),
        cpus=_x86_cpus(2, 1, 24, 2, 24),
        distance=_matrix({0: 0, 1: 1}, 10, 10, 20)))

    # Two-socket AMD EPYC 7543 (Milan, 32 cores/socket, SMT) in NPS4: 8 nodes of 8 cores,
    # one 32 MiB L3 per 8-core CCX (so one LLC per node), 64 GiB per node; distances 10 local,
    # 12 same socket, 32 across sockets.
    epyc_groups = dict((n, n // 4) for n in range(8))
    machines.append(MachineSpec(
        name="amd-epyc-nps4",
        description="2-socket AMD EPYC 7543 NPS4, 8 nodes x 8 cores, SMT, 8x64 GiB, 2Mi+1Gi",
        nodes=tuple(_node(n, 65451216 if n else 64822520, k2048=512, k1048576=8) for n in range(8)),
        cpus=_x86_cpus(2, 4, 8, 2, 8),
        distance=_matrix(epyc_groups, 10, 12, 32)))

    # An IBM POWER9 PowerVM LPAR spanning two drawers: the hypervisor numbers nodes by
    # drawer/chip, so ids are sparse (0,1,2 in one drawer, 33,34 in the other). SMT8, thread
    # ids consecutive per core, die_id -1, 16Mi and 16Gi hugepages (hash MMU), distances
    # 10/20/40.
    power_nodes = (0, 1, 2, 33, 34)
    machines.append(MachineSpec(
        name="sparse-ids",
        description="IBM POWER9 LPAR over two drawers, sparse node ids 0,1,2,33,34, SMT8, 16Mi/16Gi pages",
        nodes=tuple(_node(n, 66846720 - 1184 * (n + 1), k16384=64) for n in power_nodes),
        cpus=_power_cpus(power_nodes, 2, 8),
        distance=_matrix(dict((n, 0 if n < 32 else 1) for n in power_nodes), 10, 20, 40),
        hugepage_sizes_kb=(16384, 16777216)))

    # A one-socket Sapphire Rapids host with a 128 GiB CXL Type-3 memory expander: the
    # expander is a CPU-less node 1 (ACPI SRAT/HMAT distance 14); no hugepages reserved there.
    machines.append(MachineSpec(
        name="cxl-memory",
        description="1-socket Intel Sapphire Rapids, 32 cores HT, 256 GiB DDR5 + 128 GiB CXL memory-only node 1",
        nodes=(_node(0, 262589720, k2048=2048, k1048576=32), _node(1, 134217728 - 16384, k2048=0, k1048576=0)),
        cpus=_x86_cpus(1, 1, 32, 2, 32),
        distance=_matrix({0: 0, 1: 1}, 10, 10, 14)))

    # An 8-socket Xeon (HPE Superdome Flex class: two 4-socket chassis) with Sub-NUMA Clustering
    # SNC2: 16 nodes, beyond the kubelet's default max-allowable-numa-nodes of 8. Distances 10
    # local, 11 other SNC half of the socket, 21 same chassis, 31 across chassis.
    big_socket = dict((n, n // 2) for n in range(16))

    def big_distance(a, b):
        if a == b:
            return 10
        if big_socket[a] == big_socket[b]:
            return 11
        return 21 if big_socket[a] // 4 == big_socket[b] // 4 else 31
    machines.append(MachineSpec(
        name="big16",
        description="8-socket Xeon (Superdome Flex class) with SNC2: 16 nodes x 4 cores HT, 16x32 GiB",
        nodes=tuple(_node(n, 32715648 if n else 32068104, k2048=256, k1048576=2) for n in range(16)),
        cpus=_x86_cpus(8, 2, 4, 2, 8),
        distance=big_distance))

    # An NVIDIA GH200 Grace Hopper superchip (arm64, 64K-page kernel): node 0 is the 72-core
    # Grace CPU with 480 GB LPDDR5X, node 1 the Hopper GPU's 96 GB HBM3 exposed as a CPU-less
    # node, nodes 2-8 the empty placeholder nodes reserved for MIG partitions (MemTotal 0).
    # arm64 exposes no cache ids; hugepage sizes are 2Mi and 512Mi with 64K base pages.
    def gh_distance(a, b):
        if a == b:
            return 10
        return 80 if 1 in (a, b) else 120  # the HBM node is nearer to everything than the rest
    machines.append(MachineSpec(
        name="gpu-superchip",
        description="NVIDIA GH200 Grace Hopper (arm64): 72-core CPU node 0, HBM node 1, empty MIG nodes 2-8",
        nodes=((_node(0, 491263936, k2048=4096, k524288=8), _node(1, 99614720, k2048=0, k524288=0))
               + tuple(_node(n, 0, k2048=0, k524288=0) for n in range(2, 9))),
        cpus=tuple(CpuSpec(id=c, node=0, core_id=c, socket=0, die=-1, siblings=(c,), llc_id=0)
                   for c in range(72)),
        distance=gh_distance, cache_id=False, hugepage_sizes_kb=(2048, 524288, 16777216)))

    # A one-socket Xeon with SNC2 (2 nodes, 8 cores HT) where the operator offlined the SMT
    # siblings of node 1 (echo 0 > /sys/devices/system/cpu/cpu{12..15}/online): those CPUs keep
    # their node link but lose topology/ and cache/, and leave the node's cpulist.
    offline = (12, 13, 14, 15)
    machines.append(MachineSpec(
        name="offline-cpus",
        description="1-socket Xeon SNC2, 8 cores HT, SMT siblings 12-15 of node 1 taken offline",
        nodes=(_node(0, 32498172, k2048=128), _node(1, 33014076, k2048=128)),
        cpus=_x86_cpus(1, 2, 4, 2, 8, offline=offline),
        distance=_matrix({0: 0, 1: 0}, 10, 11, 11),
        hugepage_sizes_kb=(2048,)))

    # A 2012-era two-socket Xeon E5 on a 2.6.32 kernel (RHEL 6): node directories without
    # cpulist (only cpuN links), no die_id, no cache ids, no per-node hugepage directories
    # (the 2Mi pool is only under /sys/kernel/mm/hugepages).
    machines.append(MachineSpec(
        name="legacy-2s",
        description="2-socket Xeon E5 on an old kernel: no node cpulist, no die_id, global-only hugepages",
        nodes=(_node(0, 32871524), _node(1, 33030820)),
        cpus=_x86_cpus(2, 1, 8, 2, 8),
        distance=_matrix({0: 0, 1: 1}, 10, 10, 21),
        node_cpulist=False, node_hugepages=False, die_id=False, cache_id=False,
        global_hugepages={2048: 1024}, hugepage_sizes_kb=(2048,)))

    # A 2-socket Xeon (2x8 cores HT, 2x64 GiB) with an NVIDIA H100 PCIe on socket 1 and an
    # Intel E810 NIC on socket 0 whose SR-IOV VFs are bound to vfio-pci and registered by the
    # SR-IOV network device plugin; the NVIDIA device plugin registered the GPU by its UUID.
    # An onboard controller with numa_node -1 (no _PXM in the ACPI tables) completes the bus.
    gpu_uuid = "GPU-5c3e2a1b-7d4f-4e8a-9b0c-1d2e3f405162"
    nic_vfs = tuple("0000:3b:01.%d" % f for f in range(4))
    machines.append(MachineSpec(
        name="gpu-sriov",
        description="2-socket Xeon, 2x8 cores HT, NVIDIA H100 on node 1, E810 SR-IOV VFs on node 0",
        nodes=(_node(0, 65629204, k2048=512, k1048576=4), _node(1, 66060288, k2048=512, k1048576=4)),
        cpus=_x86_cpus(2, 1, 8, 2, 8),
        distance=_matrix({0: 0, 1: 1}, 10, 10, 21),
        pci_devices=(
            PciSpec("0000:00:1f.2", "0x8086", "0xa182", "0x010601", -1, "ahci", 20, model="SATA AHCI"),
            PciSpec("0000:3b:00.0", "0x8086", "0x159b", "0x020000", 0, "ice", 40, totalvfs=128, model="E810-XXV"),
        ) + tuple(PciSpec(vf, "0x8086", "0x1889", "0x020000", 0, "vfio-pci", 41 + i, physfn="0000:3b:00.0",
                          model="E810 VF") for i, vf in enumerate(nic_vfs))
        + (PciSpec("0000:d8:00.0", "0x10de", "0x2331", "0x030200", 1, "nvidia", 90, gpu_uuid=gpu_uuid,
                   model="NVIDIA H100 PCIe"),),
        device_plugins=(("nvidia.com/gpu", (gpu_uuid,)), ("intel.com/e810_vf", nic_vfs),
                        ("example.com/fpga", ("fpga-0",)))))

    return dict((m.name, m) for m in machines)


TOPOLOGIES: Dict[str, MachineSpec] = _build()


def tiny_machine(name: str) -> MachineSpec:
    """The unit tests' tiny machine (a bundled tree per mutated test would write thousands of
    files): 1 socket, 2 nodes x 2 cores x 2 threads, 2048 kB hugepages, CPU 7 offline."""
    return MachineSpec(
        name=name, description="unit-test machine",
        nodes=(NodeSpec(0, 4045848, {2048: 16}), NodeSpec(1, 4128768, {2048: 16})),
        cpus=_x86_cpus(1, 2, 2, 2, 2, offline=(7,)),
        distance=_matrix({0: 0, 1: 0}, 10, 11, 11),
        hugepage_sizes_kb=(2048,))


# -- overrides and derived values ------------------------------------------------------------

_SIZE = re.compile(r"^(\d+)(Ki|Mi|Gi|kB)?$")


def parse_hugepage_override(text: str) -> Tuple[int, int]:
    """``2Mi=512`` / ``1Gi=4`` / ``2048kB=512`` -> (page size kB, pages per node)."""
    size, sep, count = text.partition("=")
    match = _SIZE.match(size.strip())
    if not sep or not match or not count.strip().isdigit():
        raise ValueError("bad --hugepages %r: expected SIZE=COUNT like 2Mi=512 or 1Gi=4" % text)
    factor = {"Ki": 1, "kB": 1, None: 1, "Mi": 1024, "Gi": 1024 * 1024}[match.group(2)]
    return int(match.group(1)) * factor, int(count)


def _spec(name: object, hugepages: Optional[Dict[int, int]] = None) -> MachineSpec:
    """The MachineSpec for a bundled name (or a MachineSpec itself), with hugepage overrides."""
    if isinstance(name, MachineSpec):
        spec = name
    elif name not in TOPOLOGIES:
        raise KeyError("unknown topology %r (bundled: %s)" % (name, ", ".join(sorted(TOPOLOGIES))))
    else:
        spec = TOPOLOGIES[name]
    if not hugepages:
        return spec
    for size in hugepages:
        if size not in spec.hugepage_sizes_kb:
            raise ValueError("topology %s has no %d kB hugepage size (sizes: %s)"
                             % (spec.name, size, ", ".join("%d kB" % s for s in spec.hugepage_sizes_kb)))
    if spec.node_hugepages:
        nodes = tuple(NodeSpec(n.id, n.mem_total_kb,
                               dict(list(n.hugepages.items())
                                    + [(s, c) for s, c in hugepages.items() if n.mem_total_kb > 0]))
                      for n in spec.nodes)
        return _replace(spec, nodes=nodes)
    return _replace(spec, global_hugepages=dict(list((spec.global_hugepages or {}).items())
                                                + list(hugepages.items())))


def _replace(spec: MachineSpec, **changes: object) -> MachineSpec:
    values = dict((f, getattr(spec, f)) for f in spec.__dataclass_fields__)
    values.update(changes)
    return MachineSpec(**values)


def _seed(hostname: Optional[str]) -> int:
    return int(hashlib.sha256((hostname or "").encode("utf-8")).hexdigest()[:8], 16)


def _free_kb(spec: MachineSpec, node: NodeSpec, hostname: Optional[str]) -> int:
    """Free memory of a node: 70-90 % of what hugepages leave, varying per hostname so fleet
    hosts of one class differ in free memory (as real ones do) but not in shape."""
    used_by_pages = sum(size * count for size, count in node.hugepages.items())
    rest = max(node.mem_total_kb - used_by_pages, 0)
    percent = 70 + (_seed(hostname) + node.id) % 21
    return rest * percent // 100


def _free_pages(total: int, node_id: int, hostname: Optional[str]) -> int:
    return total - (_seed(hostname) + node_id) % (total + 1) // 4 if total else 0


def _resource(size_kb: int) -> str:
    for suffix, factor in (("Gi", 1024 * 1024), ("Mi", 1024)):
        if size_kb % factor == 0:
            return "hugepages-%d%s" % (size_kb // factor, suffix)
    return "hugepages-%dKi" % size_kb


def _cpulist(ids: Sequence[int]) -> str:
    ids = sorted(ids)
    parts = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append("%d" % ids[i] if i == j else "%d-%d" % (ids[i], ids[j]))
        i = j + 1
    return ",".join(parts)


def _cpumask(ids: Sequence[int], width: int) -> str:
    """Kernel bitmap format: hex words of 32 bits, most significant first, comma separated."""
    value = 0
    for cpu in ids:
        value |= 1 << cpu
    words = max((width + 31) // 32, 1)
    return ",".join("%08x" % ((value >> (32 * w)) & 0xFFFFFFFF) for w in reversed(range(words)))


def expected(name: object,
             hostname: Optional[str] = None,
             hugepages: Optional[Dict[int, int]] = None) -> Dict[str, object]:
    """What ``numa_facts`` must report for a tree written with the same arguments.

    ``name`` is a bundled topology name or a :class:`MachineSpec` (tests build tiny ones)."""
    spec = _spec(name, hugepages)
    online = [c.id for c in spec.cpus if c.online]
    nodes = {}
    for node in spec.nodes:
        if spec.numa_kernel and spec.node_hugepages:
            # the kernel shows a pool directory for every supported size, empty ones included
            pools = dict((size, 0) for size in spec.hugepage_sizes_kb)
            pools.update(node.hugepages)
        elif spec.numa_kernel:
            pools = {}
        else:
            pools = _global_pools(spec)
        free_kb = _free_kb(spec, node, hostname)
        nodes[node.id] = {
            "cpus": sorted(c.id for c in spec.cpus if c.online and c.node == node.id),
            "memory_total_bytes": node.mem_total_kb * KIB,
            "memory_free_bytes": free_kb * KIB,
            "hugepages": dict((_resource(size), {"page_size_bytes": size * KIB, "total_pages": count,
                                                 "free_pages": _free_pages(count, node.id, hostname)})
                              for size, count in sorted(pools.items())),
            "distances": (dict((peer.id, spec.distance(node.id, peer.id)) for peer in spec.nodes)
                          if spec.numa_kernel else {0: 10}),
        }
    return {
        "node_ids": [n.id for n in spec.nodes],
        "nodes": nodes,
        "online_cpus": online,
        "offline_cpus": [c.id for c in spec.cpus if not c.online],
        "cpus": dict((c.id, {"node": c.node, "core": c.core_id if c.online else None,
                             "socket": c.socket if c.online else None,
                             "die": (c.die if spec.die_id else None) if c.online else None,
                             "siblings": list(c.siblings) if c.online else [],
                             "cache_id": (c.llc_id if spec.cache_id else None) if c.online else None,
                             "online": c.online}) for c in spec.cpus),
        "memory_total_bytes": sum(n.mem_total_kb for n in spec.nodes) * KIB,
        "global_hugepages": _global_pools(spec),
    }


def expected_devices(name: object) -> Dict[str, object]:
    """What ``numa_facts`` must report as ``pci_devices`` and ``device_plugins.resources``."""
    spec = _spec(name)
    by_address = dict((d.address, d) for d in spec.pci_devices)
    by_uuid = dict((d.gpu_uuid, d) for d in spec.pci_devices if d.gpu_uuid)
    resources = {}
    for resource, ids in spec.device_plugins:
        entries = []
        for device_id in ids:
            dev = by_uuid.get(device_id) or by_address.get(device_id)
            entries.append({"id": device_id, "numa_node": dev.numa_node if dev and dev.numa_node >= 0 else None,
                            "pci_address": dev.address if dev else None,
                            "via": ("nvidia" if dev.gpu_uuid else "pci") if dev else None})
        resources[resource] = entries
    return {
        "pci_devices": [{"address": d.address, "vendor": d.vendor, "device": d.device, "class": d.pci_class,
                         "numa_node": d.numa_node if d.numa_node >= 0 else None, "driver": d.driver,
                         "physfn": d.physfn, "sriov_totalvfs": d.totalvfs, "iommu_group": d.iommu_group}
                        for d in sorted(spec.pci_devices, key=lambda d: d.address)],
        "resources": resources,
    }


def _write_devices(spec: MachineSpec, root: str) -> None:
    """sys/bus/pci/devices as a content copy (directories, not links into sys/devices: the
    fleet bind-mounts it over the real one), /proc/driver/nvidia, and the device checkpoint."""
    pci = os.path.join(root, "sys", "bus", "pci", "devices")
    os.makedirs(pci, exist_ok=True)
    for dev in spec.pci_devices:
        ddir = os.path.join(pci, dev.address)
        for fname, value in (("vendor", dev.vendor), ("device", dev.device), ("class", dev.pci_class),
                             ("numa_node", "%d" % dev.numa_node)):
            _write(os.path.join(ddir, fname), value + "\n")
        if dev.driver:
            _link(os.path.join(ddir, "driver"), "../../../bus/pci/drivers/%s" % dev.driver)
        if dev.iommu_group is not None:
            _link(os.path.join(ddir, "iommu_group"), "../../../kernel/iommu_groups/%d" % dev.iommu_group)
        if dev.physfn:
            _link(os.path.join(ddir, "physfn"), "../%s" % dev.physfn)
        if dev.totalvfs is not None:
            _write(os.path.join(ddir, "sriov_totalvfs"), "%d\n" % dev.totalvfs)
            vfs = [d for d in spec.pci_devices if d.physfn == dev.address]
            _write(os.path.join(ddir, "sriov_numvfs"), "%d\n" % len(vfs))
        if dev.gpu_uuid:
            info = ("Model: \t\t %s\nIRQ:   \t\t 0\nGPU UUID: \t %s\nVideo BIOS: \t 96.00.74.00.01\n"
                    "Bus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\n"
                    "Bus Location: \t %s\nDevice Minor: \t 0\nGPU Excluded:\t No\n"
                    % (dev.model, dev.gpu_uuid, dev.address))
            _write(os.path.join(root, "proc", "driver", "nvidia", "gpus", dev.address, "information"), info)
    checkpoint = os.path.join(root, "var", "lib", "kubelet", "device-plugins", "kubelet_internal_checkpoint")
    if spec.device_plugins and not os.path.exists(checkpoint):
        # Checksum 0: nothing here verifies it (the kubelet would; there is none on the fleet).
        data = {"Data": {"PodDeviceEntries": None,
                         "RegisteredDevices": dict((r, list(ids)) for r, ids in spec.device_plugins)},
                "Checksum": 0}
        _write(checkpoint, json.dumps(data, sort_keys=True) + "\n")


def _global_pools(spec: MachineSpec) -> Dict[int, int]:
    if spec.global_hugepages is not None:
        pools = dict((s, 0) for s in spec.hugepage_sizes_kb)
        pools.update(spec.global_hugepages)
        return pools
    pools = dict((s, 0) for s in spec.hugepage_sizes_kb)
    for node in spec.nodes:
        for size, count in node.hugepages.items():
            pools[size] = pools.get(size, 0) + count
    return pools


# -- writer ----------------------------------------------------------------------------------

def _write(path: str, content: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(content)


def _link(path: str, target: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)


def _node_meminfo(node_id: int,
                  total_kb: int,
                  free_kb: int,
                  pools: Dict[int, Tuple[int, int]]) -> str:
    used = total_kb - free_kb
    default = pools.get(2048, (0, 0))
    lines = [("MemTotal", total_kb), ("MemFree", free_kb), ("MemUsed", used),
             ("SwapCached", 0), ("Active", used // 2), ("Inactive", used // 4),
             ("Dirty", 0), ("Writeback", 0), ("FilePages", used // 4), ("Mapped", used // 16),
             ("AnonPages", used // 3), ("Shmem", 0), ("KernelStack", 8192), ("PageTables", 4096),
             ("Slab", used // 20), ("SReclaimable", used // 40), ("SUnreclaim", used // 40)]
    text = "".join("Node %d %-15s %8d kB\n" % (node_id, key + ":", value) for key, value in lines)
    text += "Node %d HugePages_Total: %5d\nNode %d HugePages_Free:  %5d\nNode %d HugePages_Surp:  %5d\n" % (
        node_id, default[0], node_id, default[1], node_id, 0)
    return text


def _proc_meminfo(total_kb: int, free_kb: int, pools: Dict[int, Tuple[int, int]]) -> str:
    default = pools.get(2048, (0, 0))
    hugetlb = sum(size * pool[0] for size, pool in pools.items())
    lines = [("MemTotal", "%d kB" % total_kb), ("MemFree", "%d kB" % free_kb),
             ("MemAvailable", "%d kB" % (free_kb + (total_kb - free_kb) // 8)),
             ("Buffers", "%d kB" % 2048), ("Cached", "%d kB" % ((total_kb - free_kb) // 4)),
             ("SwapCached", "0 kB"), ("SwapTotal", "0 kB"), ("SwapFree", "0 kB"),
             ("HugePages_Total", "%d" % default[0]), ("HugePages_Free", "%d" % default[1]),
             ("HugePages_Rsvd", "0"), ("HugePages_Surp", "0"), ("Hugepagesize", "2048 kB"),
             ("Hugetlb", "%d kB" % hugetlb)]
    return "".join("%-16s%14s\n" % (key + ":", value) for key, value in lines)


def write_tree(name: object,
               root: str,
               hostname: Optional[str] = None,
               hugepages: Optional[Dict[int, int]] = None,
               force: bool = False) -> None:
    """Write the fake host tree of topology ``name`` (a bundled name or a MachineSpec) under ``root``.

    Refuses to write over an existing ``sys`` or ``proc`` tree unless ``force`` (which replaces
    exactly those two generated subtrees); ``var/lib/kubelet`` and ``etc/kubernetes`` are
    created when missing and never emptied, so kubelet state put there survives a rewrite.
    """
    spec = _spec(name, hugepages)
    for sub in ("sys", "proc"):
        path = os.path.join(root, sub)
        if os.path.lexists(path):
            if not force:
                raise FileExistsError("%s already exists; pass --force to replace the generated tree" % path)
            shutil.rmtree(path)
    system = os.path.join(root, "sys", "devices", "system")
    cpu_root = os.path.join(system, "cpu")
    node_root = os.path.join(system, "node")
    all_ids = [c.id for c in spec.cpus]
    width = max(all_ids) + 1
    online = [c.id for c in spec.cpus if c.online]
    offline = [c.id for c in spec.cpus if not c.online]
    exp = expected(name, hostname, hugepages)

    # /sys/devices/system/cpu
    _write(os.path.join(cpu_root, "online"), _cpulist(online) + "\n")
    _write(os.path.join(cpu_root, "offline"), _cpulist(offline) + "\n")
    _write(os.path.join(cpu_root, "possible"), "0-%d\n" % (width - 1))
    _write(os.path.join(cpu_root, "present"), "0-%d\n" % (width - 1))
    _write(os.path.join(cpu_root, "kernel_max"), "8191\n")
    by_socket: Dict[int, List[int]] = {}
    by_llc: Dict[int, List[int]] = {}
    by_die: Dict[Tuple[int, int], List[int]] = {}
    for cpu in spec.cpus:
        if cpu.online:
            by_socket.setdefault(cpu.socket, []).append(cpu.id)
            by_llc.setdefault(cpu.llc_id, []).append(cpu.id)
            by_die.setdefault((cpu.socket, cpu.die), []).append(cpu.id)
    for cpu in spec.cpus:
        cpu_dir = os.path.join(cpu_root, "cpu%d" % cpu.id)
        os.makedirs(cpu_dir)
        if cpu.id != 0:
            _write(os.path.join(cpu_dir, "online"), "1\n" if cpu.online else "0\n")
        if spec.numa_kernel:
            _link(os.path.join(cpu_dir, "node%d" % cpu.node), "../../node/node%d" % cpu.node)
        if not cpu.online:
            continue  # the kernel removes topology/ and cache/ of offline CPUs
        topo = os.path.join(cpu_dir, "topology")
        files = {
            "core_id": "%d" % cpu.core_id,
            "physical_package_id": "%d" % cpu.socket,
            "thread_siblings_list": _cpulist(cpu.siblings),
            "thread_siblings": _cpumask(cpu.siblings, width),
            "core_siblings_list": _cpulist(by_socket[cpu.socket]),
            "core_siblings": _cpumask(by_socket[cpu.socket], width),
        }
        if spec.die_id:
            files.update({
                "die_id": "%d" % cpu.die,
                "core_cpus_list": _cpulist(cpu.siblings),
                "core_cpus": _cpumask(cpu.siblings, width),
                "die_cpus_list": _cpulist(by_die[(cpu.socket, cpu.die)]),
                "package_cpus_list": _cpulist(by_socket[cpu.socket]),
                "package_cpus": _cpumask(by_socket[cpu.socket], width),
            })
        for fname, value in files.items():
            _write(os.path.join(topo, fname), value + "\n")
        caches = [(0, 1, "Data", "48K", cpu.siblings, cpu.core_id),
                  (1, 1, "Instruction", "32K", cpu.siblings, cpu.core_id),
                  (2, 2, "Unified", "1280K", cpu.siblings, cpu.core_id),
                  (3, 3, "Unified", "32768K", by_llc[cpu.llc_id], cpu.llc_id)]
        for index, level, ctype, size, shared, cache_id in caches:
            cdir = os.path.join(cpu_dir, "cache", "index%d" % index)
            _write(os.path.join(cdir, "level"), "%d\n" % level)
            _write(os.path.join(cdir, "type"), ctype + "\n")
            _write(os.path.join(cdir, "size"), size + "\n")
            _write(os.path.join(cdir, "shared_cpu_list"), _cpulist(shared) + "\n")
            _write(os.path.join(cdir, "shared_cpu_map"), _cpumask(shared, width) + "\n")
            if spec.cache_id:
                _write(os.path.join(cdir, "id"), "%d\n" % cache_id)

    # /sys/kernel/mm/hugepages (the global pools, always present for every supported size)
    global_pools = _global_pools(spec)
    global_free: Dict[int, Tuple[int, int]] = {}
    for size in spec.hugepage_sizes_kb:
        total = global_pools.get(size, 0)
        if spec.node_hugepages and spec.numa_kernel:
            free = sum(exp["nodes"][n.id]["hugepages"].get(_resource(size), {}).get("free_pages", 0)
                       for n in spec.nodes)
        else:
            free = _free_pages(total, 0, hostname)
        global_free[size] = (total, free)
        pdir = os.path.join(root, "sys", "kernel", "mm", "hugepages", "hugepages-%dkB" % size)
        for fname, value in (("nr_hugepages", total), ("free_hugepages", free),
                             ("surplus_hugepages", 0), ("resv_hugepages", 0),
                             ("nr_overcommit_hugepages", 0), ("nr_hugepages_mempolicy", total)):
            _write(os.path.join(pdir, fname), "%d\n" % value)

    # /sys/devices/system/node
    node_ids = [n.id for n in spec.nodes]
    if spec.numa_kernel:
        with_cpus = [n.id for n in spec.nodes if exp["nodes"][n.id]["cpus"]]
        with_memory = [n.id for n in spec.nodes if n.mem_total_kb > 0]
        _write(os.path.join(node_root, "online"), _cpulist(node_ids) + "\n")
        _write(os.path.join(node_root, "possible"), _cpulist(node_ids) + "\n")
        _write(os.path.join(node_root, "has_cpu"), _cpulist(with_cpus) + "\n")
        _write(os.path.join(node_root, "has_memory"), _cpulist(with_memory) + "\n")
        _write(os.path.join(node_root, "has_normal_memory"), _cpulist(with_memory) + "\n")
        for node in spec.nodes:
            ndir = os.path.join(node_root, "node%d" % node.id)
            node_exp = exp["nodes"][node.id]
            members = [c.id for c in spec.cpus if c.node == node.id]
            listed = node_exp["cpus"]  # offline CPUs leave the node's cpulist (x86 behaviour)
            if spec.node_cpulist:
                _write(os.path.join(ndir, "cpulist"), _cpulist(listed) + "\n")
                _write(os.path.join(ndir, "cpumap"), _cpumask(listed, width) + "\n")
            os.makedirs(ndir, exist_ok=True)
            for cpu_id in (members if spec.node_cpulist else listed):
                _link(os.path.join(ndir, "cpu%d" % cpu_id), "../../cpu/cpu%d" % cpu_id)
            _write(os.path.join(ndir, "distance"),
                   " ".join("%d" % node_exp["distances"][p] for p in node_ids) + "\n")
            pools: Dict[int, Tuple[int, int]] = {}
            for _res, pool in node_exp["hugepages"].items():
                pools[pool["page_size_bytes"] // KIB] = (pool["total_pages"], pool["free_pages"])
            _write(os.path.join(ndir, "meminfo"),
                   _node_meminfo(node.id, node.mem_total_kb, node_exp["memory_free_bytes"] // KIB, pools))
            if spec.node_hugepages:
                for size in spec.hugepage_sizes_kb:
                    total, free = pools.get(size, (0, 0))
                    pdir = os.path.join(ndir, "hugepages", "hugepages-%dkB" % size)
                    for fname, value in (("nr_hugepages", total), ("free_hugepages", free),
                                         ("surplus_hugepages", 0)):
                        _write(os.path.join(pdir, fname), "%d\n" % value)

    # /proc/meminfo: the machine total (the kubelet's node memory capacity)
    total_kb = sum(n.mem_total_kb for n in spec.nodes)
    free_kb = sum(exp["nodes"][n.id]["memory_free_bytes"] for n in spec.nodes) // KIB
    _write(os.path.join(root, "proc", "meminfo"), _proc_meminfo(total_kb, free_kb, global_free))

    for sub in (("var", "lib", "kubelet"), ("etc", "kubernetes")):
        os.makedirs(os.path.join(root, *sub), exist_ok=True)
    _write_devices(spec, root)
    if hostname:
        _write(os.path.join(root, "etc", "hostname"), hostname + "\n")
    _write(os.path.join(root, "etc", "numaguard-topology"),
           json.dumps({"topology": spec.name, "hostname": hostname,
                       "hugepages": dict(("%d" % k, v) for k, v in (hugepages or {}).items())},
                      sort_keys=True) + "\n")


def cached_tree(name: str,
                cache_root: str,
                hostname: Optional[str] = None,
                hugepages: Optional[Dict[int, int]] = None) -> str:
    """Path of the tree of bundled topology ``name``, written once under ``cache_root`` and reused
    while this file is unchanged. For read-only use (tests): writing thousands of files per run
    is the slow part on a busy disk. Safe against concurrent writers (atomic rename)."""
    spec = _spec(name, hugepages)
    with open(os.path.abspath(__file__), "rb") as handle:
        source = handle.read()
    key = hashlib.sha256(source + repr((spec.name, hostname, sorted((hugepages or {}).items()))).encode()).hexdigest()[:16]
    final = os.path.join(cache_root, "%s-%s" % (spec.name, key))
    if os.path.isdir(final):
        return final
    os.makedirs(cache_root, exist_ok=True)
    for entry in os.listdir(cache_root):  # trees of an older version of this file
        if entry.startswith(spec.name + "-") and entry != os.path.basename(final) and len(entry) == len(spec.name) + 17:
            shutil.rmtree(os.path.join(cache_root, entry), ignore_errors=True)
    scratch = tempfile.mkdtemp(prefix=".tmp-", dir=cache_root)
    try:
        write_tree(name, os.path.join(scratch, "root"), hostname, hugepages)
        try:
            os.rename(os.path.join(scratch, "root"), final)
        except OSError:
            if not os.path.isdir(final):  # lost a race only if the winner's tree is there
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return final


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--list", action="store_true", help="list the bundled topologies")
    parser.add_argument("--topology", help="topology name (see --list)")
    parser.add_argument("--root", help="directory to write the fake host tree into")
    parser.add_argument("--hostname", help="host name (varies free memory; written to etc/hostname)")
    parser.add_argument("--hugepages", action="append", default=[], metavar="SIZE=COUNT",
                        help="override pages per node for one size, e.g. 2Mi=512 (repeatable)")
    parser.add_argument("--force", action="store_true", help="replace an existing sys/ and proc/ tree")
    parser.add_argument("--expected", action="store_true", help="print the expected facts as JSON")
    args = parser.parse_args(argv)
    if args.list:
        width = max(len(n) for n in TOPOLOGIES)
        for name in sorted(TOPOLOGIES):
            spec = TOPOLOGIES[name]
            print("%-*s  %2d nodes %4d CPUs  %s"
                  % (width, name, len(spec.nodes), len(spec.cpus), spec.description))
        return 0
    if not args.topology:
        parser.error("--topology is required (or --list)")
    try:
        pages = dict(parse_hugepage_override(t) for t in args.hugepages)
        if args.expected:
            print(json.dumps(expected(args.topology, args.hostname, pages), indent=1, sort_keys=True))
            return 0
        if not args.root:
            parser.error("--root is required with --topology")
        write_tree(args.topology, args.root, args.hostname, pages, args.force)
    except (KeyError, ValueError, OSError) as exc:
        print("topologies.py: error: %s" % (exc.args[0] if isinstance(exc, KeyError) else exc), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
