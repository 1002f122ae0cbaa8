# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Read a host's NUMA topology from sysfs (live, or a snapshot under another root).

This mirrors what the kubelet learns through cadvisor's machine discovery
(``utils/sysinfo.GetNodesInfo`` and ``utils/sysfs``), because the point of discovery is to
predict kubelet decisions:

* NUMA nodes are the ``node<N>`` directories of ``/sys/devices/system/node`` (ids may be
  sparse); a node's CPUs restricted to online CPUs as cadvisor does. Nodes without CPUs (CXL,
  GPU memory) are kept.
* A node's memory is the ``MemTotal`` line of its ``meminfo`` (kB), as cadvisor reads it.
* Per-node hugepages come from ``node<N>/hugepages/hugepages-<kB>kB``; a node without that
  directory has no hugepages, even when ``/sys/kernel/mm/hugepages`` has some.
* A kernel without NUMA (no node directory) is one node 0 with every online CPU and
  ``/proc/meminfo``'s memory and the global hugepage pools.

Kernels and platforms differ in which files they provide, so every fact has a documented
fallback order (``docs/discovery.md``, "Fallbacks"), the way cadvisor and hwloc fall back:
a list file, then the hex mask file, then the ``cpu<N>``/``node<N>`` links, ... Each fallback
taken appends a warning naming the file that was missing (or unusable) and what was used
instead. Warnings name host paths (``/sys/...``, without the snapshot root) so a snapshot read
back with ``root=`` gives the same warnings as the live host.

Bad values are refused, never repaired: every problem raises :class:`SysfsError` (a
``ValueError``) naming the file and its content -- non-ASCII bytes, numbers beyond the
kernel's own limits (``NR_CPUS``, ``MAX_NUMNODES``, a 23-digit ``core_id``), malformed lists.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import errno
import os
import re
from typing import Any, Dict, FrozenSet, List, Optional, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, HugePages, InvalidTopology, NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import NR_CPUS_LIMIT, InvalidCPUSet, format_cpuset, parse_cpuset

NODE_DIR = "sys/devices/system/node"
CPU_DIR = "sys/devices/system/cpu"
HUGEPAGES_DIR = "sys/kernel/mm/hugepages"
MEMINFO = "proc/meminfo"

_NODE_NAME = re.compile(r"^node(\d+)$")
_CPU_NAME = re.compile(r"^cpu(\d+)$")
_HUGEPAGES_NAME = re.compile(r"^hugepages-(\d+)kB$")
_MEMINFO_LINE = re.compile(r"^(?:Node\s+(\d+)\s+)?([A-Za-z0-9_()]+):\s+(\d+)(?:\s+kB)?$")
_LIST = re.compile(r"^\d{1,10}(?:-\d{1,10})?(?:,\d{1,10}(?:-\d{1,10})?)*$")
_MASK = re.compile(r"^[0-9a-fA-F]{1,8}(?:,[0-9a-fA-F]{1,8})*$")
_MAX_SHOWN = 120
#: Where a CPU's SMT siblings and package come from, in fallback order (lists, then masks).
_SIBLING_FILES = ("thread_siblings_list", "core_cpus_list", "thread_siblings", "core_cpus")
_PACKAGE_FILES = ("package_cpus_list", "core_siblings_list", "package_cpus", "core_siblings")

#: NR_CPUS_LIMIT (_k8s/cpuset.py): the largest ``CONFIG_NR_CPUS`` any Linux architecture accepts;
#: ``cpu/kernel_max`` (NR_CPUS - 1) narrows it when present.
#: ``MAX_NUMNODES`` = 1 << ``CONFIG_NODES_SHIFT``; the largest shift any architecture allows is 10.
MAX_NUMNODES = 1024
#: The kernel prints core, package and die ids as a C ``int``.
INT_MAX = 2 ** 31 - 1
#: Node distances are ``u8`` in the kernel (SLIT: 10 local, 255 unreachable).
DISTANCE_MAX = 255
U32_MAX = 2 ** 32 - 1
U64_MAX = 2 ** 64 - 1


class SysfsError(NumaguardError):
    """A sysfs/procfs file that is missing, unreadable or holds content we cannot parse."""


# -- low level reading ---------------------------------------------------------------------

