# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Renderings of the report model (``report.py``): compact text, JSON, JUnit XML, Prometheus.

Why one module per format family and no Jinja: each rendering is a pure function of the model,
tested on its own, and the playbooks only choose which files to write.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import json
import re
import xml.etree.ElementTree as ET
from typing import Any, Dict, List, Mapping, Optional, Sequence

from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import STATUS_ORDER, human_bytes

#: distinct detail texts shown in the text rendering (the rest are in the JSON/HTML report)
DETAILS = 12
#: warnings longer than this are cut in the text rendering (full text in JSON/HTML/JUnit)
WARNING_WIDTH = 220
_FLAG_PART = re.compile(r"^(\d+):memory=(\d+)$")


#: host names shown inline with a warning or a folded answer (the full list is in the JSON)
INLINE_HOSTS = 3
#: host names shown per reason for hosts that need action in the text rendering (the HTML names every one)
ACTION_HOSTS = 100


def folded(hosts: Sequence[str], limit: int = INLINE_HOSTS) -> str:
    """``h01, h02, h03 and 395 more — see the JSON``: a few names, then how many the JSON lists too."""
    hosts = list(hosts)
    if len(hosts) <= limit:
        return ", ".join(hosts)
    return "%s and %d more \u2014 see the JSON" % (", ".join(hosts[:limit]), len(hosts) - limit)


def flag_with_units(summary: str) -> str:
    """Append human units to raw byte values of a ``--reserved-memory=`` summary."""
    if not summary.startswith("--reserved-memory="):
        return summary
    flag, _space, note = summary[len("--reserved-memory="):].partition(" ")  # a note may follow the flag
    human = []
    for part in flag.split(";"):
        match = _FLAG_PART.match(part)
        if match:
            human.append("node %s %s" % (match.group(1), human_bytes(int(match.group(2)))))
    return "--reserved-memory=" + flag + (" (%s)" % ", ".join(human) if human else "") + (" " + note if note else "")


#: a host line is cut here in the text rendering (the full text is in details / JSON / HTML)
LINE_WIDTH = 160


def _line(entry: Mapping[str, Any], width: int) -> str:
    line = "  %-*s  %-12s %s" % (width, entry["host"], entry["status"].upper().replace("_", " "),
                                 flag_with_units(entry["summary"]))
    return line if len(line) <= LINE_WIDTH else line[:LINE_WIDTH - 3] + "..."


_KUBELET_SOURCE = {"option": "kubelet_numa_kubelet_version", "host": "the host's kubelet --version",
                   "default": "version unknown: the newest released"}


def kubelet_assumed_line(kubelet: Mapping[str, Any], total: int) -> str:
    """One line per distinct kubelet assumption of a run (not per host)."""
    gates = kubelet.get("feature_gates_set") or {}
    hosts = kubelet.get("hosts") or []
    line = "kubelet assumed: %s (%s), feature gates: %s -- %s" % (
        kubelet["version"], _KUBELET_SOURCE.get(kubelet.get("source"), kubelet.get("source")),
        ", ".join("%s=%s" % (g, str(v).lower()) for g, v in sorted(gates.items())) + " (others: the release's defaults)"
        if gates else "the release's defaults",
        "all %d host(s)" % total if len(hosts) == total else "%d host(s): %s" % (len(hosts), folded(hosts)))
    return line if len(line) <= WARNING_WIDTH else line[:WARNING_WIDTH - 3] + "..."


def _cut(line: str) -> str:
    return line if len(line) <= LINE_WIDTH else line[:LINE_WIDTH - 3] + "..."


def _status(status: str) -> str:
    return status.upper().replace("_", " ")


def _why(answer: Mapping[str, Any]) -> List[str]:
    """Why an answer needs action: its errors, or its summary when it has none."""
    return list(answer["errors"]) or [answer["summary"]]


