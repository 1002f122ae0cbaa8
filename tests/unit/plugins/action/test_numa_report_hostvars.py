# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""numa_report reads each host's variables once per task (``hostvars[host]`` computes all of a
host's variables on the controller: issue 24) and returns the hosts whose registered result says
they did not answer, which discover.yml and check_pod.yml use instead of a second sweep of hostvars."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase

from ansible_collections.numaguard.kubelet.plugins.action.numa_report import ActionModule


class _Task:
    def __init__(self, args):
        self.args = args
        self.check_mode = False


class _CountingHostvars(dict):
    """hostvars[host] -> that host's variables, counting the lookups."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.lookups = {}
        self.raw_lookups = {}

    def __getitem__(self, host):
        self.lookups[host] = self.lookups.get(host, 0) + 1
        return super().__getitem__(host)


class _RawHostvars(_CountingHostvars):
    """Like Ansible's HostVars: raw_get(host) is the host's variables untemplated (counted apart)."""

    def raw_get(self, host):
        self.raw_lookups[host] = self.raw_lookups.get(host, 0) + 1
        return dict.__getitem__(self, host)


def _run(monkeypatch, args, hostvars, hosts):
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    action = ActionModule.__new__(ActionModule)
    action._task = _Task(args)
    return action.run(task_vars={"hostvars": hostvars, "ansible_play_hosts_all": hosts, "ansible_play_hosts": hosts})


def test_discover_reads_each_host_once_and_names_the_unreachable(monkeypatch):
    hosts = ["h1", "h2", "h3"]
    hostvars = _CountingHostvars({
        "h1": {"group_names": ["workers"], "_ng_facts": {"changed": False}},
        "h2": {"group_names": ["workers"], "_ng_facts": {"unreachable": True, "msg": "ssh: timed out"}},
        "h3": {"group_names": [], "_ng_facts": {"unreachable": True}},
    })
    result = _run(monkeypatch, {"kind": "discover", "result_var": "_ng_facts"}, hostvars, hosts)
    assert result["unreachable"] == ["h2", "h3"]
    assert hostvars.lookups == {"h1": 1, "h2": 1, "h3": 1}
    errors = dict((entry["host"], entry["errors"]) for entry in result["report"]["hosts"])
    assert errors["h2"] == ["unreachable: ssh: timed out"]


def test_check_pod_names_the_unreachable_from_its_results(monkeypatch):
    hosts = ["a", "b"]
    hostvars = _CountingHostvars({
        "a": {"group_names": [], "admission_check_result": {"unreachable": True, "msg": "gone"}},
        "b": {"group_names": [], "admission_check_result": {"unreachable": False}},
    })
    result = _run(monkeypatch, {"kind": "check_pod"}, hostvars, hosts)
    assert result["unreachable"] == ["a"]
    assert hostvars.lookups == {"a": 1, "b": 1}


def test_values_are_read_raw_unless_they_are_templates(monkeypatch):
    """Module results and facts are read through raw_get, once per host; a value that is a
    template (an inventory variable) goes through hostvars[host], which templates it."""
    hosts = ["x", "y"]
    hostvars = _RawHostvars({
        "x": {"group_names": [], "_ng_facts": {"unreachable": True, "msg": "down"}},
        "y": {"group_names": [], "_ng_facts": "{{ templated }}"},
    })
    result = _run(monkeypatch, {"kind": "discover", "result_var": "_ng_facts"}, hostvars, hosts)
    assert result["unreachable"] == ["x"]
    assert hostvars.raw_lookups == {"x": 1, "y": 1}
    assert hostvars.lookups == {"y": 1}