def _shown(content: str) -> str:
    """repr() of file content, shortened so one bad 4 KiB file does not flood the message."""
    if len(content) > _MAX_SHOWN:
        return repr(content[:_MAX_SHOWN]) + "... (%d characters)" % len(content)
    return repr(content)


#: Flags of every read: read-only, not inherited by a child process.
_O_READ = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0)
#: Bytes asked of each read(); sysfs attributes are at most a page, a file is read until EOF.
_CHUNK = 16384
_INT = re.compile(r"^-?\d+$")
_DISTANCE = re.compile(r"^\d{1,3}$")


def _raw(path: str) -> bytes:
    """The bytes of ``path`` until EOF; OSError as the kernel reports it (a directory: EISDIR).

    ``os.open``/``os.read`` rather than ``open()``: a buffered file object costs an fstat, an
    ioctl and an lseek per file on top of open/read/close, and discovery reads ~1400 files on a
    128-CPU host (issue 12).
    """
    fd = os.open(path, _O_READ)
    try:
        parts = []
        chunk = os.read(fd, _CHUNK)
        while chunk:
            parts.append(chunk)
            chunk = os.read(fd, _CHUNK)
    finally:
        os.close(fd)
    return b"".join(parts)  # one part (the usual case) is returned as it is, not copied


def _read_error(path: str, exc: OSError) -> SysfsError:
    if exc.errno == errno.ENOENT:
        return SysfsError("%s: file does not exist" % path)
    if exc.errno == errno.EISDIR:
        return SysfsError("%s: cannot read: is a directory, expected a file" % path)
    return SysfsError("%s: cannot read: %s" % (path, exc.strerror or exc))


def _decode(path: str, raw: bytes) -> str:
    try:
        return raw.decode("ascii")
    except UnicodeDecodeError:
        raise SysfsError("%s: not ASCII text: %r" % (path, raw[:_MAX_SHOWN]))


def read_text(path: str) -> str:
    """Return the content of a sysfs/procfs file, or raise SysfsError naming the file.

    sysfs pads some files with trailing spaces or NUL bytes; callers strip what they parse.
    """
    try:
        raw = _raw(path)
    except OSError as exc:
        raise _read_error(path, exc)
    return _decode(path, raw)


