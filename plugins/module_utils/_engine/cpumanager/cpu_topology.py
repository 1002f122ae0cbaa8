# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The CPU manager's view of the machine (pkg/kubelet/cm/cpumanager/topology/topology.go): logical CPU -> core, socket, NUMA node, uncore cache.

The kubelet builds this from cadvisor, not from sysfs directly, and a few of its choices shape
every later decision, so we reproduce them rather than use our richer topology model as is:

* a core's id is the **smallest logical CPU id among its threads** (cadvisor's per-package core
  ids are not unique machine-wide);
* the uncore (L3) cache id of a core is its first uncore cache's id, or, when the machine does
  not report one, the core's **socket id** (upstream falls back to socket alignment);
* ``NumCPUs`` counts online logical CPUs; ``NumNUMANodes`` counts only nodes that have CPUs, so
  memory-only nodes (CXL, HBM) never appear in CPU hints; NUMA ids stay as the kernel numbers
  them (sparse ids such as 0, 1, 33 are kept);
* ``CPUsPerCore`` and ``CPUsPerSocket`` are integer divisions of the totals.

Threads are grouped into cores per NUMA node by (socket, kernel core id), as cadvisor does; when
the facts carry no core id (hand-written topologies), the SMT sibling list decides, and without
siblings every CPU is its own core.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from dataclasses import dataclass

try:
    from typing import Any, Dict, FrozenSet, Iterable, List, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError


@dataclass(frozen=True)
class CPUInfo:
    """Where one logical CPU sits, in the kubelet's numbering."""

    numa_node: int
    socket: int
    core: int
    uncore_cache: int


class CPUTopology:
    """Immutable CPU topology with the lookups the CPU manager needs, precomputed.

    ``details`` maps CPU id -> :class:`CPUInfo`; the ``cpus_in_*`` maps give frozensets of CPU ids
    per NUMA node, socket, core and uncore cache.
    """

    def __init__(self,
                 details: Dict[int, CPUInfo],
                 num_cpus: Optional[int] = None,
                 num_sockets: Optional[int] = None) -> None:
        if not details:
            raise StateError("could not detect number of cpus")
        self.details: Dict[int, CPUInfo] = dict(details)
        self.cpus_in_numa = _index(self.details, "numa_node")
        self.cpus_in_socket = _index(self.details, "socket")
        self.cpus_in_core = _index(self.details, "core")
        self.cpus_in_uncore = _index(self.details, "uncore_cache")
        self.num_cpus = num_cpus if num_cpus is not None else len(self.details)
        self.num_cores = len(self.cpus_in_core)
        self.num_sockets = num_sockets if num_sockets is not None else len(self.cpus_in_socket)
        self.num_numa_nodes = len(self.cpus_in_numa)
        self.num_uncore_caches = len(self.cpus_in_uncore)
        self.all_cpus: FrozenSet[int] = frozenset(self.details)
        self.numa_ids: Tuple[int, ...] = tuple(sorted(self.cpus_in_numa))
        self.socket_ids: Tuple[int, ...] = tuple(sorted(self.cpus_in_socket))

    def cpus_per_core(self) -> int:
        return self.num_cpus // self.num_cores if self.num_cores else 0

    def cpus_per_socket(self) -> int:
        return self.num_cpus // self.num_sockets if self.num_sockets else 0

    def cpus_in_numa_nodes(self, ids: Iterable[int]) -> FrozenSet[int]:
        out: set = set()
        for node in ids:
            out |= self.cpus_in_numa.get(node, frozenset())
        return frozenset(out)

    def cpus_in_sockets(self, ids: Iterable[int]) -> FrozenSet[int]:
        out: set = set()
        for socket in ids:
            out |= self.cpus_in_socket.get(socket, frozenset())
        return frozenset(out)

    def sockets_in_numa_nodes(self, ids: Iterable[int]) -> FrozenSet[int]:
        wanted = set(ids)
        return frozenset(info.socket for info in self.details.values() if info.numa_node in wanted)

    def numa_nodes_in_same_socket(self, ids: Iterable[int]) -> bool:
        ids = list(ids)
        if any(node not in self.cpus_in_numa for node in ids):
            return False
        return len(self.sockets_in_numa_nodes(ids)) <= 1

    def siblings_of(self, cpus: Iterable[int]) -> FrozenSet[int]:
        """All threads of the cores of ``cpus`` (``reservedPhysicalCPUs`` of the reserved set)."""
        out: set = set()
        for cpu in cpus:
            info = self.details.get(cpu)
            if info is not None:
                out |= self.cpus_in_core[info.core]
        return frozenset(out)

    def to_dict(self) -> Dict[str, object]:
        """Summary for results and debugging."""
        return {
            "num_cpus": self.num_cpus, "num_cores": self.num_cores,
            "num_sockets": self.num_sockets, "num_numa_nodes": self.num_numa_nodes,
            "num_uncore_caches": self.num_uncore_caches, "cpus_per_core": self.cpus_per_core(),
            "numa_nodes": list(self.numa_ids),
        }


