# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ONE report model for discover / validate / check_pod, built from the per-host results.

Why: the three playbooks answer per-host questions for fleets of hundreds of hosts. Every
rendering (text on the terminal, JSON, JUnit, HTML, Prometheus textfile; see
``report_render.py`` and ``report_html.py``) reads this one model, so the numbers agree and
each renderer stays a small, testable function instead of Jinja loops in playbooks.

The model is plain data (JSON-safe dicts and lists)::

    kind, title, generated (UTC ISO 8601), headline, counts {status: n},
    needs_action {count, hosts, answers [answer ids], outliers [answer ids]},
    classes [{group, name, fingerprint, shape, hosts, counts {status: n}, answers [answer ids],
              picture {answer, host, numa}}],
    answers [{id, count, hosts, class, fingerprint, status, summary, errors, warnings, details, numa,
              pods, state_refused, kubelet (validate), needs_action, outlier}],
    warnings [{text, count, hosts}]   (identical warnings once, with the hosts they apply to, most hosts first)
    hosts [{host, class, groups, status, summary, details, warnings, errors,
            numa [{node, total, reserved, hugepages, allocatable, allocated, free}],
            pods [{pod, verdict, reason, message, numa_nodes}], state_refused, fingerprint, answer,
            kubelet {version, source, feature_gates_set} (validate only)}],
    kubelet [{version, source, feature_gates_set, hosts}]   (validate: each kubelet assumption once)

Fleet scale (issue 25): hosts whose answer is identical (``answer_of``: same class, status, numbers,
warnings) are ONE entry of ``answers`` with a count and their hosts; the exceptions (hosts that need
action: ``ACTION``; answers that differ from the most common one of their class: ``outlier``) come
first. Each class names one answer as its NUMA ``picture``. The renderings show answers, not hosts;
``hosts`` stays for machines (JSON consumers, JUnit test cases, Prometheus series per host).

Statuses: ``ok``, ``warning``, ``differs``, ``invalid``, ``admitted``, ``rejected``,
``cannot_check``, ``error``.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import datetime
import json
import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import human_bytes
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import hugepage_size_bytes
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.classes import HardwareClassError, hardware_class, is_class_group
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.fleet import IGNORED_GROUPS, FleetReportError, fleet_report

KINDS = ("discover", "validate", "check_pod")
#: worst first: the order of the headline and of the per-host lines within a class
STATUS_ORDER = ("error", "invalid", "crashed", "rejected", "cannot_check", "differs", "warning", "ok", "admitted")
BAD = ("error", "invalid", "crashed", "rejected")
#: statuses of hosts that need action: the first lines of every rendering
ACTION = ("error", "invalid", "crashed", "rejected", "cannot_check", "differs")


class ReportError(ValueError):
    """Input that cannot be turned into a report (names host and field)."""


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _groups(groups_of: Mapping[str, Sequence[str]], host: str) -> List[str]:
    return [str(g) for g in (groups_of.get(host) or ()) if g not in IGNORED_GROUPS and not is_class_group(g)]


def _class_of(topology: Any) -> Dict[str, str]:
    if not isinstance(topology, Mapping):
        return {"name": "unknown", "fingerprint": "-", "group": "unknown"}
    try:
        return hardware_class(topology)
    except HardwareClassError:
        return {"name": "unknown", "fingerprint": "-", "group": "unknown"}


def regroup(report: Dict[str, Any], classes: Mapping[str, str]) -> None:
    """Put hosts into the given hardware classes (host -> class group) and rebuild ``classes``
    (and the answers, which are per class)."""
    shapes = dict((c["group"], c.get("shape", "")) for c in report["classes"])
    for entry in report["hosts"]:
        if entry["host"] in classes:
            entry["class"] = classes[entry["host"]]
            entry["fingerprint"] = entry["class"].rsplit("_", 1)[-1] if is_class_group(entry["class"]) else "-"
    rebuilt = _finish(report["kind"], report["title"], report["hosts"], report["headline"], shapes)
    for key in _DERIVED:
        report[key] = rebuilt[key]


