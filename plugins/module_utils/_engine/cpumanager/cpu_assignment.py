# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which concrete CPUs the static policy hands out: ``takeByTopology`` (pkg/kubelet/cm/cpumanager/cpu_assignment.go).

Two algorithms, chosen by the policy options:

* **packed** (default): whole first-level elements (NUMA nodes when sockets >= NUMA nodes,
  otherwise sockets), whole second-level elements, optionally whole/partial uncore caches
  (``prefer-align-cpus-by-uncorecache``), whole cores (skipped with
  ``distribute-cpus-across-cores``), then single CPUs;
* **NUMA-distributed** (``distribute-cpus-across-numa``): spread the request evenly over the
  fewest NUMA nodes that can take it, choosing the combination that leaves the machine's free
  CPUs most balanced (population standard deviation rounded to 3 decimals, first best wins).

Every ordering is "fewest available CPUs first, then lowest id", applied level by level down the
hierarchy; that rule packs new allocations next to existing ones. The order of evaluation is kept
exactly (including that lists are computed once before a loop takes from them) because the
result is observable: it is the container's cpuset in the state file.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type


try:
    from typing import Any, FrozenSet, Iterable, List, Set  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError

PACKED = "packed"
SPREAD = "spread"


class TakeError(NumaguardError):
    """takeByTopology could not satisfy the request; the text is the kubelet's error text."""


class _Accumulator:
    """Free CPUs still to choose from (``details``), the result so far and the remaining need."""

    def __init__(self, topo, available, needed):
        self.topo = topo
        self.available: Set[int] = set(c for c in available if c in topo.details)
        self.needed = needed
        self.result: Set[int] = set()
        self.numa_first = topo.num_sockets >= topo.num_numa_nodes

    # -- bookkeeping -----------------------------------------------------------------------
    def take(self, cpus: Iterable[int]) -> None:
        cpus = set(cpus)
        self.result |= cpus
        self.available -= self.result
        self.needed -= len(cpus)

    def needs_at_least(self, count: int) -> bool:
        return self.needed >= count

    def satisfied(self) -> bool:
        return self.needed < 1

    def failed(self) -> bool:
        return self.needed > len(self.available)

    # -- what is available where -------------------------------------------------------------
    def _avail(self, group: FrozenSet[int]) -> int:
        return len(self.available & group)

    def avail_in_numa(self, node):
        return self.available & self.topo.cpus_in_numa.get(node, frozenset())

    def avail_numas(self):
        return set(self.topo.details[c].numa_node for c in self.available)

    def avail_sockets(self, numa=None):
        return set(self.topo.details[c].socket for c in self.available
                   if numa is None or self.topo.details[c].numa_node == numa)

    def avail_numas_in_socket(self, socket):
        return set(self.topo.details[c].numa_node for c in self.available
                   if self.topo.details[c].socket == socket)

    def avail_cores(self, socket=None, numa=None):
        details = self.topo.details
        return set(details[c].core for c in self.available
                   if (socket is None or details[c].socket == socket)
                   and (numa is None or details[c].numa_node == numa))

    def avail_uncores_in_numa(self, numa):
        details = self.topo.details
        return set(details[c].uncore_cache for c in self.available if details[c].numa_node == numa)

    def _sorted(self, ids: Iterable[int], groups: dict) -> List[int]:
        """The sorting primitive: fewest available CPUs in the element first, then lowest id."""
        return sorted(ids, key=lambda i: (self._avail(groups.get(i, frozenset())), i))

    # -- orders (numaFirst / socketsFirst) ---------------------------------------------------
    def sorted_numas(self) -> List[int]:
        if self.numa_first:
            return self._sorted(self.avail_numas(), self.topo.cpus_in_numa)
        out: List[int] = []
        for socket in self.sorted_sockets():
            out.extend(self._sorted(self.avail_numas_in_socket(socket), self.topo.cpus_in_numa))
        return out

    def sorted_sockets(self) -> List[int]:
        if not self.numa_first:
            return self._sorted(self.avail_sockets(), self.topo.cpus_in_socket)
        out: List[int] = []
        for numa in self.sorted_numas():
            out.extend(self._sorted(self.avail_sockets(numa), self.topo.cpus_in_socket))
        return out

    def sorted_cores(self) -> List[int]:
        out: List[int] = []
        if self.numa_first:
            for socket in self.sorted_sockets():
                out.extend(self._sorted(self.avail_cores(socket=socket), self.topo.cpus_in_core))
        else:
            for numa in self.sorted_numas():
                out.extend(self._sorted(self.avail_cores(numa=numa), self.topo.cpus_in_core))
        return out

    def sorted_uncores(self) -> List[int]:
        out: List[int] = []
        for numa in self.sorted_numas():
            out.extend(self._sorted(self.avail_uncores_in_numa(numa), self.topo.cpus_in_uncore))
        return out

    def sorted_cpus_packed(self) -> List[int]:
        out: List[int] = []
        for core in self.sorted_cores():
            out.extend(sorted(self.available & self.topo.cpus_in_core[core]))
        return out

    def sorted_cpus_spread(self) -> List[int]:
        out: List[int] = []
        for socket in self.sorted_sockets():
            out.extend(sorted(self.available & self.topo.cpus_in_socket[socket]))
        return out

    # -- the take steps ----------------------------------------------------------------------
    def take_full_numas(self) -> None:
        free = [n for n in self.sorted_numas()
                if self._avail(self.topo.cpus_in_numa[n]) == len(self.topo.cpus_in_numa[n])]
        for numa in free:
            cpus = self.topo.cpus_in_numa[numa]
            if not self.needs_at_least(len(cpus)):
                continue
            self.take(cpus)

    def take_full_sockets(self) -> None:
        per_socket = self.topo.cpus_per_socket()
        free = [s for s in self.sorted_sockets()
                if self._avail(self.topo.cpus_in_socket[s]) == per_socket]
        for socket in free:
            cpus = self.topo.cpus_in_socket[socket]
            if not self.needs_at_least(len(cpus)):
                continue
            self.take(cpus)

    def take_full_cores(self) -> None:
        per_core = self.topo.cpus_per_core()
        free = [c for c in self.sorted_cores()
                if self._avail(self.topo.cpus_in_core[c]) == per_core]
        for core in free:
            cpus = self.topo.cpus_in_core[core]
            if not self.needs_at_least(len(cpus)):
                continue
            self.take(cpus)

    def take_full_uncores(self) -> None:
        for uncore in self.sorted_uncores():
            group = self.topo.cpus_in_uncore[uncore]
            if self._avail(group) != len(group):
                continue
            cpus = self.available & group
            if not self.needs_at_least(len(cpus)):
                continue
            self.take(cpus)

    def take_partial_uncore(self, uncore: int) -> None:
        per_core = self.topo.cpus_per_core() or 1
        cores_needed = (self.needed + per_core - 1) // per_core
        details = self.topo.details
        cores = sorted(set(details[c].core for c in self.available
                           if details[c].uncore_cache == uncore))
        if len(cores) > cores_needed:
            cores = cores[:cores_needed]
        cpus: Set[int] = set()
        for core in cores:
            cpus |= self.available & self.topo.cpus_in_core[core]
        if self.needed % 2 != 0 and self.topo.cpus_per_core() > 1:
            ordered = sorted(cpus)
            if len(ordered) > self.needed:
                ordered = ordered[:len(ordered) - 1]
            cpus = set(ordered)
        if self.needed == len(cpus):
            self.take(cpus)

    def take_uncore_caches(self) -> None:
        for uncore in self.sorted_uncores():
            self.take_full_uncores()
            if self.satisfied():
                return
            self.take_partial_uncore(uncore)
            if self.satisfied():
                return

    def take_remaining(self, strategy: str) -> None:
        order = self.sorted_cpus_spread() if strategy == SPREAD else self.sorted_cpus_packed()
        for cpu in order:
            self.take((cpu,))
            if self.satisfied():
                return


