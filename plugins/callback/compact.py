# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: compact
type: stdout
short_description: One screen per play at fleet scale; failures in full
version_added: 0.2.0
description:
  - A stdout callback for the collection's fleet playbooks (C(discover.yml), C(validate.yml),
    C(check_pod.yml), C(apply.yml)) and any other play. It prints what an operator reads and
    leaves out the per-host lines that grow with the fleet.
  - It prints one line per play; the output of C(ansible.builtin.debug) tasks (the reports) as plain
    text, a list one element per line; one line per task that changed something, with the number of
    hosts and their names; every failure and every unreachable host in full, exactly as the
    C(default) callback prints them (also failures that C(ignore_errors) or a C(rescue) handles);
    warnings and deprecations (a warning that begins by naming its host, as the sysfs fallbacks
    of M(numaguard.kubelet.numa_facts) do, once per task with the hosts that gave it); diffs with
    C(--diff); a failed run-once task once, labelled
    C(run once for the play) instead of the host Ansible ran it for, and counted for the play in
    the recap, not as that host's failure; and a recap of one line for the run plus one
    line per host that failed, was unreachable, was rescued or ignored an error.
  - It leaves out C(ok) and C(skipping) lines per host, per-host C(changed) lines (counted instead),
    task banners of tasks with nothing to show, and the recap lines of hosts where all went well.
  - With C(-v) or more it prints everything the C(default) callback prints.
  - "Enable it with C(ANSIBLE_STDOUT_CALLBACK=numaguard.kubelet.compact) or C(stdout_callback =
    numaguard.kubelet.compact) in the C([defaults]) section of C(ansible.cfg)."
extends_documentation_fragment:
  - ansible.builtin.default_callback
  - ansible.builtin.result_format_callback
requirements:
  - set as the stdout callback in the configuration
"""

import json
import re

from ansible import constants as C
from ansible.plugins.callback.default import CallbackModule as DefaultCallback

DEBUG_ACTIONS = frozenset(("debug", "ansible.builtin.debug", "ansible.legacy.debug"))
#: Names of changed hosts printed on a task's line before "+N more".
MAX_NAMES = 12


def _task(result):
    return getattr(result, "task", None) or result._task


def _data(result):
    data = getattr(result, "result", None)
    return data if data is not None else result._result


def _host(result):
    return getattr(result, "host", None) or result._host


#: A module warning that names its host or snapshot (numa_facts, numa_snapshot): "host h07: <text>".
HOST_WARNING = re.compile(r"^(host|snapshot) (\S+): (.+)$", re.S)


def _warning_text(warning):
    """The text of a result's warning: a string before ansible-core 2.19, a WarningSummary from 2.19."""
    event = getattr(warning, "event", None)
    return getattr(event, "msg", None) if event is not None else warning


def _rescued(task):
    """Whether a failure of ``task`` goes to a ``rescue`` (Ansible then counts it as rescued, not failed)."""
    parent = getattr(task, "_parent", None)
    while parent is not None:
        if getattr(parent, "rescue", None):
            return True
        parent = getattr(parent, "_parent", None)
    return False


def names_line(names, limit=MAX_NAMES):
    """``h01, h02 (+3 more)``: the first ``limit`` names, then how many are left out."""
    names = list(names)
    shown = ", ".join(names[:limit])
    if len(names) > limit:
        shown += " (+%d more)" % (len(names) - limit)
    return shown


def message_lines(result_data):
    """A debug task's output as text lines: ``msg`` (a list one item per line) or ``var: value``."""
    if "msg" in result_data:
        value = result_data["msg"]
        prefix = ""
    else:
        keys = [k for k in result_data if not k.startswith("_") and k not in ("changed", "failed")]
        if not keys:
            return []
        prefix = "%s: " % keys[0]
        value = result_data[keys[0]]
    if isinstance(value, (list, tuple)):
        lines = [prefix.rstrip()] if prefix else []
        for item in value:
            lines.extend(("  " if prefix else "") + line for line in _text(item).splitlines() or [""])
        return lines
    text = _text(value)
    lines = text.splitlines() or [""]
    if prefix and len(lines) > 1:
        return [prefix.rstrip()] + ["  " + line for line in lines]
    return [prefix + lines[0]] + lines[1:]


