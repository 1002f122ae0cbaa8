# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The admission_check module's own text: its ``msg`` (the table of a run's pods) and the lines
it explains rejections and crashes with.

Why a file of its own: every admission_check run writes this text on the host, and a module
compiles its module_utils from source per run; the fleet view (:mod:`admission`, used on the
controller by the ``admission_report`` filter and the reports) is not compiled by a run
(issue 24). :mod:`admission` uses these lines too.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Dict, List, Mapping, Sequence  # noqa: F401
except ImportError:  # pragma: no cover
    pass


def alignment_warnings(alignment: Mapping[str, Any]) -> Dict[str, Any]:
    """The engine's alignment of a pod (``_engine/alignment.pod_alignment``) as the module returns
    it: its ``mismatches`` worded as ``warnings``, one line per DRA device on another NUMA node than
    the pod's exclusive CPUs or a memory type."""
    out = dict((k, v) for k, v in alignment.items() if k != "mismatches")
    lines: List[str] = []
    for m in alignment.get("mismatches") or []:
        what = "exclusive CPUs are" if m["pinned"] == "cpu" else "%s is" % m["pinned"]
        lines.append("%s: claim %s device %s (driver %s) is on NUMA node %d but the pod's %s on NUMA node %s: DRA devices "
                     "are not aligned by the Topology Manager"
                     % (m["pod"], m["claim"], m["device"], m["driver"] or "?", m["numa_node"], what,
                        ",".join(str(n) for n in sorted(set(m["pod_numa_nodes"])))))
    out["warnings"] = lines
    return out


def pod_label(pod: Mapping[str, Any]) -> str:
    """``namespace/name`` of a pod result, as every line of the module's text names it."""
    return "%s/%s" % (pod.get("namespace", "default"), pod.get("name", "?"))


def crash_line(pod: Mapping[str, Any]) -> str:
    """A pod the kubelet crashed at (a Go panic), or a pod after that crash: the kubelet is gone."""
    name = pod_label(pod)
    crash = pod.get("crash") or {}
    if crash.get("pod") and crash.get("pod") != name:
        return "%s not admitted: the kubelet crashed at %s (panic: %s) and crashes again when it restarts" % (
            name, crash.get("pod"), crash.get("panic") or "?")
    return "%s crashes the kubelet: panic: %s (prefer-closest-numa-nodes on sparse NUMA ids: the kubelet reads the " \
           "distance list by node id, numa_info.go CalculateAverageFor)" % (name, crash.get("panic") or "?")


def describe_resize(pod: Mapping[str, Any]) -> str:
    """One line for a pod result that resizes a running pod (``pod["resize"]``)."""
    name = pod_label(pod)
    resize = pod.get("resize") or {}
    of = resize.get("of") or {}
    running = "%s/%s" % (of.get("namespace"), of.get("name")) if of.get("name") else "uid %s" % of.get("uid")
    verdict = str(resize.get("verdict") or "?").replace("_", " ")
    head = "%s resize of %s: %s (kubelet %s)" % (name, running, verdict, resize.get("kubelet_version") or "?")
    if resize.get("reason") or resize.get("message"):
        return "%s: %s" % (head, ": ".join(str(p) for p in (resize.get("reason"), resize.get("message")) if p))
    if pod.get("verdict") == "cannot_check":
        return "%s, cannot check the fit: %s" % (head, pod.get("cannot_check") or "")
    if not pod.get("admitted"):
        return "%s, does not fit: %s: %s" % (head, pod.get("reason") or "?", pod.get("message") or "")
    if resize.get("verdict") == "feasible":
        return "%s, fits (the managers' re-allocation is not simulated)" % head
    return head


def run_message(run: Mapping[str, Any]) -> str:
    """admission_check's ``msg``: :func:`format_table`, then each admitted pod whose hugepages the
    OS cannot back, the DRA alignment warnings and each resize."""
    pods = run.get("pods") or []
    text = format_table(run) + "".join(
        "\n%s/%s: %s: %s" % (r["namespace"], r["name"], r["runtime"], "; ".join(r["runtime_shortfalls"]))
        for r in pods if r.get("runtime")) + "".join("\n" + w for w in run.get("alignment_warnings") or [])
    return text + "".join("\n" + describe_resize(r) for r in pods if r.get("resize"))


def format_table(run: Mapping[str, Any]) -> str:
    """A human-readable table of a run's pods (the module's ``msg``)."""
    rows = [("POD", "VERDICT", "NUMA", "CPUS", "REASON")]
    for pod in run.get("pods", []):
        cpus = ",".join(c["cpus"] for c in pod["containers"] if c["cpus"])
        verdict = pod.get("verdict") or ("admitted" if pod["admitted"] else "rejected")
        rows.append(("%s/%s" % (pod["namespace"], pod["name"]),
                     verdict.replace("_", " "),
                     ",".join(str(n) for n in pod["numa_nodes"]) or "-",
                     cpus or "-",
                     pod["reason"] or "-"))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(str(cell).ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    for pod in run.get("pods", []):
        if pod.get("verdict") == "cannot_check":
            lines.append("%s/%s: cannot check: %s" % (pod["namespace"], pod["name"], pod.get("cannot_check")))
        elif pod.get("verdict") == "crashed":
            lines.append(crash_line(pod))
        elif not pod["admitted"]:
            lines.append("%s/%s: %s: %s" % (pod["namespace"], pod["name"], pod["reason"], pod["message"]))
            if pod["reason"] == "TopologyAffinityError" and pod.get("merges"):
                lines.append("  " + explain_merge(pod["merges"][-1]))
    return "\n".join(lines)


def _masks(hints: Sequence[Mapping[str, Any]], preferred: bool) -> str:
    shown = ["[%s]" % ",".join(str(n) for n in h["numa_affinity"]) if h["numa_affinity"] is not None else "any"
             for h in hints if h["preferred"] is preferred]
    if len(shown) > 6:
        shown = shown[:6] + ["... (%d in all)" % len(shown)]
    return " ".join(shown)


def explain_merge(merge: Mapping[str, Any]) -> str:
    """One line saying what each provider preferred and what the merge could reach."""
    parts = []
    for provider in sorted(merge.get("hints") or {}):
        hints = merge["hints"][provider]
        if not hints:
            continue
        for resource in sorted(hints):
            value = hints[resource]
            if value is None:
                continue
            if not value:
                parts.append("%s: cannot satisfy" % resource)
                continue
            preferred = _masks(value, True)
            parts.append("%s: preferred %s" % (resource, preferred) if preferred
                         else "%s: only non-preferred %s" % (resource, _masks(value, False)))
    merged = merge.get("merged_hint") or {}
    nodes = merged.get("numa_affinity")
    best = "[%s]" % ",".join(str(n) for n in nodes) if nodes is not None else "any"
    return "%s%s -> best %s %s" % ("container(s) %s: " % ",".join(merge.get("containers") or []),
                                   "; ".join(parts) or "no provider preference", best,
                                   "preferred" if merged.get("preferred") else "not preferred")