def _entry(host: str, groups: List[str], hw: Mapping[str, str]) -> Dict[str, Any]:
    return {"host": host, "class": hw["group"], "groups": groups, "status": "ok", "summary": "", "details": [],
            "warnings": [], "errors": [], "numa": [], "pods": [], "state_refused": None,
            "fingerprint": hw.get("fingerprint", "-")}


def _numa_from_topology(topology: Any) -> List[Dict[str, Any]]:
    out = []
    for node in (topology or {}).get("nodes") or [] if isinstance(topology, Mapping) else []:
        if not isinstance(node, Mapping):
            continue
        huge = 0
        for name, pool in (node.get("hugepages") or {}).items():
            if isinstance(pool, Mapping):
                huge += int(pool.get("page_size_bytes") or hugepage_size_bytes(str(name))) * int(pool.get("total_pages") or 0)
        total = int(node.get("memory_total_bytes") or 0)
        out.append({"node": node.get("id"), "total": total, "reserved": None, "hugepages": huge,
                    "allocatable": None, "allocated": None, "free": node.get("memory_free_bytes")})
    return out


#: what ``_finish`` derives from the per-host entries (``regroup`` rebuilds them)
_DERIVED = ("counts", "needs_action", "classes", "answers", "warnings")
#: the kubelet's pid in a discover summary: it differs per host and is not part of the answer
_PID = re.compile(r"running \(pid [^)]*\)")


def answer_of(kind: str, entry: Mapping[str, Any]) -> Dict[str, Any]:
    """What a host answered, without its name: hosts with equal answers are one entry of the report.

    The answer is the class, status, summary, errors, warnings, details, NUMA numbers, pod verdicts,
    state verdict and kubelet assumption. What a live host changes from one second to the next (the
    kernel's MemFree: a NUMA row's ``free`` without ``allocatable``; after discovery also free
    hugepages and the kubelet's pid) is not part of it: the answer keeps the range of free memory
    per node instead."""
    answer = dict((k, entry.get(k)) for k in ("class", "fingerprint", "status", "summary", "errors", "warnings",
                                              "details", "numa", "pods", "state_refused"))
    if "kubelet" in entry:
        answer["kubelet"] = entry["kubelet"]
    if kind == "discover":
        answer["summary"] = _PID.sub("running", entry["summary"])
        answer["details"] = []
    if any(_mem_free(n) for n in entry["numa"]):
        answer["numa"] = [dict(n, free=None) if _mem_free(n) else n for n in entry["numa"]]
    return answer


def _mem_free(node: Mapping[str, Any]) -> bool:
    """A NUMA row whose ``free`` is the kernel's MemFree (no allocatable to subtract from): it changes by the second."""
    return node.get("allocatable") is None and node.get("free") is not None


def _answer_key(answer: Mapping[str, Any]) -> str:
    return json.dumps(answer, sort_keys=True, default=str)


