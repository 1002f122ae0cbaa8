# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Hugepages truth: the memory manager's free hugepages against the kernel's ``free_hugepages``.

Why: the Static memory manager admits a pod on the strength of its own counters. When something
outside its bookkeeping holds hugepages (a process outside Kubernetes, pages the kernel could not
allocate at boot, a pool shrunk at run time), the state says "free" and the OS has fewer: the pod
is admitted, pinned to the node, and fails when its container maps the pages
(kubernetes/kubernetes#134395: the state said 15.2 GB free, the OS had 3.2 GB). KEP-5759 (alpha,
not simulated here) would make Allocate read sysfs and reject instead.

:func:`compare` lists, per NUMA node and page size, the state's free bytes, the OS's free pages
and bytes, and the difference. :class:`Backing` follows admissions: each admitted pod's hugepages
(what its admission took from each node's free counter) are charged against what the OS has
free; a pod the OS cannot back is reported "admitted, then fails at runtime".
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Dict, List, Mapping, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import format_bytes
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import HUGEPAGES_PREFIX, hugepage_resource_name

RUNTIME_FAILURE = "admitted, then fails at runtime"


def _os_pools(topology: Any) -> Dict[Tuple[int, str], Tuple[int, int]]:
    """(node, resource) -> (page size, free pages) as sysfs reports them."""
    pools = {}
    for node in topology.nodes:
        for pool in node.hugepages.values():
            pools[(node.id, hugepage_resource_name(pool.page_size_bytes))] = (pool.page_size_bytes, pool.free_pages)
    return pools


def _state_free(memory_map: Mapping[Any, Mapping[str, Mapping[str, int]]]) -> Dict[Tuple[int, str], int]:
    free = {}
    for node, tables in memory_map.items():
        for name, table in tables.items():
            if name.startswith(HUGEPAGES_PREFIX):
                free[(int(node), name)] = int(table["free"])
    return free


def compare(memory_map: Mapping[Any, Mapping[str, Mapping[str, int]]], topology: Any) -> List[Dict[str, Any]]:
    """Per node and hugepage size: ``state_free`` (bytes), ``os_free_pages``, ``os_free``
    (bytes), ``difference`` (state minus OS; > 0 = the state believes in pages the OS does not
    have) and ``diverged``. ``memory_map``: the memory manager's map (``memory_manager_state``)."""
    state = _state_free(memory_map)
    pools = _os_pools(topology)
    rows = []
    for key in sorted(set(state) | set(pools)):
        node, name = key
        pool = pools.get(key)
        state_free = state.get(key)
        row: Dict[str, Any] = {"numa_node": node, "type": name, "state_free": state_free,
                               "os_free_pages": None if pool is None else pool[1],
                               "os_free": None if pool is None else pool[0] * pool[1]}
        if state_free is None or pool is None:
            missing_in = "OS" if pool is None else "memory manager state"
            row.update({"difference": None, "diverged": True,
                        "note": "no %s pool on NUMA node %d in the %s" % (name, node, missing_in)})
        else:
            size, pages = pool
            os_free = size * pages
            row.update({"difference": state_free - os_free, "diverged": state_free > os_free})
            if state_free > os_free:
                row["note"] = ("the state counts %s free, the OS has %s (%d pages): %s more than the OS can back"
                               % (format_bytes(state_free), format_bytes(os_free), pages,
                                  format_bytes(state_free - os_free)))
        rows.append(row)
    return rows


class Backing:
    """What the OS can still back, charged admission by admission.

    ``memory_map``: the memory manager's map before the first admission. Each :meth:`charge`
    gets the map after one admitted pod and returns the shortfalls of that pod (empty = backed).
    """

    def __init__(self, topology: Any, memory_map: Mapping[Any, Mapping[str, Mapping[str, int]]]) -> None:
        self.pools = _os_pools(topology)
        self.remaining = dict((key, size * pages) for key, (size, pages) in self.pools.items())
        self.last = _state_free(memory_map)

    def charge(self, memory_map: Mapping[Any, Mapping[str, Mapping[str, int]]]) -> List[str]:
        now = _state_free(memory_map)
        problems = []
        for key in sorted(now):
            taken = self.last.get(key, now[key]) - now[key]
            if taken <= 0 or key not in self.remaining:
                continue
            before = self.remaining[key]
            self.remaining[key] = before - taken
            if self.remaining[key] < 0:
                node, name = key
                problems.append("%s on NUMA node %d: the pod takes %s, the OS has %s free (free_hugepages %d)"
                                % (name, node, format_bytes(taken), format_bytes(max(before, 0)),
                                   max(before, 0) // self.pools[key][0]))
        self.last = now
        return problems
