# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Node Allocatable reservation (pkg/kubelet/cm/node_container_manager_linux.go
``GetNodeAllocatableReservation``, ``validateNodeAllocatable``): the one home of the right-hand side
of the reservedMemory equation, shared by the validator (``_reservation/reservation.py``), the
memory manager's start-up and the allocatable resources of ``resource_fit.py``.

Per resource: systemReserved + kubeReserved + the hard-eviction reservation (``memory`` only: the
``memory.available`` threshold), kept only when non-zero. The sum runs in the kubelet's order
(system, kube, eviction) on a zero receiver, so it keeps the format of the first non-zero addend
and prints as the kubelet prints it (``5220Mi``). With ``reservedSystemCPUs`` the cpu reservation
is the number of those CPUs and kubeReserved cpu is ignored (cmd/kubelet/app/server.go overwrites
both). Hugepages reach this sum only through kube/systemReserved, which accept them only with the
``SystemReservedHugepages`` gate (KEP-6252, alpha 1.38); eviction never holds hugepages.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.eviction import EvictionSettings, Threshold, effective_eviction_hard
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import parse_resource_map
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_quote
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import BINARY_SI, DECIMAL_SI, Quantity
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import CPU, HUGEPAGES_PREFIX, MEMORY
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import NODE_ALLOCATABLE_RESERVATION_TEXT, behaviour

#: The gate that lets kube/systemReserved hold hugepages (KEP-6252).
SYSTEM_RESERVED_HUGEPAGES = "SystemReservedHugepages"


@dataclass(frozen=True)
class AllocatablePart:
    """One addend of a Node Allocatable reservation (for the written-out equation, which the report
    layer words: ``_report/node_allocatable_text.py``): ``system-reserved``, ``kube-reserved`` or
    ``hard-eviction`` with its ``threshold`` and the memory capacity it is a fraction of."""

    label: str
    quantity: Quantity
    threshold: Optional[Threshold] = None
    capacity_bytes: int = 0


def node_allocatable_reservation(system_reserved: Mapping[str, Quantity],
                                 kube_reserved: Mapping[str, Quantity],
                                 eviction: Optional[EvictionSettings],
                                 memory_capacity_bytes: int,
                                 resource_names: Iterable[str],
                                 reserved_cpus_count: Optional[int] = None,
                                 ignore_eviction: bool = False,
                                 ) -> Tuple[Dict[str, Quantity], Dict[str, List[AllocatablePart]]]:
    """``GetNodeAllocatableReservation`` for ``resource_names``: (reservation per resource, kept
    only when non-zero; the addends per resource, for equations).

    ``eviction``: the effective hard thresholds (None or ``ignore_eviction``: no eviction part).
    ``reserved_cpus_count``: the number of ``reservedSystemCPUs`` (None: not set).
    """
    system = dict(system_reserved)
    kube = dict(kube_reserved)
    if reserved_cpus_count is not None:
        system[CPU] = Quantity.from_int(reserved_cpus_count, DECIMAL_SI)
        kube.pop(CPU, None)
    threshold = None
    if eviction is not None and not ignore_eviction:
        threshold = eviction.memory_threshold()
    totals: Dict[str, Quantity] = {}
    parts: Dict[str, List[AllocatablePart]] = {}
    for name in resource_names:
        total = Quantity(0, 0, DECIMAL_SI)
        addends: List[AllocatablePart] = []
        if name in system:
            addends.append(AllocatablePart("system-reserved", system[name]))
        if name in kube:
            addends.append(AllocatablePart("kube-reserved", kube[name]))
        if name == MEMORY and threshold is not None:
            addends.append(AllocatablePart("hard-eviction", threshold.bytes_of(memory_capacity_bytes), threshold,
                                           memory_capacity_bytes))
        for part in addends:
            total = total + part.quantity
        parts[name] = addends
        if not total.is_zero():
            totals[name] = total
    return totals, parts