def _text_if_exists(path: str) -> Optional[str]:
    """The content of ``path``, or None when ``os.path.exists(path)`` would be False.

    The same answer as ``read_text(path) if os.path.exists(path) else None`` with one system
    call instead of two when the file is there: the open is tried first; a missing file, a
    dangling link or a path through a non-directory (ENOENT, ENOTDIR) is absent, and any other
    failure of a path that exists (a directory, EACCES) raises read_text's SysfsError.
    """
    try:
        raw = _raw(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT or not os.path.exists(path):
            return None
        raise _read_error(path, exc)
    return _decode(path, raw)


def _clean(text: str) -> str:
    return text.replace("\x00", "").strip()


def _parse_int(path: str, content: str, minimum: int = 0, maximum: int = U64_MAX) -> int:
    """The integer in the content of file ``path`` (padding stripped), within [minimum, maximum]."""
    value = _clean(content)
    if not _INT.match(value):
        raise SysfsError("%s: expected an integer, got %s" % (path, _shown(content)))
    if len(value.lstrip("-")) > 20:
        raise SysfsError("%s: expected an integer between %d and %d, got %s"
                         % (path, minimum, maximum, _shown(content)))
    number = int(value)
    if number < minimum:
        raise SysfsError("%s: expected an integer >= %d, got %s" % (path, minimum, _shown(content)))
    if number > maximum:
        raise SysfsError("%s: expected an integer between %d and %d, got %s"
                         % (path, minimum, maximum, _shown(content)))
    return number


def read_int(path: str, minimum: int = 0, maximum: int = U64_MAX) -> int:
    return _parse_int(path, read_text(path), minimum, maximum)


def _int_if_exists(path: str, minimum: int = 0, maximum: int = U64_MAX) -> Optional[int]:
    """:func:`read_int` of ``path``, None when it does not exist (see :func:`_text_if_exists`)."""
    content = _text_if_exists(path)
    return None if content is None else _parse_int(path, content, minimum, maximum)


def parse_list(path: str, content: str, limit: int = NR_CPUS_LIMIT, what: str = "CPU") -> FrozenSet[int]:
    """A kernel list (``0-3,8``) whose ids are all below ``limit`` (checked before expanding)."""
    text = _clean(content)
    if not text:
        return frozenset()
    if not _LIST.match(text):
        raise SysfsError("%s: expected a %s list like '0-3,8', got %s" % (path, what, _shown(content)))
    if max(int(n) for n in re.findall(r"\d+", text)) >= limit:
        raise SysfsError("%s: %s id beyond the kernel limit (%d) in %s" % (path, what, limit - 1, _shown(content)))
    try:
        return parse_cpuset(text)
    except InvalidCPUSet:
        raise SysfsError("%s: expected a %s list like '0-3,8', got %s" % (path, what, _shown(content)))


def _parse_mask(path: str, content: str, limit: int = NR_CPUS_LIMIT, what: str = "CPU") -> FrozenSet[int]:
    text = _clean(content)
    if not text:
        return frozenset()
    if not _MASK.match(text):
        raise SysfsError("%s: expected a %s mask like '0000ffff,00000000', got %s" % (path, what, _shown(content)))
    words = text.split(",")
    if len(words) > (limit + 31) // 32 + 8:  # the kernel prints nr_cpu_ids bits; tolerate padding words
        raise SysfsError("%s: %s mask wider than the kernel limit (%d) in %s" % (path, what, limit, _shown(content)))
    value = 0
    for word in words:
        value = (value << 32) | int(word, 16)
    if value >> limit:
        raise SysfsError("%s: %s id beyond the kernel limit (%d) in %s" % (path, what, limit - 1, _shown(content)))
    ids = []
    bit = 0
    while value:
        if value & 1:
            ids.append(bit)
        value >>= 1
        bit += 1
    return frozenset(ids)


def _list_error(path: str, exc: OSError) -> SysfsError:
    return SysfsError("%s: cannot list directory: %s" % (path, exc.strerror or exc))


def _listdir(path: str) -> List[str]:
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        raise _list_error(path, exc)


def _listdir_if_dir(path: str) -> Optional[List[str]]:
    """``_listdir(path)``, or None when ``os.path.isdir(path)`` would be False (listing first:
    one system call less for the directory that is there)."""
    try:
        return sorted(os.listdir(path))
    except OSError as exc:
        if not os.path.isdir(path):
            return None
        raise _list_error(path, exc)


def _is_dir(entry: os.DirEntry) -> bool:
    """``os.path.isdir(entry.path)``: DirEntry.is_dir() raises where isdir says False (a link loop)."""
    try:
        return entry.is_dir()
    except OSError:
        return os.path.isdir(entry.path)


def _numbered(path: str, pattern: re.Pattern, limit: Optional[int] = None,
              names: Optional[List[str]] = None) -> Dict[int, str]:
    """Map id -> entry name for the entries of a directory (``names`` when already listed)
    matching ``pattern`` (cpu12 -> 12)."""
    found: Dict[int, str] = {}
    for name in _listdir(path) if names is None else names:
        match = pattern.match(name)
        if match:
            number = int(match.group(1))
            if limit is not None and number >= limit:
                raise SysfsError("%s: entry %r is beyond the kernel limit (ids below %d)" % (path, name, limit))
            found[number] = name
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
        value = int(match.group(3)) * (1024 if line.endswith("kB") else 1)
        if value > U64_MAX:
            raise SysfsError("%s: line %d: value beyond 2^64 bytes: %s" % (path, number, _shown(line)))
        fields[match.group(2)] = value
    if "MemTotal" not in fields:
        raise SysfsError("%s: no 'MemTotal: <n> kB' line in %s" % (path, _shown(content)))
    return fields


def read_hugepage_pools(path: str) -> Dict[str, HugePages]:
    """Read a ``hugepages`` directory (global or per node); a missing directory means none."""
    names = _listdir_if_dir(path)
    if names is None:
        if os.path.exists(path):
            raise SysfsError("%s: expected a directory of hugepages-<size>kB pools, found a file" % path)
        return {}
    pools: Dict[str, HugePages] = {}
    for name in names:
        match = _HUGEPAGES_NAME.match(name)
        if not match:
            raise SysfsError("%s: unexpected entry %r, expected hugepages-<size>kB" % (path, name))
        size_kb = int(match.group(1))
        # Page sizes are powers of two between 64 KiB and 16 GiB on every architecture we know.
        if size_kb <= 0 or size_kb & (size_kb - 1) or size_kb > 2 ** 34:
            raise SysfsError("%s: %r is not a page size (a power of two up to 16 TiB in kB)" % (path, name))
        pool_dir = os.path.join(path, name)
        total = read_int(pool_dir + "/nr_hugepages", maximum=U64_MAX // (size_kb * 1024))
        free = read_int(pool_dir + "/free_hugepages", maximum=U64_MAX // (size_kb * 1024))
        if free > total:
            # Surplus pages can make free exceed the persistent pool for a moment; cap at total.
            free = total
        pool = HugePages(page_size_bytes=size_kb * 1024, total_pages=total, free_pages=free)
        pools[pool.resource_name] = pool
    return pools


def _words(path: str, content: str) -> List[int]:
    words = _clean(content).split()
    if not all(_DISTANCE.match(w) for w in words):
        raise SysfsError("%s: expected distances like '10 21', got %s" % (path, _shown(content)))
    values = [int(w) for w in words]
    if any(v > DISTANCE_MAX for v in values):
        raise SysfsError("%s: distance above %d in %s" % (path, DISTANCE_MAX, _shown(content)))
    return values


# -- the reader ------------------------------------------------------------------------------

class _Reader:
    """One discovery run: the root, the kernel limits found, and the warnings collected."""

    def __init__(self, root: str, warnings: Optional[List[str]]) -> None:
        self.root = root
        self.warnings = warnings if warnings is not None else []
        self.cpu_root = os.path.join(root, CPU_DIR)
        self.node_root = os.path.join(root, NODE_DIR)
        self.nr_cpus = NR_CPUS_LIMIT
        # (file relative to cpuN/, fallback text) -> CPU ids, reported once per group
        self.cpu_notes: Dict[Tuple[str, str], List[int]] = {}
        # names of the cpu<N> entries that are directories (present() fills it)
        self.cpu_dirs: FrozenSet[str] = frozenset()

    def host(self, path: str) -> str:
        """The host path of ``path`` (without the snapshot root) for warnings."""
        rel = os.path.relpath(path, self.root)
        return "/" + rel if not rel.startswith("..") else path

    def warn(self, path: str, text: str) -> None:
        self.warnings.append("%s: %s" % (self.host(path), text))

    def cpu_note(self, cpu_id: int, rel: str, text: str) -> None:
        self.cpu_notes.setdefault((rel, text), []).append(cpu_id)

    def flush_cpu_notes(self) -> None:
        for (rel, text), ids in sorted(self.cpu_notes.items()):
            self.warnings.append("/%s/cpu{%s}/%s: %s" % (CPU_DIR, format_cpuset(ids), rel, text))
        self.cpu_notes = {}

    # -- CPUs -------------------------------------------------------------------------------
    def kernel_limits(self) -> None:
        kernel_max = _int_if_exists(self.cpu_root + "/kernel_max", 0, NR_CPUS_LIMIT - 1)
        if kernel_max is not None:
            self.nr_cpus = kernel_max + 1

    def present(self) -> Dict[int, str]:
        """Map id -> name of the ``cpu<N>`` entries; notes which of them are directories."""
        try:
            with os.scandir(self.cpu_root) as entries:
                listed = sorted((entry.name, entry) for entry in entries)
        except OSError as exc:
            raise _list_error(self.cpu_root, exc)
        present = _numbered(self.cpu_root, _CPU_NAME, self.nr_cpus, [name for name, _entry in listed])
        if not present:
            raise SysfsError("%s: no cpu<N> directories" % self.cpu_root)
        # DirEntry.is_dir() is os.path.isdir() (links followed) without a stat per CPU where
        # the directory entry tells the type (sysfs and every local filesystem).
        names = frozenset(present.values())
        self.cpu_dirs = frozenset(name for name, entry in listed if name in names and _is_dir(entry))
        return present

    def online(self, present: Dict[int, str]) -> FrozenSet[int]:
        """Online CPUs: ``cpu/online``, else the per-CPU ``cpuN/online`` files, else all present.

        Per-CPU files are always read and checked (a corrupt one is refused even when the
        global list is there); a disagreement with the global list is a warning.
        """
        per_cpu: Dict[int, bool] = {}
        cpu_root = self.cpu_root
        for cpu_id, name in present.items():
            path = cpu_root + "/" + name + "/online"
            text = _text_if_exists(path)
            if text is not None and not _clean(text):
                # the kernel prints 0 or 1; an empty file (a copy that lost it, some ia64 trees)
                # says nothing: the online list decides, and without one the CPU is online, as
                # one without the file (hwloc reads only the online list)
                self.cpu_note(cpu_id, "online", "empty (the kernel prints 0 or 1); the online list decides")
                continue
            if text is not None:
                per_cpu[cpu_id] = _parse_int(path, text, 0, 1) == 1
        online_file = cpu_root + "/online"
        listed: Optional[FrozenSet[int]] = None
        content = _text_if_exists(online_file)
        if content is not None:
            if _clean(content):
                listed = parse_list(online_file, content, self.nr_cpus)
            else:
                self.warn(online_file, "empty (cadvisor would count no CPU online); used the per-CPU "
                                       "cpuN/online files instead (no file: online)")
        else:
            self.warn(online_file, "does not exist; used the per-CPU cpuN/online files instead (no file: online)")
        if listed is None:
            # cpu0 usually has no "online" file: it cannot be taken offline.
            online = frozenset(c for c in present if per_cpu.get(c, True))
        else:
            missing = sorted(listed - frozenset(present))
            if missing:
                self.warn(online_file, "lists CPU(s) %s that have no cpuN directory; ignored them"
                          % _fmt(missing))
            online = listed & frozenset(present)
            differ = sorted(c for c, flag in per_cpu.items() if flag != (c in online))
            if differ:
                self.warn(online_file, "disagrees with cpuN/online of CPU(s) %s; used the online list" % _fmt(differ))
        if not online:
            raise SysfsError("%s: no online CPU (tried %s and the per-CPU cpuN/online files)"
                             % (self.cpu_root, online_file))
        return online

    def _cpu_set(self, topo: str, cpu_id: int, names: Tuple[str, ...], what: str) -> Tuple[Optional[FrozenSet[int]], str]:
        """The first readable of ``names`` (lists, then masks) in ``topo``; (None, '') if none."""
        for index, fname in enumerate(names):
            path = topo + "/" + fname
            content = _text_if_exists(path)
            if content is not None:
                if fname.endswith("_list"):
                    value = parse_list(path, content, self.nr_cpus)
                else:
                    value = _parse_mask(path, content, self.nr_cpus)
                if index:
                    self.cpu_note(cpu_id, "topology/" + names[0], "does not exist; used %s for %s" % (fname, what))
                return value, fname
        return None, ""

    def read_online_cpu(self, cpu_id: int, name: str, node_id: Optional[int]) -> CPU:
        cpu_dir = self.cpu_root + "/" + name
        topo = cpu_dir + "/topology"
        siblings = self._cpu_set(topo, cpu_id, _SIBLING_FILES, "the SMT siblings")[0]
        if siblings is None:
            self.cpu_note(cpu_id, "topology/thread_siblings_list",
                          "does not exist (nor core_cpus_list, thread_siblings, core_cpus); assumed no SMT sibling")
            siblings = frozenset([cpu_id])
        if cpu_id not in siblings:
            self.cpu_note(cpu_id, "topology/thread_siblings_list", "does not list the CPU itself; added it")
            siblings = siblings | frozenset([cpu_id])
        core = _int_if_exists(topo + "/core_id", 0, INT_MAX)
        if core is None:
            core = min(siblings)
            self.cpu_note(cpu_id, "topology/core_id", "does not exist; used the smallest SMT sibling id as core id")
        socket = _int_if_exists(topo + "/physical_package_id", -1, INT_MAX)
        if socket is None:
            package, used = self._cpu_set(topo, cpu_id, _PACKAGE_FILES, "the package")
            if package is not None:
                socket = min(package | frozenset([cpu_id]))
                self.cpu_note(cpu_id, "topology/physical_package_id",
                              "does not exist; used the smallest CPU id of %s as package id" % used)
            else:
                self.cpu_note(cpu_id, "topology/physical_package_id",
                              "does not exist (nor package_cpus_list, core_siblings_list, package_cpus, "
                              "core_siblings); package unknown")
        die = _int_if_exists(topo + "/die_id", -1, INT_MAX)
        return CPU(id=cpu_id, node=node_id, core=core, socket=socket, die=die, online=True,
                   siblings=tuple(sorted(siblings)), cache_id=self.last_level_cache_id(cpu_dir))

    def last_level_cache_id(self, cpu_dir: str) -> Optional[int]:
        """``id`` of the highest-level cache of a CPU, None when the kernel does not expose it.

        Every ``index*/level`` is read (the names do not tell the level, and a corrupt file is
        refused wherever it is); the first index, in name order, of the highest level wins.
        """
        cache_dir = cpu_dir + "/cache"
        names = _listdir_if_dir(cache_dir)
        if names is None:
            return None
        best_level = -1
        best = ""
        for name in names:
            if not name.startswith("index"):
                continue
            level = _int_if_exists(cache_dir + "/" + name + "/level", 0, 16)
            if level is not None and level > best_level:
                best_level = level
                best = name
        if not best:
            return None
        return _int_if_exists(cache_dir + "/" + best + "/id", 0, U32_MAX)

    def cpu_node_link(self, cpu_id: int, name: str) -> Optional[int]:
        """The node a CPU belongs to from its ``node<N>`` link (kept while the CPU is offline)."""
        if name not in self.cpu_dirs:
            return None
        nodes = _numbered(self.cpu_root + "/" + name, _NODE_NAME, MAX_NUMNODES)
        return min(nodes) if nodes else None

    # -- nodes ------------------------------------------------------------------------------
    def node_cpus(self, node_dir: str) -> FrozenSet[int]:
        """All CPUs of a node: ``cpulist``, else ``cpumap``, else its ``cpu<N>`` links."""
        cpulist = node_dir + "/cpulist"
        content = _text_if_exists(cpulist)
        if content is not None:
            return parse_list(cpulist, content, self.nr_cpus)
        cpumap = node_dir + "/cpumap"
        content = _text_if_exists(cpumap)
        if content is not None:
            self.warn(cpulist, "does not exist; used cpumap (hex mask)")
            return _parse_mask(cpumap, content, self.nr_cpus)
        self.warn(cpulist, "does not exist (nor cpumap); used the node's cpuN links")
        return frozenset(_numbered(node_dir, _CPU_NAME, self.nr_cpus))

    def node_list(self, name: str) -> Optional[FrozenSet[int]]:
        """``node/possible``, ``online``, ``has_cpu``, ``has_memory`` (None when absent)."""
        path = self.node_root + "/" + name
        content = _text_if_exists(path)
        if content is None:
            return None
        return parse_list(path, content, MAX_NUMNODES, "node")

    def distances(self, node_dir: str, node_ids: Tuple[int, ...],
                  others: List[Tuple[str, Optional[FrozenSet[int]]]]) -> Dict[int, int]:
        """Map peer id -> distance. The row lists the online nodes in id order; some kernels
        and firmwares list the *possible* nodes instead (an offline node 0 still has a column)."""
        path = node_dir + "/distance"
        content = _text_if_exists(path)
        if content is None:
            self.warn(path, "does not exist; no distances for this node")
            return {}
        row = _words(path, content)
        if len(row) == len(node_ids):
            return dict(zip(node_ids, row))
        for label, ids in others:
            if ids is not None and len(ids) == len(row) and set(node_ids) <= ids:
                full = dict(zip(sorted(ids), row))
                self.warn(path, "%d distances for %d node directories; the row matches node/%s (%s), "
                                "used the columns of the existing nodes"
                          % (len(row), len(node_ids), label, _fmt(sorted(ids))))
                return dict((n, full[n]) for n in node_ids)
        raise SysfsError("%s: %d distances for %d nodes (%s): %s"
                         % (path, len(row), len(node_ids), ",".join("%d" % n for n in node_ids),
                            _shown(content)))


def _fmt(ids: List[int]) -> str:
    return format_cpuset(ids)


def read_topology(root: str = "/", warnings: Optional[List[str]] = None) -> Topology:
    """Read the NUMA topology of the host (or snapshot) whose filesystem root is ``root``.

    Fallbacks taken are appended to ``warnings`` (when given) as ``<host path>: <what>``.
    """
    reader = _Reader(root, warnings)
    cpu_root = reader.cpu_root
    if not os.path.isdir(cpu_root):
        raise SysfsError("%s: directory does not exist (is %s a host root or a sysfs snapshot?)"
                         % (cpu_root, root))
    reader.kernel_limits()
    present = reader.present()
    online = reader.online(present)

    node_root = reader.node_root
    node_names = _numbered(node_root, _NODE_NAME, MAX_NUMNODES) if os.path.isdir(node_root) else {}
    owner: Dict[int, int] = {}
    if node_names:
        nodes = _read_nodes(reader, node_names, present, online, owner)
    else:
        nodes = [_one_node(reader, root, online, owner)]

    cpus: List[CPU] = []
    for cpu_id in sorted(present):
        name = present[cpu_id]
        if cpu_id in online:
            if name not in reader.cpu_dirs:
                raise SysfsError("%s: expected a directory" % os.path.join(cpu_root, name))
            cpus.append(reader.read_online_cpu(cpu_id, name, owner.get(cpu_id)))
        else:
            cpus.append(CPU(id=cpu_id, node=reader.cpu_node_link(cpu_id, name),
                            core=None, socket=None, die=None, online=False))
    reader.flush_cpu_notes()
    try:
        return Topology(nodes=tuple(nodes), cpus=tuple(cpus))
    except InvalidTopology as exc:
        raise SysfsError("%s: inconsistent topology: %s" % (root, exc))


def _read_nodes(reader: Any, node_names: Dict[int, str], present: Dict[int, str], online: FrozenSet[int],
                owner: Dict[int, int]) -> List[NumaNode]:
    """The node<N> directories as NUMA nodes; ``owner`` gets each online CPU's node."""
    node_root = reader.node_root
    node_ids = tuple(sorted(node_names))
    possible = reader.node_list("possible")
    online_nodes = reader.node_list("online")
    has_cpu = reader.node_list("has_cpu")
    has_memory = reader.node_list("has_memory")
    reader.node_list("has_normal_memory")
    if online_nodes is not None and online_nodes != frozenset(node_ids):
        reader.warn(os.path.join(node_root, "online"),
                    "lists node(s) %s but the node directories are %s; used the directories"
                    % (_fmt(sorted(online_nodes)), _fmt(list(node_ids))))
    members = _node_members(reader, node_names, present, online, owner)
    others = [("possible", possible), ("online", online_nodes)]
    nodes: List[NumaNode] = []
    for node_id in node_ids:
        node_dir = os.path.join(node_root, node_names[node_id])
        meminfo = parse_meminfo(os.path.join(node_dir, "meminfo"), node_id)
        node_cpus = tuple(sorted(c for c in members[node_id] & online if owner.get(c) == node_id))
        nodes.append(NumaNode(
            id=node_id,
            cpus=node_cpus,
            memory_total_bytes=meminfo["MemTotal"],
            memory_free_bytes=min(meminfo.get("MemFree", 0), meminfo["MemTotal"]),
            hugepages=read_hugepage_pools(os.path.join(node_dir, "hugepages")),
            distances=reader.distances(node_dir, node_ids, others)))
    with_cpu = frozenset(n.id for n in nodes if n.cpus)
    if has_cpu is not None and has_cpu != with_cpu:
        reader.warn(os.path.join(node_root, "has_cpu"), "lists node(s) %s, but online CPUs are on node(s) %s; "
                    "used the CPUs found" % (_fmt(sorted(has_cpu)), _fmt(sorted(with_cpu))))
    with_memory = frozenset(n.id for n in nodes if n.memory_total_bytes)
    if has_memory is not None and has_memory != with_memory:
        reader.warn(os.path.join(node_root, "has_memory"), "lists node(s) %s, but nodes with MemTotal > 0 are "
                    "%s; used the node meminfo files" % (_fmt(sorted(has_memory)), _fmt(sorted(with_memory))))
    return nodes


def _node_members(reader: Any, node_names: Dict[int, str], present: Dict[int, str], online: FrozenSet[int],
                  owner: Dict[int, int]) -> Dict[int, FrozenSet[int]]:
    """Each node's CPUs (its cpu list, then cpuN/nodeM links for online CPUs no list names);
    ``owner`` gets each online CPU's node."""
    node_root = reader.node_root
    members: Dict[int, FrozenSet[int]] = {}
    for node_id in sorted(node_names):
        node_dir = os.path.join(node_root, node_names[node_id])
        members[node_id] = reader.node_cpus(node_dir)
        for cpu_id in sorted(members[node_id] & online):
            if cpu_id in owner:
                raise SysfsError("%s: CPU %d is also listed by node %d" % (node_dir, cpu_id, owner[cpu_id]))
            owner[cpu_id] = node_id
    stray = sorted(online - frozenset(owner))
    unassigned: List[int] = []
    for cpu_id in stray:
        linked = reader.cpu_node_link(cpu_id, present[cpu_id])
        if linked is not None and linked in members:
            owner[cpu_id] = linked
            members[linked] = members[linked] | frozenset([cpu_id])
            reader.warn(os.path.join(reader.cpu_root, present[cpu_id], "node" + str(linked)),
                        "online CPU %d is in no node's CPU list; used this link (node %s)" % (cpu_id, linked))
        else:
            unassigned.append(cpu_id)
    if unassigned:
        reader.warn(node_root, "online CPU(s) %s belong to no NUMA node (no node lists them, no cpuN/nodeM "
                               "link); left out of every node, as cadvisor does (the kubelet cannot use them)"
                    % _fmt(unassigned))
    return members


def _one_node(reader: Any, root: str, online: FrozenSet[int], owner: Dict[int, int]) -> NumaNode:
    """No node<N> directory: one node 0 with every online CPU (a kernel without NUMA)."""
    node_root = reader.node_root
    if os.path.isdir(node_root):
        reader.warn(node_root, "has no node<N> directory; one node 0 with every online CPU, /proc/meminfo's "
                               "memory and the global hugepage pools (as a kernel without NUMA)")
    meminfo = parse_meminfo(os.path.join(root, MEMINFO))
    for cpu_id in online:
        owner[cpu_id] = 0
    return NumaNode(
        id=0, cpus=tuple(sorted(online)),
        memory_total_bytes=meminfo["MemTotal"],
        memory_free_bytes=min(meminfo.get("MemFree", 0), meminfo["MemTotal"]),
        hugepages=read_hugepage_pools(os.path.join(root, HUGEPAGES_DIR)),
        distances={0: 10})


def read_system_memory(root: str = "/", warnings: Optional[List[str]] = None,
                       topology: Optional[Topology] = None) -> Dict[str, Any]:
    """Machine-wide memory as the kubelet's node capacity sees it: ``/proc/meminfo`` and the
    global hugepage pools of ``/sys/kernel/mm/hugepages`` (cadvisor ``MemoryCapacity`` and
    ``HugePages``).

    A snapshot without ``/proc/meminfo`` falls back to the sum of the nodes' ``MemTotal``
    (``topology``, read when not given) with a warning; ``memory_available_bytes`` is then null.
    """
    path = os.path.join(root, MEMINFO)
    pools = read_hugepage_pools(os.path.join(root, HUGEPAGES_DIR))
    hugepages = dict((name, pools[name].to_facts())
                     for name in sorted(pools, key=lambda n: pools[n].page_size_bytes))
    if not os.path.exists(path) and os.path.isdir(os.path.join(root, NODE_DIR)):
        topo = topology if topology is not None else read_topology(root)
        if warnings is not None:
            warnings.append("/%s: does not exist; node capacity is the sum of the nodes' MemTotal (%d bytes), "
                            "which is slightly below the kernel's MemTotal on a real machine"
                            % (MEMINFO, topo.memory_total_bytes()))
        return {
            "memory_total_bytes": topo.memory_total_bytes(),
            "memory_free_bytes": sum(n.memory_free_bytes for n in topo.nodes),
            "memory_available_bytes": None,
            "hugepages": hugepages,
        }
    meminfo = parse_meminfo(path)
    return {
        "memory_total_bytes": meminfo["MemTotal"],
        "memory_free_bytes": min(meminfo.get("MemFree", 0), meminfo["MemTotal"]),
        "memory_available_bytes": meminfo.get("MemAvailable"),
        "hugepages": hugepages,
    }
