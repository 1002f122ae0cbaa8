# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""Read a host's NUMA topology from sysfs (live, or a snapshot under another root).

This mirrors what the kubelet learns through cadvisor's machine discovery
(``utils/sysinfo.GetNodesInfo`` and ``utils/sysfs``), because the point of discovery is to
predict kubelet decisions:

* NUMA nodes are the ``node<N>`` directories of ``/sys/devices/system/node`` (ids may be
  sparse); a node's CPUs are its ``cpulist`` (or, on kernels without it, its ``cpu<N>`` links),
  restricted to online CPUs as cadvisor does. Nodes without CPUs (CXL, GPU memory) are kept.
* A node's memory is the ``MemTotal`` line of its ``meminfo`` (kB), as cadvisor reads it.
* Per-node hugepages come from ``node<N>/hugepages/hugepages-<kB>kB``; a node without that
  directory has no hugepages, even when ``/sys/kernel/mm/hugepages`` has some (cadvisor, and so
  the kubelet's memory manager, see none per node then).
* The online CPU set is ``/sys/devices/system/cpu/online``; without it (kernels without CPU
  hotplug) every CPU is online, as in cadvisor.
* A kernel without NUMA (no node directory) is one node 0 with every online CPU and
  ``/proc/meminfo``'s memory and the global hugepage pools.

Where we deliberately differ from cadvisor (and why) is listed in ``docs/discovery.md``: we fail
with a message naming the file instead of silently dropping CPUs or reporting 0 bytes, so an
operator learns about a broken or half-captured tree instead of a wrong kubelet config.

Every problem raises :class:`SysfsError` (a ``ValueError``) naming the file and its content.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import errno
import os
import re
from typing import Dict, FrozenSet, List, Optional, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import InvalidCPUSet, parse_cpuset
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import (
    CPU, HugePages, InvalidTopology, NumaNode, Topology)

NODE_DIR = "sys/devices/system/node"
CPU_DIR = "sys/devices/system/cpu"
HUGEPAGES_DIR = "sys/kernel/mm/hugepages"
MEMINFO = "proc/meminfo"

_NODE_NAME = re.compile(r"^node(\d+)$")
_CPU_NAME = re.compile(r"^cpu(\d+)$")
_HUGEPAGES_NAME = re.compile(r"^hugepages-(\d+)kB$")
_MEMINFO_LINE = re.compile(r"^(?:Node\s+(\d+)\s+)?([A-Za-z0-9_()]+):\s+(\d+)(?:\s+kB)?$")
_MAX_SHOWN = 120


class SysfsError(ValueError):
    """A sysfs/procfs file that is missing, unreadable or holds content we cannot parse."""


# -- low level reading ---------------------------------------------------------------------

def _shown(content: str) -> str:
    """repr() of file content, shortened so one bad 4 KiB file does not flood the message."""
    if len(content) > _MAX_SHOWN:
        return repr(content[:_MAX_SHOWN]) + "... (%d characters)" % len(content)
    return repr(content)


def read_text(path: str) -> str:
    """Return the content of a sysfs/procfs file, or raise SysfsError naming the file.

    sysfs pads some files with trailing spaces or NUL bytes; callers strip what they parse.
    """
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except (IOError, OSError) as exc:
        if exc.errno == errno.ENOENT:
            raise SysfsError("%s: file does not exist" % path)
        if exc.errno == errno.EISDIR:
            raise SysfsError("%s: cannot read: is a directory, expected a file" % path)
        raise SysfsError("%s: cannot read: %s" % (path, exc.strerror or exc))
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        raise SysfsError("%s: not ASCII text: %r" % (path, raw[:_MAX_SHOWN]))


def _clean(text: str) -> str:
    return text.replace("\x00", "").strip()


def read_int(path: str, minimum: int = 0) -> int:
    content = read_text(path)
    value = _clean(content)
    if not re.match(r"^-?\d+$", value):
        raise SysfsError("%s: expected an integer, got %s" % (path, _shown(content)))
    number = int(value)
    if number < minimum:
        raise SysfsError("%s: expected an integer >= %d, got %s" % (path, minimum, _shown(content)))
    return number


def read_cpulist(path: str) -> FrozenSet[int]:
    content = read_text(path)
    try:
        return parse_cpuset(_clean(content))
    except InvalidCPUSet:
        raise SysfsError("%s: expected a CPU list like '0-3,8', got %s" % (path, _shown(content)))


def _listdir(path: str) -> List[str]:
    try:
        return sorted(os.listdir(path))
    except (IOError, OSError) as exc:
        raise SysfsError("%s: cannot list directory: %s" % (path, exc.strerror or exc))


def _numbered(path: str, pattern: re.Pattern) -> Dict[int, str]:
    """Map id -> entry name for the entries of a directory matching ``pattern`` (cpu12 -> 12)."""
    found: Dict[int, str] = {}
    for name in _listdir(path):
        match = pattern.match(name)
        if match:
            found[int(match.group(1))] = name
    return found


def parse_meminfo(path: str, node_id: Optional[int] = None) -> Dict[str, int]:
    """Parse ``/proc/meminfo`` or a node ``meminfo`` into {field: bytes (kB fields x 1024)}."""
    content = read_text(path)
    fields: Dict[str, int] = {}
    for number, line in enumerate(content.splitlines(), 1):
        line = _clean(line)
        if not line:
            continue
        match = _MEMINFO_LINE.match(line)
        if not match:
            raise SysfsError("%s: line %d is not 'Name: value [kB]': %s" % (path, number, _shown(line)))
        if node_id is not None and match.group(1) is not None and int(match.group(1)) != node_id:
            raise SysfsError("%s: line %d is about node %s, expected node %d: %s"
                             % (path, number, match.group(1), node_id, _shown(line)))
        value = int(match.group(3))
        fields[match.group(2)] = value * 1024 if line.endswith("kB") else value
    if "MemTotal" not in fields:
        raise SysfsError("%s: no 'MemTotal: <n> kB' line in %s" % (path, _shown(content)))
    return fields


def read_hugepage_pools(path: str) -> Dict[str, HugePages]:
    """Read a ``hugepages`` directory (global or per node); a missing directory means none."""
    if not os.path.isdir(path):
        if os.path.exists(path):
            raise SysfsError("%s: expected a directory of hugepages-<size>kB pools, found a file" % path)
        return {}
    pools: Dict[str, HugePages] = {}
    for name in _listdir(path):
        match = _HUGEPAGES_NAME.match(name)
        if not match:
            raise SysfsError("%s: unexpected entry %r, expected hugepages-<size>kB" % (path, name))
        size_kb = int(match.group(1))
        if size_kb <= 0:
            raise SysfsError("%s: page size 0 in %r" % (path, name))
        pool_dir = os.path.join(path, name)
        total = read_int(os.path.join(pool_dir, "nr_hugepages"))
        free = read_int(os.path.join(pool_dir, "free_hugepages"))
        if free > total:
            # Surplus pages can make free exceed the persistent pool for a moment; cap at total.
            free = total
        pool = HugePages(page_size_bytes=size_kb * 1024, total_pages=total, free_pages=free)
        pools[pool.resource_name] = pool
    return pools


def read_distances(path: str, node_ids: Tuple[int, ...]) -> Dict[int, int]:
    """Map peer id -> distance; the file lists one distance per online node in id order."""
    if not os.path.exists(path):
        return {}
    content = read_text(path)
    words = _clean(content).split()
    if not all(re.match(r"^\d+$", w) for w in words):
        raise SysfsError("%s: expected distances like '10 21', got %s" % (path, _shown(content)))
    if len(words) != len(node_ids):
        raise SysfsError("%s: %d distances for %d nodes (%s): %s"
                         % (path, len(words), len(node_ids), ",".join("%d" % n for n in node_ids),
                            _shown(content)))
    return dict(zip(node_ids, (int(w) for w in words)))


# -- CPUs ------------------------------------------------------------------------------------

def _online_cpus(cpu_root: str, present: Dict[int, str]) -> FrozenSet[int]:
    """Online CPU ids: the global ``online`` list, else per-CPU ``online`` files, else all."""
    online_file = os.path.join(cpu_root, "online")
    if os.path.exists(online_file):
        return read_cpulist(online_file) & frozenset(present)
    online = set()
    for cpu_id, name in present.items():
        flag = os.path.join(cpu_root, name, "online")
        # cpu0 usually has no "online" file: it cannot be taken offline.
        if not os.path.exists(flag) or read_int(flag) == 1:
            online.add(cpu_id)
    return frozenset(online)


def _cpu_node_link(cpu_dir: str) -> Optional[int]:
    """The node a CPU belongs to from its ``node<N>`` link (kept while the CPU is offline)."""
    if not os.path.isdir(cpu_dir):
        return None
    nodes = _numbered(cpu_dir, _NODE_NAME)
    return min(nodes) if nodes else None


def _last_level_cache_id(cpu_dir: str) -> Optional[int]:
    """``id`` of the highest-level cache of a CPU, None when the kernel does not expose it."""
    cache_dir = os.path.join(cpu_dir, "cache")
    if not os.path.isdir(cache_dir):
        return None
    best: Optional[Tuple[int, str]] = None
    for name in _listdir(cache_dir):
        if not name.startswith("index"):
            continue
        level_file = os.path.join(cache_dir, name, "level")
        if not os.path.exists(level_file):
            continue
        level = read_int(level_file)
        if best is None or level > best[0]:
            best = (level, name)
    if best is None:
        return None
    id_file = os.path.join(cache_dir, best[1], "id")
    return read_int(id_file) if os.path.exists(id_file) else None


def _read_online_cpu(cpu_root: str, cpu_id: int, name: str, node_id: int) -> CPU:
    cpu_dir = os.path.join(cpu_root, name)
    topo = os.path.join(cpu_dir, "topology")
    core = read_int(os.path.join(topo, "core_id"))
    socket = read_int(os.path.join(topo, "physical_package_id"), minimum=-1)
    die_file = os.path.join(topo, "die_id")
    die = read_int(die_file, minimum=-1) if os.path.exists(die_file) else None
    siblings: Optional[FrozenSet[int]] = None
    for sib_name in ("thread_siblings_list", "core_cpus_list"):
        sib_file = os.path.join(topo, sib_name)
        if os.path.exists(sib_file):
            siblings = read_cpulist(sib_file)
            break
    if siblings is None:
        raise SysfsError("%s: file does not exist (nor core_cpus_list)" % os.path.join(topo, "thread_siblings_list"))
    if cpu_id not in siblings:
        siblings = siblings | frozenset([cpu_id])
    return CPU(id=cpu_id, node=node_id, core=core, socket=socket, die=die, online=True,
               siblings=tuple(sorted(siblings)), cache_id=_last_level_cache_id(cpu_dir))


# -- nodes -----------------------------------------------------------------------------------

def _node_cpus(node_dir: str) -> FrozenSet[int]:
    """All CPUs of a node: ``cpulist``, or its ``cpu<N>`` links on kernels without cpulist."""
    cpulist = os.path.join(node_dir, "cpulist")
    if os.path.exists(cpulist):
        return read_cpulist(cpulist)
    return frozenset(_numbered(node_dir, _CPU_NAME))


def read_topology(root: str = "/") -> Topology:
    """Read the NUMA topology of the host (or snapshot) whose filesystem root is ``root``."""
    cpu_root = os.path.join(root, CPU_DIR)
    if not os.path.isdir(cpu_root):
        raise SysfsError("%s: directory does not exist (is %s a host root or a sysfs snapshot?)"
                         % (cpu_root, root))
    present = _numbered(cpu_root, _CPU_NAME)
    if not present:
        raise SysfsError("%s: no cpu<N> directories" % cpu_root)
    online = _online_cpus(cpu_root, present)
    if not online:
        raise SysfsError("%s: no online CPU" % cpu_root)

    node_root = os.path.join(root, NODE_DIR)
    node_names = _numbered(node_root, _NODE_NAME) if os.path.isdir(node_root) else {}
    node_ids = tuple(sorted(node_names))
    owner: Dict[int, int] = {}
    nodes: List[NumaNode] = []
    if node_ids:
        for node_id in node_ids:
            node_dir = os.path.join(node_root, node_names[node_id])
            all_cpus = _node_cpus(node_dir)
            for cpu_id in sorted(all_cpus & online):
                if cpu_id in owner:
                    raise SysfsError("%s: CPU %d is also listed by node %d" % (node_dir, cpu_id, owner[cpu_id]))
                owner[cpu_id] = node_id
            meminfo = parse_meminfo(os.path.join(node_dir, "meminfo"), node_id)
            nodes.append(NumaNode(
                id=node_id,
                cpus=tuple(sorted(all_cpus & online)),
                memory_total_bytes=meminfo["MemTotal"],
                memory_free_bytes=min(meminfo.get("MemFree", 0), meminfo["MemTotal"]),
                hugepages=read_hugepage_pools(os.path.join(node_dir, "hugepages")),
                distances=read_distances(os.path.join(node_dir, "distance"), node_ids)))
        stray = sorted(online - frozenset(owner))
        if stray:
            raise SysfsError("%s: online CPU(s) %s belong to no NUMA node (no node's cpulist lists them)"
                             % (node_root, ",".join("%d" % c for c in stray)))
    else:
        meminfo = parse_meminfo(os.path.join(root, MEMINFO))
        for cpu_id in online:
            owner[cpu_id] = 0
        nodes.append(NumaNode(
            id=0, cpus=tuple(sorted(online)),
            memory_total_bytes=meminfo["MemTotal"],
            memory_free_bytes=min(meminfo.get("MemFree", 0), meminfo["MemTotal"]),
            hugepages=read_hugepage_pools(os.path.join(root, HUGEPAGES_DIR)),
            distances={0: 10}))

    cpus: List[CPU] = []
    for cpu_id in sorted(present):
        name = present[cpu_id]
        if cpu_id in online:
            if not os.path.isdir(os.path.join(cpu_root, name)):
                raise SysfsError("%s: expected a directory" % os.path.join(cpu_root, name))
            cpus.append(_read_online_cpu(cpu_root, cpu_id, name, owner[cpu_id]))
        else:
            cpus.append(CPU(id=cpu_id, node=_cpu_node_link(os.path.join(cpu_root, name)),
                            core=None, socket=None, die=None, online=False))
    try:
        return Topology(nodes=tuple(nodes), cpus=tuple(cpus))
    except InvalidTopology as exc:
        raise SysfsError("%s: inconsistent topology: %s" % (root, exc))


def read_system_memory(root: str = "/") -> Dict[str, object]:
    """Machine-wide memory as the kubelet's node capacity sees it: ``/proc/meminfo`` and the
    global hugepage pools of ``/sys/kernel/mm/hugepages`` (cadvisor ``MemoryCapacity`` and
    ``HugePages``)."""
    meminfo = parse_meminfo(os.path.join(root, MEMINFO))
    pools = read_hugepage_pools(os.path.join(root, HUGEPAGES_DIR))
    return {
        "memory_total_bytes": meminfo["MemTotal"],
        "memory_free_bytes": min(meminfo.get("MemFree", 0), meminfo["MemTotal"]),
        "memory_available_bytes": meminfo.get("MemAvailable"),
        "hugepages": dict((name, pools[name].to_facts())
                          for name in sorted(pools, key=lambda n: pools[n].page_size_bytes)),
    }
