# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""Topology hints and provider hint maps (spec 1.3).

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

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass

try:
    from typing import Any, Dict, List, Optional  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils.engine.bitmask import BitMask


@dataclass(frozen=True)
class TopologyHint(object):
    """A NUMA affinity (``None`` = no preference about placement) and whether it is preferred.

    Equality is the kubelet's: same ``preferred`` and both masks ``None`` or equal.
    """

    affinity: "Optional[BitMask]"
    preferred: bool

    def to_dict(self):
        # type: () -> Dict[str, Any]
        """JSON-friendly form used in results: ``{"numa_affinity": [ids] or None, "preferred": bool}``."""
        return {
            "numa_affinity": None if self.affinity is None else list(self.affinity.bits()),
            "preferred": self.preferred,
        }

    def __str__(self):
        # type: () -> str
        return "{%s %s}" % ("nil" if self.affinity is None else str(self.affinity),
                            "preferred" if self.preferred else "not-preferred")


#: The hint a provider gets for a container the Topology Manager has no stored hint for.
ZERO_HINT = TopologyHint(None, False)

#: "No preference": what nil maps / nil lists turn into, and the policy-none result.
DONT_CARE_HINT = TopologyHint(None, True)


def hint_map_to_dict(hints):
    # type: (Optional[Dict[str, Optional[List[TopologyHint]]]]) -> Optional[Dict[str, Any]]
    """JSON-friendly form of a provider hint map, keeping the None / [] distinction."""
    if hints is None:
        return None
    out = {}  # type: Dict[str, Any]
    for resource in sorted(hints):
        value = hints[resource]
        out[resource] = None if value is None else [hint.to_dict() for hint in value]
    return out
