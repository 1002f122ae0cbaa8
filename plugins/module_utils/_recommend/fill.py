# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fill one fresh node of a hardware class with a workload, under one candidate's settings.

The workload's pods are offered in order, every replica of a shape before the next shape (the
order the scheduler would send them to an empty node), each through the kubelet's admission
(:class:`_engine.admission.AdmissionSimulator`: Topology Manager admit handler, then resource
fit). A rejected pod changes nothing on the node (the kubelet garbage-collects what it got), so
the next replica of the same shape meets the same node and gets the same answer: the rest of
the shape's replicas are counted rejected with that reason without running them again. The fill
ends when every replica was offered; from then on nothing more is admitted.

Per candidate: pods admitted, admitted aligned (:func:`is_aligned`), rejected per reason, what
is left per NUMA node (CPUs that are free for exclusive use, free memory) and the kubelet's own
admission cost (``kubelet_cost``: estimated seconds, permutations of its merges).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import dataclasses

try:
    from typing import Any, Dict, List, Mapping, Optional, Sequence  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSetupError, AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.alignment import pod_alignment
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod, pod_requests
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.startup import CRASHED, KubeletCrashed
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import parse_cpuset
from ansible_collections.numaguard.kubelet.plugins.module_utils._recommend.candidates import effective_config


def is_aligned(result: Mapping[str, Any], alignment: Mapping[str, Any]) -> bool:
    """An admitted Guaranteed pod that the kubelet aligned: every NUMA-relevant resource was placed
    by a manager that gives the Topology Manager hints (nothing in ``not_aligned``: no shared-pool
    CPUs, no unpinned memory, no device without topology, no DRA claim), every merge of the pod
    found a preferred hint (the narrowest NUMA set that can hold it), and in each container the
    exclusive CPUs, memory blocks and devices sit on that same NUMA set."""
    if not result.get("admitted") or result.get("qos_class") != "Guaranteed":
        return False
    if alignment.get("not_aligned") or not alignment.get("aligned"):
        return False
    if not all((merge.get("merged_hint") or {}).get("preferred") for merge in result.get("merges") or []):
        return False
    for container in result.get("containers") or []:
        sets = set()
        if container.get("cpu_numa_nodes"):
            sets.add(tuple(sorted(container["cpu_numa_nodes"])))
        for block in container.get("memory_blocks") or []:
            sets.add(tuple(sorted(block.get("numa_affinity") or ())))
        for nodes in (container.get("device_numa_nodes") or {}).values():
            if nodes:
                sets.add(tuple(sorted(nodes)))
        if len(sets) > 1:
            return False
    return True


def _replica(pod: Pod, shape: str, number: int) -> Pod:
    """Replica ``number`` of a shape: the template's pod, parsed once, with its own name and uid
    (a new pod for the kubelet, not a re-admission)."""
    return dataclasses.replace(pod, name="%s-%d" % (shape, number), uid="%s-%d" % (pod.uid, number))


