# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of ``numaguard.kubelet.numa_report``: build the report once, render it, write files.

Runs on the controller only. Relative output paths are relative to the current directory of
``ansible-playbook`` (where a CI job runs), never to the playbook or inventory directory. Files
are written whole (``_io.write_file``: temporary file, fsync, rename), so a reader never sees half a report.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.text.converters import to_native
from ansible.plugins.action import ActionBase

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.numa_report import argument_spec
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.controller_files import plain as _plain
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.controller_files import resolve_output, write_whole
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import KINDS, ReportError, check_pod_report, discover_report, regroup, validate_report
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report_render import (
    render_classes_inventory,
    render_json,
    render_junit,
    render_prometheus,
    render_text,
)


def _render_html(report):
    """The HTML rendering of ``report``."""
    # imported here: a report without html_file does not compile report_html.py (15 KB; issue 24)
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report_html import render_html

    return render_html(report)


OUTPUTS = (("json_file", render_json), ("junit_file", render_junit), ("html_file", _render_html),
           ("prometheus_file", render_prometheus))


class ActionModule(ActionBase):
    """Build the report for ``kind`` from the play's hosts and write the requested renderings."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(argument_spec())  # the module's spec, the one list of its options

    def _hostvar(self, hostvars, host, name):
        # hostvars[host] computes all of the host's variables (VariableManager.get_vars): once per
        # host and task, not once per variable read; and the values read are module results and
        # facts, data that templating returns unchanged but walks whole (a 16-node numa_topology:
        # about 14 ms per read), so they are read raw unless a value is a template (issue 24)
        try:
            raw = self._views.get(host)
            if raw is None:
                raw_get = getattr(hostvars, "raw_get", None)
                raw = self._views[host] = raw_get(host) if raw_get is not None else hostvars[host]
            value = raw.get(name) if isinstance(raw, Mapping) else None
            if not isinstance(raw, Mapping) or (isinstance(value, str) and "{{" in value):
                value = hostvars[host].get(name)
            return _plain(value)
        except Exception:  # a host without the variable, or one whose value cannot be templated
            return None

    def run(self, tmp=None, task_vars=None):
        self._supports_check_mode = True
        self._views = {}
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        args = self._task.args
        kind = args.get("kind")
        if kind not in KINDS:
            raise AnsibleActionFail("kind must be one of %s, got %r" % (", ".join(KINDS), kind))
        hostvars = task_vars.get("hostvars") or {}
        hosts, active = _hosts(args, task_vars)
        groups_of = dict((h, list(self._hostvar(hostvars, h, "group_names") or [])) for h in hosts)
        topologies = args.get("topologies")
        if topologies is None:
            topologies = dict((h, self._hostvar(hostvars, h, "numa_topology")) for h in hosts)
        elif not isinstance(topologies, Mapping):
            raise AnsibleActionFail("topologies must be a dict of host -> numa_topology, got %r" % (topologies,))
        classes = args.get("classes")
        if classes is not None and not isinstance(classes, Mapping):
            raise AnsibleActionFail("classes must be a dict of host -> hardware class group, got %r" % (classes,))
        unreachable = []  # hosts whose registered result says they did not answer
        try:
            if kind == "discover":
                alive = set(str(h) for h in active)
                failed = dict((h, "failed or unreachable during this play") for h in hosts if h not in alive)
                if args.get("result_var"):  # the registered numa_facts results: name the hosts not reached
                    for h in hosts:
                        gathered = self._hostvar(hostvars, h, args["result_var"])
                        if isinstance(gathered, Mapping) and gathered.get("unreachable"):
                            failed[h] = "unreachable: %s" % (gathered.get("msg") or "no answer")
                            unreachable.append(h)
                report = discover_report(topologies, groups_of, hosts, failed=failed)
            elif kind == "validate":
                results = args.get("results")
                if not isinstance(results, Mapping):
                    raise AnsibleActionFail("results must be a dict of host -> reserved_memory_check result")
                results = _plain(results)
                report = validate_report(results, topologies, groups_of, [h for h in hosts if h in results]
                                         or sorted(results))
            else:
                name = args.get("result_var") or "admission_check_result"
                results = args.get("results")
                if results is None:
                    results = dict((h, self._hostvar(hostvars, h, name)) for h in hosts)
                unreachable = [h for h in hosts if isinstance(results.get(h), Mapping) and results[h].get("unreachable")]
                report = check_pod_report(_plain(results), topologies, groups_of, hosts, active)
        except ReportError as exc:
            raise AnsibleActionFail("numa_report: %s" % to_native(exc))
        if classes:
            regroup(report, dict((str(k), str(v)) for k, v in classes.items()))
        files = _write_outputs(args, report, self._task.check_mode)
        result.update({
            "changed": bool(files) and not self._task.check_mode,
            "report": report,
            "headline": report["headline"],
            "counts": report["counts"],
            "lines": render_text(report, ["%s%s" % (p, " (not written: check mode)" if self._task.check_mode else "")
                                          for p in files.values()]),
            "files": files,
            "unreachable": unreachable,
        })
        return result


def _hosts(args, task_vars):
    """(the hosts reported on, the hosts still active in the play)."""
    hosts = args.get("hosts")
    if hosts is None:
        hosts = task_vars.get("ansible_play_hosts_all") or []
    if isinstance(hosts, str) or not isinstance(hosts, (list, tuple)):
        raise AnsibleActionFail("hosts must be a list of host names, got %r" % (hosts,))
    hosts = [str(h) for h in hosts]
    active = args.get("active")
    if active is None:
        active = task_vars.get("ansible_play_hosts") or hosts
    return hosts, active


def _write_outputs(args, report, check_mode):
    """Each ``*_file`` option's rendering written whole (not in check mode); {kind: path}."""
    files = {}
    outputs = list(OUTPUTS) + [("text_file", lambda r: "\n".join(render_text(r)) + "\n"),
                               ("classes_file", render_classes_inventory)]
    for option, render in outputs:
        if not args.get(option):
            continue
        path = resolve_output(args[option])
        if not check_mode:
            try:
                write_whole(path, render(report))
            except OSError as exc:
                raise AnsibleActionFail("%s: cannot write %s: %s" % (option, path, exc.strerror or exc))
        files[option[:-len("_file")]] = path
    return files
