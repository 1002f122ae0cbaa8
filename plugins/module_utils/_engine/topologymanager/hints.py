# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Topology hints and provider hint maps (pkg/kubelet/cm/topologymanager/topology_manager.go, policy.go).

A provider answers, per container or per pod, a map resource name -> list of hints, and the
three "empty" shapes mean different things to the Topology Manager, so they must stay distinct:

=====================================  ==========================================
provider returns                       Topology Manager reads
=====================================  ==========================================
``None`` or ``{}``                     provider does not care: ``[{nil, true}]``
``{"r": None}``                        resource does not care: ``[{nil, true}]``
``{"r": []}``                          resource cannot be satisfied: ``[{nil, false}]``
``{"r": [hints...]}``                  the hints as given
=====================================  ==========================================
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import operator
from dataclasses import dataclass

try:
    from typing import Any, Dict, Iterable, List, Optional, Tuple, cast  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask, bits_of, kubelet_order_key, popcount
from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError


@dataclass(frozen=True)
class TopologyHint:
    """A NUMA affinity (``None`` = no preference about placement) and whether it is preferred.

    Equality is the kubelet's: same ``preferred`` and both masks ``None`` or equal.
    """

    affinity: Optional[BitMask]
    preferred: bool

    def to_dict(self) -> Dict[str, Any]:
        """JSON-friendly form used in results: ``{"numa_affinity": [ids] or None, "preferred": bool}``."""
        return {
            "numa_affinity": None if self.affinity is None else list(self.affinity.bits()),
            "preferred": self.preferred,
        }

    def __str__(self) -> str:
        return "{%s %s}" % ("nil" if self.affinity is None else str(self.affinity),
                            "preferred" if self.preferred else "not-preferred")


#: The hint a provider gets for a container the Topology Manager has no stored hint for.
ZERO_HINT = TopologyHint(None, False)

#: "No preference": what nil maps / nil lists turn into, and the policy-none result.
DONT_CARE_HINT = TopologyHint(None, True)


#: attribute holding a hint's memoised :meth:`TopologyHint.to_dict` (not a dataclass field, so
#: invisible to equality, hashing and repr)
_DICT_ATTRIBUTE = "_as_dict"
_memoised_dict = operator.attrgetter(_DICT_ATTRIBUTE)


def _shared_dict(hint: TopologyHint) -> Dict[str, Any]:
    """``hint.to_dict()``, built once per hint object and then reused."""
    found = hint.__dict__.get(_DICT_ATTRIBUTE)
    if found is None:
        found = hint.to_dict()
        object.__setattr__(hint, _DICT_ATTRIBUTE, found)  # frozen dataclass: bypass on purpose
    return found


def memoise_dicts(hints: Iterable[TopologyHint], id_tuples: Iterable[Tuple[int, ...]]) -> None:
    """Attach ``to_dict()`` to many hints at once; ``id_tuples`` gives each hint's NUMA ids.

    Why: a provider interning the 65535 hints of a 16-node machine already knows every mask's
    ids (mask tables); building the dicts here in one loop costs a fraction of building them one
    by one through :meth:`TopologyHint.to_dict` on the first result. Hints that already have
    one keep it.
    """
    for hint, ids in zip(hints, id_tuples):
        attributes = hint.__dict__  # frozen dataclass: only __setattr__ is blocked, on purpose
        if _DICT_ATTRIBUTE not in attributes:
            attributes[_DICT_ATTRIBUTE] = {"numa_affinity": list(ids), "preferred": hint.preferred}


def hint_map_to_dict(hints: Optional[Dict[str, Optional[List[TopologyHint]]]]) -> Optional[Dict[str, Any]]:
    """JSON-friendly form of a provider hint map, keeping the None / [] distinction.

    Why the per-hint dicts are shared: at 16 NUMA nodes a map holds 65535 hints per resource and
    building a fresh dict and list for each took longer than the whole admission decision.
    Providers intern their hints, so each hint's dict is built once and the same (read-only)
    dict object appears in every result that lists that hint; consumers must not mutate them.
    """
    if hints is None:
        return None
    out: Dict[str, Any] = {}
    for resource in sorted(hints):
        value = hints[resource]
        if value is None:
            out[resource] = None
            continue
        try:
            out[resource] = list(map(_memoised_dict, value))  # every hint already memoised (C loop)
        except AttributeError:
            out[resource] = [_shared_dict(hint) for hint in value]
    return out


