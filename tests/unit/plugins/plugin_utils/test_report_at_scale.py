# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reports at 400 hosts of six bundled classes (issue 25): identical hosts are one answer with a count,
exceptions first and in full, one NUMA picture per class, every warning once with a count, the HTML
of discover, validate and check_pod at most 300 KB and the text at most 60 lines.

The hosts are synthetic (tests/fleet/report_hosts.py): each class read once for real, its answers
shared by its hosts, with per-host MemFree, free hugepages and kubelet pids, and exceptions put in.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
from html import escape

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import (
    ACTION,
    answer_of,
    check_pod_report,
    discover_report,
    regroup,
    validate_report,
)
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report_html import render_html
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report_render import (
    ACTION_HOSTS,
    render_json,
    render_prometheus,
    render_text,
)
from ansible_collections.numaguard.kubelet.tests.fleet.report_hosts import Fleet

HOSTS = 400
KINDS = ("discover", "validate", "check_pod")


@pytest.fixture(scope="module")
def fleet():
    return Fleet(HOSTS)


@pytest.fixture(scope="module")
def reports(fleet):
    topologies, groups, hosts, failed = fleet.discover_inputs()
    out = {"discover": discover_report(topologies, groups, hosts, failed=failed)}
    out["validate"] = validate_report(*fleet.validate_inputs())
    out["check_pod"] = check_pod_report(*fleet.check_pod_inputs())
    return out


def _unfolded(html):
    """The page without what a reader has to unfold (``<details>`` bodies)."""
    return re.sub(r"<details>.*?</details>", "", html, flags=re.S)


def test_the_synthetic_fleet_has_six_classes_and_the_exceptions(fleet, reports):
    assert len(fleet.hosts) == HOSTS and len(set(fleet.topology.values())) == 6
    validate = dict((e["host"], e["status"]) for e in reports["validate"]["hosts"])
    assert sorted(h for h, s in validate.items() if s == "invalid") == sorted(fleet.invalid)
    assert sorted(h for h, s in validate.items() if s == "error") == sorted(fleet.unreachable)
    discover = dict((e["host"], e["status"]) for e in reports["discover"]["hosts"])
    assert sorted(h for h, s in discover.items() if s == "differs") == sorted(fleet.no_1g)
    # what differs per live host does differ: MemFree and the kubelet's pid
    entries = [e for e in reports["discover"]["hosts"] if e["status"] == "ok"]
    assert len(set(e["numa"][0]["free"] for e in entries)) > 50
    assert len(set(e["summary"] for e in entries)) > 50


@pytest.mark.parametrize("kind", KINDS)
def test_identical_hosts_are_one_answer(reports, kind):
    report = reports[kind]
    answers = report["answers"]
    assert len(answers) <= 12, [(a["class"], a["status"], a["count"]) for a in answers]
    assert sum(a["count"] for a in answers) == HOSTS
    assert sorted(h for a in answers for h in a["hosts"]) == sorted(e["host"] for e in report["hosts"])
    entries = dict((e["host"], e) for e in report["hosts"])
    for answer in answers:
        assert answer["count"] == len(answer["hosts"])
        # the hosts of an answer answered the same, and no two answers are the same
        assert all(answer_of(kind, entries[h]) == answer_of(kind, entries[answer["hosts"][0]]) for h in answer["hosts"])
        assert all(entries[h]["answer"] == answer["id"] for h in answer["hosts"])
    keys = [json.dumps(answer_of(kind, entries[a["hosts"][0]]), sort_keys=True) for a in answers]
    assert len(set(keys)) == len(keys)


@pytest.mark.parametrize("kind", KINDS)
def test_exceptions_come_first(reports, kind):
    report = reports[kind]
    flags = [(a["needs_action"], a["outlier"]) for a in report["answers"]]
    assert flags == sorted(flags, key=lambda f: (not f[0], not f[1]))
    need = report["needs_action"]
    assert sorted(need["hosts"]) == sorted(e["host"] for e in report["hosts"] if e["status"] in ACTION)
    assert need["count"] == len(need["hosts"]) > 0
    for cls in report["classes"]:
        ids = cls["answers"]
        largest = max((a for a in report["answers"] if a["id"] in ids), key=lambda a: a["count"])
        assert cls["picture"]["answer"] == largest["id"]
        assert all(a["outlier"] == (a["id"] != largest["id"]) for a in report["answers"] if a["id"] in ids)