class CPUShortage(TakeError):
    """Fewer free CPUs than requested. The text is the newest kubelet's; the policy prints the
    text of the kubelet release it follows (``_k8s/versions.py`` ``kubelet_text(CPU_SHORTAGE)``)."""

    def __init__(self, requested: int, available: int) -> None:
        super().__init__("not enough cpus available to satisfy request: requested=%d, available=%d"
                         % (requested, available))
        self.requested = requested
        self.available = available


def _not_enough(requested: int, available: int) -> TakeError:
    return CPUShortage(requested, available)


def take_packed(topo: Any,
                available: Iterable[int],
                count: int,
                strategy: str = PACKED,
                prefer_uncore: bool = False) -> FrozenSet[int]:
    """``takeByTopologyNUMAPacked``: best-fit packing, whole elements first."""
    available = frozenset(available)
    acc = _Accumulator(topo, available, count)
    if acc.satisfied():
        return frozenset(acc.result)
    if acc.failed():
        raise _not_enough(count, len(available))
    if acc.numa_first:
        acc.take_full_numas()
    else:
        acc.take_full_sockets()
    if acc.satisfied():
        return frozenset(acc.result)
    if acc.numa_first:
        acc.take_full_sockets()
    else:
        acc.take_full_numas()
    if acc.satisfied():
        return frozenset(acc.result)
    if prefer_uncore:
        acc.take_uncore_caches()
        if acc.satisfied():
            return frozenset(acc.result)
    if strategy != SPREAD:
        acc.take_full_cores()
        if acc.satisfied():
            return frozenset(acc.result)
    acc.take_remaining(strategy)
    if acc.satisfied():
        return frozenset(acc.result)
    raise TakeError("failed to allocate cpus")
