# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NUMA node ids and distances as the Topology Manager sees them (pkg/kubelet/cm/topologymanager/numa_info.go).

The kubelet keeps, per NUMA node, cadvisor's distance *list* (the node's sysfs ``distance``
file: one entry per online node, in node order) and indexes it with the *peer node's id*
(``NUMADistances.CalculateAverageFor``, unchanged from 1.26, kubernetes/kubernetes#113788, through
1.32 as vendored by kubeedge/kubeedge). On machines with dense ids (0..N-1) that is the distance
to the peer. With sparse ids (0 and 2; 0, 1, 3) the kubelet still starts; the lookup runs past
the list only when ``Closest`` averages a mask holding an id >= the list's length, which happens
when a merge compares two *different* masks of equal width under prefer-closest-numa-nodes
(never under single-numa-node, never on one node). There the kubelet panics (index out of range)
and crashes at that pod: :meth:`NUMAInfo.average_distance` raises :class:`KubeletPanic` there,
and the policy walks the kubelet's own merge order on such machines so that it panics exactly
where the kubelet does.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Dict, Mapping, Optional, Sequence, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import bits_of, mask_value, popcount
from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError


class TopologyManagerError(NumaguardError):
    """The kubelet's Topology Manager would refuse to start with this configuration/machine."""


class KubeletPanic(NumaguardError):
    """The kubelet would panic (a Go runtime error) and crash while admitting a pod; the text is
    the panic's (e.g. ``runtime error: index out of range [2] with length 2``)."""


class NUMAInfo:
    """Sorted NUMA ids of the machine plus (optionally) the distance lists for prefer-closest."""

    def __init__(self,
                 node_ids: Sequence[int],
                 distances: Optional[Mapping[int, Sequence[int]]] = None) -> None:
        """``distances`` maps node id -> list of distances in node order (cadvisor's shape)."""
        # no NUMA node at all is not an error: the kubelet's NewNUMAInfo has no such check and
        # the kubelet starts (the default affinity is then the empty mask)
        ids = sorted(set(int(n) for n in node_ids))
        self.nodes: Tuple[int, ...] = tuple(ids)
        self.default_mask = mask_value(ids)
        self.distances: Optional[Dict[int, Tuple[int, ...]]] = None
        self._avg_cache: Dict[int, float] = {}
        if distances is not None:
            table = {}
            for node in ids:
                row = distances.get(node)
                if row is None:
                    raise TopologyManagerError(
                        "cannot discover NUMA topology: error getting NUMA distances from cadvisor "
                        "(no distances for NUMA node %d)" % node)
                table[node] = tuple(int(v) for v in row)
            self.distances = table
        #: some id is past some node's distance list: a comparison of masks holding it panics
        self.short_lists = bool(self.distances) and any(
            peer >= len(row) for row in (self.distances or {}).values() for peer in ids)

    @classmethod
    def from_topology(cls, topology: Any, with_distances: bool) -> NUMAInfo:
        """Build from a ``topology.Topology`` (peer-id -> distance dicts become positional lists)."""
        nodes = list(topology.nodes)
        ids = [n.id for n in nodes]
        if not with_distances:
            return cls(ids)
        lists = {}
        for node in nodes:
            dist = dict((int(k), int(v)) for k, v in (node.distances or {}).items())
            if not dist:
                raise TopologyManagerError(
                    "cannot discover NUMA topology: error getting NUMA distances from cadvisor "
                    "(no distances for NUMA node %d)" % node.id)
            lists[node.id] = [dist[peer] for peer in sorted(dist)]
        return cls(ids, lists)

    def average_distance(self, mask: int) -> float:
        """Average over all ordered pairs (i, j) of the mask's nodes, i == j included (float64)."""
        cached = self._avg_cache.get(mask)
        if cached is not None:
            return cached
        bits = bits_of(mask)
        if not bits:
            return 0.0
        if self.distances is None:
            raise TopologyManagerError("NUMA distances are not known")
        total = 0.0
        count = 0.0
        for first in bits:
            row = self.distances[first]
            for second in bits:
                if second >= len(row):  # Go: d[node1][node2] past the list
                    raise KubeletPanic("runtime error: index out of range [%d] with length %d" % (second, len(row)))
                total += float(row[second])
                count += 1.0
        value = total / count
        self._avg_cache[mask] = value
        return value

    def narrowest(self, first: int, second: int) -> int:
        """Fewer nodes wins, then the numerically smaller mask."""
        c1, c2 = popcount(first), popcount(second)
        if c1 != c2:
            return first if c1 < c2 else second
        return first if first < second else second

    def closest(self, first: int, second: int) -> int:
        """Fewer nodes wins; same count: smaller average distance, then numerically smaller."""
        if popcount(first) != popcount(second):
            return self.narrowest(first, second)
        d1, d2 = self.average_distance(first), self.average_distance(second)
        if d1 == d2:
            return first if first < second else second
        return first if d1 < d2 else second
