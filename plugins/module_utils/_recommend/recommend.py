# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Recommend kubelet NUMA settings per hardware class for a workload.

Why: operators pick Topology/CPU/Memory Manager settings by trial and error on production nodes.
Everything needed to answer "which settings admit my workload, aligned, with the least stranded
capacity, on each machine shape" is here: the hardware class of a topology, the start-up
validation of the rollout preflight, and the kubelet's admission engine.

Pure and standard library only (it runs on the controller through the ``numa_recommend`` action
plugin, and could run on a host): :func:`recommend_class` generates the candidates of one class
(``candidates.generate``: start-up failures dropped with the reasons), fills one node with the
workload under each (``fill.evaluate``), ranks them and returns the class's model;
:func:`recommend` does it for every class and adds the summary lines. The ranking is total and
stable, so the same input gives the same output:

* objective ``aligned``: most pods admitted aligned, then most admitted, then fewest CPUs left
  for exclusive use on the filled node, less free memory left, the lower kubelet admission cost,
  then generation order;
* objective ``admitted``: most admitted first, then most aligned, then the same.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption, VersionError
from ansible_collections.numaguard.kubelet.plugins.module_utils._recommend.candidates import generate, startup_errors
from ansible_collections.numaguard.kubelet.plugins.module_utils._recommend.fill import evaluate
from ansible_collections.numaguard.kubelet.plugins.module_utils._recommend.workload import Workload, WorkloadError
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.classes import hardware_class
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import topology_from_any

#: Fields of a candidate's knobs shown in tables and summaries, in this order.
KNOB_ORDER = ("topologyManagerPolicy", "topologyManagerScope", "topologyManagerPolicyOptions", "cpuManagerPolicy",
              "cpuManagerPolicyOptions", "reservedSystemCPUs", "memoryManagerPolicy", "reservedMemory", "reservation")


def kubelet_assumption(version: Optional[str]) -> KubeletAssumption:
    try:
        return KubeletAssumption.resolve(version)
    except VersionError as exc:
        raise WorkloadError("kubelet_version: %s" % exc)


def check_templates(workload: Workload, kubelet: KubeletAssumption) -> None:
    """Every template is a pod the kubelet accepts (the engine's Pod validation), named in errors."""
    for shape in workload.shapes:
        try:
            Pod.from_manifest(shape["template"], feature_gates=dict(kubelet.gates))
        except ValueError as exc:
            raise WorkloadError("pods[%s].template: %s" % (shape["name"], exc))


def _stranded_totals(result: Mapping[str, Any]) -> Tuple[int, int]:
    nodes = (result.get("stranded") or {}).get("per_node") or {}
    cpus = sum(int(n.get("cpus") or 0) for n in nodes.values())
    memory = sum(int(n.get("memory") or 0) for n in nodes.values())
    if not any(n.get("cpus") is not None for n in nodes.values()):
        cpus = int((result.get("stranded") or {}).get("cpu_milli") or 0) // 1000
    if not any(n.get("memory") is not None for n in nodes.values()):
        memory = int((result.get("stranded") or {}).get("memory") or 0)
    return cpus, memory


def rank_key(entry: Mapping[str, Any], objective: str, order: int) -> Tuple[Any, ...]:
    result = entry["result"]
    cpus, memory = _stranded_totals(result)
    cost = float((result.get("kubelet_cost") or {}).get("estimated_seconds") or 0.0)
    first = (-result["aligned"], -result["admitted"]) if objective == "aligned" else (-result["admitted"], -result["aligned"])
    return first + (cpus, memory, cost, order)


def describe_knobs(knobs: Mapping[str, Any]) -> str:
    """``single-numa-node/pod, static{full-pcpus-only} rcpu=first_core, Static(spread), sized``."""
    tm = str(knobs.get("topologyManagerPolicy"))
    if tm != "none":
        tm += "/" + str(knobs.get("topologyManagerScope"))
    if knobs.get("topologyManagerPolicyOptions"):
        tm += "{%s}" % ",".join(sorted(knobs["topologyManagerPolicyOptions"]))
    cpu = str(knobs.get("cpuManagerPolicy"))
    if knobs.get("cpuManagerPolicyOptions"):
        cpu += "{%s}" % ",".join(sorted(knobs["cpuManagerPolicyOptions"]))
    if cpu.startswith("static"):
        cpu += " rcpu=%s" % knobs.get("reservedSystemCPUs")
    mem = str(knobs.get("memoryManagerPolicy"))
    if knobs.get("reservedMemory"):
        mem += "(%s)" % knobs["reservedMemory"]
    return "TM %s, CPU %s, MM %s, reserved %s" % (tm, cpu, mem, knobs.get("reservation"))


def _differences(winner: Mapping[str, Any], other: Mapping[str, Any]) -> str:
    changed = []
    for key in KNOB_ORDER:
        if winner["knobs"].get(key) != other["knobs"].get(key):
            changed.append("%s %s" % (key, _short(other["knobs"].get(key))))
    return ", ".join(changed) or "same knobs"


def _short(value: Any) -> str:
    if isinstance(value, dict):
        return "{%s}" % ",".join("%s=%s" % (k, value[k]) for k in sorted(value)) if value else "{}"
    return str(value)