class HintList(list):
    """A provider's literal hint list (masks without nil hints, in the kubelet's IterateBitMasks
    order: by size) that remembers how many NUMA masks the provider walked to build it (for the
    kubelet's cost forecast); otherwise a plain list."""

    def __init__(self, hints: Iterable[TopologyHint] = (), kubelet_masks: int = 0) -> None:
        super().__init__(hints)
        self.kubelet_masks = kubelet_masks


class EmptyHintMap(dict):
    """An empty provider map ("no preference") that remembers the masks walked per resource."""

    def __init__(self, kubelet_masks: Dict[str, int]) -> None:
        super().__init__()
        self.kubelet_masks = dict(kubelet_masks)


class SearchBoundExceeded(NumaguardError):
    """A question about a hint set or a merge that this simulator will not answer in bounds."""


#: providers describe their hints (``hint_sets``) from this many NUMA ids on; below they list
#: them (tests lower it to run the implicit path against the literal providers)
IMPLICIT_FROM_NODES = [13]


def implicit_for(node_count: int) -> bool:
    """True when a provider over ``node_count`` NUMA ids should describe, not list, its hints."""
    return node_count >= IMPLICIT_FROM_NODES[0]


def is_hint_set(value: Any) -> bool:
    """A described hint list (``hint_sets.HintSet``), told apart without importing that module."""
    return getattr(value, "implicit", False) is True


#: hints shown per resource in results (the best ones by the kubelet's preference)
HINTS_SHOWN = 16


def best_first(item: Tuple[int, int]) -> Tuple[bool, int, int]:
    """Sort key of (mask, flag 1/2): preferred first, then fewest nodes, then numerically."""
    mask, flag = item
    return (flag != 2, popcount(mask), mask)


def shown_hints(value: Any, limit: int = HINTS_SHOWN) -> List[Dict[str, Any]]:
    """Up to ``limit`` hints of a list or hint set for results: the best ones (preferred first,
    then fewest nodes, then numerically smaller), in the kubelet's order; a list that short is
    shown whole. Nil hints come first (providers never mix them with masks)."""
    if is_hint_set(value):
        return [{"numa_affinity": list(bits_of(mask)), "preferred": flag == 2} for mask, flag in value.shown(limit)]
    if len(value) <= limit:
        return [hint.to_dict() for hint in value]
    if getattr(value, "kubelet_masks", 0):
        value = _best_candidates(value, limit)
    nil = [hint for hint in value if hint.affinity is None]
    masks = [(hint.affinity.value, 2 if hint.preferred else 1) for hint in value if hint.affinity is not None]
    masks = sorted(masks, key=best_first)[:max(0, limit - len(nil))]
    masks.sort(key=lambda item: kubelet_order_key(item[0]))
    return [h.to_dict() for h in nil] + [{"numa_affinity": list(bits_of(mask)), "preferred": flag == 2}
                                         for mask, flag in masks]


_PREFERRED = operator.attrgetter("preferred")


def _best_candidates(hints: List[TopologyHint], limit: int) -> List[TopologyHint]:
    """A provider's list (kubelet order: by size) cut after the size groups that hold the best
    ``limit`` hints and every preferred one; the full sort then runs on a few dozen hints
    instead of 4095 at 12 NUMA nodes."""
    preferred_left = sum(map(_PREFERRED, hints))
    out: List[TopologyHint] = []
    size = 0
    for hint in hints:
        count = cast(BitMask, hint.affinity).count()  # provider lists hold no nil mask
        if count != size and len(out) >= limit and not preferred_left:
            break
        size = count
        out.append(hint)
        preferred_left -= hint.preferred
    return out


def shown_hint_map(hints: Any, limit: int = HINTS_SHOWN) -> Optional[Dict[str, Any]]:
    """A provider hint map for results, keeping the None / [] distinction, lists bounded."""
    if hints is None:
        return None
    return dict((resource, None if hints[resource] is None else shown_hints(hints[resource], limit))
                for resource in sorted(hints))