def reservation_from_config(kubelet_config: Mapping[str, Any],
                            resource_names: Iterable[str],
                            memory_capacity_bytes: int,
                            reserved_cpus_count: Optional[int] = None,
                            feature_gates: Optional[Mapping[str, Any]] = None) -> Dict[str, Quantity]:
    """:func:`node_allocatable_reservation` from a KubeletConfiguration dict (camelCase).

    ``feature_gates``: the effective gates (default: the config's ``featureGates``); with
    ``SystemReservedHugepages`` on, kube/systemReserved may hold hugepages. Raises
    ``ReservationSyntaxError`` (a ``ValueError``) naming the bad setting.
    """
    gates = feature_gates if feature_gates is not None else (kubelet_config.get("featureGates") or {})
    hugepages = bool(gates.get(SYSTEM_RESERVED_HUGEPAGES))
    system = parse_resource_map(kubelet_config.get("systemReserved"), "systemReserved", hugepages)
    kube = parse_resource_map(kubelet_config.get("kubeReserved"), "kubeReserved", hugepages)
    eviction = effective_eviction_hard(kubelet_config.get("evictionHard"),
                                       bool(kubelet_config.get("mergeDefaultEvictionSettings")),
                                       option="evictionHard")
    totals, _parts = node_allocatable_reservation(system, kube, eviction, memory_capacity_bytes, resource_names,
                                                  reserved_cpus_count)
    return totals


def _go_value(quantity: Quantity) -> str:
    """Go's ``%v`` of a Quantity; an inf.Dec prints a pointer address we cannot know."""
    return quantity.go_struct() or "{{0 0} {<address>}  %s}" % quantity.format


def node_capacity(topology: Any, memory_capacity_bytes: int, names: Iterable[str] = ()) -> Dict[str, Quantity]:
    """The node's capacity as the container manager holds it (cadvisor ``CapacityFromMachineInfo``):
    cpu as ``NewMilliQuantity(cores*1000)``, memory = MemTotal (BinarySI) and, for each hugepage
    size in ``names``, the machine's pool (BinarySI)."""
    cpu_count = sum(len(node.cpus) for node in topology.nodes)
    capacity = {MEMORY: Quantity.from_int(memory_capacity_bytes, BINARY_SI),
                CPU: Quantity(cpu_count * 1000, -3, DECIMAL_SI)}
    for name in names:
        if name.startswith(HUGEPAGES_PREFIX):
            capacity[name] = Quantity.from_int(sum(n.hugepages[name].page_size_bytes * n.hugepages[name].total_pages
                                                   for n in topology.nodes if name in n.hugepages), BINARY_SI)
    return capacity


def node_allocatable_capacity_message(capacity: Mapping[str, Quantity], reservation: Mapping[str, Quantity],
                                      version: Tuple[int, ...]) -> Optional[str]:
    """``validateNodeAllocatable``: the kubelet's start-up error when a resource's Node Allocatable
    reservation exceeds its capacity, else None. Resources in sorted order (the kubelet walks a
    Go map: with two failures the order may differ). Wording changed in 1.30
    (kubernetes/kubernetes#119764, ``_k8s/versions.py`` NODE_ALLOCATABLE_RESERVATION_TEXT)."""
    parts = []
    for name in sorted(reservation):
        if name not in capacity:
            continue
        left = capacity[name] - reservation[name]
        if left.sign() >= 0:
            continue
        if behaviour(NODE_ALLOCATABLE_RESERVATION_TEXT, version):
            parts.append("Resource %s has a reservation of %s but capacity of %s. Expected capacity >= reservation."
                         % (go_quote(name), _go_value(reservation[name]), _go_value(capacity[name])))
        else:
            parts.append("Resource %s has an allocatable of %s, capacity of %s"
                         % (go_quote(name), _go_value(reservation[name]), _go_value(left)))
    if not parts:
        return None
    return "invalid Node Allocatable configuration. %s" % " ".join(parts)
