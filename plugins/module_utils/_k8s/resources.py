# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Resource names the kubelet's managers care about, and which of them are memory.

One home for ``v1.ResourceMemory``/``ResourceCPU`` and the hugepages prefix
(pkg/apis/core/v1/helper/helpers.go ``IsHugePageResourceName`` is a prefix test), so the
reservation parser, the memory manager and the pod model agree on what "a memory type" is.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import InvalidQuantity, format_bytes, parse_quantity

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
HUGEPAGES_PREFIX = "hugepages-"

#: What ``kubeReserved``/``systemReserved`` accept (ResourceList keys the kubelet reserves).
RESERVABLE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE, "pid")


def is_hugepages(name: str) -> bool:
    """``hugepages-2Mi`` style resource name (any ``hugepages-`` prefix, as the kubelet tests it)."""
    return name.startswith(HUGEPAGES_PREFIX)


def is_memory_type(name: str) -> bool:
    """``memory`` or a hugepages resource: the types the Memory Manager manages and reserves."""
    return name == MEMORY or name.startswith(HUGEPAGES_PREFIX)


def hugepage_resource_name(page_size_bytes: int) -> str:
    """``hugepages-`` + the canonical BinarySI page size (2097152 -> ``hugepages-2Mi``)."""
    return HUGEPAGES_PREFIX + format_bytes(page_size_bytes)


def hugepage_size(name: str) -> str:
    """The page size of a hugepages resource name as written (``hugepages-2Mi`` -> ``2Mi``); other
    names unchanged."""
    return name[len(HUGEPAGES_PREFIX):] if is_hugepages(name) else name


def hugepage_size_bytes(name: str) -> int:
    """The page size of a hugepages resource name in bytes (``hugepages-2Mi`` -> 2097152); 0 when
    ``name`` is not one or its size is not a quantity."""
    if not is_hugepages(name):
        return 0
    try:
        return max(0, parse_quantity(hugepage_size(name)).value())
    except InvalidQuantity:
        return 0
