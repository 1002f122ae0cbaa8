# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The files of ``playbooks/recommend.yml`` on the controller: the workload read, the outputs rendered.

* :func:`load_workload`: the workload file (YAML), each ``template_file`` read relative to the
  workload file's directory, checked by ``_recommend.workload.parse_workload``;
* :func:`render_group_vars`: ``group_vars/<class>.yml`` with the winner's ``kubelet_numa_settings``
  (the variable ``validate.yml`` and ``apply.yml`` read), with a comment saying where it came from;
* :func:`render_json` / :func:`render_html`: the whole model; a table per class and per-NUMA fill
  pictures of the winner (inline CSS only, nothing fetched);
* :func:`render_classes`: ``classes.yml``, the hosts grouped by class, for ``-i``.

Every rendering is a pure function of the model, so the same input gives byte-identical files.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import json
import os
from html import escape
from typing import Any, Dict, List, Mapping

import yaml

from ansible_collections.numaguard.kubelet.plugins.module_utils._recommend.workload import Workload, WorkloadError, parse_workload
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.bounded_yaml import MAX_BYTES, BoundedYAMLError, load_all
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import human_bytes


def _read_yaml(path: str, what: str) -> List[Any]:
    try:
        with open(path, "rb") as handle:
            text = handle.read(MAX_BYTES + 1).decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadError("%s: cannot read %s: %s" % (what, path, getattr(exc, "strerror", None) or exc))
    try:
        return [d for d in load_all(text, path) if d is not None]
    except BoundedYAMLError as exc:
        raise WorkloadError("%s: %s" % (what, exc))


def load_workload(path: str) -> Workload:
    """The workload at ``path``; ``template_file`` paths are relative to its directory."""
    documents = _read_yaml(path, "workload_file")
    if len(documents) != 1:
        raise WorkloadError("workload_file: %s must hold one YAML document, found %d" % (path, len(documents)))
    data = documents[0]
    if isinstance(data, dict) and isinstance(data.get("pods"), list):
        base = os.path.dirname(os.path.abspath(path))
        pods = []
        for index, entry in enumerate(data["pods"]):
            if isinstance(entry, dict) and "template_file" in entry:
                if "template" in entry:
                    raise WorkloadError("%s: pods[%d]: give template or template_file, not both" % (path, index))
                given = str(entry["template_file"])
                full = given if os.path.isabs(given) else os.path.join(base, given)
                found = _read_yaml(full, "%s: pods[%d].template_file" % (path, index))
                if len(found) != 1:
                    raise WorkloadError("%s: pods[%d].template_file %s must hold one manifest, found %d"
                                        % (path, index, full, len(found)))
                entry = dict((k, v) for k, v in entry.items() if k != "template_file")
                entry["template"] = found[0]
            pods.append(entry)
        data = dict(data, pods=pods)
    return parse_workload(json.loads(json.dumps(data, default=str)), path)


class _Dumper(yaml.SafeDumper):
    pass


def _flow_small(dumper: Any, value: Mapping[str, Any]) -> Any:
    flow = len(value) <= 3 and all(not isinstance(v, (dict, list)) for v in value.values())
    return dumper.represent_mapping("tag:yaml.org,2002:map", value, flow_style=flow)


_Dumper.add_representer(dict, _flow_small)


def render_group_vars(model: Mapping[str, Any], workload_file: str = "") -> str:
    """``group_vars/<class>.yml`` of one class model with a winner."""
    winner = model["winner"]
    result = winner["result"]
    lines = [
        "---",
        "# %s: recommended by numaguard.kubelet.recommend%s" % (model["class"], " for %s" % workload_file if workload_file else ""),
        "# winner %s (%s): %d of %d pods admitted, %d aligned; %d candidate(s) evaluated, %d dropped."
        % (winner["id"], winner["summary"], result["admitted"], result["offered"], result["aligned"],
           model["counts"]["evaluated"], model["counts"]["dropped"]),
        "# Check it with validate.yml, roll it out with apply.yml (docs/recommend.md).",
    ]
    body = yaml.dump({"kubelet_numa_settings": winner["settings"]}, Dumper=_Dumper, sort_keys=False,
                     default_flow_style=False, width=160)
    return "\n".join(lines) + "\n" + body


def render_json(model: Mapping[str, Any]) -> str:
    return json.dumps(model, indent=1, sort_keys=True) + "\n"


_CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;background:#f6f7f9;color:#1d2330}
header{background:#1d2330;color:#fff;padding:16px 24px}header h1{margin:0 0 4px;font-size:20px}header p{margin:0;color:#c8cedb}
main{padding:16px 24px}section{margin:20px 0;padding:12px 16px;background:#fff;border:1px solid #dde1ea;border-radius:8px}
h2{margin:0 0 4px;font-size:16px}.line{color:#39414f;margin:2px 0 10px}
table{border-collapse:collapse;font-size:12px;width:100%}th,td{border-bottom:1px solid #eceef3;padding:3px 6px;text-align:left}
tr.win td{background:#e8f5e9;font-weight:600}td.n{text-align:right;font-family:ui-monospace,Menlo,monospace}
.node{display:grid;grid-template-columns:70px 1fr 280px;gap:8px;align-items:center;margin:3px 0}
.bar{display:flex;height:16px;background:#eceef3;border-radius:3px;overflow:hidden}.bar div{height:100%}
.u{background:#1e88e5}.f{background:#43a047}.nums{font:12px ui-monospace,Menlo,monospace;color:#39414f}
details{margin-top:8px}pre{background:#f0f2f6;padding:8px;overflow:auto}
"""


def _bar(used: int, free: int) -> str:
    total = used + free
    if total <= 0:
        return '<div class="bar"></div>'
    return '<div class="bar"><div class="u" style="width:%.2f%%"></div><div class="f" style="width:%.2f%%"></div></div>' % (
        100.0 * used / total, 100.0 * free / total)


def _fill_pictures(model: Mapping[str, Any]) -> List[str]:
    """Per NUMA node of the winner's filled node: CPUs pinned vs still free for exclusive use, and
    memory held vs free (where the winner's policies track them per node)."""
    winner = model["winner"]
    per_node = winner["result"]["stranded"]["per_node"]
    out = ['<h3>Winner %s: the filled node, per NUMA node (blue held, green left)</h3>' % escape(winner["id"])]
    for node in sorted(per_node, key=int):
        figures = per_node[node]
        parts = []
        if figures.get("cpus") is not None:
            total = int(figures.get("cpus_total") or figures["cpus"])
            parts.append(("CPUs", _bar(max(total - figures["cpus"], 0), figures["cpus"]),
                          "%d of %d CPUs free for exclusive use" % (figures["cpus"], total)))
        if figures.get("memory") is not None:
            total = int(figures.get("memory_total") or figures["memory"])
            parts.append(("memory", _bar(max(total - figures["memory"], 0), figures["memory"]),
                          "%s of %s free" % (human_bytes(figures["memory"]), human_bytes(total))))
        if not parts:
            parts.append(("", '<div class="bar"></div>', "not tracked per node by the winner's policies"))
        for what, picture, text in parts:
            out.append('<div class="node"><span>node %s %s</span>%s<span class="nums">%s</span></div>'
                       % (escape(node), escape(what), picture, escape(text)))
    stranded = winner["result"]["stranded"]
    out.append('<p class="nums">node-wide unrequested: %d millicores CPU, %s memory</p>'
               % (stranded["cpu_milli"], escape(human_bytes(stranded["memory"]))))
    return out


def render_html(report: Mapping[str, Any]) -> str:
    """One self-contained page: per class, the winner's fill picture and the candidate table."""
    parts = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>numaguard.kubelet recommend</title>',
             "<style>%s</style></head><body>" % _CSS,
             "<header><h1>Kubelet NUMA settings recommended per hardware class</h1><p>objective %s, kubelet %s, %s</p></header><main>"
             % (escape(report["workload"]["objective"]), escape(report["kubelet"]["version"]),
                escape(", ".join("%s x%d" % (p["name"], p["replicas"]) for p in report["workload"]["pods"])))]
    for model in report["classes"]:
        parts.append('<section><h2>%s</h2><p class="line">%s</p>' % (escape(model["class"]), escape(model["line"])))
        if model.get("winner"):
            parts.extend(_fill_pictures(model))
        parts.append("<table><tr><th>rank</th><th>id</th><th>settings</th><th>admitted</th><th>aligned</th>"
                     "<th>rejected (reasons)</th><th>free CPUs / memory per node</th><th>kubelet cost (s)</th></tr>")
        for entry in model["candidates"]:
            result = entry["result"]
            nodes = result["stranded"]["per_node"]
            left = "; ".join("%s: %s / %s" % (n, "-" if nodes[n]["cpus"] is None else nodes[n]["cpus"],
                                              "-" if nodes[n]["memory"] is None else human_bytes(nodes[n]["memory"]))
                             for n in sorted(nodes, key=int))
            reasons = ", ".join("%s %d" % (r, c) for r, c in sorted(result["rejected_by_reason"].items()))
            parts.append('<tr%s><td class="n">%d</td><td>%s</td><td>%s</td><td class="n">%d/%d</td><td class="n">%d</td>'
                         '<td>%d %s</td><td>%s</td><td class="n">%.6f</td></tr>'
                         % (' class="win"' if entry["rank"] == 1 else "", entry["rank"], escape(entry["id"]),
                            escape(entry["summary"]), result["admitted"], result["offered"], result["aligned"],
                            result["rejected"], escape("(%s)" % reasons if reasons else ""), escape(left),
                            result["kubelet_cost"]["estimated_seconds"]))
        parts.append("</table>")
        if model["dropped"]:
            parts.append("<details><summary>%d candidate(s) the kubelet would refuse to start with</summary><ul>%s</ul></details>"
                         % (len(model["dropped"]), "".join("<li>%s</li>" % escape("; ".join(d["errors"]))
                                                           for d in model["dropped"])))
        if model.get("winner"):
            parts.append("<details><summary>group_vars/%s.yml</summary><pre>%s</pre></details>"
                         % (escape(model["class"]), escape(render_group_vars(model))))
        parts.append("</section>")
    parts.append("</main></body></html>\n")
    return "\n".join(parts)


def render_classes(report: Mapping[str, Any]) -> str:
    """``classes.yml``: an inventory snippet with one group per hardware class and its hosts, so that
    ``-i INVENTORY -i DIR/classes.yml`` puts the hosts in the groups whose ``DIR/group_vars`` apply."""
    groups = dict((m["class"], {"hosts": dict((h, None) for h in m["hosts"])}) for m in report["classes"] if m["hosts"])
    head = "---\n# hardware classes of the recommendation (numaguard.kubelet.recommend); group_vars/ next to this file\n"
    return head + yaml.dump({"all": {"children": groups}}, Dumper=yaml.SafeDumper, default_flow_style=False, sort_keys=True)


def outputs(report: Mapping[str, Any], workload_file: str = "") -> Dict[str, str]:
    """Relative path -> content of every file the recommendation writes."""
    files = {"recommend.json": render_json(report), "recommend.html": render_html(report),
             "classes.yml": render_classes(report)}
    for model in report["classes"]:
        if model.get("winner"):
            files[os.path.join("group_vars", "%s.yml" % model["class"])] = render_group_vars(model, workload_file)
    return files
