# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""numa_facts and playbooks/discover.yml over ssh on the simulated fleet (real paths, real sshd)."""

from __future__ import annotations

import json
import os
import re

import pytest
import yaml

CPU_KEYS = ("node", "core", "socket", "die", "siblings", "cache_id", "online")

_REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _normalise(facts):
    """numa_facts' fact dict in the shape of tests/fleet/topologies.py's expected()."""
    return {
        "node_ids": [n["id"] for n in facts["nodes"]],
        "nodes": dict((n["id"], {
            "cpus": n["cpus"],
            "memory_total_bytes": n["memory_total_bytes"],
            "memory_free_bytes": n["memory_free_bytes"],
            "hugepages": n["hugepages"],
            "distances": dict((int(peer), d) for peer, d in n["distances"].items()),
        }) for n in facts["nodes"]),
        "online_cpus": sorted(c for n in facts["nodes"] for c in n["cpus"]),
        "offline_cpus": [c["id"] for c in facts["cpus"] if not c["online"]],
        "cpus": dict((c["id"], dict((k, c[k]) for k in CPU_KEYS)) for c in facts["cpus"]),
        "memory_total_bytes": facts["memory_total_bytes"],
    }


def _expected(fleet, name):
    expected = fleet.expected(name)
    expected = dict(expected)
    expected.pop("global_hugepages")
    return expected


@pytest.fixture(scope="module")
def facts(fleet):
    """numa_facts on every fleet host, gathered once for this module."""
    results = fleet.module("all", "numaguard.kubelet.numa_facts")
    assert sorted(results) == sorted(fleet.names)
    return results


def test_numa_facts_match_each_hosts_topology(fleet, facts):
    mismatches = []
    for name in fleet.names:
        result = facts[name]
        assert not result.get("failed"), "%s: %s" % (name, result.get("msg"))
        assert result["changed"] is False
        got = _normalise(result["ansible_facts"]["numa_topology"])
        want = _expected(fleet, name)
        for key in sorted(want):
            if got[key] != want[key]:
                mismatches.append("%s (%s) %s:\n  got  %s\n  want %s" % (
                    name, fleet.host(name)["topology"], key, json.dumps(got[key], sort_keys=True)[:600],
                    json.dumps(want[key], sort_keys=True)[:600]))
    assert not mismatches, "\n".join(mismatches)


