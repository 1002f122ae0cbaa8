# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The admission_report filter (controller side)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.numaguard.kubelet.plugins.filter.admission_report import admission_report as report_filter

PLAIN = {"name": "web", "namespace": "default", "admitted": True, "reason": "", "message": "", "numa_nodes": [],
         "containers": [{"name": "c", "cpus": "", "memory_blocks": [], "devices": {}}]}
REJECTED = {"name": "db", "namespace": "shop", "admitted": False, "reason": "TopologyAffinityError",
            "message": "Resources cannot be allocated with Topology locality", "numa_nodes": [], "containers": []}


def test_filter_reads_hostvars():
    hostvars = {"h1": {"admission_check_result": {"pods": [PLAIN]}}, "h2": {"other": {"pods": [REJECTED]}}}
    report = report_filter(hostvars, ["h1", "h2"])
    assert report["admitted"] == ["h1"] and report["errors"] == ["h2"]
    assert report_filter(hostvars, ["h2"], var="other")["rejected"] == ["h2"]
    with pytest.raises(AnsibleFilterError) as err:
        report_filter(hostvars, ["nope"])
    assert "host 'nope' is not in the inventory" in str(err.value)
    with pytest.raises(AnsibleFilterError):
        report_filter(hostvars, "h1")


def test_filter_is_deprecated(monkeypatch):
    from ansible.utils.display import Display
    calls = []
    monkeypatch.setattr(Display, "deprecated", lambda self, msg, **kw: calls.append((msg, kw)))
    report_filter({"h1": {"admission_check_result": {"pods": [PLAIN]}}}, ["h1"])
    assert calls and "numa_report" in calls[0][0]
    assert calls[0][1] == {"version": "1.0.0", "collection_name": "numaguard.kubelet"}
