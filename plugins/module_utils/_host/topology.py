# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The NUMA topology model shared by discovery, validation and the admission engine.

A :class:`Topology` is what the kubelet's machine discovery (cadvisor ``MachineInfo``) tells the
kubelet about a host, plus the pieces cadvisor drops that operators need to see (offline CPUs,
free memory, free hugepages, the distance matrix keyed by node id). It is immutable so that the
engine can share one instance between simulators, and it converts losslessly to and from the
``numa_topology`` fact dict that ``numaguard.kubelet.numa_facts`` returns, so playbooks can feed
facts gathered on a host back into controller-side code.

``from_facts`` is the trust boundary: facts come through Ansible's JSON (integer dict keys become
strings, integers may have been hand-edited into strings or floats), so every field is checked
and a bad one is reported by its path (``nodes[1].hugepages.hugepages-2Mi.total_pages``).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import format_cpuset
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import hugepage_resource_name as _resource_name

MIB = 1024 * 1024

#: Version of the fingerprint recipe; bump it when the digest input changes so old and new
#: fingerprints never collide by accident.
FINGERPRINT_VERSION = 1


class InvalidTopology(NumaguardError):
    """A topology (or ``numa_topology`` fact dict) that is inconsistent or has a bad field."""


def hugepage_resource_name(page_size_bytes: int) -> str:
    """Return the Kubernetes resource name for a hugepage size (2097152 -> ``hugepages-2Mi``).

    The kubelet names hugepage resources ``hugepages-`` + the canonical BinarySI quantity of the
    page size (1536 KiB -> ``hugepages-1536Ki``, not ``1.5Mi``).
    """
    if not isinstance(page_size_bytes, int) or isinstance(page_size_bytes, bool) or page_size_bytes <= 0:
        raise InvalidTopology("hugepage size must be a positive number of bytes, got %r" % (page_size_bytes,))
    return _resource_name(page_size_bytes)


@dataclass(frozen=True)
class HugePages:
    """One hugepage pool (one page size) of one NUMA node, as the kernel counts it."""

    page_size_bytes: int
    total_pages: int
    free_pages: int

    @property
    def resource_name(self) -> str:
        return hugepage_resource_name(self.page_size_bytes)

    @property
    def total_bytes(self) -> int:
        return self.page_size_bytes * self.total_pages

    def to_facts(self) -> Dict[str, int]:
        return {"page_size_bytes": self.page_size_bytes, "total_pages": self.total_pages,
                "free_pages": self.free_pages}


@dataclass(frozen=True)
class CPU:
    """One logical CPU.

    ``core`` is the kernel's ``core_id`` (unique only within a package, as the kernel reports
    it; the kubelet's CPU manager renumbers cores by their smallest thread id, see
    :meth:`Topology.kubelet_core_id`). For an offline CPU the kernel removes the ``topology/``
    and ``cache/`` directories, so ``core``, ``socket``, ``die`` and ``cache_id`` are None and
    ``siblings`` is empty; ``node`` is None only when the kernel does not link it to a node.
    """

    id: int
    node: Optional[int]
    core: Optional[int]
    socket: Optional[int]
    die: Optional[int]
    online: bool
    siblings: Tuple[int, ...] = ()
    cache_id: Optional[int] = None

    def to_facts(self) -> Dict[str, Any]:
        return {"id": self.id, "node": self.node, "core": self.core, "socket": self.socket,
                "die": self.die, "online": self.online, "siblings": list(self.siblings),
                "cache_id": self.cache_id}


@dataclass(frozen=True)
class NumaNode:
    """One NUMA node: its online CPUs (empty for memory-only nodes), memory, hugepages, distances."""

    id: int
    cpus: Tuple[int, ...]
    memory_total_bytes: int
    memory_free_bytes: int
    hugepages: Dict[str, HugePages] = field(default_factory=dict)
    distances: Dict[int, int] = field(default_factory=dict)

    def __hash__(self):
        # Dict fields are not hashable; hash their sorted items so nodes can live in sets.
        return hash((self.id, self.cpus, self.memory_total_bytes, self.memory_free_bytes,
                     tuple(sorted(self.hugepages.items())), tuple(sorted(self.distances.items()))))

    @property
    def memory_only(self) -> bool:
        return not self.cpus

    def to_facts(self) -> Dict[str, Any]:
        return {
            "id": self.id,
            "cpus": list(self.cpus),
            "cpulist": format_cpuset(self.cpus),
            "memory_total_bytes": self.memory_total_bytes,
            "memory_free_bytes": self.memory_free_bytes,
            "hugepages": dict((name, self.hugepages[name].to_facts())
                              for name in _sorted_hugepage_names(self.hugepages)),
            "distances": dict(("%d" % peer, self.distances[peer]) for peer in sorted(self.distances)),
        }


