# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""check_pod.yml's walk, from its admission task to its report, enters no file twice.

The walk is run in this process as the playbook runs it (docs/development.md, "A pod's walk"):
the ``admission_check`` action plugin reads the pod file and runs the module (its ``main()``,
here in-process instead of on the host), which runs its backend, the engine and the module's
own text (``_report/admission_table.py``); then the ``numa_report`` action plugin builds the
report from that registered result and renders every format (text, JSON, JUnit, Prometheus,
HTML).

What is counted, precisely: every Python ``call`` event (``sys.setprofile``) whose code is in a
file under the collection's ``plugins/``. At each such call the stack is read from the outermost
frame to the new one, keeping only frames of ``plugins/`` files (ansible-core, the standard
library and this test are not stops and do not separate stops), and consecutive frames of the
same file are collapsed into one stop. That chain of stops is the path the walk took to this
call. "Enters no file twice" means: in no chain does a file appear twice, that is, no file is
entered again, through another file, while one of its functions is still running (a callback
into a caller's file, a base class's template method calling a subclass that calls back into
the base's file, an adapter defined in the caller's file). Files visited one after another
(the engine, then the report layer, after the engine returned) are separate descents, not
re-entries; each file of the walk is listed once in the stops the docs name.
"""

# core-unit-targets: same on every core: ActionBase.run and _execute_module are stubbed, ansible-core frames are not stops

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import contextlib
import io
import json
import os
import re
import sys

import pytest
from ansible.plugins.action import ActionBase

from ansible_collections.numaguard.kubelet.plugins.action import admission_check as admission_action
from ansible_collections.numaguard.kubelet.plugins.action import numa_report as report_action
from ansible_collections.numaguard.kubelet.plugins.modules import admission_check as admission_module
from ansible_collections.numaguard.kubelet.tests.fleet import topologies
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import patch_module_args
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.test_admission_check import CONFIG

PLUGINS = os.sep + os.path.join("ansible_collections", "numaguard", "kubelet", "plugins") + os.sep

PODS = """apiVersion: v1
kind: Pod
metadata: {name: db}
spec:
  containers:
    - {name: c, image: x, resources: {requests: {cpu: "4", memory: 8Gi}, limits: {cpu: "4", memory: 8Gi}}}
    - {name: d, image: x, resources: {requests: {cpu: "2", memory: 1Gi}, limits: {cpu: "2", memory: 1Gi}}}
---
apiVersion: v1
kind: Pod
metadata: {name: huge}
spec:
  containers:
    - {name: c, image: x, resources: {requests: {cpu: "4", memory: 900Gi}, limits: {cpu: "4", memory: 900Gi}}}
"""


class _Task:
    def __init__(self, args):
        self.args = args
        self.check_mode = False


class _Loader:
    def get_real_file(self, path, decrypt=True):
        return path


def _stop_of(filename):
    """``plugins/...`` part of a collection file's path, or None for any other file."""
    if PLUGINS not in filename:
        return None
    return "plugins/" + filename.rsplit(PLUGINS, 1)[1].replace(os.sep, "/")


class _Walk:
    """The chains of stops (see the module docstring) and the order files were first entered."""

    def __init__(self):
        self.reentries = {}
        self.first_entered = []

    def __call__(self, frame, event, _arg):
        if event != "call" or _stop_of(frame.f_code.co_filename) is None:
            return
        chain = []
        importing = False  # a call made while a collection file is being imported (class bodies, decorators)
        while frame is not None:
            stop = _stop_of(frame.f_code.co_filename)
            if stop is not None and (not chain or chain[-1] != stop):
                chain.append(stop)
            importing = importing or (stop is not None and frame.f_code.co_name == "<module>")
            frame = frame.f_back
        chain.reverse()
        if not importing and chain[-1] not in self.first_entered:
            self.first_entered.append(chain[-1])
        if len(set(chain)) != len(chain):
            self.reentries[tuple(chain)] = self.reentries.get(tuple(chain), 0) + 1


