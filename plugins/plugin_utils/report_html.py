# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The report model as ONE self-contained HTML page: what needs action first, then a NUMA picture per class.

Why: operators would rather look at a NUMA memory map than read one, and at 400 hosts they read one
screen, not 400 cards (issue 25). The first screen says how many hosts need action, which (every
name) and why, then lists every hardware class with its status counts. Then each distinct warning
once, with its count, a few hosts and the rest folded (``<details>``). Then per class ONE picture:
each NUMA node of its most common answer as a bar of its total memory split into system-reserved,
hugepage pools, memory held by pods and what is left allocatable, bytes in human units beside it;
under it one entry per distinct answer (hosts with identical answers share it, with a count),
exceptions with their own bars. Inline CSS only: no script, no fonts, no images, nothing fetched --
the file can be attached to a CI job or mailed as is.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from html import escape
from typing import Any, List, Mapping, Optional

from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import STATUS_ORDER, human_bytes
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report_render import INLINE_HOSTS, flag_with_units

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#1d2330;color:#fff;padding:16px 24px}header h1{margin:0 0 4px;font-size:20px}
header p{margin:0;color:#c8cedb}header .headline{color:#fff;font-size:15px}main{padding:8px 24px}
.counts span{display:inline-block;margin:8px 8px 0 0;padding:2px 10px;border-radius:10px;background:#e4e7ee}
.legend i{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:-1px;border-radius:2px}
section.class{margin:20px 0;padding:12px 16px;background:#fff;border:1px solid #dde1ea;border-radius:8px}
section.class h2{margin:0 0 4px;font-size:16px}.shape{color:#5b6478;margin:0 0 8px}
.host{border-top:1px solid #eceef3;padding:8px 0}.host h3{margin:0;font-size:14px;display:flex;gap:8px;align-items:center}
.badge{font-size:11px;font-weight:600;padding:1px 8px;border-radius:9px;color:#fff;text-transform:uppercase}
.s-ok,.s-admitted{background:#2e7d32}.s-warning,.s-differs,.s-cannot_check{background:#b26a00}
.s-invalid,.s-crashed,.s-rejected,.s-error{background:#c62828}
.summary{color:#39414f;margin:2px 0 6px;word-break:break-all}
.node{display:grid;grid-template-columns:70px 1fr 330px;gap:8px;align-items:center;margin:3px 0}
.bar{display:flex;height:16px;background:#eceef3;border-radius:3px;overflow:hidden}
.bar div{height:100%}.r{background:#8e24aa}.h{background:#1e88e5}.a{background:#ef6c00}.f{background:#43a047}.u{background:#b0b7c6}
.nums{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;color:#39414f}
table{border-collapse:collapse;margin:6px 0;font-size:13px}td,th{padding:2px 8px;border-bottom:1px solid #eceef3;text-align:left;vertical-align:top}
ul.msgs{margin:4px 0;padding-left:20px;color:#8a1c1c}ul.warn{color:#7a4b00}
.box{margin:12px 0;padding:8px 16px;background:#fff;border:1px solid #dde1ea;border-radius:8px}.box h2{margin:4px 0;font-size:17px}
.box.bad{border-left:6px solid #c62828}.box.good{border-left:6px solid #2e7d32}
.scroll{max-height:34vh;overflow:auto}.act{padding:4px 0;border-top:1px solid #eceef3}.act ul.why{margin:2px 0}
.why{word-break:break-word}.names{word-break:break-word}
.chip{display:inline-block;margin:0 4px 2px 0;padding:0 8px;border-radius:9px;background:#e4e7ee;font-size:12px;color:#1d2330}
.c-ok,.c-admitted{background:#d7ecd8}.c-warning,.c-differs,.c-cannot_check{background:#f6e2bf}.c-invalid,.c-crashed,.c-rejected,.c-error{background:#f5cccc}
.answer{border-top:1px solid #eceef3;padding:6px 0}.answer h3{margin:0;font-size:14px;display:flex;gap:8px;align-items:center}
.answer.exception{border-left:4px solid #c62828;padding-left:8px}.wrefs{font-size:12px;color:#7a4b00}
details summary{cursor:pointer;color:#39414f}details p{margin:4px 0}.picture{margin:4px 0 8px}
"""

_SEGMENTS = (("reserved", "r", "system reserved"), ("hugepages", "h", "hugepages"), ("allocated", "a", "held by pods"),
             ("free_allocatable", "f", "allocatable, free"), ("rest", "u", "other / unknown"))


def _pct(part: int, total: int) -> str:
    return "%.3f%%" % (100.0 * part / total) if total > 0 else "0%"


def _node_row(node: Mapping[str, Any]) -> str:
    total = int(node.get("total") or 0)
    reserved = int(node.get("reserved") or 0)
    huge = int(node.get("hugepages") or 0)
    allocated = int(node.get("allocated") or 0)
    allocatable: Optional[int] = node.get("allocatable")
    free_alloc = max(int(allocatable) - allocated, 0) if allocatable is not None else 0
    rest = max(total - reserved - huge - allocated - free_alloc, 0)
    parts = {"reserved": reserved, "hugepages": huge, "allocated": allocated, "free_allocatable": free_alloc,
             "rest": rest}
    segments = "".join('<div class="%s" style="width:%s" title="%s: %s"></div>'
                       % (css, _pct(parts[key], total), label, human_bytes(parts[key]))
                       for key, css, label in _SEGMENTS if parts[key] > 0)
    nums = ["total %s" % human_bytes(total)]
    if node.get("reserved") is not None:
        nums.append("reserved %s" % human_bytes(reserved))
    if huge:
        nums.append("hugepages %s" % human_bytes(huge))
    if allocatable is not None:
        nums.append("allocatable %s" % human_bytes(int(allocatable)))
    if node.get("allocated") is not None:
        nums.append("allocated %s" % human_bytes(allocated))
    if allocatable is None and node.get("free") is not None:
        if node.get("free_max") is not None:  # the least and the most of the answer's hosts
            nums.append("free %s to %s" % (human_bytes(int(node["free"])), human_bytes(int(node["free_max"]))))
        else:
            nums.append("free %s" % human_bytes(int(node["free"])))
    return ('<div class="node"><span>NUMA %s</span><div class="bar" role="img" aria-label="NUMA node %s memory">%s</div>'
            '<span class="nums">%s</span></div>' % (escape(str(node.get("node"))), escape(str(node.get("node"))), segments,
                                                    escape(", ".join(nums))))


def _badge(status: str) -> str:
    return '<span class="badge s-%s">%s</span>' % (escape(status), escape(status.replace("_", " ")))


def _plural(count: int, word: str = "host") -> str:
    return "%d %s%s" % (count, word, "" if count == 1 else "s")


def _hosts(hosts: List[str], inline: int = INLINE_HOSTS) -> str:
    """A few names inline, every name folded in a ``<details>``."""
    if len(hosts) <= inline:
        return '<span class="names">%s</span>' % escape(", ".join(hosts))
    return ('<details><summary>%s and %d more</summary><p class="names">%s</p></details>'
            % (escape(", ".join(hosts[:inline])), len(hosts) - inline, escape(", ".join(hosts))))


def _chips(counts: Mapping[str, int]) -> str:
    return "".join('<span class="chip c-%s">%d %s</span>' % (escape(s), counts[s], escape(s.replace("_", " ")))
                   for s in STATUS_ORDER if s in counts)


def _why(answer: Mapping[str, Any], full: bool) -> str:
    out = []
    errors = [e for e in answer["errors"] if e != answer["summary"]]
    shown = errors and (full or not answer["pods"])
    # an invalid host's summary ("2 error(s): <the first>") is left out when its errors are listed
    if answer["summary"] and not (shown and answer["summary"].endswith(errors[0])):
        out.append('<div class="summary">%s</div>' % escape(flag_with_units(answer["summary"])))
    if shown:
        out.append('<ul class="msgs">%s</ul>' % "".join("<li>%s</li>" % escape(e) for e in errors))
    return "".join(out)


def _pods(pods: List[Mapping[str, Any]]) -> str:
    if not pods:
        return ""
    rows = "".join("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
        escape(pod["pod"]), escape(pod["verdict"].replace("_", " ")),
        escape(",".join(str(n) for n in pod["numa_nodes"]) or "-"), escape(pod["reason"] or "-"),
        escape(pod["message"] or "")) for pod in pods)
    return "<table><tr><th>pod</th><th>verdict</th><th>NUMA</th><th>reason</th><th>message</th></tr>%s</table>" % rows


def _warning_refs(answer: Mapping[str, Any], numbers: Mapping[str, int]) -> str:
    if not answer["warnings"]:
        return ""
    refs = ", ".join('<a href="#w%d">#%d</a>' % (numbers[w], numbers[w]) for w in answer["warnings"] if w in numbers)
    return '<div class="wrefs">%s: %s</div>' % (escape(_plural(len(answer["warnings"]), "warning")), refs)


def _answer(answer: Mapping[str, Any], picture: Mapping[str, Any], numbers: Mapping[str, int]) -> str:
    """One answer of a class: its hosts (a count, a few names, the rest folded), why, and its NUMA rows
    when they are not the class picture's."""
    out = ['<div class="answer%s" id="%s"><h3>%s %s %s</h3>' % (
        " exception" if answer["needs_action"] or answer["outlier"] else "", escape(answer["id"]), _badge(answer["status"]),
        escape(_plural(answer["count"])), "" if answer["count"] == 1 else "with the same answer")]
    out.append(_hosts(answer["hosts"], len(answer["hosts"]) if answer["needs_action"] else INLINE_HOSTS))
    out.append(_why(answer, answer["needs_action"]))
    out.append(_pods(answer["pods"]))
    if answer["id"] != picture.get("answer") and answer["numa"] != picture.get("numa"):
        out.extend(_node_row(node) for node in answer["numa"])
    out.append(_warning_refs(answer, numbers))
    out.append("</div>")
    return "".join(out)


def _action(report: Mapping[str, Any], answers: Mapping[str, Mapping[str, Any]]) -> str:
    """The first box: how many hosts need action, which (every name) and why; then answers that differ
    from the rest of their class."""
    need = report["needs_action"]
    total = len(report["hosts"])
    if need["count"]:
        title = "%d of %s need action" % (need["count"], _plural(total))
    else:
        title = "No host needs action (%s)" % _plural(total)
    rows = []
    for key, why in [(i, None) for i in need["answers"]] + [(i, "differs from the rest of its class") for i in need["outliers"]]:
        answer = answers[key]
        reasons = [why] if why else (list(answer["errors"]) or [answer["summary"]])
        rows.append('<div class="act">%s <b>%s</b> of <a href="#class-%s">%s</a>: %s'
                    '<ul class="msgs why">%s</ul></div>' % (
                        _badge(answer["status"]), escape(_plural(answer["count"])), escape(answer["class"]),
                        escape(answer["class"]),
                        # hosts that need action are named in full; an outlier's hosts folded after a few
                        '<span class="names">%s</span>' % escape(", ".join(answer["hosts"])) if answer["needs_action"]
                        else _hosts(answer["hosts"]),
                        "".join("<li>%s</li>" % escape(r) for r in reasons)))
    listing = '<div class="scroll">%s</div>' % "".join(rows) if rows else ""
    return '<section class="box %s" id="action"><h2>%s</h2>%s</section>' % (
        "bad" if need["count"] else "good", escape(title), listing)


def _overview(report: Mapping[str, Any]) -> str:
    shapes = any(c.get("shape") for c in report["classes"])
    rows = "".join('<tr><td><a href="#class-%s">%s</a></td><td>%d</td><td>%s</td>%s</tr>' % (
        escape(c["group"]), escape(c["group"]), len(c["hosts"]), _chips(c.get("counts") or {}),
        '<td class="shape">%s</td>' % escape(c.get("shape") or "") if shapes else "") for c in report["classes"])
    count = len([c for c in report["classes"] if c["group"] != "unknown"])
    return ('<section class="box" id="classes"><h2>%d hardware class%s</h2><table><tr><th>class</th><th>hosts</th>'
            "<th>status</th>%s</tr>%s</table></section>" % (count, "" if count == 1 else "es",
                                                            "<th>shape</th>" if shapes else "", rows))


def _warnings(report: Mapping[str, Any]) -> str:
    items = "".join('<li id="w%d"><b>#%d</b> %s <em>(%s)</em> %s</li>' % (
        n, n, escape(w["text"]), escape(_plural(w["count"])), _hosts(w["hosts"]))
        for n, w in enumerate(report["warnings"], 1))
    return '<section class="box" id="warnings"><h2>Warnings, each once</h2><ul class="msgs warn">%s</ul></section>' % items


def render_html(report: Mapping[str, Any]) -> str:
    """The whole page (UTF-8 text): what needs action, the classes, the warnings once each, then per
    class one NUMA picture and one entry per distinct answer."""
    answers = dict((a["id"], a) for a in report["answers"])
    numbers = dict((w["text"], n) for n, w in enumerate(report["warnings"], 1))
    parts: List[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">',
        '<link rel="icon" href="data:,">',
        "<title>numaguard.kubelet %s report</title><style>%s</style></head><body>" % (escape(report["kind"]), _CSS),
        "<header><h1>%s</h1><p class=\"headline\">%s</p><p>%s &middot; generated %s</p></header><main>" % (
            escape(report["title"]), escape(report["headline"]), _chips(report.get("counts") or {}),
            escape(report["generated"])),
        _action(report, answers),
        _overview(report),
    ]
    if report.get("warnings"):
        parts.append(_warnings(report))
    legend = "".join('<i class="%s"></i>%s' % (css, escape(label)) for _key, css, label in _SEGMENTS)
    parts.append('<p class="legend">NUMA memory:%s</p>' % legend)
    for cls in report["classes"]:
        picture = cls.get("picture") or {}
        parts.append('<section class="class" id="class-%s"><h2>%s <small>(%s)</small> %s</h2><p class="shape">%s</p>' % (
            escape(cls["group"]), escape(cls["group"]), escape(_plural(len(cls["hosts"]))), _chips(cls.get("counts") or {}),
            escape(cls.get("shape") or "")))
        if picture.get("numa"):
            parts.append('<div class="picture"><p class="shape">NUMA picture of %s (%s):</p>%s</div>' % (
                escape(picture["host"]), escape(_plural(answers[picture["answer"]]["count"]) + " with this answer"),
                "".join(_node_row(node) for node in picture["numa"])))
        for key in cls.get("answers") or []:
            parts.append(_answer(answers[key], picture, numbers))
        parts.append("</section>")
    parts.append("</main></body></html>\n")
    return "\n".join(parts)