def render_text(report: Mapping[str, Any], files: Sequence[str] = ()) -> List[str]:
    """Summary first, then the hosts that need action and why (each reason once, with its hosts), then
    one block per hardware class (one line per answer: identical hosts share it, with a count), then
    every distinct warning once with its count and a few of its hosts."""
    lines = [report["headline"]]
    counts = report.get("counts") or {}
    if counts:
        lines.append("status: " + ", ".join("%d %s" % (counts[s], s.replace("_", " ")) for s in STATUS_ORDER
                                            if s in counts))
    for kubelet in report.get("kubelet") or []:
        lines.append(kubelet_assumed_line(kubelet, len(report["hosts"])))
    answers = report.get("answers") or []
    action = [a for a in answers if a["needs_action"]]
    if action:
        need = sum(a["count"] for a in action)
        by_status: Dict[str, int] = {}
        for answer in action:
            by_status[answer["status"]] = by_status.get(answer["status"], 0) + answer["count"]
        counted = ", ".join("%d %s" % (by_status[s], s.replace("_", " ")) for s in STATUS_ORDER if s in by_status)
        lines.append("need action: %d of %d host(s) (%s), each reason once with its hosts:" % (
            need, len(report["hosts"]), counted))
        reasons: Dict[str, List[str]] = {}
        for answer in action:
            for text in _why(answer)[:3]:
                reasons.setdefault(text, []).extend(answer["hosts"])
        for text, hosts in list(reasons.items())[:DETAILS]:
            lines.append("  %s: %s" % (folded(hosts, ACTION_HOSTS), text))
        if len(reasons) > DETAILS:
            lines.append("  ... %d more reasons (see the JSON/HTML report)" % (len(reasons) - DETAILS))
    elif answers:
        lines.append("need action: none (0 of %d host(s))" % len(report["hosts"]))
    outliers = [a for a in answers if a["outlier"] and not a["needs_action"]]
    if outliers:
        lines.append("differ from the rest of their class:")
        for answer in outliers[:DETAILS]:
            lines.append(_cut("  %d %s of %s: %s -- %s" % (answer["count"], _status(answer["status"]), answer["class"],
                                                           folded(answer["hosts"]), flag_with_units(answer["summary"]))))
        if len(outliers) > DETAILS:
            lines.append("  ... %d more (see the JSON/HTML report)" % (len(outliers) - DETAILS))
    entries = dict((e["host"], e) for e in report["hosts"])
    by_id = dict((a["id"], a) for a in answers)
    width = max([len(h) for h in entries] + [4])
    rank = dict((s, i) for i, s in enumerate(STATUS_ORDER))
    singles = [c for c in report["classes"] if len(c["hosts"]) == 1]
    for cls in report["classes"]:
        if len(cls["hosts"]) == 1 and len(singles) > 1:
            continue
        lines.append("class %s (%d host%s)%s" % (cls["group"], len(cls["hosts"]), "" if len(cls["hosts"]) == 1 else "s",
                                                 ": " + cls["shape"] if cls.get("shape") else ""))
        # hosts with the same answer share one line, at any scale
        for answer in sorted((by_id[i] for i in cls.get("answers") or []),
                             key=lambda a: (rank.get(a["status"], 0), a["hosts"][0])):
            if answer["count"] == 1:
                lines.append(_line(entries[answer["hosts"][0]], width))
                continue
            lines.append(_cut("  %d %s: %s -- %s" % (answer["count"], _status(answer["status"]), folded(answer["hosts"]),
                                                     flag_with_units(answer["summary"]))))
    if len(singles) > 1:
        # classes of one host: one line each, the class named on it
        lines.append("classes of one host each (%d):" % len(singles))
        for cls in sorted(singles, key=lambda c: rank.get(entries[c["hosts"][0]]["status"], 0)):
            entry = entries[cls["hosts"][0]]
            text = entry["summary"] if not cls.get("shape") else "%s; %s" % (cls["shape"], entry["summary"])
            lines.append(_cut("  %-*s  %-12s %s: %s" % (width, entry["host"], _status(entry["status"]), cls["group"],
                                                        flag_with_units(text))))
    if report.get("warnings"):
        lines.append("warnings (each once, with how many hosts it applies to):")
        for warning in report["warnings"]:
            text = warning["text"]
            if len(text) > WARNING_WIDTH:
                text = text[:WARNING_WIDTH - 3] + "..."
            hosts = warning["hosts"]
            lines.append("  - [%d host%s: %s] %s" % (len(hosts), "" if len(hosts) == 1 else "s", folded(hosts), text))
    for path in files:
        lines.append("written: %s" % path)
    return lines