def _run_module_in_process(module_args):
    """What ``_execute_module`` does, with the module's ``main()`` run here: its JSON result."""
    out = io.StringIO()
    with patch_module_args(dict(module_args, _ansible_check_mode=False)), contextlib.redirect_stdout(out):
        with pytest.raises(SystemExit):
            admission_module.main()
    return json.loads(out.getvalue())


def _walk(monkeypatch, tmp_path, policy, scope):
    root = str(tmp_path / "h01")
    topologies.write_tree("intel-2s", root, hostname="h01")
    kubelet_dir = os.path.join(root, "var", "lib", "kubelet")
    os.makedirs(kubelet_dir, exist_ok=True)
    with open(os.path.join(kubelet_dir, "config.yaml"), "w") as handle:
        handle.write(CONFIG.replace("topologyManagerPolicy: restricted\n", "topologyManagerPolicy: %s\ntopologyManagerScope: %s\n"
                                    % (policy, scope)))
    pod_file = tmp_path / "pods.yaml"
    pod_file.write_text(PODS)
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    check = admission_action.ActionModule.__new__(admission_action.ActionModule)
    check._task = _Task({"pod_file": str(pod_file), "root": root, "kubelet_version": "1.32"})
    check._loader = _Loader()
    check._find_needle = lambda _dirname, path: path
    check._execute_module = lambda module_name, module_args, task_vars: _run_module_in_process(module_args)
    report = report_action.ActionModule.__new__(report_action.ActionModule)
    report._task = _Task({"kind": "check_pod", "json_file": str(tmp_path / "r.json"), "html_file": str(tmp_path / "r.html"),
                          "junit_file": str(tmp_path / "r.xml"), "prometheus_file": str(tmp_path / "r.prom"),
                          "text_file": str(tmp_path / "r.txt")})
    walk = _Walk()
    sys.setprofile(walk)
    try:
        result = check.run(task_vars={})
        hostvars = {"h01": {"group_names": ["workers"], "admission_check_result": result}}
        reported = report.run(task_vars={"hostvars": hostvars, "ansible_play_hosts_all": ["h01"],
                                         "ansible_play_hosts": ["h01"]})
    finally:
        sys.setprofile(None)
    return walk, result, reported


@pytest.mark.parametrize("policy,scope", [("restricted", "container"), ("best-effort", "pod"), ("none", "container")])
def test_the_walk_enters_no_file_twice(monkeypatch, tmp_path, policy, scope):
    walk, result, reported = _walk(monkeypatch, tmp_path, policy, scope)
    assert [p["verdict"] for p in result["pods"]] == ["admitted", "rejected"]  # the walk did the work
    assert reported["report"]["rejected"] == ["h01"] or reported["report"]["admitted"] == ["h01"]
    assert walk.reentries == {}, "\n".join(
        "%d x %s" % (count, " -> ".join(chain)) for chain, count in sorted(walk.reentries.items(), key=lambda i: -i[1])[:10])


def test_the_walk_is_the_one_in_the_docs(monkeypatch, tmp_path):
    """docs/development.md's numbered stops are the files the walk enters at the orchestration
    level, in that order (every file the walk enters is under one of them)."""
    walk, _result, _reported = _walk(monkeypatch, tmp_path, "restricted", "container")
    docs = os.path.join(os.path.dirname(__file__), "..", "..", "..", "docs", "development.md")
    with open(docs) as handle:
        text = handle.read()
    section = text.split("## A pod's walk", 1)[1].split("\n## ", 1)[0]
    stops = re.findall(r"^\d+\. `(plugins/[^`]+\.py)`", section, re.M)
    assert stops, "docs/development.md has no numbered stops under \"## A pod's walk\""
    assert len(set(stops)) == len(stops), stops
    entered = walk.first_entered
    assert set(stops) <= set(entered), sorted(set(stops) - set(entered))
    assert [f for f in entered if f in stops] == stops