def _text(value):
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


class CallbackModule(DefaultCallback):
    """The default callback, quiet about hosts where nothing happened."""

    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "stdout"
    CALLBACK_NAME = "numaguard.kubelet.compact"

    def __init__(self):
        super().__init__()
        self._changed = []        # hosts that changed something in the current task
        self._changed_task = None
        self._seen_hosts = set()  # inventory hosts of every play (the hosts a run-once play judged too)
        self._unreachable_shown = set()
        self._failures = {}       # (task uuid, message) -> hosts after the first, printed once as one line
        self._failure_order = []
        self._run_once_failed = []  # (host Ansible counted it on, task name): a run-once task's failure
        self._host_warnings = {}  # text after "host X: " -> the hosts/snapshots that warned it in this task
        self._run_once_label = None

    # -- options: the default callback's, with ok/skipped hosts hidden below -v ---------------------
    def _verbose(self):
        return self._display.verbosity > 0

    def set_options(self, task_keys=None, var_options=None, direct=None):
        super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
        if not self._verbose():
            self.set_option("display_ok_hosts", False)
            self.set_option("display_skipped_hosts", False)

    # -- banners: one line, printed only before something to show -----------------------------------
    def _print_task_banner(self, task):
        if self._verbose():
            return super()._print_task_banner(task)
        prefix = self._task_type_cache.get(task._uuid, "TASK")
        name = self._last_task_name or task.get_name().strip()
        check = " [CHECK MODE]" if task.check_mode and self.get_option("check_mode_markers") else ""
        self._display.display("%s [%s]%s" % (prefix, name, check))
        self._last_task_banner = task._uuid
        return None

    def _note_play_hosts(self, play):
        """Remember the play's inventory hosts (--limit applied): a play whose tasks all run once
        still judged every one of them, and the recap counts them."""
        try:
            inventory = play.get_variable_manager()._inventory
            hosts = inventory.get_hosts(play.hosts)
        except Exception:  # noqa: BLE001 - counting is best effort; the recap falls back to the stats
            return
        self._seen_hosts.update(h.name for h in hosts if not getattr(h, "implicit", False))

    def v2_playbook_on_play_start(self, play):
        self._flush_changed()
        self._note_play_hosts(play)
        if self._verbose():
            return super().v2_playbook_on_play_start(play)
        self._play = play
        name = play.get_name().strip()
        check = " [CHECK MODE]" if play.check_mode and self.get_option("check_mode_markers") else ""
        self._display.display("\nPLAY [%s]%s" % (name, check) if name else "\nPLAY%s" % check)
        return None

    def v2_playbook_on_no_hosts_matched(self):
        self._display.display("  no hosts matched", color=C.COLOR_SKIP)

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._flush_changed()
        super().v2_playbook_on_task_start(task, is_conditional)

    def v2_playbook_on_handler_task_start(self, task):
        self._flush_changed()
        super().v2_playbook_on_handler_task_start(task)

    def v2_playbook_on_include(self, included_file):
        if self._verbose():
            super().v2_playbook_on_include(included_file)

    # -- results --------------------------------------------------------------------------------------
    def _group_host_warnings(self, result):
        """Take the warnings that name their host out of ``result``: the same text from many hosts is
        printed once when the task ends, with the hosts (bounded), instead of once per host."""
        data = _data(result)
        raw = data.get("warnings") if isinstance(data, dict) else None
        if not raw:
            return
        modern = getattr(self, "_handle_warnings_and_exception", None) is not None
        # 2.19+: the callback shows the task result's WarningSummary objects; before: the strings in data
        items = list(getattr(result, "warnings", None) or []) if modern else list(raw)
        keep = []
        for warning in items:
            match = HOST_WARNING.match(str(_warning_text(warning) or ""))
            if match is None:
                keep.append(warning)
                continue
            who = match.group(2) if match.group(1) == "host" else "snapshot " + match.group(2)
            hosts = self._host_warnings.setdefault(match.group(3), [])
            if who not in hosts:
                hosts.append(who)
        if len(keep) == len(items):
            return
        if modern:
            data.pop("warnings", None)  # the base class then shows none of them: the others are shown here
            for warning in keep:
                self._display._warning(warning)
        else:
            data["warnings"] = keep

    def _flush_host_warnings(self):
        grouped, self._host_warnings = self._host_warnings, {}
        for text, hosts in grouped.items():
            self._display.warning("%s (%s)" % (text, names_line(sorted(hosts))))

    def _warnings(self, result):
        if not self._verbose():
            self._group_host_warnings(result)
        handler = getattr(self, "_handle_warnings_and_exception", None)
        if handler is not None:  # ansible-core 2.19+
            handler(result)
        else:
            self._handle_exception(_data(result))
            self._handle_warnings(_data(result))

    def _print_debug(self, result, item=False):
        task = _task(result)
        if self._last_task_banner != task._uuid:
            self._print_task_banner(task)
        self._warnings(result)
        lines = message_lines(_data(result))
        label = self.host_label(result)
        # a report printed once (run_once, or a play on the controller) reads without a host label
        if not (task.run_once or item or label == "localhost") or len(lines) == 0:
            label = "[%s]" % label
            if len(lines) <= 1:
                lines = ["%s %s" % (label, lines[0] if lines else "")]
            else:
                lines = [label] + ["  " + line for line in lines]
        for line in lines:
            self._display.display(line)

    def _count_changed(self, result):
        task = _task(result)
        if self._changed_task is None or self._changed_task._uuid != task._uuid:
            self._flush_changed()
            self._changed_task = task
        name = self.host_label(result)
        if name not in self._changed:
            self._changed.append(name)

    def _flush_changed(self, failures=True):
        if failures:
            self._flush_failures()
            self._flush_host_warnings()
        task, hosts = self._changed_task, self._changed
        self._changed_task, self._changed = None, []
        if task is None or not hosts:
            return
        if self._last_task_banner != task._uuid:
            self._print_task_banner(task)
        self._display.display("  changed on %d host(s): %s" % (len(hosts), names_line(sorted(hosts))),
                              color=C.COLOR_CHANGED)

    def v2_runner_on_ok(self, result):
        if self._verbose():
            return super().v2_runner_on_ok(result)
        task, data = _task(result), _data(result)
        if task.action in DEBUG_ACTIONS and not (task.loop and "results" in data):
            self._print_debug(result)
            return None
        self._warnings(result)
        if data.get("changed", False) and not (task.loop and "results" in data):
            self._count_changed(result)
        return None

    def v2_runner_item_on_ok(self, result):
        if self._verbose():
            return super().v2_runner_item_on_ok(result)
        task, data = _task(result), _data(result)
        if task.action in DEBUG_ACTIONS:
            self._print_debug(result, item=True)
            return None
        self._warnings(result)
        if data.get("changed", False):
            self._count_changed(result)
        return None

    def v2_runner_on_skipped(self, result):
        if self._verbose():
            return super().v2_runner_on_skipped(result)
        self._warnings(result)
        return None

    def v2_runner_item_on_skipped(self, result):
        if self._verbose():
            return super().v2_runner_item_on_skipped(result)
        return None

    @staticmethod
    def _failure_key(result):
        data = _data(result)
        message = data.get("msg") if isinstance(data, dict) else None
        if not message:
            return None
        return (_task(result)._uuid, _text(message))

    def _flush_failures(self):
        order, failures = self._failure_order, self._failures
        self._failure_order, self._failures = [], {}
        for key in order:
            hosts = failures[key]
            if hosts:
                self._display.display("  the same failure on %d more host(s): %s" % (len(hosts), names_line(sorted(hosts))),
                                      color=C.COLOR_ERROR)

    def host_label(self, result):
        """The default callback's label, except for a failed run-once task: it failed for the play,
        not on the host Ansible happened to run it for (every host of the play stops)."""
        if self._run_once_label is not None:
            return self._run_once_label
        return super().host_label(result)

    def v2_runner_on_failed(self, result, ignore_errors=False):
        task = _task(result)
        if getattr(task, "run_once", False):
            self._flush_changed(failures=False)
            if not ignore_errors and not _rescued(task):
                # Ansible counts it on the first host: the recap gives it back (see v2_playbook_on_stats)
                self._run_once_failed.append((_host(result).get_name(), task.get_name()))
            self._run_once_label = "run once for the play"
            try:
                return super().v2_runner_on_failed(result, ignore_errors=ignore_errors)
            finally:
                self._run_once_label = None
        self._flush_changed(failures=False)
        if not self._verbose():
            # the same failure of the same task (a bad file on the controller, a wrong variable for
            # every host) is printed in full once, then counted: one line for the other hosts
            key = self._failure_key(result)
            if key is not None and key in self._failures:
                self._failures[key].append(self.host_label(result))
                return None
            if key is not None:
                self._failures[key] = []
                self._failure_order.append(key)
        return super().v2_runner_on_failed(result, ignore_errors=ignore_errors)

    def v2_runner_item_on_failed(self, result):
        self._flush_changed()
        return super().v2_runner_item_on_failed(result)

    def v2_runner_on_unreachable(self, result):
        self._flush_changed(failures=False)
        name = self.host_label(result)
        if not self._verbose() and name in self._unreachable_shown:
            return None  # printed in full once per run; the recap counts it
        self._unreachable_shown.add(name)
        return super().v2_runner_on_unreachable(result)

    # -- recap: one line for the run, one per host that needs a look ----------------------------------
    def v2_playbook_on_stats(self, stats):
        self._flush_changed()
        if self._verbose():
            return super().v2_playbook_on_stats(stats)
        hosts = sorted(set(stats.processed.keys()) | self._seen_hosts)
        summaries = dict((h, stats.summarize(h)) for h in hosts)
        for host, _name in self._run_once_failed:
            if host in summaries and summaries[host]["failures"] > 0:
                summaries[host]["failures"] -= 1  # the play's failure, not this host's
        failed = [h for h in hosts if summaries[h]["failures"]]
        unreachable = [h for h in hosts if summaries[h]["unreachable"]]
        changed = [h for h in hosts if summaries[h]["changed"]]
        notable = [h for h in hosts if any(summaries[h][k] for k in ("failures", "unreachable", "rescued", "ignored"))]
        parts = ["%d host(s)" % len(hosts), "%d ok" % (len(hosts) - len(set(failed) | set(unreachable))),
                 "%d changed" % len(changed), "%d failed" % len(failed), "%d unreachable" % len(unreachable)]
        if self._run_once_failed:
            parts.append("%d run-once task(s) failed" % len(self._run_once_failed))
        color = (C.COLOR_ERROR if failed or unreachable or self._run_once_failed
                 else (C.COLOR_CHANGED if changed else C.COLOR_OK))
        self._display.display("\nPLAY RECAP: %s" % ", ".join(parts), color=color)
        if self._run_once_failed:
            self._display.display("  failed for the play (run once, not a host's failure): %s"
                                  % names_line([name for _host_name, name in self._run_once_failed]), color=C.COLOR_ERROR)
        for host in notable[:MAX_NAMES]:
            t = summaries[host]
            self._display.display(
                "  %s : ok=%d changed=%d unreachable=%d failed=%d skipped=%d rescued=%d ignored=%d"
                % (host, t["ok"], t["changed"], t["unreachable"], t["failures"], t["skipped"], t["rescued"],
                   t["ignored"]),
                color=C.COLOR_ERROR if t["failures"] or t["unreachable"] else C.COLOR_WARN)
        if len(notable) > MAX_NAMES:
            self._display.display("  +%d more host(s) that failed, were unreachable, rescued or ignored an error: %s"
                                  % (len(notable) - MAX_NAMES, names_line(notable[MAX_NAMES:])),
                                  color=C.COLOR_ERROR if failed or unreachable else C.COLOR_WARN)
        if stats.custom and self.get_option("show_custom_stats"):
            for key in sorted(stats.custom):
                self._display.display("  custom stats %s: %s" % (key, _text(stats.custom[key])))
        return None