def render_json(report: Mapping[str, Any]) -> str:
    return json.dumps(report, indent=1, sort_keys=False) + "\n"


# ---- JUnit --------------------------------------------------------------------------------

_FAIL = ("invalid", "crashed", "rejected", "differs")


def render_junit(report: Mapping[str, Any], suite: Optional[str] = None) -> str:
    """JUnit XML: one testcase per host, classname ``<kind>.<inventory group or class>``;
    failures for invalid/crashed/rejected/differs, errors for hosts that could not be checked (discover,
    validate) and ``skipped`` for pods that could not be checked; warnings and the kubelet assumed
    in ``system-out``. Valid against Jenkins xunit's JUnit schema (no ``properties`` in a testcase)."""
    name = suite or "numaguard.kubelet %s" % report["kind"]
    root = ET.Element("testsuites", name=name)
    suite_el = ET.SubElement(root, "testsuite", name=name,
                             timestamp=report["generated"].rstrip("Z"), hostname="ansible-controller")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for entry in report["hosts"]:
        group = entry["groups"][0] if entry["groups"] else entry["class"]
        case = ET.SubElement(suite_el, "testcase", classname="%s.%s" % (report["kind"], group), name=entry["host"],
                             time="0")
        totals["tests"] += 1
        message = entry["summary"][:300]
        body = "\n".join(entry["errors"] + entry["details"])
        if entry["status"] in _FAIL:
            totals["failures"] += 1
            ET.SubElement(case, "failure", message=message, type=entry["status"]).text = body
        elif entry["status"] == "error":
            totals["errors"] += 1
            ET.SubElement(case, "error", message=message, type="error").text = body
        elif entry["status"] == "cannot_check":
            totals["skipped"] += 1
            ET.SubElement(case, "skipped", message=message)
        out = [flag_with_units(entry["summary"])] + ["WARNING: %s" % w for w in entry["warnings"]]
        if entry.get("kubelet"):
            # in system-out: the JUnit schemas (Jenkins xunit's junit-10.xsd) allow no properties in a testcase
            kubelet = entry["kubelet"]
            out.append("kubelet assumed: %s (%s), feature gates set: %s" % (
                kubelet["version"], kubelet["source"],
                ",".join("%s=%s" % (g, str(v).lower()) for g, v in sorted(kubelet["feature_gates_set"].items())) or "none"))
        if entry["status"] not in _FAIL + ("error",):
            out.extend(entry["details"])
        ET.SubElement(case, "system-out").text = "\n".join(o for o in out if o)
    for element in (root, suite_el):
        for key, value in totals.items():
            if element is root and key == "skipped":
                continue
            element.set(key, "%d" % value)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# ---- Prometheus textfile ------------------------------------------------------------------

_METRICS = (
    ("total", "numaguard_numa_memory_total_bytes", "Memory of the NUMA node (bytes)."),
    ("reserved", "numaguard_numa_memory_reserved_bytes", "Memory reserved for the system on the NUMA node (reservedMemory, bytes)."),
    ("hugepages", "numaguard_numa_hugepages_bytes", "Hugepage pools of the NUMA node (bytes)."),
    ("allocatable", "numaguard_numa_memory_allocatable_bytes", "Memory the memory manager can give to pods on the NUMA node (bytes)."),
    ("allocated", "numaguard_numa_memory_allocated_bytes", "Memory held by pods' memory manager assignments on the NUMA node (bytes)."),
    ("free", "numaguard_numa_memory_free_bytes",
     "Free memory of the NUMA node (bytes; allocatable minus allocated after a pod check, the kernel's MemFree after discovery)."),
)


