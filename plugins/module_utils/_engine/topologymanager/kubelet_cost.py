# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A forecast of what the kubelet itself spends admitting a pod (``kubelet_cost``).

The kubelet's providers walk every NUMA mask of their nodes (2^N - 1) for each resource with
topology, and its merge visits every permutation of the hint lists (their product). Both are
counted exactly here (a hint set's length may be unknown beyond bounds: ``null``), and turned
into seconds with two documented rates:

* :data:`SECONDS_PER_PERMUTATION`: 258 s for 255^4 permutations (8 NUMA nodes, four lists of
  255 hints; kubernetes/kubernetes#137700). kubernetes/kubernetes#131738 reports about 21 minutes
  for the same count on another machine: the figure is an order of magnitude, not a promise;
* :data:`SECONDS_PER_MASK`: 1 microsecond per mask walked by a provider (an assumption: each
  mask is a new bitmask, its bit list and per-node sums in Go).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Dict, Optional, Sequence, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import is_hint_set

SECONDS_PER_PERMUTATION = 258.0 / 255 ** 4
SECONDS_PER_MASK = 1e-6
#: above this the pod result carries a warning (check_pod.yml shows such hosts)
WARN_SECONDS = 10.0
#: above this the warning says plainly that the kubelet would not finish
NEVER_SECONDS = 86400.0


def masks_walked(hints_map: Any, resource: str, value: Any) -> int:
    """NUMA masks a provider walked for ``resource`` (0 when it answered without walking)."""
    if is_hint_set(value):
        return value.masks_iterated()
    found = getattr(value, "kubelet_masks", None)
    if found is None:
        found = (getattr(hints_map, "kubelet_masks", None) or {}).get(resource, 0)
    return int(found)


def hints_returned(value: Any) -> Optional[int]:
    if is_hint_set(value):
        return value.count()
    return len(value)


def merge_cost(provider_hints: Sequence[Tuple[str, Any]], permutations: Optional[int]) -> Dict[str, Any]:
    """``kubelet_cost`` of one merge: per provider and resource masks walked and hints returned."""
    providers: Dict[str, Dict[str, Dict[str, Any]]] = {}
    masks = 0
    for name, hints_map in provider_hints:
        per: Dict[str, Dict[str, Any]] = {}
        for resource in sorted(hints_map or {}):
            value = hints_map[resource]
            if value is None:
                continue
            walked = masks_walked(hints_map, resource, value)
            per[resource] = {"masks": walked, "hints": hints_returned(value)}
            masks += walked
        for resource, walked in sorted((getattr(hints_map, "kubelet_masks", None) or {}).items()):
            if resource not in per:
                per[resource] = {"masks": walked, "hints": 0}
                masks += walked
        providers[name] = per
    return {"providers": providers, "permutations": permutations,
            "estimated_seconds": estimate(masks, permutations)}


def estimate(masks: int, permutations: Optional[int]) -> float:
    return masks * SECONDS_PER_MASK + (permutations or 0) * SECONDS_PER_PERMUTATION


def pod_cost(merges: Sequence[Dict[str, Any]]) -> Dict[str, Any]:
    """Totals over a pod's merges, with a warning above :data:`WARN_SECONDS`."""
    providers: Dict[str, Dict[str, Dict[str, Any]]] = {}
    permutations: Optional[int] = 0
    seconds = 0.0
    for cost in merges:
        for name, per in cost["providers"].items():
            into = providers.setdefault(name, {})
            for resource, figures in per.items():
                old = into.get(resource)
                if old is None:
                    into[resource] = dict(figures)
                    continue
                old["masks"] += figures["masks"]
                old["hints"] = None if old["hints"] is None or figures["hints"] is None \
                    else old["hints"] + figures["hints"]
        if permutations is not None:
            permutations = None if cost["permutations"] is None else permutations + cost["permutations"]
        seconds += cost["estimated_seconds"]
    out: Dict[str, Any] = {"providers": providers, "permutations": permutations, "estimated_seconds": seconds}
    if seconds > WARN_SECONDS:
        out["warning"] = ("the kubelet would spend about %s minutes admitting this pod: %s permutations; "
                          "see max-allowable-numa-nodes"
                          % (_figure(seconds / 60.0),
                             _figure(permutations) if permutations is not None else "an unknown number of"))
        if seconds > NEVER_SECONDS:
            out["warning"] += " (more than a day: in practice the kubelet would not finish)"
    return out


def _figure(value: float) -> str:
    if value >= 1e6:
        return "%.3g" % value
    if isinstance(value, int):
        return str(value)
    return "%.0f" % value if value >= 10 else "%.1f" % value
