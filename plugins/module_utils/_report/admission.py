# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fleet view of admission_check results: which hosts admit a pod, where, and why not.

Why: ``playbooks/check_pod.yml`` asks one question of many hosts; the answer operators want is
one screen -- "admitted on h01 (NUMA 0), h04 (NUMA 1); rejected on h02 (TopologyAffinityError:
...); h03 could not be checked (corrupt memory_manager_state)" -- plus data for automation.
Pure function over the registered module results; the filter ``admission_report`` wraps it.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Dict, List, Mapping, Optional, Sequence  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.alignment import WHY_DRA, WHY_NO_PLUGIN, WHY_NO_TOPOLOGY
from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import format_bytes
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.admission_table import crash_line, describe_resize, explain_merge, pod_label


class AdmissionReportError(NumaguardError):
    """Input that is not a set of admission_check results."""


def summary_line(alignment: Mapping[str, Any]) -> str:
    """A short text of the devices the kubelet does not align (DRA claims, extended resources without
    topology), for report lines; "" when there are none. Shared-pool CPUs and memory are left out:
    the pod's QoS class already says so."""
    shown = []
    for item in alignment.get("not_aligned") or []:
        why = str(item.get("why") or "")
        if why == WHY_DRA:
            shown.append("%s (DRA)" % item.get("resource"))
        elif why in (WHY_NO_PLUGIN, WHY_NO_TOPOLOGY):
            shown.append("%s (no topology)" % item.get("resource"))
    return "not NUMA-aligned by the kubelet: " + ", ".join(shown) if shown else ""


def _why_unaligned(pod: Mapping[str, Any], node: Mapping[str, Any]) -> str:
    """Why an admitted pod holds nothing NUMA-aligned: its QoS class (only Guaranteed pods get
    exclusive CPUs or NUMA memory) and the managers' policies the run used (the result's ``node``)."""
    return "%s pod; CPU/Memory/Topology Manager policies %s/%s/%s" % (
        pod.get("qos_class") or "?", node.get("cpu_manager_policy") or "?", node.get("memory_manager_policy") or "?",
        node.get("topology_manager_policy") or "?")


def describe_pod(pod: Mapping[str, Any], node: Optional[Mapping[str, Any]] = None) -> str:
    """One line for one pod result: placement when admitted, reason and message when not; for a
    resize of a running pod, the resize verdict (:func:`describe_resize`). ``node``: the result's
    ``node`` summary, to say why a pod admitted without NUMA alignment got none. An admitted pod's
    devices the kubelet does not align (DRA claims, extended resources without topology) follow."""
    line = _describe_pod(pod, node)
    unaligned = summary_line(pod.get("alignment") or {}) if pod.get("admitted") else ""
    return "%s; %s" % (line, unaligned) if unaligned else line


def _describe_pod(pod: Mapping[str, Any], node: Optional[Mapping[str, Any]] = None) -> str:
    name = pod_label(pod)
    if pod.get("resize"):
        return describe_resize(pod)
    if pod.get("verdict") == "crashed":
        return crash_line(pod)
    if not pod.get("admitted"):
        line = "%s rejected: %s: %s" % (name, pod.get("reason") or "?", pod.get("message") or "")
        if pod.get("reason") == "TopologyAffinityError" and pod.get("merges"):
            line += " (%s)" % explain_merge(pod["merges"][-1])
        return line
    parts = []
    cpus = [c.get("cpus") for c in pod.get("containers", []) if c.get("cpus")]
    if cpus:
        parts.append("cpus " + " ".join(cpus))
    memory: Dict[str, int] = {}
    for container in pod.get("containers", []):
        for block in container.get("memory_blocks", []):
            key = "%s on %s" % (block.get("type"), ",".join(str(n) for n in block.get("numa_affinity", [])))
            memory[key] = memory.get(key, 0) + int(block.get("size", 0))
    for key in sorted(memory):
        parts.append("%s %s" % (format_bytes(memory[key]), key))
    for container in pod.get("containers", []):
        for resource, ids in sorted((container.get("devices") or {}).items()):
            parts.append("%s %s" % (resource, ",".join(ids)))
    numa = pod.get("numa_nodes") or []
    if not numa:
        if node:
            return "%s admitted without NUMA alignment (%s)" % (name, _why_unaligned(pod, node))
        return "%s admitted (no exclusive CPUs, NUMA memory or aligned devices)" % name
    detail = " (%s)" % "; ".join(parts) if parts else ""
    return "%s admitted on NUMA %s%s" % (name, ",".join(str(n) for n in numa), detail)


def _where(host: str, numa: List[int]) -> str:
    if not numa:
        return "%s (no NUMA pinning)" % host
    return "%s (NUMA %s)" % (host, ",".join(str(n) for n in numa))


def admission_report(results: Mapping[str, Any],
                     hosts: Sequence[str],
                     active: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Report over ``results`` (host -> registered admission_check result or None).

    Returns ``hosts`` (host -> {status, pods, numa_nodes, error}), ``admitted`` / ``rejected`` /
    ``errors`` (host lists; a host admits when every pod of the sequence is admitted) and
    ``lines`` (readable). ``active``: hosts still in the play (others are unreachable/failed).
    """
    if not isinstance(results, Mapping):
        raise AdmissionReportError("results must be a dict of host -> admission_check result, got %s"
                                   % type(results).__name__)
    alive = set(hosts if active is None else active)
    report: Dict[str, Any] = {"hosts": {}, "admitted": [], "rejected": [], "errors": [], "lines": []}
    for host in hosts:
        result = results.get(host)
        entry: Dict[str, Any] = {"status": "error", "pods": [], "numa_nodes": [], "error": None}
        if host not in alive and not result:
            entry["error"] = "unreachable or failed before the check"
        elif not isinstance(result, Mapping) or result.get("skipped"):
            entry["error"] = "no admission_check result"
        elif result.get("failed") or "pods" not in result:
            entry["error"] = str(result.get("msg") or "admission_check failed")
        else:
            pods = list(result.get("pods") or [])
            entry["pods"] = [{"name": p.get("name"), "namespace": p.get("namespace"),
                              "admitted": bool(p.get("admitted")), "reason": p.get("reason", ""),
                              "message": p.get("message", ""), "numa_nodes": p.get("numa_nodes", []),
                              "resize": p.get("resize"), "line": describe_pod(p)} for p in pods]
            entry["status"] = "admitted" if pods and all(p["admitted"] for p in entry["pods"]) else "rejected"
            numa: set = set()
            for pod in entry["pods"]:
                numa.update(pod["numa_nodes"] or [])
            entry["numa_nodes"] = sorted(numa)
        report["hosts"][host] = entry
        key = {"admitted": "admitted", "rejected": "rejected"}.get(entry["status"], "errors")
        report[key].append(host)
    lines = report["lines"]
    total = len(hosts)
    lines.append("admitted on %d of %d host(s)%s" % (
        len(report["admitted"]), total,
        ": " + ", ".join(_where(h, report["hosts"][h]["numa_nodes"]) for h in report["admitted"])
        if report["admitted"] else ""))
    for host in hosts:
        entry = report["hosts"][host]
        if entry["status"] == "error":
            lines.append("%s: cannot check: %s" % (host, entry["error"]))
            continue
        for pod in entry["pods"]:
            lines.append("%s: %s" % (host, pod["line"]))
    return report