def _label(value: Any) -> str:
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _labels(**labels: Any) -> str:
    return "{%s}" % ",".join('%s="%s"' % (k, _label(v)) for k, v in labels.items())


def render_prometheus(report: Mapping[str, Any]) -> str:
    """node_exporter textfile collector format (``*.prom``)."""
    out: List[str] = []
    for key, name, text in _METRICS:
        samples = []
        for entry in report["hosts"]:
            for node in entry["numa"]:
                if node.get(key) is None:
                    continue
                samples.append("%s%s %d" % (name, _labels(host=entry["host"], hw_class=entry["class"],
                                                          fingerprint=entry["fingerprint"], node=node["node"]),
                                            int(node[key])))
        if samples:
            out += ["# HELP %s %s" % (name, text), "# TYPE %s gauge" % name] + samples
    refused = [e for e in report["hosts"] if e.get("state_refused") is not None]
    if refused:
        name = "numaguard_memory_manager_state_would_be_refused"
        out += ["# HELP %s 1 when the kubelet would refuse to start with the node's memory_manager_state." % name,
                "# TYPE %s gauge" % name]
        out += ["%s%s %d" % (name, _labels(host=e["host"], hw_class=e["class"], fingerprint=e["fingerprint"]),
                             1 if e["state_refused"] else 0) for e in refused]
    name = "numaguard_report_host_status"
    out += ["# HELP %s 1 for the host's status in the last %s report (answer: its entry in numaguard_report_answer_hosts)."
            % (name, report["kind"]), "# TYPE %s gauge" % name]
    out += ["%s%s 1" % (name, _labels(host=e["host"], hw_class=e["class"], fingerprint=e["fingerprint"],
                                      report=report["kind"], status=e["status"], answer=e.get("answer", "")))
            for e in report["hosts"]]
    if report.get("answers"):
        name = "numaguard_report_answer_hosts"
        out += ["# HELP %s Hosts that gave the same answer in the last %s report (identical class, status, numbers and "
                "warnings)." % (name, report["kind"]), "# TYPE %s gauge" % name]
        out += ["%s%s %d" % (name, _labels(answer=a["id"], hw_class=a["class"], fingerprint=a["fingerprint"],
                                           report=report["kind"], status=a["status"],
                                           needs_action="true" if a["needs_action"] else "false",
                                           outlier="true" if a["outlier"] else "false"), a["count"])
                for a in report["answers"]]
    return "\n".join(out) + "\n"


def render_classes_inventory(report: Mapping[str, Any]) -> str:
    """A YAML inventory snippet with one group per hardware class (add it with a second ``-i``;
    put each class's kubelet settings in ``group_vars/<class>.yml``)."""
    lines = ["---",
             "# Hardware classes found by numaguard.kubelet %s at %s: one inventory group per" % (report["kind"],
                                                                                                  report["generated"]),
             "# topology (numa_<nodes>n_<cpus>c_<hugepage sizes>_<fingerprint>). Use with a second -i; settings per",
             "# class go to group_vars/<class>.yml (kubelet_numa_settings).",
             "all:", "  children:"]
    for cls in sorted(report["classes"], key=lambda c: c["group"]):
        if cls["group"] == "unknown":
            continue
        if cls.get("shape"):
            lines.append("    # %s" % cls["shape"])
        lines.append("    %s:" % cls["group"])
        lines.append("      hosts:")
        lines.extend("        %s: {}" % json.dumps(h) for h in cls["hosts"])
    return "\n".join(lines) + "\n"


RENDERERS: Dict[str, Any] = {"json": render_json, "junit": render_junit, "prometheus": render_prometheus}
