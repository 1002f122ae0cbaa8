# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Hardware classes: a readable inventory group name for each topology fingerprint.

Why: one kubelet settings file cannot fit 1-, 2-, 8- and 16-node machines. Operators already
group hosts by machine class; the fingerprint tells identical machines apart but
``sha256:3fa2...`` is not a name to put settings under. The class name says what matters for
NUMA settings at a glance (NUMA nodes, CPUs, hugepage sizes with pages) and ends with the short
fingerprint so two machines that read the same but differ (memory size, distances) stay apart:
``numa_2n_96c_2m_1g_3fa2c1d0``. It is a valid Ansible group name (letters, digits, ``_``).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re

try:
    from typing import Any, Dict, Mapping  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import hugepage_size_bytes

_SIZE = re.compile(r"^hugepages-(\d+)(Ki|Mi|Gi|Ti)?$")
CLASS_PREFIX = "numa_"


class HardwareClassError(NumaguardError):
    """Facts that do not describe a topology (names the field)."""


def _page_token(resource: str) -> str:
    """A hugepage size as a class name writes it (``hugepages-2Mi`` -> ``2m``): a name token, not
    text for humans (that is ``_k8s.quantity.human_bytes`` / ``_k8s.resources.hugepage_size``)."""
    match = _SIZE.match(resource)
    if not match:
        return re.sub(r"[^a-z0-9]", "", resource.lower())
    return (match.group(1) + (match.group(2) or "")[:1]).lower()


def short_fingerprint(fingerprint: Any) -> str:
    """First 8 hex digits of a ``sha256:`` fingerprint (``-`` when unknown)."""
    if not fingerprint:
        return "-"
    return str(fingerprint).split(":", 1)[-1][:8]


def hardware_class(facts: Mapping[str, Any]) -> Dict[str, str]:
    """``name`` (``numa_2n_96c_1g``), ``fingerprint`` (short) and ``group`` (name + short
    fingerprint, the inventory group) of a ``numa_topology`` fact dict."""
    if not isinstance(facts, Mapping):
        raise HardwareClassError("numa_topology must be a dict, got %s" % type(facts).__name__)
    nodes = facts.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise HardwareClassError("numa_topology.nodes must be a non-empty list, got %r" % (nodes,))
    cpus = 0
    sizes: Dict[str, int] = {}
    for index, node in enumerate(nodes):
        if not isinstance(node, Mapping):
            raise HardwareClassError("numa_topology.nodes[%d] must be a dict" % index)
        cpus += len(node.get("cpus") or [])
        for name, pool in (node.get("hugepages") or {}).items():
            pages = pool.get("total_pages", 0) if isinstance(pool, Mapping) else 0
            if isinstance(pages, int) and pages > 0:
                sizes[str(name)] = hugepage_size_bytes(str(name))
    pages = "_".join(_page_token(n) for n in sorted(sizes, key=lambda n: (sizes[n], n))) or "nohp"
    name = "%s%dn_%dc_%s" % (CLASS_PREFIX, len(nodes), cpus, pages)
    short = short_fingerprint(facts.get("fingerprint"))
    group = name if short == "-" else "%s_%s" % (name, short)
    return {"name": name, "fingerprint": short, "group": group}


def is_class_group(group: str) -> bool:
    """A group made by :func:`hardware_class` (left out of per-group comparisons)."""
    return bool(re.match(r"^numa_\d+n_\d+c_", str(group)))
