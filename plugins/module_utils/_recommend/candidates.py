# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Candidate kubelet settings for one hardware class, and the start-up check that drops the ones
the kubelet would refuse.

Dimensions (each narrowed, or widened, by the workload's ``candidates:`` block; the defaults keep
a search of 50-150 candidates per class, a few seconds each on the bundled machines):

* Topology Manager policy (all four) x scope (``container``, ``pod``; only when the policy is not
  ``none``) x policy options (default ``{}``; e.g. ``prefer-closest-numa-nodes`` on request).
  ``max-allowable-numa-nodes`` is added where the machine has more than 8 NUMA nodes: without it
  the kubelet does not start;
* CPU Manager policy (``none``, ``static``) x options (``{}``, ``full-pcpus-only``) x
  ``reservedSystemCPUs`` strategy: ``kubelet`` (unset: the kubelet takes ceil(kube+system
  reserved cpu) CPUs itself), ``first_core`` (the threads of the lowest CPU's core),
  ``core_per_node`` (one core's threads on each NUMA node with CPUs; machines with 2+ such nodes);
* Memory Manager policy (``None``, ``Static``) x ``reservedMemory`` split strategy (default
  ``spread`` and ``node0``; also ``proportional`` and ``reserved_cpus``: the reserved_memory
  module's strategies, computed by ``_reservation.reservation.plan_reservation``);
* kube/system reserved: ``sized`` (default: from the class's CPUs and memory, see
  :func:`sized_reservation`) or ``documented`` (the collection's documented per-class defaults,
  ``playbooks/examples/classes``: kubeReserved cpu 1 / memory 2Gi, systemReserved memory 1Gi).
  Machines with one NUMA node search both (their other dimensions collapse).

Candidates whose settings come out identical are generated once. :func:`startup_errors` is the
rollout preflight's own check (``_kubelet_config.settings.validate_settings`` with the reserved-
memory and Node Allocatable validation of ``_reservation.reservation.reservation_validator``).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import itertools
import json

try:
    from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_options import (
    DEFAULT_MAX_ALLOWABLE_NUMA_NODES,
    MAX_ALLOWABLE_NUMA_NODES,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import format_cpuset
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.settings import normalise_settings, validate_settings
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import plan_reservation, reservation_validator

MIB = 1 << 20
GIB = 1 << 30
#: The collection's documented per-class reservation (playbooks/examples/classes/group_vars, README).
DOCUMENTED_RESERVATION = {"kubeReserved": {"cpu": "1", "memory": "2Gi"}, "systemReserved": {"memory": "1Gi"}}


def sized_reservation(cpus: int, memory_bytes: int) -> Dict[str, Dict[str, str]]:
    """kubeReserved from the machine's size, by the tiered rule GKE and AKS document for nodes:
    CPU 6% of the first core, 1% of the second, 0.5% of cores 3-4, 0.25% of every further core;
    memory 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112 and
    2% above 128 GiB. CPU rounded up to 10m, memory up to 1Mi."""
    milli_tenths = 600 * min(cpus, 1) + 100 * min(max(cpus - 1, 0), 1) + 50 * min(max(cpus - 2, 0), 2) \
        + 25 * max(cpus - 4, 0)  # tenths of a millicore
    milli = -(-milli_tenths // 10)
    milli = -(-milli // 10) * 10
    tiers = ((4 * GIB, 25), (4 * GIB, 20), (8 * GIB, 10), (112 * GIB, 6))
    rest, reserved = memory_bytes, 0
    for size, percent in tiers:
        part = min(rest, size)
        reserved += part * percent
        rest -= part
    reserved += rest * 2
    mib = -(-reserved // (100 * MIB))
    return {"kubeReserved": {"cpu": "%dm" % max(milli, 10), "memory": "%dMi" % max(mib, 1)}}


def _first_core(topology: Any, node_id: Optional[int] = None) -> List[int]:
    online = [c for c in topology.cpus if c.online and (node_id is None or c.node == node_id)]
    if not online:
        return []
    first = min(online, key=lambda c: c.id)
    return sorted(set((first.id,) + tuple(s for s in first.siblings if topology.cpu(s).online)))


def reserved_cpus(topology: Any, strategy: str) -> str:
    """``reservedSystemCPUs`` for a strategy ("" for ``kubelet``)."""
    if strategy == "first_core":
        return format_cpuset(_first_core(topology))
    if strategy == "core_per_node":
        cpus: List[int] = []
        for node_id in topology.cpu_node_ids():
            cpus.extend(_first_core(topology, node_id))
        return format_cpuset(sorted(cpus))
    return ""


def _choices(narrowed: Mapping[str, List[Any]], key: str, default: Sequence[Any]) -> List[Any]:
    values = narrowed.get(key)
    return list(values) if values else list(default)


def _key(settings: Mapping[str, Any]) -> str:
    return json.dumps(settings, sort_keys=True)


def generate(topology: Any, capacity: int, narrowed: Optional[Mapping[str, List[Any]]] = None,
             kubelet: Any = None) -> Tuple[List[Dict[str, Any]], List[Dict[str, Any]]]:
    """(candidates, dropped) for a topology with ``capacity`` bytes of memory.

    Each candidate: ``id`` (``c001``... in generation order), ``knobs`` (the choice per dimension)
    and ``settings`` (the ``kubelet_numa_settings`` dict, KubeletConfiguration spelling). A
    candidate whose ``reservedMemory`` cannot be computed (a strategy that does not fit) or that
    fails :func:`startup_errors` is in ``dropped`` with its ``errors``.
    """
    narrowed = narrowed or {}
    cpu_nodes = len(topology.cpu_node_ids())
    node_count = len(topology.node_ids())
    online = len(topology.online_cpus())
    tm_options_default: List[Dict[str, str]] = [{}]
    rcpu_default = ["kubelet", "first_core"] + (["core_per_node"] if cpu_nodes > 1 else [])
    split_default = ["spread"] if node_count == 1 else ["spread", "node0"]
    reservation_default = ("sized", "documented") if node_count == 1 else ("sized",)
    sizes = {"sized": sized_reservation(online, capacity), "documented": DOCUMENTED_RESERVATION}
    out: List[Dict[str, Any]] = []
    dropped: List[Dict[str, Any]] = []
    seen = set()
    tm_policies = _choices(narrowed, "topologyManagerPolicy", ("none", "best-effort", "restricted", "single-numa-node"))
    for reservation, tm_policy, cpu_policy, mm_policy in itertools.product(
            _choices(narrowed, "reservation", reservation_default), tm_policies,
            _choices(narrowed, "cpuManagerPolicy", ("none", "static")),
            _choices(narrowed, "memoryManagerPolicy", ("None", "Static"))):
        scopes = _choices(narrowed, "topologyManagerScope", ("container", "pod")) if tm_policy != "none" else ["container"]
        tm_options_list = _choices(narrowed, "topologyManagerPolicyOptions", tm_options_default) \
            if tm_policy != "none" else [{}]
        cpu_options_list = _choices(narrowed, "cpuManagerPolicyOptions", ({}, {"full-pcpus-only": "true"})) \
            if cpu_policy == "static" else [{}]
        rcpu_list = _choices(narrowed, "reservedSystemCPUs", rcpu_default) if cpu_policy == "static" else ["kubelet"]
        splits = _choices(narrowed, "reservedMemory", split_default) if mm_policy == "Static" else [None]
        for scope, tm_options, cpu_options, rcpu, split in itertools.product(
                scopes, tm_options_list, cpu_options_list, rcpu_list, splits):
            if split == "reserved_cpus" and rcpu == "kubelet":
                continue
            knobs = {"reservation": reservation, "topologyManagerPolicy": tm_policy, "topologyManagerScope": scope,
                     "topologyManagerPolicyOptions": dict(tm_options), "cpuManagerPolicy": cpu_policy,
                     "cpuManagerPolicyOptions": dict(cpu_options), "reservedSystemCPUs": rcpu,
                     "memoryManagerPolicy": mm_policy, "reservedMemory": split}
            settings: Dict[str, Any] = {"cpuManagerPolicy": cpu_policy}
            if cpu_options:
                settings["cpuManagerPolicyOptions"] = dict(cpu_options)
            cpus = reserved_cpus(topology, rcpu)
            if cpus:
                settings["reservedSystemCPUs"] = cpus
            settings["topologyManagerPolicy"] = tm_policy
            if tm_policy != "none":
                settings["topologyManagerScope"] = scope
            options = dict(tm_options)
            if node_count > DEFAULT_MAX_ALLOWABLE_NUMA_NODES:
                options[MAX_ALLOWABLE_NUMA_NODES] = str(node_count)
            if options:
                settings["topologyManagerPolicyOptions"] = options
            settings["memoryManagerPolicy"] = mm_policy
            settings.update(json.loads(json.dumps(sizes[reservation])))
            if split is not None:
                plan = plan_reservation(topology, strategy=split, kube_reserved=settings.get("kubeReserved"),
                                        system_reserved=settings.get("systemReserved"), memory_manager_policy="Static",
                                        memory_capacity_bytes=capacity, reserved_cpus=cpus or None, kubelet=kubelet)
                if not plan.valid:
                    dropped.append({"knobs": knobs, "settings": settings,
                                    "errors": ["reservedMemory (%s): %s" % (split, e) for e in plan.errors]})
                    continue
                settings["reservedMemory"] = plan.reserved_memory
            key = _key(settings)
            if key in seen:
                continue
            seen.add(key)
            errors = startup_errors(settings, topology, kubelet)
            if errors:
                dropped.append({"knobs": knobs, "settings": settings, "errors": errors})
                continue
            out.append({"knobs": knobs, "settings": settings})
    for index, candidate in enumerate(out):
        candidate["id"] = "c%03d" % (index + 1)
    return out, dropped


def effective_config(settings: Mapping[str, Any]) -> Dict[str, Any]:
    """The configuration the kubelet runs with: its defaults, then ``settings`` (normalised as the
    kubelet decodes them)."""
    effective = kubelet_defaults()
    effective.update(normalise_settings(dict(settings)))
    return effective


def startup_errors(settings: Mapping[str, Any], topology: Any, kubelet: Any = None) -> List[str]:
    """Why the kubelet would refuse to start with ``settings`` on this machine ([] when it starts):
    the rollout preflight's checks, on the kubelet's defaults plus ``settings``."""
    errors, _warnings = validate_settings(
        dict(settings), effective_config(settings), kubelet_version=kubelet, topology=topology,
        reservation_validator=lambda effective, topo: reservation_validator(effective, topo, kubelet))
    return list(errors)
