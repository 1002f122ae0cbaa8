# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.numaguard.kubelet.plugins.filter.numa_fleet_report import FilterModule, numa_fleet_report

GIB = 1024 ** 3


def _facts(fingerprint, pages_1g):
    return {"fingerprint": fingerprint, "nodes": [{
        "id": 0, "cpus": [0, 1], "cpulist": "0-1", "memory_total_bytes": 8 * GIB, "memory_free_bytes": GIB,
        "hugepages": {"hugepages-1Gi": {"page_size_bytes": GIB, "total_pages": pages_1g, "free_pages": 0}}}]}


HOSTVARS = {
    "h1": {"group_names": ["pool"], "numa_topology": _facts("sha256:1", 4)},
    "h2": {"group_names": ["pool"], "numa_topology": _facts("sha256:1", 4)},
    "h3": {"group_names": ["pool"], "numa_topology": _facts("sha256:2", 0)},
    "h4": {"group_names": ["pool"], "numa_topology": _facts("sha256:1", 4)},
}


def test_registered_name():
    assert FilterModule().filters() == {"numa_fleet_report": numa_fleet_report}


def test_flags_the_odd_host():
    report = numa_fleet_report(HOSTVARS, ["h1", "h2", "h3"])
    assert [d["host"] for d in report["differs"]] == ["h3"]
    assert report["lines"][0] == "NUMA topology of 3 hosts: 3 discovered, 0 failed, 2 distinct shapes"


def test_hosts_not_active_count_as_failed_even_with_stale_facts():
    report = numa_fleet_report(HOSTVARS, ["h1", "h2", "h3", "h4"], ["h1", "h3", "h4"])
    assert report["failed"] == {"h2": "failed or unreachable during this play"}
    assert sorted(report["hosts"]) == ["h1", "h3", "h4"]
    assert [d["host"] for d in report["differs"]] == ["h3"]


@pytest.mark.parametrize("hostvars, hosts, message", [
    ([], ["h1"], "numa_fleet_report: input must be hostvars (a dict of host -> variables), got list"),
    (HOSTVARS, "h1", "numa_fleet_report: hosts must be a list of host names, got 'h1'"),
    (HOSTVARS, ["h9"], "numa_fleet_report: host 'h9' is not in the inventory"),
    ({"h1": {"numa_topology": {"nodes": "x"}}}, ["h1"],
     "numa_fleet_report: host h1: numa_topology.nodes must be a list, got 'x'"),
])
def test_errors(hostvars, hosts, message):
    with pytest.raises(AnsibleFilterError) as err:
        numa_fleet_report(hostvars, hosts)
    assert str(err.value) == message


def test_filter_is_deprecated(monkeypatch):
    from ansible.utils.display import Display
    calls = []
    monkeypatch.setattr(Display, "deprecated", lambda self, msg, **kw: calls.append((msg, kw)))
    with pytest.raises(AnsibleFilterError):
        numa_fleet_report({}, "h1")
    assert calls and "numa_report" in calls[0][0]
    assert calls[0][1] == {"version": "1.0.0", "collection_name": "numaguard.kubelet"}