@dataclass(frozen=True)
class Topology:
    """A host's NUMA topology: nodes sorted by id (ids may be sparse) and CPUs sorted by id."""

    nodes: Tuple[NumaNode, ...]
    cpus: Tuple[CPU, ...] = ()

    def __post_init__(self):
        _check_model(self)

    # -- lookups ------------------------------------------------------------------------
    def node(self, node_id: int) -> NumaNode:
        for candidate in self.nodes:
            if candidate.id == node_id:
                return candidate
        raise KeyError("NUMA node %r does not exist (nodes: %s)"
                       % (node_id, ", ".join("%d" % n for n in self.node_ids()) or "none"))

    def node_ids(self) -> Tuple[int, ...]:
        return tuple(n.id for n in self.nodes)

    def cpu_node_ids(self) -> Tuple[int, ...]:
        """Ids of the nodes that have online CPUs (the kubelet's ``NumNUMANodes`` counts these)."""
        return tuple(n.id for n in self.nodes if n.cpus)

    def cpu(self, cpu_id: int) -> CPU:
        for candidate in self.cpus:
            if candidate.id == cpu_id:
                return candidate
        raise KeyError("CPU %r does not exist" % (cpu_id,))

    def online_cpus(self) -> Tuple[int, ...]:
        return tuple(sorted(c for n in self.nodes for c in n.cpus))

    def offline_cpus(self) -> Tuple[int, ...]:
        return tuple(c.id for c in self.cpus if not c.online)

    def hugepage_sizes(self) -> Tuple[str, ...]:
        """Resource names of every hugepage size any node has, smallest page first."""
        sizes: Dict[str, int] = {}
        for node in self.nodes:
            for name, pool in node.hugepages.items():
                sizes[name] = pool.page_size_bytes
        return tuple(sorted(sizes, key=lambda n: (sizes[n], n)))

    def memory_total_bytes(self) -> int:
        return sum(n.memory_total_bytes for n in self.nodes)

    def socket_ids(self) -> Tuple[int, ...]:
        return tuple(sorted(set(c.socket for c in self.cpus if c.online and c.socket is not None)))

    def kubelet_core_id(self, cpu_id: int) -> int:
        """The CPU manager's core id of a CPU: the smallest id among it and its SMT siblings."""
        cpu = self.cpu(cpu_id)
        return min((cpu.id,) + tuple(cpu.siblings))

    def threads_per_core(self) -> int:
        """Online CPUs divided by distinct physical cores (integer division, as the kubelet)."""
        online = [c for c in self.cpus if c.online]
        cores = set(min((c.id,) + tuple(c.siblings)) for c in online)
        return len(online) // len(cores) if cores else 0

    # -- fingerprint ----------------------------------------------------------------------
    def fingerprint(self) -> str:
        """A stable sha256 digest of the topology's shape so identical machines group together.

        Input: node ids, each node's online CPU list, memory rounded to the nearest MiB, hugepage
        totals per size, and distances. Free memory, free hugepages and per-CPU details are
        left out on purpose: they change while the machine runs, and the CPU-to-node map is
        already captured by the per-node CPU lists.
        """
        shape = {
            "v": FINGERPRINT_VERSION,
            "nodes": [{
                "id": n.id,
                "cpus": format_cpuset(n.cpus),
                "memory_mib": (n.memory_total_bytes + MIB // 2) // MIB,
                "hugepages": dict((name, n.hugepages[name].total_pages) for name in n.hugepages),
                "distances": dict(("%d" % p, d) for p, d in n.distances.items()),
            } for n in self.nodes],
        }
        import hashlib  # here: an admission in a fresh process does not need them (issue 12)
        import json

        text = json.dumps(shape, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()

    # -- fact dict --------------------------------------------------------------------------
    def to_facts(self) -> Dict[str, Any]:
        """The ``numa_topology`` fact dict (without the ``kubelet`` key, which the module adds)."""
        online = self.online_cpus()
        return {
            "nodes": [n.to_facts() for n in self.nodes],
            "cpus": [c.to_facts() for c in self.cpus],
            "node_count": len(self.nodes),
            "node_ids": list(self.node_ids()),
            "cpu_node_count": len(self.cpu_node_ids()),
            "memory_only_node_ids": [n.id for n in self.nodes if not n.cpus],
            "cpu_count": len(online),
            "online_cpus": format_cpuset(online),
            "offline_cpus": format_cpuset(self.offline_cpus()),
            "socket_count": len(self.socket_ids()),
            "threads_per_core": self.threads_per_core(),
            "memory_total_bytes": self.memory_total_bytes(),
            "hugepage_sizes": list(self.hugepage_sizes()),
            "fingerprint": self.fingerprint(),
        }

    @classmethod
    def from_facts(cls, facts: Mapping[str, Any]) -> Topology:
        """Rebuild a topology from a ``numa_topology`` fact dict (keys may be str or int).

        Summary keys, ``kubelet`` and ``fingerprint`` are derived data and ignored; ``cpus`` may
        be absent (then CPUs are synthesised from the node CPU lists with unknown core/socket).
        """
        _dict(facts, "numa_topology")
        raw_nodes = facts.get("nodes")
        if not isinstance(raw_nodes, list):
            raise InvalidTopology("numa_topology.nodes must be a list, got %s" % _typename(raw_nodes))
        nodes = [_node_from_facts(raw, "nodes[%d]" % index) for index, raw in enumerate(raw_nodes)]
        nodes.sort(key=lambda n: n.id)
        raw_cpus = facts.get("cpus")
        if raw_cpus is None:
            cpus = [CPU(id=c, node=n.id, core=None, socket=None, die=None, online=True)
                    for n in nodes for c in n.cpus]
        elif not isinstance(raw_cpus, list):
            raise InvalidTopology("numa_topology.cpus must be a list, got %s" % _typename(raw_cpus))
        else:
            cpus = [_cpu_from_facts(raw, "cpus[%d]" % index) for index, raw in enumerate(raw_cpus)]
        cpus.sort(key=lambda c: c.id)
        return cls(nodes=tuple(nodes), cpus=tuple(cpus))


# -- validation helpers ----------------------------------------------------------------------

def _typename(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _sorted_hugepage_names(pools: Mapping[str, HugePages]) -> List[str]:
    return sorted(pools, key=lambda name: (pools[name].page_size_bytes, name))


def _int(value: Any, where: str, minimum: Optional[int] = 0) -> int:
    """Accept an int (or a decimal string of one, as hand-written YAML may give); never a bool."""
    if isinstance(value, bool):
        raise InvalidTopology("%s must be an integer, got %r" % (where, value))
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("-").isdigit() and text.isascii():
            value = int(text)
        else:
            raise InvalidTopology("%s must be an integer, got %r" % (where, value))
    elif isinstance(value, float):
        if value != int(value):
            raise InvalidTopology("%s must be an integer, got %r" % (where, value))
        value = int(value)
    elif not isinstance(value, int):
        raise InvalidTopology("%s must be an integer, got %s %r" % (where, _typename(value), value))
    if minimum is not None and value < minimum:
        raise InvalidTopology("%s must be >= %d, got %d" % (where, minimum, value))
    return value


def _opt_int(value: Any, where: str, minimum: int = 0) -> Optional[int]:
    return None if value is None else _int(value, where, minimum)


def _int_list(value: Any, where: str) -> Tuple[int, ...]:
    if not isinstance(value, (list, tuple)):
        raise InvalidTopology("%s must be a list of integers, got %s %r" % (where, _typename(value), value))
    ids = [_int(item, "%s[%d]" % (where, index)) for index, item in enumerate(value)]
    if len(set(ids)) != len(ids):
        raise InvalidTopology("%s lists an id twice: %r" % (where, value))
    return tuple(sorted(ids))


def _dict(value: Any, where: str) -> Mapping[Any, Any]:
    """``value``, which must be a dict; otherwise the error names ``where`` and the type given."""
    if not isinstance(value, Mapping):
        raise InvalidTopology("%s must be a dict, got %s" % (where, _typename(value)))
    return value


def _require(raw: Mapping[Any, Any], key: str, where: str) -> Any:
    if key not in raw:
        raise InvalidTopology("%s is missing required key %r" % (where, key))
    return raw[key]


def _node_from_facts(raw: Any, where: str) -> NumaNode:
    _dict(raw, where)
    node_id = _int(_require(raw, "id", where), where + ".id")
    cpus = _int_list(_require(raw, "cpus", where), where + ".cpus")
    total = _int(_require(raw, "memory_total_bytes", where), where + ".memory_total_bytes")
    free = _int(raw.get("memory_free_bytes", 0), where + ".memory_free_bytes")
    raw_pages = raw.get("hugepages")
    raw_pages = _dict({} if raw_pages is None else raw_pages, where + ".hugepages")
    pages: Dict[str, HugePages] = {}
    for name, pool in raw_pages.items():
        pwhere = "%s.hugepages.%s" % (where, name)
        _dict(pool, pwhere)
        size = _int(_require(pool, "page_size_bytes", pwhere), pwhere + ".page_size_bytes", 1)
        hp = HugePages(page_size_bytes=size,
                       total_pages=_int(_require(pool, "total_pages", pwhere), pwhere + ".total_pages"),
                       free_pages=_int(pool.get("free_pages", 0), pwhere + ".free_pages"))
        if str(name) != hp.resource_name:
            raise InvalidTopology("%s: key %r does not match page_size_bytes %d (expected %r)"
                                  % (pwhere, name, size, hp.resource_name))
        pages[hp.resource_name] = hp
    raw_dist = raw.get("distances")
    raw_dist = _dict({} if raw_dist is None else raw_dist, where + ".distances")
    distances: Dict[int, int] = {}
    for peer, distance in raw_dist.items():
        peer_id = _int(peer, "%s.distances key %r" % (where, peer))
        distances[peer_id] = _int(distance, "%s.distances.%s" % (where, peer))
    return NumaNode(id=node_id, cpus=cpus, memory_total_bytes=total, memory_free_bytes=free,
                    hugepages=pages, distances=distances)


def _cpu_from_facts(raw: Any, where: str) -> CPU:
    _dict(raw, where)
    online = raw.get("online", True)
    if not isinstance(online, bool):
        raise InvalidTopology("%s.online must be true or false, got %r" % (where, online))
    return CPU(id=_int(_require(raw, "id", where), where + ".id"),
               node=_opt_int(raw.get("node"), where + ".node"),
               core=_opt_int(raw.get("core"), where + ".core"),
               # The kernel reports -1 for a package or die it cannot identify (e.g. POWER).
               socket=_opt_int(raw.get("socket"), where + ".socket", -1),
               die=_opt_int(raw.get("die"), where + ".die", -1),
               online=online,
               siblings=_int_list([] if raw.get("siblings") is None else raw["siblings"], where + ".siblings"),
               cache_id=_opt_int(raw.get("cache_id"), where + ".cache_id"))


def _check_model(topo: Topology) -> None:
    """Invariants every consumer relies on; violations name the node/CPU at fault."""
    ids = [n.id for n in topo.nodes]
    if ids != sorted(ids):
        raise InvalidTopology("nodes must be sorted by id, got %s" % ids)
    if len(set(ids)) != len(ids):
        raise InvalidTopology("node ids must be unique, got %s" % ids)
    owner: Dict[int, int] = {}
    for node in topo.nodes:
        if node.memory_free_bytes > node.memory_total_bytes:
            raise InvalidTopology("node %d: memory_free_bytes %d exceeds memory_total_bytes %d"
                                  % (node.id, node.memory_free_bytes, node.memory_total_bytes))
        for name, pool in node.hugepages.items():
            if pool.free_pages > pool.total_pages:
                raise InvalidTopology("node %d %s: free_pages %d exceeds total_pages %d"
                                      % (node.id, name, pool.free_pages, pool.total_pages))
        for peer in node.distances:
            if peer not in ids:
                raise InvalidTopology("node %d: distance to node %d, which does not exist" % (node.id, peer))
        for cpu_id in node.cpus:
            if cpu_id in owner:
                raise InvalidTopology("CPU %d is listed in both node %d and node %d" % (cpu_id, owner[cpu_id], node.id))
            owner[cpu_id] = node.id
    cpu_ids = [c.id for c in topo.cpus]
    if cpu_ids != sorted(cpu_ids) or len(set(cpu_ids)) != len(cpu_ids):
        raise InvalidTopology("cpus must be sorted by id and unique, got %s" % format_cpuset(cpu_ids))
    if topo.cpus:
        known = set(cpu_ids)
        for cpu_id, node_id in sorted(owner.items()):
            if cpu_id not in known:
                raise InvalidTopology("node %d lists CPU %d, which is not in cpus" % (node_id, cpu_id))
        for cpu in topo.cpus:
            if cpu.online and owner.get(cpu.id) != cpu.node:
                raise InvalidTopology("CPU %d is online and says node %r, but %s"
                                      % (cpu.id, cpu.node,
                                         "no node lists it" if cpu.id not in owner
                                         else "node %d lists it" % owner[cpu.id]))
            if not cpu.online and cpu.id in owner:
                raise InvalidTopology("CPU %d is offline but node %d lists it among its online CPUs"
                                      % (cpu.id, owner[cpu.id]))