def _free_ranges(members: Sequence[Mapping[str, Any]], numa: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """The NUMA rows of an answer with the kernel's free memory as the least and the most of its hosts."""
    rows = []
    for index, node in enumerate(numa):
        free = [m["numa"][index].get("free") for m in members if len(m["numa"]) > index]
        known = [int(f) for f in free if f is not None]
        row = dict(node, free=min(known) if known else None)
        if known and max(known) != min(known):
            row["free_max"] = max(known)
        rows.append(row)
    return rows


def _answers(kind: str, entries: List[Dict[str, Any]], rank: Mapping[str, int]) -> List[Dict[str, Any]]:
    """Hosts with equal answers as one entry each (``count``, ``hosts``); exceptions first: hosts that
    need action, then answers that differ from the most common answer of their class."""
    groups: Dict[str, List[Dict[str, Any]]] = {}
    answers: Dict[str, Dict[str, Any]] = {}
    for entry in entries:
        answer = answer_of(kind, entry)
        key = _answer_key(answer)
        if key not in answers:
            answers[key] = answer
            groups[key] = []
        groups[key].append(entry)
    majority: Dict[str, str] = {}
    weight = dict((key, (len(members), answers[key]["status"] not in ACTION)) for key, members in groups.items())
    for key in groups:  # the most common answer of each class; on a tie one that needs no action, else the first
        best = majority.get(answers[key]["class"])
        if best is None or weight[key] > weight[best]:
            majority[answers[key]["class"]] = key
    out = []
    for key, members in groups.items():
        answer = answers[key]
        answer["count"] = len(members)
        answer["hosts"] = [m["host"] for m in members]
        answer["needs_action"] = answer["status"] in ACTION
        answer["outlier"] = majority[answer["class"]] != key
        if any(_mem_free(n) for n in members[0]["numa"]):
            answer["numa"] = _free_ranges(members, answer["numa"])
        out.append(answer)
    out.sort(key=lambda a: (not a["needs_action"], not a["outlier"], rank.get(a["status"], 0), -a["count"],
                            a["hosts"][0]))
    for index, answer in enumerate(out):
        answer["id"] = "a%d" % (index + 1)
    return out


def _finish(kind: str, title: str, entries: List[Dict[str, Any]], headline: str,
            shapes: Optional[Mapping[str, str]] = None, extra: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    counts: Dict[str, int] = {}
    classes: Dict[str, Dict[str, Any]] = {}
    warnings: Dict[str, List[str]] = {}
    rank = dict((s, i) for i, s in enumerate(STATUS_ORDER))
    entry_of = dict((e["host"], e) for e in entries)
    for entry in entries:
        counts[entry["status"]] = counts.get(entry["status"], 0) + 1
        group = classes.setdefault(entry["class"], {
            "group": entry["class"], "name": entry["class"].rsplit("_", 1)[0] if entry["class"] != "unknown" else "unknown",
            "fingerprint": entry["fingerprint"], "shape": (shapes or {}).get(entry["class"], ""), "hosts": [],
            "counts": {}})
        group["hosts"].append(entry["host"])
        group["counts"][entry["status"]] = group["counts"].get(entry["status"], 0) + 1
        for text in entry["warnings"]:
            warnings.setdefault(text, []).append(entry["host"])
    answers = _answers(kind, entries, rank)
    for answer in answers:
        for host in answer["hosts"]:
            entry_of[host]["answer"] = answer["id"]
        cls = classes[answer["class"]]
        cls.setdefault("answers", []).append(answer["id"])
        if not answer["outlier"]:  # the class's one NUMA picture: its most common answer's
            cls["picture"] = {"answer": answer["id"], "host": answer["hosts"][0], "numa": answer["numa"]}
    for cls in classes.values():
        cls["counts"] = dict((s, cls["counts"][s]) for s in STATUS_ORDER if s in cls["counts"])
    action = [a for a in answers if a["needs_action"]]
    report = {
        "kind": kind, "title": title, "generated": _now(), "headline": headline,
        "counts": dict((s, counts[s]) for s in STATUS_ORDER if s in counts),
        "needs_action": {"count": sum(a["count"] for a in action), "hosts": [h for a in action for h in a["hosts"]],
                         "answers": [a["id"] for a in action],
                         "outliers": [a["id"] for a in answers if a["outlier"] and not a["needs_action"]]},
        "classes": sorted(classes.values(), key=lambda c: (-len(c["hosts"]), c["group"])),
        "answers": answers,
        "warnings": sorted(({"text": text, "count": len(hosts), "hosts": hosts} for text, hosts in warnings.items()),
                           key=lambda w: -w["count"]),
        "hosts": entries,
    }
    report.update(extra or {})
    return report


# ---- discover -----------------------------------------------------------------------------

def discover_report(topologies: Mapping[str, Any], groups_of: Mapping[str, Sequence[str]], hosts: Sequence[str],
                    failed: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """From ``numa_topology`` facts per host (None for hosts whose discovery failed)."""
    try:
        fleet = fleet_report(topologies, groups_of, hosts=hosts, failed=failed)
    except FleetReportError as exc:
        raise ReportError(str(exc))
    differs = dict((d["host"], d) for d in fleet["differs"])
    entries = []
    shapes: Dict[str, str] = {}
    for host in hosts:
        topology = topologies.get(host)
        hw = _class_of(topology)
        entry = _entry(host, _groups(groups_of, host), hw)
        if host in fleet["failed"]:
            entry.update(status="error", summary="discovery failed", errors=[fleet["failed"][host]])
        else:
            summary = fleet["hosts"][host]
            shapes.setdefault(hw["group"], summary["shape"])
            # the shape is the class's (same fingerprint): the host line says what differs per host
            entry["summary"] = "kubelet: %s" % summary["kubelet"] if summary["kubelet"] else summary["shape"]
            entry["numa"] = _numa_from_topology(topology)
            entry["details"] = ["node %s: cpus %s, %s (%s free)%s" % (
                n["id"], n["cpulist"] or "none", human_bytes(n["memory_total_bytes"]), human_bytes(n["memory_free_bytes"]),
                "".join(", %s x%d (%d free)" % (p["resource"], p["total_pages"], p["free_pages"])
                        for p in n["hugepages"] if p["total_pages"])) for n in summary["nodes"]]
            if host in differs:
                entry["status"] = "differs"
                entry["errors"] = ["differs from group %s: %s" % (differs[host]["group"], differs[host]["reason"])]
        entries.append(entry)
    n_classes = len(set(e["class"] for e in entries if e["status"] != "error"))
    headline = "NUMA topology of %d host(s): %d discovered, %d failed, %d hardware class(es), %d differ from their group" % (
        len(hosts), len(hosts) - len(fleet["failed"]), len(fleet["failed"]), n_classes, len(differs))
    return _finish("discover", "NUMA discovery", entries, headline, shapes,
                   {"differs": fleet["differs"], "groups": fleet["groups"]})


# ---- validate -----------------------------------------------------------------------------

def _reserved_memory_summary(flag: str, policy: Any) -> str:
    """The line of a valid host. The kubelet reads --reserved-memory only with memoryManagerPolicy Static
    (memory_manager.go NewManager: policy None never looks at it, nor at its sums), so say so instead of
    calling a flag "needed" or not."""
    policy = str(policy or "None")
    if policy == "Static":
        return "--reserved-memory=%s" % flag if flag else "memoryManagerPolicy Static: no --reserved-memory"
    if flag:
        return "--reserved-memory=%s (ignored while memoryManagerPolicy is %s: the kubelet reads it only with Static)" % (
            flag, policy)
    return "memoryManagerPolicy %s: no --reserved-memory (the kubelet reads it only with Static)" % policy


def validate_report(results: Mapping[str, Any], topologies: Mapping[str, Any],
                    groups_of: Mapping[str, Sequence[str]], hosts: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """From ``reserved_memory_check`` results per host (``errors='report'`` shape)."""
    order = list(hosts) if hosts is not None else sorted(results)
    entries = []
    for host in order:
        result = results.get(host)
        hw = _class_of(topologies.get(host))
        entry = _entry(host, _groups(groups_of, host), hw)
        if not isinstance(result, Mapping):
            entry.update(status="error", summary="no result", errors=["no result: %r" % (result,)])
        elif result.get("input_error"):
            entry.update(status="error", summary="cannot check: %s" % result["input_error"],
                         errors=[str(result["input_error"])])
        else:
            flag = result.get("flag") or ""
            entry["warnings"] = [str(w) for w in result.get("warnings") or []]
            entry["errors"] = [str(e) for e in result.get("errors") or []]
            # an assumed kubelet version is said once per run (the "kubelet assumed" line and the
            # warnings list), not held against the host's settings
            about_kubelet = set(str(w) for w in result.get("kubelet_warnings") or [])
            if result.get("valid"):
                entry["status"] = "warning" if [w for w in entry["warnings"] if w not in about_kubelet] else "ok"
                entry["summary"] = _reserved_memory_summary(flag, result.get("memory_manager_policy"))
            else:
                entry["status"] = "invalid"
                entry["summary"] = "%d error(s): %s" % (len(entry["errors"]), entry["errors"][0] if entry["errors"] else "")
            if result.get("kubelet_version"):
                entry["kubelet"] = _kubelet_assumed(result)
            state = result.get("state") if isinstance(result.get("state"), Mapping) else None
            if state is not None and "accepted" in state:
                entry["state_refused"] = not state["accepted"]
            for node in result.get("nodes") or []:
                if not isinstance(node, Mapping):
                    continue
                total = int(node.get("memory_total_bytes") or 0)
                huge = int(node.get("hugepages_bytes") or 0)
                reserved = node.get("reserved_memory_bytes")
                allocatable = node.get("guaranteed_memory_bytes")
                entry["numa"].append({"node": node.get("id"), "total": total, "reserved": reserved, "hugepages": huge,
                                      "allocatable": allocatable, "allocated": None, "free": None})
        entries.append(entry)
    bad = sum(1 for e in entries if e["status"] in ("invalid", "error"))
    headline = "reservedMemory valid on %d of %d host(s): %d invalid, %d could not be checked" % (
        sum(1 for e in entries if e["status"] in ("ok", "warning")), len(entries),
        sum(1 for e in entries if e["status"] == "invalid"), sum(1 for e in entries if e["status"] == "error"))
    assumed: Dict[Any, Dict[str, Any]] = {}
    for entry in entries:
        if "kubelet" in entry:
            kubelet = entry["kubelet"]
            key = (kubelet["version"], kubelet["source"], tuple(sorted(kubelet["feature_gates_set"].items())))
            assumed.setdefault(key, dict(kubelet, hosts=[]))["hosts"].append(entry["host"])
    return _finish("validate", "Reserved memory validation", entries, headline,
                   extra={"failed": bad, "kubelet": list(assumed.values())})


def _kubelet_assumed(result: Mapping[str, Any]) -> Dict[str, Any]:
    """What a ``reserved_memory_check`` result assumed: the kubelet version, where it came from and the
    ``featureGates`` entries set (the other tabled gates are that release's defaults)."""
    gates = result.get("feature_gates_set")
    return {"version": str(result["kubelet_version"]), "source": str(result.get("kubelet_version_source") or ""),
            "feature_gates_set": dict(gates) if isinstance(gates, Mapping) else {}}


# ---- check_pod ----------------------------------------------------------------------------

#: what a check_pod report keeps of an admission_check result's ``resize`` (a resize of a running pod)
_RESIZE_FIELDS = ("of", "verdict", "reason", "message", "kubelet_version", "gates")


def _pod_name(pod: Mapping[str, Any]) -> str:
    return "%s/%s" % (pod.get("namespace") or "default", pod.get("name") or "?")


def _verdict(pod: Mapping[str, Any]) -> str:
    return str(pod.get("verdict") or ("admitted" if pod.get("admitted") else "rejected"))


def check_pod_report(results: Mapping[str, Any], topologies: Mapping[str, Any], groups_of: Mapping[str, Sequence[str]],
                     hosts: Sequence[str], active: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """From registered ``admission_check`` results per host."""
    alive = set(hosts if active is None else active)
    entries = []
    reasons: Dict[str, int] = {}
    unchecked: Dict[str, int] = {}
    for host in hosts:
        result = results.get(host)
        hw = _class_of(topologies.get(host))
        known = (result.get("node") or {}).get("hardware_class") if isinstance(result, Mapping) else None
        if hw["group"] == "unknown" and known:
            hw = {"group": str(known), "fingerprint": str(known).rsplit("_", 1)[-1]}
        entry = _entry(host, _groups(groups_of, host), hw)
        entries.append(entry)
        why = _why_not_checked(host, result, alive)
        if why is None:  # (failed_when: false in check_pod.yml clears "failed")
            # the pod is not valid (the API server would refuse it): not the host's fault
            message = str(result.get("msg") or "invalid pod")
            entry.update(status="invalid", summary="invalid pod: %s" % message, errors=[message])
            continue
        if why:
            entry.update(status="cannot_check", summary="cannot check: %s" % why, errors=[why])
            key = why.split(":", maxsplit=1)[0][:80]
            unchecked[key] = unchecked.get(key, 0) + 1
            continue
        pods = list(result.get("pods") or [])
        verdicts = [_verdict(p) for p in pods]
        _add_pod_rows(entry, pods, verdicts, result)
        for warning in (result.get("running_pods") or {}).get("warnings") or []:
            entry["warnings"].append(str(warning))
        _set_host_status(entry, pods, verdicts, reasons, unchecked)
        entry["numa"] = _numa_rows(result.get("memory") or {}) or _numa_from_topology(topologies.get(host))
    return _finish("check_pod", "Pod admission check", entries, _check_pod_headline(entries, reasons, unchecked),
                   extra={"admitted": [e["host"] for e in entries if e["status"] == "admitted"],
                          "rejected": [e["host"] for e in entries if e["status"] == "rejected"],
                          "cannot_check": [e["host"] for e in entries if e["status"] == "cannot_check"],
                          "invalid_pod": [e["host"] for e in entries if e["status"] == "invalid"],
                          "crashed": [e["host"] for e in entries if e["status"] == "crashed"],
                          "reasons": reasons})


def _why_not_checked(host: str, result: Any, alive: Any) -> Optional[str]:
    """Why a host's pods were not checked ("" when they were, None when the pod is invalid)."""
    if host not in alive and not result:
        return "unreachable or failed before the check"
    if not isinstance(result, Mapping) or result.get("skipped"):
        return "no admission_check result"
    if result.get("unreachable"):  # registered with ignore_unreachable: the host never answered
        return "unreachable: %s" % (result.get("msg") or "no answer")
    if result.get("invalid_pod"):
        return None
    if result.get("failed") or "pods" not in result:
        return str(result.get("msg") or "admission_check failed")
    return ""


def _add_pod_rows(entry: Dict[str, Any], pods: Sequence[Mapping[str, Any]], verdicts: Sequence[str],
                  result: Mapping[str, Any]) -> None:
    """A row, a detail line and any warnings per checked pod."""
    for pod, verdict in zip(pods, verdicts):
        row = {"pod": _pod_name(pod), "verdict": verdict, "reason": pod.get("reason") or "",
               "message": pod.get("message") or pod.get("cannot_check") or "",
               "numa_nodes": pod.get("numa_nodes") or []}
        resize = pod.get("resize")
        if isinstance(resize, Mapping):  # an in-place resize of a running pod, not a new pod
            row["resize"] = dict((k, resize.get(k)) for k in _RESIZE_FIELDS)
        entry["pods"].append(row)
        cost = pod.get("kubelet_cost")
        if isinstance(cost, Mapping) and cost.get("warning"):
            entry["warnings"].append("%s: %s" % (_pod_name(pod), cost["warning"]))
        alignment = pod.get("alignment")
        if isinstance(alignment, Mapping):  # DRA devices on another NUMA node than the pod's CPUs/memory
            entry["warnings"].extend(str(w) for w in alignment.get("warnings") or [])
            row["not_aligned"] = [dict(item) for item in alignment.get("not_aligned") or [] if isinstance(item, Mapping)]
        if verdict == "cannot_check" and not pod.get("resize"):
            entry["details"].append("%s cannot check: %s" % (_pod_name(pod), pod.get("cannot_check") or ""))
        else:
            # imported here: discover and validate reports do not compile the pod wording (3 files, 36 KB; issue 24)
            from ansible_collections.numaguard.kubelet.plugins.module_utils._report.admission import describe_pod

            entry["details"].append(describe_pod(pod, result.get("node")))


def _set_host_status(entry: Dict[str, Any], pods: Sequence[Mapping[str, Any]], verdicts: Sequence[str],
                     reasons: Dict[str, int], unchecked: Dict[str, int]) -> None:
    """A checked host's status and summary from its pods' verdicts, the worst first."""
    if "crashed" in verdicts:  # the kubelet panics at a pod (and is gone for the pods after it)
        entry["status"] = "crashed"
        entry["summary"] = entry["details"][verdicts.index("crashed")]
        entry["errors"] = [d for d, v in zip(entry["details"], verdicts) if v in ("crashed", "rejected")]
    elif "rejected" in verdicts:
        entry["status"] = "rejected"
        first = pods[verdicts.index("rejected")]
        entry["summary"] = entry["details"][verdicts.index("rejected")]
        entry["errors"] = [d for d, v in zip(entry["details"], verdicts) if v == "rejected"]
        reasons[str(first.get("reason"))] = reasons.get(str(first.get("reason")), 0) + 1
    elif "cannot_check" in verdicts:
        entry["status"] = "cannot_check"
        first = pods[verdicts.index("cannot_check")]
        entry["summary"] = "cannot check: %s" % (first.get("cannot_check") or "")
        key = (first.get("cannot_check") or "").split(":")[0]
        unchecked[key] = unchecked.get(key, 0) + 1
    else:
        entry["status"] = "admitted"
        entry["summary"] = "; ".join(entry["details"])


def _numa_rows(memory: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """Per NUMA node memory rows from the Memory Manager's tables of a result."""
    rows = []
    for node_id in sorted(memory, key=lambda k: int(k) if str(k).isdigit() else 0):
        tables = memory[node_id] or {}
        mem = tables.get("memory") or {}
        huge = sum(int((t or {}).get("total") or 0) for name, t in tables.items() if name.startswith("hugepages-"))
        rows.append({"node": int(node_id) if str(node_id).isdigit() else node_id,
                     "total": mem.get("total"), "reserved": mem.get("systemReserved"), "hugepages": huge,
                     "allocatable": mem.get("allocatable"), "allocated": mem.get("reserved"),
                     "free": mem.get("free")})
    return rows


def _check_pod_headline(entries: Sequence[Mapping[str, Any]], reasons: Mapping[str, int], unchecked: Mapping[str, int]) -> str:
    admitted = sum(1 for e in entries if e["status"] == "admitted")
    rejected = sum(1 for e in entries if e["status"] == "rejected")
    cannot = sum(1 for e in entries if e["status"] == "cannot_check")
    crashed = [e["host"] for e in entries if e["status"] == "crashed"]
    invalid = [e for e in entries if e["status"] == "invalid"]
    headline = ("invalid pod (the API server would refuse it), checked on no host: %s; " % invalid[0]["errors"][0]
                if invalid else "")
    headline += "admitted on %d, rejected on %d%s, could not check %d%s (of %d host(s))" % (
        admitted, rejected,
        " (%s)" % ", ".join("%s %d" % (r, n) for r, n in sorted(reasons.items(), key=lambda i: (-i[1], i[0])))
        if reasons else "",
        cannot,
        " (%s)" % ", ".join("%s %d" % (r, n) for r, n in sorted(unchecked.items(), key=lambda i: (-i[1], i[0])))
        if unchecked else "",
        len(entries))
    if crashed:
        headline += "; the kubelet crashes (panic) on %d: %s" % (len(crashed), ", ".join(crashed))
    return headline