def fill_node(topology: Any, settings: Mapping[str, Any], shapes: Sequence[Mapping[str, Any]],
              kubelet: Any = None, capacity: Optional[int] = None, devices: Any = None) -> Dict[str, Any]:
    """Admit the workload's ``shapes`` ({name, replicas, template}) on a fresh node with
    ``settings``; returns the candidate's figures (see module docstring). Raises
    :class:`AdmissionSetupError` where the kubelet would not start."""
    simulator = AdmissionSimulator(topology, effective_config(settings), memory_capacity_bytes=capacity,
                                   devices=devices or None, kubelet_version=kubelet)
    policies = simulator.summary()
    inventory = simulator.device_manager.inventory
    per_shape: List[Dict[str, Any]] = []
    rejected: Dict[str, int] = {}
    totals = {"offered": 0, "admitted": 0, "aligned": 0, "rejected": 0}
    cost_seconds = 0.0
    max_permutations: Optional[int] = 0
    for shape in shapes:
        row = {"name": shape["name"], "offered": 0, "admitted": 0, "aligned": 0, "rejected": 0, "reasons": {},
               "numa_nodes": {}}
        template = Pod.from_manifest(shape["template"], feature_gates=simulator.feature_gates)
        for number in range(1, int(shape["replicas"]) + 1):
            pod = _replica(template, shape["name"], number)
            result = simulator.admit(pod)
            if result["verdict"] == CRASHED:
                raise KubeletCrashed("the kubelet crashes at pod %s: panic: %s" % (result["crash"]["pod"], result["crash"]["panic"]))
            row["offered"] += 1
            cost = result.get("kubelet_cost") or {}
            cost_seconds += float(cost.get("estimated_seconds") or 0.0)
            perms = cost.get("permutations")
            max_permutations = None if perms is None or max_permutations is None else max(max_permutations, perms)
            if result["admitted"]:
                row["admitted"] += 1
                alignment = pod_alignment(shape["template"], pod_requests(pod), result, policies, inventory)
                if is_aligned(result, alignment):
                    row["aligned"] += 1
                key = ",".join(str(n) for n in result.get("numa_nodes") or []) or "-"
                row["numa_nodes"][key] = row["numa_nodes"].get(key, 0) + 1
                continue
            reason = result.get("reason") or ("cannot check: %s" % result.get("cannot_check")
                                              if result.get("verdict") == "cannot_check" else "rejected")
            left = int(shape["replicas"]) - number + 1  # the node did not change: the rest meet the same answer
            row["offered"] += left - 1
            row["rejected"] += left
            row["reasons"][reason] = row["reasons"].get(reason, 0) + left
            row.setdefault("first_rejection", "%s: %s" % (reason, result.get("message") or result.get("cannot_check") or ""))
            break
        for key in ("offered", "admitted", "aligned", "rejected"):
            totals[key] += row[key]
        for reason, count in row["reasons"].items():
            rejected[reason] = rejected.get(reason, 0) + count
        per_shape.append(row)
    return dict(totals, shapes=per_shape, rejected_by_reason=dict(sorted(rejected.items())),
                stranded=stranded(simulator, topology),
                kubelet_cost={"estimated_seconds": cost_seconds, "max_permutations": max_permutations})


def stranded(simulator: Any, topology: Any) -> Dict[str, Any]:
    """What is left on the filled node: per NUMA node the CPUs still free for exclusive use
    (``cpus``, of ``cpus_total`` not reserved; static CPU Manager: its shared pool minus the
    reserved CPUs) and the free memory and hugepages (``memory`` of ``memory_total`` allocatable,
    ``hugepages``; Static Memory Manager: its per-node table); node-wide the allocatable CPU
    (millicores) and memory (bytes) no pod requests. Per-node figures are null where the
    policies do not track them."""
    summary = simulator.summary()
    empty = {"cpus": None, "cpus_total": None, "memory": None, "memory_total": None, "hugepages": None}
    per_node: Dict[str, Dict[str, Any]] = dict(("%d" % n, dict(empty)) for n in topology.node_ids())
    if summary.get("cpu_manager_policy") == "static":
        reserved = set(parse_cpuset(summary.get("reserved_cpus") or ""))
        free = set(parse_cpuset(summary.get("default_cpu_set") or "")) - reserved
        for node in topology.nodes:
            per_node["%d" % node.id]["cpus"] = sum(1 for cpu in node.cpus if cpu in free)
            per_node["%d" % node.id]["cpus_total"] = sum(1 for cpu in node.cpus if cpu not in reserved)
    if summary.get("memory_manager_policy") == "Static":
        for node_id, tables in simulator.memory_map().items():
            entry = per_node.setdefault(str(node_id), dict(empty))
            memory = tables.get("memory") or {}
            entry["memory"] = int(memory.get("free") or 0)
            entry["memory_total"] = int(memory.get("allocatable") or 0)
            entry["hugepages"] = sum(int((t or {}).get("free") or 0) for name, t in tables.items()
                                     if name.startswith("hugepages-"))
    fit = simulator.resource_fit
    return {
        "per_node": per_node,
        "cpu_milli": int(fit.allocatable.get("cpu", 0)) - int(fit.used.get("cpu", 0)),
        "memory": int(fit.allocatable.get("memory", 0)) - int(fit.used.get("memory", 0)),
    }


def evaluate(topology: Any, candidate: Mapping[str, Any], shapes: Sequence[Mapping[str, Any]], kubelet: Any = None,
             capacity: Optional[int] = None, devices: Any = None) -> Dict[str, Any]:
    """The candidate with its fill figures, or with ``errors`` when the kubelet would not start
    (the simulator's start-up checks, past the settings validation)."""
    out = dict(candidate)
    try:
        out["result"] = fill_node(topology, candidate["settings"], shapes, kubelet, capacity, devices)
    except KubeletCrashed as exc:
        out["errors"] = [str(exc)]
    except (AdmissionSetupError, StateError) as exc:
        out["errors"] = ["kubelet start-up: %s" % exc]
    return out
