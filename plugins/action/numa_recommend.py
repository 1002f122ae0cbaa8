# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of ``numaguard.kubelet.numa_recommend``: the search, on the controller.

Why on the controller: the search works from the play's ``numa_topology`` facts (one host per
hardware class stands for the class), reads the workload file and writes the outputs there; none
of it needs a host. The search itself is ``module_utils/_recommend`` (standard library only,
host-safe), the file handling ``plugin_utils/recommend_files``. Relative paths are relative to the
current directory of ``ansible-playbook``. Files are written whole (``_io.write_file``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
from collections.abc import Mapping

import yaml
from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.numa_recommend import argument_spec
from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._recommend.recommend import recommend
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.classes import HardwareClassError, hardware_class
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.controller_files import plain as _plain
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.controller_files import resolve_output as _path
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.controller_files import write_whole
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.recommend_files import load_workload, outputs

#: The collection's documented per-class settings (README, playbooks/examples/classes).
DOCUMENTED = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "playbooks",
                                           "examples", "classes", "group_vars"))


def _baselines(directory, classes):
    out = {}
    for name in classes:
        path = os.path.join(directory, "%s.yml" % name)
        if not os.path.isfile(path):
            continue
        try:
            with open(path) as handle:
                data = yaml.safe_load(handle)
        except (OSError, yaml.YAMLError) as exc:
            raise AnsibleActionFail("baseline_dir: cannot read %s: %s" % (path, to_native(exc)))
        settings = data.get("kubelet_numa_settings") if isinstance(data, dict) else None
        if isinstance(settings, dict):
            out[name] = settings
    return out


class ActionModule(ActionBase):
    """Group the play's topologies by class, recommend, write the files."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(argument_spec())

    def _topology(self, hostvars, host):
        """The host's ``numa_topology``, else its ``numa_topology_file`` (saved numa_facts JSON: absolute,
        relative to the current directory, or to the inventory directory, as validate.yml reads it)."""
        try:
            variables = hostvars[host]
            facts = variables.get("numa_topology")
            given = variables.get("numa_topology_file") if facts is None else None
            inventory_dir = variables.get("inventory_dir")
        except Exception:  # a host whose variables cannot be templated
            return None
        if given:
            given = os.path.expanduser(str(given))
            tried = [given] if os.path.isabs(given) else [_path(given)] + (
                [os.path.join(str(inventory_dir), given)] if inventory_dir else [])
            found = [p for p in tried if os.path.isfile(p)]
            if not found:
                raise AnsibleActionFail("numa_recommend: cannot read the topology file %s of %s: tried %s"
                                        % (given, host, ", ".join(tried)))
            try:
                with open(found[0]) as handle:
                    facts = json.load(handle)
            except (OSError, ValueError) as exc:
                raise AnsibleActionFail("numa_recommend: %s of %s: %s" % (found[0], host, to_native(exc)))
        facts = _plain(facts) if isinstance(facts, Mapping) else None
        if facts is not None and isinstance(facts.get("ansible_facts"), Mapping):
            facts = facts["ansible_facts"].get("numa_topology")
        return facts

    def run(self, tmp=None, task_vars=None):
        self._supports_check_mode = True
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        args = self._task.args
        for required in ("workload_file", "recommend_dir"):
            if not args.get(required):
                raise AnsibleActionFail("%s is required" % required)
        hostvars = task_vars.get("hostvars") or {}
        hosts = args.get("hosts")
        if hosts is None:
            hosts = task_vars.get("ansible_play_hosts") or []
        if isinstance(hosts, str) or not isinstance(hosts, (list, tuple)):
            raise AnsibleActionFail("hosts must be a list of host names, got %r" % (hosts,))
        topologies = args.get("topologies")
        if topologies is not None and not isinstance(topologies, Mapping):
            raise AnsibleActionFail("topologies must be a dict of host -> numa_topology, got %r" % (topologies,))
        classes, members = {}, {}
        for host in [str(h) for h in hosts]:
            if topologies is not None:
                facts = topologies.get(host)
            else:
                facts = self._topology(hostvars, host)
            if not isinstance(facts, Mapping):
                continue
            try:
                group = hardware_class(facts)["group"]
            except HardwareClassError as exc:
                raise AnsibleActionFail("numa_recommend: %s: %s" % (host, to_native(exc)))
            classes.setdefault(group, facts)
            members.setdefault(group, []).append(host)
        if not classes:
            raise AnsibleActionFail("numa_recommend: no host of the play has a numa_topology fact (run numa_facts first)")
        workload_file = _path(args["workload_file"])
        baseline_dir = _path(args["baseline_dir"]) if args.get("baseline_dir") else DOCUMENTED
        try:
            workload = load_workload(workload_file)
            baselines = _baselines(baseline_dir, classes) if os.path.isdir(baseline_dir) else {}
            report = recommend(classes, workload, baselines=baselines, hosts=members)
            files = outputs(report, os.path.basename(workload_file))
        except NumaguardError as exc:
            raise AnsibleActionFail("numa_recommend: %s" % to_native(exc))
        directory = _path(args["recommend_dir"])
        written = []
        for relative in sorted(files):
            path = os.path.join(directory, relative)
            written.append(path)
            if self._task.check_mode:
                continue
            try:
                write_whole(path, files[relative])
            except OSError as exc:
                raise AnsibleActionFail("recommend_dir: cannot write %s: %s" % (path, exc.strerror or exc))
        summary = {}
        for model in report["classes"]:
            winner = model["winner"]
            entry = {"hosts": model["hosts"], "evaluated": model["counts"]["evaluated"],
                     "dropped": model["counts"]["dropped"], "winner": None}
            if winner:
                entry["winner"] = dict((k, winner["result"][k]) for k in ("admitted", "aligned", "offered", "rejected"))
                entry["winner"].update(id=winner["id"], summary=winner["summary"], settings=winner["settings"])
            summary[model["class"]] = entry
        result.update({
            "changed": bool(written) and not self._task.check_mode,
            "lines": list(report["lines"]) + ["%s%s" % (p, " (not written: check mode)" if self._task.check_mode else "")
                                              for p in written],
            "classes": summary,
            "files": written,
        })
        if report["kubelet"]["warnings"]:
            result["warnings"] = list(report["kubelet"]["warnings"])
        return result
