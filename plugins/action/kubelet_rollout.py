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

from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.rollout import start_ticks

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
        identity = controller_identity()
        for key, value in identity.items():
            if args.get(key) in (None, ""):
                args[key] = value
        answer = self._execute_module(module_name="numaguard.kubelet.kubelet_rollout", module_args=args, task_vars=task_vars)
        holder = answer.get("lock_holder")
        if args["operation"] == "status" and holder:
            answer["lock_stale"] = holder_is_dead(holder, identity)
            answer["change_id"] = identity["change_id"]
        if answer.get("failed") and args["operation"] == "begin" and holder and holder_is_dead(holder, identity) \
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
        return result