def test_an_outlier_within_a_class_is_an_exception(fleet, reports):
    """Two thirds of the EPYC hosts warn; the other third is valid without warning: it is the outlier."""
    report = reports["validate"]
    amd = [a for a in report["answers"] if a["hosts"][0].startswith("amd-epyc-nps4") and a["class"] != "unknown"]
    statuses = dict((a["status"], a) for a in amd)
    assert sorted(statuses) == ["ok", "warning"]
    assert statuses["warning"]["count"] == len(fleet.eviction_warned) and not statuses["warning"]["outlier"]
    assert statuses["ok"]["outlier"] and statuses["ok"]["id"] in report["needs_action"]["outliers"]
    lines = render_text(report)
    at = lines.index("differ from the rest of their class:")
    assert lines[at + 1].startswith("  %d OK of %s: %s and %d more \u2014 see the JSON -- --reserved-memory=" % (
        statuses["ok"]["count"], statuses["ok"]["class"], ", ".join(statuses["ok"]["hosts"][:3]), statuses["ok"]["count"] - 3))
    assert at < min(i for i, line in enumerate(lines) if line.startswith("class "))
    html = render_html(report)
    assert html.index(statuses["ok"]["hosts"][0]) < html.index('id="classes"')  # in the first box, folded after three


@pytest.mark.parametrize("kind", KINDS)
def test_html_is_bounded_and_shows_classes_and_exceptions_unfolded(reports, kind):
    report = reports[kind]
    html = render_html(report)
    size = len(html.encode("utf-8"))
    assert size <= 300 * 1000, "%s HTML is %d bytes at %d hosts" % (kind, size, HOSTS)
    shown = _unfolded(html)
    for cls in report["classes"]:
        assert 'href="#class-%s"' % cls["group"] in shown
    for host in report["needs_action"]["hosts"]:
        assert re.search(r"[ >]%s[,<]" % re.escape(host), shown), host
    # one NUMA picture per class, and bars of an answer only where they are not the class picture's
    pictures = sum(len(c["picture"]["numa"]) for c in report["classes"] if c.get("picture"))
    assert pictures <= html.count('class="node"') <= pictures + sum(len(a["numa"]) for a in report["answers"]
                                                                    if a["needs_action"] or a["outlier"])
    # the first section answers how many need action, before any class
    assert html.index('id="action"') < html.index('id="classes"') < html.index('class="class"')
    assert "%d of %d hosts need action" % (report["needs_action"]["count"], HOSTS) in html


@pytest.mark.parametrize("kind", KINDS)
def test_every_warning_once_with_a_count(reports, kind):
    report = reports[kind]
    html = render_html(report)
    lines = render_text(report)
    for warning in report["warnings"]:
        assert warning["count"] == len(warning["hosts"])
        assert html.count(escape(warning["text"])) == 1, warning["text"]
        [line] = [line for line in lines if warning["text"][:60] in line]
        if warning["count"] > 3:
            assert line.startswith("  - [%d hosts: %s and %d more \u2014 see the JSON]" % (
                warning["count"], ", ".join(warning["hosts"][:3]), warning["count"] - 3)), line
    expected = {"discover": 0, "validate": 2, "check_pod": 1}[kind]
    assert len(report["warnings"]) == expected
    if kind == "validate":
        assert [w["count"] for w in report["warnings"]] == [HOSTS - 2, 66]


@pytest.mark.parametrize("kind", KINDS)
def test_text_is_one_screen_and_leads_with_what_needs_action(reports, kind):
    report = reports[kind]
    lines = render_text(report)
    assert len(lines) <= 60, "\n".join(lines)
    start = [i for i, line in enumerate(lines) if line.startswith("need action: %d of %d host(s)"
                                                                  % (report["needs_action"]["count"], HOSTS))]
    assert start and start[0] <= 3, lines[:5]
    first_class = [i for i, line in enumerate(lines) if line.startswith("class ")][0]
    named = "\n".join(lines[start[0]:first_class])
    assert report["needs_action"]["count"] <= ACTION_HOSTS  # else the text folds them too
    for host in report["needs_action"]["hosts"]:
        assert re.search(r"[ ,]%s[,:]" % re.escape(host), named), host
    for cls in report["classes"]:
        assert any(line.startswith("class %s (" % cls["group"]) for line in lines), cls["group"]


