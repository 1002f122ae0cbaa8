# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The fleet NUMA report behind ``playbooks/discover.yml``: per-host summaries, grouping by
topology fingerprint, and hosts that differ from the rest of their inventory group.

Why it exists: a NUMA-aware kubelet config (reserved memory per node, topology policy) is only
right for a pool if every host of the pool has the same shape. Operators group hosts by machine
class in their inventory; one host whose 1Gi hugepages were not allocated at boot, or a VM that
slipped into a bare-metal group, makes a group-wide config wrong on that host. The report puts
such hosts next to their group's majority shape so the difference is visible before rollout.

Input is plain data (the ``numa_topology`` fact dicts that ``numaguard.kubelet.numa_facts``
returns, and each host's inventory groups), so the same code serves the filter plugin and tests.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import human_bytes
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import hugepage_size

#: Inventory groups that say nothing about machine class.
IGNORED_GROUPS = ("all", "ungrouped")


class FleetReportError(NumaguardError):
    """Input that is not a usable fact dict or host list; the message names host and field."""


def _short(fingerprint: Optional[str]) -> str:
    """The first 12 hex digits of a ``sha256:`` fingerprint, enough to tell shapes apart."""
    if not fingerprint:
        return "-"
    return fingerprint.split(":", 1)[-1][:12]


def _int(value: Any, host: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        try:
            return int(str(value), 10)
        except (TypeError, ValueError):
            raise FleetReportError("host %s: numa_topology.%s must be an integer, got %r" % (host, where, value))
    return value


def _hugepage_order(name_and_pool: Tuple[str, Mapping[str, Any]]) -> Tuple[int, str]:
    name, pool = name_and_pool
    size = pool.get("page_size_bytes") if isinstance(pool, Mapping) else None
    return (size if isinstance(size, int) else 0, name)


def _pools(raw: Any, host: str, where: str) -> List[Tuple[str, int, int]]:
    """(resource name, total pages, free pages), smallest page size first."""
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        raise FleetReportError("host %s: numa_topology.%s must be a dict, got %r" % (host, where, raw))
    pools = []
    for name, pool in sorted(raw.items(), key=_hugepage_order):
        if not isinstance(pool, Mapping):
            raise FleetReportError("host %s: numa_topology.%s.%s must be a dict, got %r" % (host, where, name, pool))
        pools.append((str(name), _int(pool.get("total_pages", 0), host, "%s.%s.total_pages" % (where, name)),
                      _int(pool.get("free_pages", 0), host, "%s.%s.free_pages" % (where, name))))
    return pools


def summarise_host(name: str, facts: Mapping[str, Any]) -> Dict[str, Any]:
    """One host's summary: counts, per-node lines data and a one-line shape for comparisons."""
    if not isinstance(facts, Mapping):
        raise FleetReportError("host %s: numa_topology must be a dict, got %r" % (name, facts))
    raw_nodes = facts.get("nodes")
    if not isinstance(raw_nodes, list):
        raise FleetReportError("host %s: numa_topology.nodes must be a list, got %r" % (name, raw_nodes))
    nodes: List[Dict[str, Any]] = []
    totals: Dict[str, int] = {}
    for index, raw in enumerate(raw_nodes):
        where = "nodes[%d]" % index
        if not isinstance(raw, Mapping):
            raise FleetReportError("host %s: numa_topology.%s must be a dict, got %r" % (name, where, raw))
        cpus = raw.get("cpus") or []
        if not isinstance(cpus, list):
            raise FleetReportError("host %s: numa_topology.%s.cpus must be a list, got %r" % (name, where, cpus))
        pools = _pools(raw.get("hugepages"), name, where + ".hugepages")
        for resource, total, _free in pools:
            totals[resource] = totals.get(resource, 0) + total
        nodes.append({
            "id": _int(raw.get("id"), name, where + ".id"),
            "cpulist": raw.get("cpulist") if isinstance(raw.get("cpulist"), str) else _cpulist(cpus, name, where),
            "cpu_count": len(cpus),
            "memory_total_bytes": _int(raw.get("memory_total_bytes", 0), name, where + ".memory_total_bytes"),
            "memory_free_bytes": _int(raw.get("memory_free_bytes", 0), name, where + ".memory_free_bytes"),
            "hugepages": [{"resource": r, "total_pages": t, "free_pages": f} for r, t, f in pools],
        })
    memory = sum(n["memory_total_bytes"] for n in nodes)
    cpu_count = sum(n["cpu_count"] for n in nodes)
    cpu_nodes = sum(1 for n in nodes if n["cpu_count"])
    pages = ", ".join("%s x%d" % (hugepage_size(r), totals[r]) for r in sorted(totals, key=lambda r: _size_bytes(facts, r)))
    shape = "%d node%s (%d with CPUs), %d CPUs, %s, hugepages %s" % (
        len(nodes), "" if len(nodes) == 1 else "s", cpu_nodes, cpu_count, human_bytes(memory, "GiB"), pages or "none")
    raw_kubelet = facts.get("kubelet")
    kubelet = raw_kubelet if isinstance(raw_kubelet, Mapping) else {}
    return {
        "fingerprint": facts.get("fingerprint"),
        "node_count": len(nodes),
        "cpu_node_count": cpu_nodes,
        "cpu_count": cpu_count,
        "offline_cpus": facts.get("offline_cpus") or "",
        "socket_count": facts.get("socket_count"),
        "threads_per_core": facts.get("threads_per_core"),
        "memory_total_bytes": memory,
        "hugepage_totals": totals,
        "nodes": nodes,
        "shape": shape,
        "kubelet": _kubelet_line(kubelet),
    }


def _size_bytes(facts: Mapping[str, Any], resource: str) -> int:
    for node in facts.get("nodes") or []:
        pool = (node.get("hugepages") or {}).get(resource) if isinstance(node, Mapping) else None
        if isinstance(pool, Mapping) and isinstance(pool.get("page_size_bytes"), int):
            return pool["page_size_bytes"]
    return 0


def _cpulist(cpus: Sequence[Any], host: str, where: str) -> str:
    """Format CPU ids as a kernel cpu list (``0-3,8``) when the facts lack ``cpulist``."""
    ids = sorted(set(_int(c, host, where + ".cpus") for c in cpus))
    runs: List[List[int]] = []
    for cpu in ids:
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join("%d" % a if a == b else "%d-%d" % (a, b) for a, b in runs)


def _kubelet_line(kubelet: Mapping[str, Any]) -> str:
    """What the host's kubelet looks like: config location, running or not, state files."""
    if not kubelet:
        return ""
    parts = []
    if kubelet.get("running"):
        parts.append("running (pid %s)" % kubelet.get("pid"))
    else:
        parts.append("not running")
    config = kubelet.get("config")
    if config:
        parts.append("config %s%s" % (config, "" if kubelet.get("config_exists", True) else " (missing)"))
    else:
        parts.append("no config file found")
    raw_states = kubelet.get("state_files")
    states = raw_states if isinstance(raw_states, Mapping) else {}
    for name in sorted(states):
        state = states[name] if isinstance(states[name], Mapping) else {}
        if not state.get("present"):
            continue
        text = "%s policy %s" % (name, state.get("policy_name") or "?")
        if state.get("checksum_ok") is False:
            text += " (CHECKSUM MISMATCH)"
        parts.append(text)
    if not any(isinstance(states.get(n), Mapping) and states[n].get("present") for n in states):
        parts.append("no manager state files")
    return ", ".join(parts)


def _group_verdicts(hosts: Sequence[str],
                    summaries: Mapping[str, Dict[str, Any]],
                    groups_of: Mapping[str, Sequence[str]]) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    groups: Dict[str, List[str]] = {}
    for host in hosts:
        for group in groups_of.get(host) or ():
            if group not in IGNORED_GROUPS:
                groups.setdefault(group, []).append(host)
    verdicts: Dict[str, Any] = {}
    differs: List[Dict[str, Any]] = []
    for group in sorted(groups):
        members = groups[group]
        discovered = [h for h in members if h in summaries]
        by_fp: Dict[str, List[str]] = {}
        for host in discovered:
            by_fp.setdefault(summaries[host]["fingerprint"] or "-", []).append(host)
        ranked = sorted(by_fp.items(), key=lambda item: (-len(item[1]), item[1][0]))
        majority = None
        if ranked and (len(ranked) == 1 or len(ranked[0][1]) > len(ranked[1][1])):
            majority = ranked[0][0]
        verdicts[group] = {
            "hosts": members, "discovered": discovered, "fingerprints": dict(by_fp),
            "uniform": len(by_fp) <= 1, "majority": majority,
        }
        if len(by_fp) <= 1:
            continue
        for host in discovered:
            fingerprint = summaries[host]["fingerprint"] or "-"
            if fingerprint == majority:
                continue
            if majority is not None:
                peers = by_fp[majority]
                reason = "differs from the %d other host%s of group %s" % (
                    len(peers), "" if len(peers) == 1 else "s", group)
            else:
                peers = [h for h in discovered if h != host]
                reason = "group %s has no majority shape" % group
            peer_shape = summaries[peers[0]]["shape"] if peers else ""
            differs.append({
                "host": host, "group": group, "reason": reason, "peers": peers,
                "fingerprint": fingerprint, "peer_fingerprint": summaries[peers[0]]["fingerprint"] if peers else None,
                "shape": summaries[host]["shape"], "peer_shape": peer_shape,
            })
    return verdicts, differs


def fleet_report(topologies: Mapping[str, Any],
                 groups_of: Mapping[str, Sequence[str]],
                 hosts: Optional[Sequence[str]] = None,
                 failed: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """Build the fleet report.

    ``topologies``: host -> ``numa_topology`` fact dict (None or missing for hosts whose
    discovery failed); ``groups_of``: host -> its inventory group names; ``hosts``: every host
    the play targeted, in order (default: sorted keys of ``topologies``); ``failed``: host -> why
    discovery failed, when known. Returns ``hosts`` (summaries), ``failed``, ``fingerprints``
    (fingerprint -> hosts, largest class first), ``groups`` (per-group verdicts), ``differs``
    (flagged hosts) and ``lines`` (the readable report).
    """
    if not isinstance(topologies, Mapping):
        raise FleetReportError("topologies must be a dict of host -> numa_topology, got %r" % (topologies,))
    order = list(hosts) if hosts is not None else sorted(topologies)
    failures = dict(failed or {})
    summaries: Dict[str, Dict[str, Any]] = {}
    for host in order:
        facts = topologies.get(host)
        if host in failures:
            continue
        if facts is None:
            failures.setdefault(host, "no numa_topology facts (discovery failed or host unreachable)")
            continue
        summaries[host] = summarise_host(host, facts)
    classes: Dict[str, List[str]] = {}
    for host in order:
        if host in summaries:
            classes.setdefault(summaries[host]["fingerprint"] or "-", []).append(host)
    ranked = sorted(classes.items(), key=lambda item: (-len(item[1]), order.index(item[1][0])))
    verdicts, differs = _group_verdicts(order, summaries, groups_of)
    report = {
        "hosts": summaries,
        "failed": dict((h, failures[h]) for h in order if h in failures),
        "fingerprints": [{"fingerprint": fp, "hosts": members, "shape": summaries[members[0]]["shape"]}
                         for fp, members in ranked],
        "groups": verdicts,
        "differs": differs,
    }
    report["lines"] = render_lines(order, report, groups_of)
    return report


def render_lines(order: Sequence[str],
                 report: Mapping[str, Any],
                 groups_of: Mapping[str, Sequence[str]]) -> List[str]:
    """The human-readable report, one string per line (debug prints a list of lines well)."""
    summaries = report["hosts"]
    lines = ["NUMA topology of %d host%s: %d discovered, %d failed, %d distinct shape%s"
             % (len(order), "" if len(order) == 1 else "s", len(summaries), len(report["failed"]),
                len(report["fingerprints"]), "" if len(report["fingerprints"]) == 1 else "s")]
    flagged = dict((d["host"], d) for d in report["differs"])
    for host in order:
        lines.append("")
        if host in report["failed"]:
            lines.append("%s  DISCOVERY FAILED  %s" % (host, report["failed"][host]))
            continue
        summary = summaries[host]
        groups = [g for g in (groups_of.get(host) or ()) if g not in IGNORED_GROUPS]
        header = "%s  %s" % (host, summary["shape"])
        lines.append(header)
        extra = []
        if groups:
            extra.append("group%s %s" % ("s" if len(groups) > 1 else "", ", ".join(groups)))
        if summary.get("socket_count") is not None:
            extra.append("%s socket%s" % (summary["socket_count"], "" if summary["socket_count"] == 1 else "s"))
        if summary.get("threads_per_core"):
            threads = summary["threads_per_core"]
            extra.append("%s thread%s per core" % (threads, "" if threads == 1 else "s"))
        if summary["offline_cpus"]:
            extra.append("offline CPUs %s" % summary["offline_cpus"])
        extra.append("fingerprint %s" % _short(summary["fingerprint"]))
        lines.append("    " + ", ".join(extra))
        cpu_texts = [("cpus " + n["cpulist"]) if n["cpu_count"] else "memory-only" for n in summary["nodes"]]
        width = max([len(t) for t in cpu_texts] + [4])
        id_width = max(len("%d" % n["id"]) for n in summary["nodes"]) if summary["nodes"] else 1
        for node, cpus in zip(summary["nodes"], cpu_texts):
            mem = "%s (%s free)" % (human_bytes(node["memory_total_bytes"], "GiB"), human_bytes(node["memory_free_bytes"], "GiB").split()[0])
            used = ["%s %d (%d free)" % (hugepage_size(p["resource"]), p["total_pages"], p["free_pages"])
                    for p in node["hugepages"] if p["total_pages"]]
            unused = [hugepage_size(p["resource"]) for p in node["hugepages"] if not p["total_pages"]]
            if unused:
                used.append("%s none" % "/".join(unused))
            lines.append("    node %*d  %-*s  %-22s  hugepages %s"
                         % (id_width, node["id"], width, cpus, mem, ", ".join(used) or "none"))
        if summary["kubelet"]:
            lines.append("    kubelet: %s" % summary["kubelet"])
        if host in flagged:
            lines.append("    !! %s" % flagged[host]["reason"])
    lines.append("")
    lines.append("Hosts grouped by fingerprint:")
    for entry in report["fingerprints"]:
        lines.append("  %s  %s  %s" % (_short(entry["fingerprint"]), ", ".join(entry["hosts"]), entry["shape"]))
    lines.append("")
    if report["differs"]:
        lines.append("Hosts that differ from the rest of their inventory group:")
        for item in report["differs"]:
            lines.append("  %s (group %s): %s" % (item["host"], item["group"], item["reason"]))
            lines.append("      this host: %s  [%s]" % (item["shape"], _short(item["fingerprint"])))
            if item["peers"]:
                peers = ", ".join(item["peers"])
                lines.append("      %s: %s  [%s]" % (peers, item["peer_shape"], _short(item["peer_fingerprint"])))
    else:
        checked = [g for g, v in sorted(report["groups"].items()) if len(v["discovered"]) > 1]
        which = ", ".join(checked) if checked else "no group has two discovered hosts"
        lines.append("Every inventory group is uniform (%s)." % which)
    if report["failed"]:
        lines.append("Discovery failed on: %s" % ", ".join(report["failed"]))
    return lines
