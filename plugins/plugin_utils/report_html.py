# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The report model as ONE self-contained HTML page: a picture of every node's NUMA memory.

Why: operators would rather look at a NUMA memory map than read one. Per hardware class and per
host, each NUMA node is a bar of its total memory split into system-reserved, hugepage pools,
memory held by pods and what is left allocatable, with the bytes in human units beside it; pod
check verdicts with the kubelet's reasons sit under the bars. Inline CSS only: no script, no
fonts, no images, nothing fetched -- the file can be attached to a CI job or mailed as is.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from html import escape
from typing import Any, List, Mapping, Optional

from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import STATUS_ORDER, human_bytes
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report_render import flag_with_units

_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#1d2330;color:#fff;padding:16px 24px}header h1{margin:0 0 4px;font-size:20px}
header p{margin:0;color:#c8cedb}main{padding:16px 24px}
.counts span{display:inline-block;margin:8px 8px 0 0;padding:2px 10px;border-radius:10px;background:#e4e7ee}
.legend i{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:-1px;border-radius:2px}
section.class{margin:20px 0;padding:12px 16px;background:#fff;border:1px solid #dde1ea;border-radius:8px}
section.class h2{margin:0 0 4px;font-size:16px}.shape{color:#5b6478;margin:0 0 8px}
.host{border-top:1px solid #eceef3;padding:8px 0}.host h3{margin:0;font-size:14px;display:flex;gap:8px;align-items:center}
.badge{font-size:11px;font-weight:600;padding:1px 8px;border-radius:9px;color:#fff;text-transform:uppercase}
.s-ok,.s-admitted{background:#2e7d32}.s-warning,.s-differs,.s-cannot_check{background:#b26a00}
.s-invalid,.s-rejected,.s-error{background:#c62828}
.summary{color:#39414f;margin:2px 0 6px;word-break:break-all}
.node{display:grid;grid-template-columns:70px 1fr 330px;gap:8px;align-items:center;margin:3px 0}
.bar{display:flex;height:16px;background:#eceef3;border-radius:3px;overflow:hidden}
.bar div{height:100%}.r{background:#8e24aa}.h{background:#1e88e5}.a{background:#ef6c00}.f{background:#43a047}.u{background:#b0b7c6}
.nums{font:12px ui-monospace,SFMono-Regular,Menlo,monospace;color:#39414f}
table{border-collapse:collapse;margin:6px 0;font-size:13px}td,th{padding:2px 8px;border-bottom:1px solid #eceef3;text-align:left}
ul.msgs{margin:4px 0;padding-left:20px;color:#8a1c1c}ul.warn{color:#7a4b00}
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
        nums.append("free %s" % human_bytes(int(node["free"])))
    return ('<div class="node"><span>NUMA %s</span><div class="bar" role="img" aria-label="NUMA node %s memory">%s</div>'
            '<span class="nums">%s</span></div>' % (escape(str(node.get("node"))), escape(str(node.get("node"))), segments,
                                                    escape(", ".join(nums))))


def _host(entry: Mapping[str, Any]) -> str:
    out = ['<div class="host" id="host-%s"><h3>%s <span class="badge s-%s">%s</span>%s</h3>' % (
        escape(entry["host"]), escape(entry["host"]), escape(entry["status"]), escape(entry["status"].replace("_", " ")),
        ' <span class="shape">%s</span>' % escape(", ".join(entry["groups"])) if entry["groups"] else "")]
    if entry["summary"]:
        out.append('<div class="summary">%s</div>' % escape(flag_with_units(entry["summary"])))
    for node in entry["numa"]:
        out.append(_node_row(node))
    if entry["pods"]:
        out.append("<table><tr><th>pod</th><th>verdict</th><th>NUMA</th><th>reason</th><th>message</th></tr>")
        for pod in entry["pods"]:
            out.append("<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>" % (
                escape(pod["pod"]), escape(pod["verdict"].replace("_", " ")),
                escape(",".join(str(n) for n in pod["numa_nodes"]) or "-"), escape(pod["reason"] or "-"),
                escape(pod["message"] or "")))
        out.append("</table>")
    if entry["errors"] and not entry["pods"]:
        out.append('<ul class="msgs">%s</ul>' % "".join("<li>%s</li>" % escape(e) for e in entry["errors"]))
    if entry["warnings"]:
        out.append('<ul class="msgs warn">%s</ul>' % "".join("<li>%s</li>" % escape(w) for w in entry["warnings"]))
    out.append("</div>")
    return "".join(out)


def render_html(report: Mapping[str, Any]) -> str:
    """The whole page (UTF-8 text)."""
    counts = report.get("counts") or {}
    entries = dict((e["host"], e) for e in report["hosts"])
    parts: List[str] = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">',
        '<link rel="icon" href="data:,">',
        "<title>numaguard.kubelet %s report</title><style>%s</style></head><body>" % (escape(report["kind"]), _CSS),
        "<header><h1>%s</h1><p>%s</p><p>generated %s</p></header><main>" % (
            escape(report["title"]), escape(report["headline"]), escape(report["generated"])),
        '<div class="counts">%s</div>' % "".join("<span>%d %s</span>" % (counts[s], escape(s.replace("_", " ")))
                                                 for s in STATUS_ORDER if s in counts),
        '<p class="legend">NUMA memory:%s</p>' % "".join('<i class="%s"></i>%s' % (css, escape(label))
                                                         for _key, css, label in _SEGMENTS),
    ]
    if report.get("warnings"):
        parts.append("<section class=\"class\"><h2>Warnings</h2><ul class=\"msgs warn\">%s</ul></section>" % "".join(
            "<li>%s <em>(%d host%s: %s)</em></li>" % (escape(w["text"]), len(w["hosts"]), "" if len(w["hosts"]) == 1 else "s",
                                                      escape(", ".join(w["hosts"]))) for w in report["warnings"]))
    for cls in report["classes"]:
        parts.append('<section class="class" id="class-%s"><h2>%s <small>(%d host%s)</small></h2><p class="shape">%s</p>' % (
            escape(cls["group"]), escape(cls["group"]), len(cls["hosts"]), "" if len(cls["hosts"]) == 1 else "s",
            escape(cls.get("shape") or "")))
        for host in cls["hosts"]:
            parts.append(_host(entries[host]))
        parts.append("</section>")
    parts.append("</main></body></html>\n")
    return "\n".join(parts)