def recommend_class(name: str, facts: Mapping[str, Any], workload: Workload, kubelet: KubeletAssumption,
                    baseline: Optional[Mapping[str, Any]] = None, hosts: Sequence[str] = ()) -> Dict[str, Any]:
    """The model of one class: its candidates ranked, the winner, the runner-up, the dropped
    candidates, and (when ``baseline`` settings are given, e.g. the documented defaults of the
    class) the baseline's own fill under the same workload."""
    topology, capacity = topology_from_any(facts)
    capacity = capacity or topology.memory_total_bytes()
    devices = device_inventory(facts)
    candidates, dropped = generate(topology, capacity, workload.candidates, kubelet)
    evaluated = []
    for candidate in candidates:
        entry = evaluate(topology, candidate, workload.shapes, kubelet, capacity, devices)
        if "errors" in entry:
            dropped.append({"knobs": entry["knobs"], "settings": entry["settings"], "errors": entry["errors"]})
        else:
            evaluated.append(entry)
    order = dict((c["id"], i) for i, c in enumerate(evaluated))
    evaluated.sort(key=lambda c: rank_key(c, workload.objective, order[c["id"]]))
    for rank, entry in enumerate(evaluated, 1):
        entry["rank"] = rank
        entry["summary"] = describe_knobs(entry["knobs"])
    out: Dict[str, Any] = {
        "class": name, "hosts": list(hosts), "cpus": len(topology.online_cpus()), "numa_nodes": list(topology.node_ids()),
        "memory_bytes": capacity, "candidates": evaluated, "dropped": dropped,
        "counts": {"generated": len(evaluated) + len(dropped), "evaluated": len(evaluated), "dropped": len(dropped)},
        "winner": evaluated[0] if evaluated else None, "runner_up": evaluated[1] if len(evaluated) > 1 else None,
    }
    if baseline is not None:
        errors = startup_errors(baseline, topology, kubelet)
        if errors:
            out["baseline"] = {"settings": dict(baseline), "errors": errors}
        else:
            entry = evaluate(topology, {"id": "baseline", "knobs": {}, "settings": dict(baseline)}, workload.shapes,
                             kubelet, capacity, devices)
            out["baseline"] = entry
    out["line"] = class_line(out)
    return out


def device_inventory(facts: Mapping[str, Any]) -> Dict[str, Dict[str, List[int]]]:
    """The device plugins' devices of a ``numa_topology`` fact (``device_plugins.resources``), as
    the admission engine's ``devices`` inventory (a device without a NUMA node has no topology)."""
    plugins = facts.get("device_plugins") if isinstance(facts, Mapping) else None
    resources = plugins.get("resources") if isinstance(plugins, Mapping) else None
    if not isinstance(resources, Mapping):
        return {}
    out: Dict[str, Dict[str, List[int]]] = {}
    for resource in sorted(resources):
        entries = resources[resource] or []
        devices: Dict[str, List[int]] = {}
        for entry in entries:
            if not isinstance(entry, Mapping) or entry.get("id") is None:
                continue
            node = entry.get("numa_node")
            devices[str(entry["id"])] = [node] if isinstance(node, int) and not isinstance(node, bool) and node >= 0 else []
        out[str(resource)] = devices
    return out


def class_line(model: Mapping[str, Any]) -> str:
    """One screen line: the winner and how the runner-up differs."""
    winner = model.get("winner")
    counts = model["counts"]
    head = "%s: %d candidate(s), %d dropped" % (model["class"], counts["evaluated"], counts["dropped"])
    if winner is None:
        return "%s: no candidate the kubelet would start with" % head
    result = winner["result"]
    line = "%s; winner %s: %s -- %d/%d admitted, %d aligned" % (
        head, winner["id"], winner["summary"], result["admitted"], result["offered"], result["aligned"])
    runner = model.get("runner_up")
    if runner is not None:
        other = runner["result"]
        line += "; runner-up %s (%s): %+d aligned, %+d admitted" % (
            runner["id"], _differences(winner, runner), other["aligned"] - result["aligned"],
            other["admitted"] - result["admitted"])
    baseline = model.get("baseline")
    if baseline is not None and "result" in baseline:
        result = baseline["result"]
        line += "; documented defaults: %d admitted, %d aligned" % (result["admitted"], result["aligned"])
    elif baseline is not None:
        line += "; documented defaults would not start: %s" % "; ".join(baseline.get("errors") or [])[:200]
    return line


def recommend(classes: Mapping[str, Mapping[str, Any]], workload: Workload,
              baselines: Optional[Mapping[str, Mapping[str, Any]]] = None,
              hosts: Optional[Mapping[str, Sequence[str]]] = None) -> Dict[str, Any]:
    """The whole recommendation: ``classes`` maps a class name to one host's ``numa_topology``
    facts (every host of a class has the same topology fingerprint). Returns ``workload``,
    ``kubelet``, ``classes`` (sorted by name, each :func:`recommend_class`) and ``lines``."""
    kubelet = kubelet_assumption(workload.kubelet_version)
    check_templates(workload, kubelet)
    models = []
    for name in sorted(classes):
        facts = classes[name]
        computed = hardware_class(facts)["group"]
        models.append(recommend_class(name if name else computed, facts, workload, kubelet,
                                      (baselines or {}).get(name), (hosts or {}).get(name, ())))
    lines = [m["line"] for m in models]
    return {"workload": workload.to_dict(), "kubelet": {"version": kubelet.text, "source": kubelet.source,
                                                        "warnings": list(kubelet.warnings)},
            "classes": models, "lines": lines}