def test_machine_wide_hugepages_match(fleet, facts):
    for name in fleet.names:
        system = facts[name]["ansible_facts"]["numa_topology"]["system"]["hugepages"]
        totals = dict((pool["page_size_bytes"] // 1024, pool["total_pages"]) for pool in system.values())
        want = dict((size, count) for size, count in fleet.expected(name)["global_hugepages"].items())
        assert totals == want, name


def test_identical_hosts_share_a_fingerprint_and_the_odd_one_does_not(fleet, facts):
    fingerprints = dict((name, facts[name]["ansible_facts"]["numa_topology"]["fingerprint"]) for name in fleet.names)
    assert len(set(fingerprints.values())) == len(fleet.names)  # every e2e host has its own shape
    plain = fleet.hosts_of("intel-2s")[0]["name"]
    odd = fleet.hosts_of("intel-2s", ["1Gi=0"])[0]["name"]
    odd_nodes = facts[odd]["ansible_facts"]["numa_topology"]["nodes"]
    assert [n["hugepages"]["hugepages-1Gi"]["total_pages"] for n in odd_nodes] == [0, 0]
    assert fingerprints[plain] != fingerprints[odd]


def test_discover_playbook_reports_every_host(fleet, tmp_path):
    report_file = str(tmp_path / "report.json")
    proc = fleet.playbook("playbooks/discover.yml", "-e", "discover_report_file=%s" % report_file)
    assert proc.returncode == 0, proc.stdout[-4000:]
    out = proc.stdout
    assert "NUMA topology of %d host(s): %d discovered, 0 failed" % (len(fleet.names), len(fleet.names)) in out
    for name in fleet.names:
        nodes = len(fleet.expected(name)["node_ids"])
        # every e2e host has its own shape: one line each, naming its class and shape
        pattern = r'"  %s +(OK|DIFFERS) +numa_%dn_\d+c_[a-z0-9_]+: %d nodes? \(' % (re.escape(name), nodes, nodes)
        assert re.search(pattern, out), "no summary line %r for %s in:\n%s" % (pattern, name, out[-3000:])
    # The two intel_2s hosts differ (one lacks 1Gi pages) and there is no majority: both flagged.
    intel = sorted(h["name"] for h in fleet.hosts if h["group"] == "intel_2s")
    flagged = [line for line in out.splitlines() if "differs from group intel_2s: group intel_2s has no majority shape" in line]
    assert flagged and all(name in flagged[0] for name in intel), flagged
    with open(report_file) as handle:
        report = json.load(handle)
    hosts = dict((entry["host"], entry) for entry in report["hosts"])
    assert sorted(hosts) == sorted(fleet.names)
    assert sorted(d["host"] for d in report["differs"]) == intel
    assert report["groups"]["intel_2s"]["majority"] is None
    # every host is in a hardware class named after its shape; identical shapes would share one
    classes = dict((h, hosts[h]["class"]) for h in hosts)
    assert all(re.match(r"^numa_\d+n_\d+c_[a-z0-9_]+_[0-9a-f]{8}$", c) for c in classes.values()), classes
    assert len(report["classes"]) == len(fleet.names)  # every e2e host has its own shape
    memory_only = [h for h in fleet.names if 0 in [len(n["cpus"]) for n in fleet.expected(h)["nodes"].values()]]
    assert memory_only, "the bundled topologies should include memory-only nodes"
    for name in memory_only:
        assert any("cpus none" in line for line in hosts[name]["details"])
        assert len(hosts[name]["numa"]) == len(fleet.expected(name)["node_ids"])


def test_discover_writes_classes_html_and_prometheus_relative_to_cwd(fleet, tmp_path):
    """Relative output paths land in the current directory, not next to the playbook or inventory."""
    proc = fleet.playbook("playbooks/discover.yml", "-e", "discover_classes_file=out/classes.yml",
                          "-e", "discover_html_file=numa.html", "-e", "discover_prometheus_file=numa.prom",
                          cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-3000:]
    classes = yaml.safe_load((tmp_path / "out" / "classes.yml").read_text())
    groups = classes["all"]["children"]
    assert sorted(h for g in groups.values() for h in g["hosts"]) == sorted(fleet.names)
    html = (tmp_path / "numa.html").read_text()
    assert html.startswith("<!DOCTYPE html>") and html.count('class="node"') >= len(fleet.names)
    prom = (tmp_path / "numa.prom").read_text()
    assert "numaguard_numa_memory_total_bytes{host=" in prom


def test_discover_can_fail_on_hosts_that_differ(fleet):
    intel = ",".join(h["name"] for h in fleet.hosts if h["group"] == "intel_2s")
    proc = fleet.playbook("playbooks/discover.yml", "-e", "discover_fail_on_differ=true", limit=intel)
    assert proc.returncode == 2, proc.stdout[-3000:]
    assert "differs from group intel_2s" in proc.stdout
    single = fleet.hosts_of("vm-single")[0]["name"]
    proc = fleet.playbook("playbooks/discover.yml", "-e", "discover_fail_on_differ=true", limit=single)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "NUMA topology of 1 host(s): 1 discovered, 0 failed, 1 hardware class(es)" in proc.stdout


def test_discover_reports_unreachable_hosts_without_failing_the_report(fleet, tmp_path):
    """A host that cannot be reached is listed as failed; the others are still summarised."""
    inventory = tmp_path / "inventory.yml"
    with open(fleet.inventory) as handle:
        text = handle.read()
    victim = fleet.hosts_of("vm-single")[0]
    text = text.replace("ansible_port: %d\n" % victim["port"], "ansible_port: 1\n")
    inventory.write_text(text)
    other = fleet.hosts_of("vm-nonuma")[0]["name"]
    proc = fleet.playbook("playbooks/discover.yml", inventory=str(inventory), limit="%s,%s" % (victim["name"], other))
    assert proc.returncode == 4, proc.stdout[-3000:]  # 4: some hosts unreachable
    assert "NUMA topology of 2 host(s): 1 discovered, 1 failed" in proc.stdout
    assert re.search(r'"  %s +ERROR +unknown: discovery failed' % victim["name"], proc.stdout)
    assert re.search(r'"  %s +OK +numa_1n_' % other, proc.stdout)


def test_discover_puts_each_host_into_its_class_group_for_later_plays(fleet, tmp_path):
    """The grouping is one run_once add_host loop over the report (issue 24: a per-host group_by
    cost every host a controller worker): a later play of the same run sees each host in its
    class group, and only there; an unreachable host is in none."""
    playbook = tmp_path / "discover_then_groups.yml"
    playbook.write_text(
        "- ansible.builtin.import_playbook: %s\n"
        "- name: Groups\n"
        "  hosts: all\n"
        "  gather_facts: false\n"
        "  tasks:\n"
        "    - name: Show\n"
        "      ansible.builtin.debug:\n"
        "        msg: \"CLASSES {{ inventory_hostname }} {{ group_names | select('match', 'numa_') | join(',') }}\"\n"
        % (os.path.join(_REPO, "playbooks", "discover.yml"),))
    report_file = tmp_path / "report.json"
    proc = fleet.playbook(str(playbook), "-e", "discover_report_file=%s" % report_file)
    assert proc.returncode == 0, proc.stdout[-3000:]
    report = json.loads(report_file.read_text())
    want = dict((entry["host"], entry["class"]) for entry in report["hosts"])
    got = dict(re.findall(r'"CLASSES (\S+) ([^"]*)"', proc.stdout))
    assert got == want, proc.stdout[-3000:]
