# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Topology Manager policies: how the merged hint is computed and when it admits.

The interface and the names (pkg/kubelet/cm/topologymanager/policy.go); one file per policy
(``policy_<name>.py``), the factory in ``topology_manager.py``.

=================  ===============================================  ===========================
policy             merge                                            admits
=================  ===============================================  ===========================
none               no merge (the empty hint {nil, not preferred})   always
best-effort        filter, merge (closest or narrowest)             always
restricted         filter, merge (closest or narrowest)             iff merged hint preferred
single-numa-node   filter, keep nil/one-node preferred hints,       iff merged hint preferred
                   merge (narrowest), full mask -> nil
=================  ===============================================  ===========================
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Dict, List, Optional, Sequence, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import NUMAInfo, TopologyManagerError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_options import PolicyOptions

POLICY_NONE = "none"
POLICY_BEST_EFFORT = "best-effort"
POLICY_RESTRICTED = "restricted"
POLICY_SINGLE_NUMA_NODE = "single-numa-node"
POLICIES = (POLICY_NONE, POLICY_BEST_EFFORT, POLICY_RESTRICTED, POLICY_SINGLE_NUMA_NODE)

#: merge implementations by name: "fast" (default) and "exhaustive" (the kubelet's literal loop)
MERGERS = ("fast", "exhaustive")


class Policy:
    """A Topology Manager policy bound to a machine's NUMA info and options."""

    name = ""

    def __init__(self,
                 numa_info: NUMAInfo,
                 options: Optional[PolicyOptions] = None,
                 merger: str = "fast") -> None:
        if merger not in MERGERS:
            raise TopologyManagerError("unknown merge implementation %r (expected one of %s)"
                                       % (merger, ", ".join(sorted(MERGERS))))
        self.numa_info = numa_info
        self.options = options or PolicyOptions()
        self.merger = merger
        #: the hint lists the last merge iterated (for the kubelet's cost) and a note on it
        self.last_lists: List[Any] = []
        self.last_note: Optional[str] = None
        #: CPU seconds the search for a non-preferred merged hint may take (None: the merge's
        #: default); restricted shortens it, its decision does not depend on that hint
        self.non_preferred_seconds: Optional[float] = None

    def merge(self,
              providers_hints: Sequence[Optional[Dict[str, Optional[List[TopologyHint]]]]]) -> Tuple[TopologyHint, bool]:
        """Merged hint and whether the pod (or container) can be admitted."""
        raise NotImplementedError

    def merge_lists(self,
                    lists: Sequence[Sequence[TopologyHint]],
                    prefer_closest: bool) -> TopologyHint:
        self.last_lists = list(lists)
        self.last_note = None
        # imported at the first merge: a run under the none policy never compiles the merges (issue 12)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager import merge

        if self.merger != "fast" or (prefer_closest and getattr(self.numa_info, "short_lists", False)):
            # sparse NUMA ids: whether the kubelet panics depends on which masks its walk
            # compares, so walk it (such machines have few nodes; bounded, see merge.py)
            return merge.merge_exhaustive(lists, self.numa_info, prefer_closest, bounded=self.merger == "fast")
        return merge.merge_fast(lists, self.numa_info, prefer_closest, self.non_preferred_seconds)