def _index(details: Dict[int, CPUInfo], attribute: str) -> Dict[int, FrozenSet[int]]:
    groups: Dict[int, set] = {}
    for cpu, info in details.items():
        groups.setdefault(getattr(info, attribute), set()).add(cpu)
    return dict((key, frozenset(value)) for key, value in groups.items())


def discover(topology: Any) -> CPUTopology:
    """Build the kubelet's CPU topology from a :class:`~...topology.Topology` (pkg/kubelet/cm/cpumanager/topology/topology.go).

    Raises :class:`StateError` with the kubelet's wording when no CPU is online.
    """
    cpu_facts = dict((cpu.id, cpu) for cpu in getattr(topology, "cpus", ()))
    details: Dict[int, CPUInfo] = {}
    sockets = set()
    for node in topology.nodes:
        if not node.cpus:
            continue
        cores: Dict[object, List[int]] = {}
        for cpu_id in node.cpus:
            fact = cpu_facts.get(cpu_id)
            socket = fact.socket if fact is not None and fact.socket is not None else 0
            if fact is not None and fact.core is not None:
                key: Any = ("core", socket, fact.core)
            elif fact is not None and fact.siblings:
                key = ("siblings", min((cpu_id,) + tuple(fact.siblings)))
            else:
                key = ("cpu", cpu_id)
            cores.setdefault(key, []).append(cpu_id)
        for threads in cores.values():
            if len(set(threads)) != len(threads):
                raise StateError("cpus provided are not unique")
            core_id = min(threads)
            first = cpu_facts.get(core_id)
            socket = first.socket if first is not None and first.socket is not None else 0
            uncore = first.cache_id if first is not None and first.cache_id is not None else socket
            sockets.add(socket)
            for cpu_id in threads:
                details[cpu_id] = CPUInfo(numa_node=node.id, socket=socket, core=core_id,
                                          uncore_cache=uncore)
    if not details:
        raise StateError("could not detect number of cpus")
    return CPUTopology(details, num_cpus=len(details), num_sockets=len(sockets))


def from_layout(numa_nodes: Dict[int, Iterable[int]],
                sockets_per_node: Optional[Dict[int, int]] = None,
                cores: Optional[Dict[int, Iterable[int]]] = None,
                threads_per_core: int = 1,
                uncore: Optional[Dict[int, int]] = None) -> CPUTopology:
    """Small builder for tests and benchmarks: NUMA id -> CPU ids, optional socket/core/uncore maps.

    ``cores`` maps a core id (smallest thread) to its thread ids; without it CPUs are grouped
    ``threads_per_core`` at a time in id order within each node.
    """
    details: Dict[int, CPUInfo] = {}
    core_of: Dict[int, int] = {}
    if cores:
        for threads in cores.values():
            threads = sorted(threads)
            for cpu in threads:
                core_of[cpu] = threads[0]
    for node_cpus in numa_nodes.values():
        ordered = sorted(node_cpus)
        for index, cpu in enumerate(ordered):
            if cpu not in core_of:
                core_of[cpu] = ordered[index - index % threads_per_core]
    for node, cpus in numa_nodes.items():
        socket = (sockets_per_node or {}).get(node, 0)
        for cpu in cpus:
            core = core_of[cpu]
            details[cpu] = CPUInfo(numa_node=node, socket=socket, core=core,
                                   uncore_cache=(uncore or {}).get(cpu, socket))
    return CPUTopology(details)