@pytest.mark.parametrize("kind", KINDS)
def test_json_and_prometheus_carry_the_answers(reports, kind):
    report = reports[kind]
    data = json.loads(render_json(report))
    assert sum(a["count"] for a in data["answers"]) == HOSTS
    assert list(data)[:6] == ["kind", "title", "generated", "headline", "counts", "needs_action"]
    prom = render_prometheus(report)
    counts = [int(line.rsplit(" ", 1)[1]) for line in prom.splitlines() if line.startswith("numaguard_report_answer_hosts{")]
    assert sum(counts) == HOSTS and len(counts) == len(report["answers"])
    assert 'answer="a1"' in [line for line in prom.splitlines() if line.startswith("numaguard_report_host_status{")][0] or \
        report["hosts"][0]["answer"] != "a1"


def test_regroup_rebuilds_the_answers(fleet, reports):
    report = json.loads(json.dumps(reports["validate"]))
    moved = fleet.hosts[0]
    regroup(report, {moved: "numa_9n_9c_nohp_99999999"})
    [answer] = [a for a in report["answers"] if moved in a["hosts"]]
    assert answer["class"] == "numa_9n_9c_nohp_99999999" and answer["count"] == 1
    assert sum(a["count"] for a in report["answers"]) == HOSTS


# ---- property: the answers partition any fleet -------------------------------------------------

GI = 1 << 30
_ERRORS = ("[reserved-memory-sum] not balanced", "[node-capacity] node 1 over")
_WARNINGS = ("kubelet version unknown", "[eviction-defaults-dropped] imagefs dropped", "[memory-only-node] node 1")


def _result(kind, reserved, warnings, error):
    if kind == "unreachable":
        return {"valid": False, "errors": ["could not check: unreachable"], "warnings": [], "input_error": "unreachable"}
    node = {"id": 0, "memory_total_bytes": 16 * GI, "hugepages_bytes": 0, "reserved_memory_bytes": reserved * GI,
            "guaranteed_memory_bytes": (16 - reserved) * GI}
    return {"valid": kind == "valid", "errors": [] if kind == "valid" else [_ERRORS[error]],
            "warnings": [_WARNINGS[w] for w in sorted(warnings)], "flag": "0:memory=%dGi" % reserved,
            "nodes": [node], "kubelet_warnings": [_WARNINGS[0]]}


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["valid", "invalid", "unreachable"]), st.sampled_from(["ca", "cb", "cc"]),
                          st.integers(1, 2), st.sets(st.integers(0, 2), max_size=2), st.integers(0, 1)),
                min_size=1, max_size=40))
def test_answers_partition_any_fleet(hosts):
    """Property: every host is in exactly one answer; hosts share an answer exactly when they answered
    the same; hosts that need action are exactly those of ACTION statuses; each class pictures its
    largest answer; the text has one line per answer, not per host."""
    results, topologies, names = {}, {}, []
    for index, (kind, cls, reserved, warnings, error) in enumerate(hosts):
        name = "h%02d" % index
        names.append(name)
        results[name] = _result(kind, reserved, warnings, error)
        topologies[name] = {"fingerprint": "sha256:" + cls * 32,
                            "nodes": [{"id": 0, "cpus": [0, 1], "memory_total_bytes": 16 * GI, "hugepages": {}}]}
    report = validate_report(results, topologies, {}, names)
    entries = dict((e["host"], e) for e in report["hosts"])
    seen = [h for a in report["answers"] for h in a["hosts"]]
    assert sorted(seen) == sorted(names)
    key = dict((h, json.dumps(answer_of("validate", entries[h]), sort_keys=True)) for h in names)
    for a in names:
        for b in names:
            assert (entries[a]["answer"] == entries[b]["answer"]) == (key[a] == key[b])
    assert sorted(report["needs_action"]["hosts"]) == sorted(h for h in names if entries[h]["status"] in ACTION)
    for cls in report["classes"]:
        sizes = [a["count"] for a in report["answers"] if a["id"] in cls["answers"]]
        picture = [a for a in report["answers"] if a["id"] == cls["picture"]["answer"]][0]
        assert picture["count"] == max(sizes) and picture["class"] == cls["group"]
    lines = render_text(report)
    fixed = 6 + len(report["warnings"]) + 2 * len(_ERRORS) + 2  # headline, status, kubelet, headers, reasons
    assert len(lines) <= fixed + len(report["classes"]) + 2 * len(report["answers"]), "\n".join(lines)
    for warning in report["warnings"]:
        assert sum(1 for line in lines if line.endswith("] " + warning["text"])) == 1
