# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of ``numaguard.kubelet.kubelet_rollout``: the controller's identity and stale locks.

Only the controller can tell whether the run that holds a host's lock still exists, so the
identity of this run (the ansible-playbook process: host name, pid, its start time) is added
here, and a lock held by a process of this controller that no longer runs is taken over (the
result's ``stale_lock_replaced`` says whose). A lock of another controller is never taken over
automatically (docs/rollout.md: clearing a stale lock).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import socket
import time

from ansible.plugins.action import ActionBase
from ansible.utils.display import Display

# not _kubelet_config.rollout: every task worker compiles what this file imports (rollout_common.py says why)
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.rollout_common import plan_dirs, start_ticks
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.rollout_decision import decide as conclude
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.rollout_decision import drain_note, readmit_args, role_input_error, summary_fact, summary_line

display = Display()


def _started_utc(ticks):
    """UTC start time of a process from its start ticks (stable for the whole run)."""
    try:
        with open("/proc/stat") as handle:
            boot = int(next(line for line in handle if line.startswith("btime")).split()[1])
        return boot + int(ticks) / float(os.sysconf("SC_CLK_TCK"))
    except (OSError, StopIteration, ValueError, TypeError):
        return None


def controller_identity():
    """change_id, controller, pid, pid_start, started of this ansible-playbook run."""
    pid = os.getppid()  # task workers are forked from the ansible-playbook process
    ticks = start_ticks(pid)
    began = _started_utc(ticks) if ticks else None
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(began if began is not None else time.time()))
    controller = socket.gethostname() or "controller"
    safe = re.sub(r"[^A-Za-z0-9.]+", "-", controller.split(".")[0])[:40] or "controller"
    return {"change_id": "%s-%s-%d" % (stamp, safe, pid), "controller": controller, "pid": pid,
            "pid_start": ticks or "", "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(began or time.time()))}


def holder_is_dead(holder, identity):
    """Whether a lock record names a process of this controller that no longer runs."""
    if not isinstance(holder, dict) or holder.get("controller") != identity["controller"]:
        return False
    try:
        pid = int(holder.get("pid"))
    except (TypeError, ValueError):
        return False
    if pid == identity["pid"]:
        return False
    ticks = start_ticks(pid)
    return ticks is None or (bool(holder.get("pid_start")) and ticks != holder.get("pid_start"))


class ActionModule(ActionBase):
    """Add the controller's identity; take over a stale lock of this controller."""

    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        self._supports_check_mode = True
        result = super().run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        # controller-side inputs of the role's decisions (issue 22), never sent to the host
        decide = args.pop("decide", None)
        report = args.pop("report", None)
        inputs = decide.get("inputs") if isinstance(decide, dict) else None
        if isinstance(inputs, dict):
            # the role's inputs, checked before anything reaches the host (settings omitted: not set)
            inputs = dict(inputs, settings_defined="settings" in args, settings=args.get("settings"),
                          config_mode=args.get("config_mode"), backup_root=args.get("state_dir"),
                          health_url=args.get("health_url"))
            wrong = role_input_error(task_vars.get("inventory_hostname", "?"), inputs)
            if wrong:
                result.update(failed=True, msg=wrong)
                return result
        plan = (decide or report or {}).get("plan") if isinstance(decide or report, dict) else None
        if "kubelet_dirs" not in args and isinstance(plan, dict):
            args["kubelet_dirs"] = plan_dirs(plan)
        identity = controller_identity()
        for key, value in identity.items():
            if args.get(key) in (None, ""):
                args[key] = value
        answer = self._execute_module(module_name="numaguard.kubelet.kubelet_rollout", module_args=args, task_vars=task_vars)
        holder = answer.get("lock_holder")
        if args["operation"] == "status" and holder:
            # a transaction holds its own flock: while it runs it is alive, whatever became of its controller
            answer["lock_stale"] = holder_is_dead(holder, identity) and not holder.get("transaction")
            answer["change_id"] = identity["change_id"]
        if answer.get("failed") and args["operation"] in ("begin", "transaction") and holder and holder_is_dead(holder, identity) \
                and not holder.get("transaction") \
                and not args.get("take_over"):
            args["take_over"] = holder.get("change_id")
            answer = self._execute_module(module_name="numaguard.kubelet.kubelet_rollout", module_args=args, task_vars=task_vars)
            if not answer.get("failed"):
                answer["stale_lock_replaced"] = holder
                display.warning("%s: took over the stale lock of pid %s, change %s, started %s: that process no longer runs "
                                "on this controller" % (task_vars.get("inventory_hostname", "?"), holder.get("pid"),
                                                        holder.get("change_id"), holder.get("started")))
        elif answer.get("stale_lock_free") and answer.get("stale_lock_replaced"):
            stale = answer["stale_lock_replaced"]
            names = (task_vars.get("inventory_hostname", "?"), stale.get("change_id"), stale.get("pid"), stale.get("controller"),
                     stale.get("started"))
            display.warning("%s: replaced the stale lock record of change %s (pid %s on controller %s, started %s): no process "
                            "held its flock any more" % names)
        elif answer.get("failed") and holder:
            answer["msg"] = "%s. If that run is dead, clear the lock as docs/rollout.md says (kubelet_numa_break_lock=%s)" % (
                answer.get("msg", ""), holder.get("change_id"))
        result.update(answer)
        host = task_vars.get("inventory_hostname", "?")
        if decide is not None and args["operation"] == "status" and not answer.get("failed") and not answer.get("unreachable"):
            self._decide(result, host, decide, task_vars)
        if isinstance(report, dict) and args["operation"] == "transaction" and not answer.get("unreachable"):
            self._report(result, host, report)
        return result

    def _decide(self, result, host, decide, task_vars):
        """operation=status with ``decide`` (options; readmit_check or readmit; plan unless the module
        planned ``settings``): the preflight's conclusion as facts."""
        decide = decide if isinstance(decide, dict) else {}
        planned = result.get("plan")
        plan = planned if isinstance(planned, dict) else decide.get("plan")
        if not isinstance(plan, dict):
            result.update(failed=True, msg="decide: give plan (kubelet_config's result) or settings, and options")
            return
        check_mode = bool(self._play_context.check_mode)
        readmit = decide.get("readmit")
        if isinstance(readmit, dict) and (readmit.get("skipped") or "readmit" not in readmit):
            readmit = None
        check = decide.get("readmit_check")
        args = readmit_args(plan, check) if isinstance(check, dict) else None
        if args is not None:
            # the re-admission check runs on the host (its running pods, its topology), read-only
            readmit = self._execute_module(module_name="numaguard.kubelet.admission_check", module_args=args, task_vars=task_vars)
            result["readmit"] = readmit
            if readmit.get("failed") or readmit.get("unreachable"):
                result.update(failed=True, msg="re-admission check with the new configuration: %s" % readmit.get("msg", "failed"))
                if readmit.get("unreachable"):
                    result["unreachable"] = True
                return
            display.display("%s: re-admission check (fresh %s, no drain): %s" % (
                host, " and ".join(args["readmit"]["reset"]), "; ".join((readmit.get("readmit") or {}).get("summary") or []) or "done"))
        if isinstance(planned, dict):
            # kubelet_config's old preflight task: changed in check mode when the file would change (so --diff shows it)
            result["changed"] = check_mode and bool(planned.get("needs_write"))
        decision = conclude(host, plan, result, readmit, dict(decide.get("options") or {}, state_dir=result.get("state_dir")),
                            check_mode)
        result["decision"] = decision
        display.display("%s: %s" % (host, decision["explain"]))
        if decision["warning"]:
            display.warning(decision["warning"])
        if decision["refuse"]:
            result.update(failed=True, msg=decision["refuse"])
            return
        facts = {"kubelet_numa_preflight": "ok", "kubelet_numa_decision": decision, "kubelet_numa_decided_at": time.time()}
        if isinstance(planned, dict):
            facts["kubelet_numa_plan"] = planned  # what the change (change.yml) reads: path, locations, kubelet_version
        if decision["summary"]:
            facts["kubelet_numa_summary"] = decision["summary"]
            display.display(summary_line(decision["summary"], check_mode))
        result["ansible_facts"] = facts

    def _report(self, result, host, report):
        """operation=transaction with ``report`` (plan, drain_result, kubectl, ...): the host's summary fact."""
        plan = report.get("plan") if isinstance(report.get("plan"), dict) else {}
        note = drain_note(report)
        if note:
            display.display(note)
        if result.get("failed"):
            summary = summary_fact(host, plan, result, True)
            result["kubelet_numa_summary"] = summary  # the role's rescue records it
            return
        notes = ["skipping cordon and drain of node %s" % report.get("node_name")] if note else []
        summary = summary_fact(host, plan, result, bool(result.get("applies")), notes)
        display.display(summary_line(summary))
        result["ansible_facts"] = {"kubelet_numa_summary": summary, "kubelet_numa_result": summary["result"]}
