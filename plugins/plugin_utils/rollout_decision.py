# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kubelet_numa role's per-host decisions, in Python (issue 22): what the preflight concludes
from the plan, the lock/journal/health status and the re-admission check, and the summary of a
transaction. Used by the kubelet_rollout action plugin (operation=status with ``decide``, which also runs the
re-admission check when :func:`readmit_args` says it is needed, and
operation=transaction with ``report``); the facts it returns are what apply.yml and the
rollout_summary filter read.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.names import is_dns_subdomain


def _count(value):
    """A non-negative whole number (int or digits), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    text = value.strip() if isinstance(value, str) else ""
    if not text.isdigit():
        return None
    try:
        return int(text)
    except ValueError:  # digits int() does not read (superscripts such as "²")
        return None


def role_input_error(host, inputs):
    """The role's message for wrong inputs of ``host``, or None when they are right.

    ``inputs``: the role variables (``settings``, ``settings_defined``, ``config_mode``,
    ``backup_root``, ``start_cmd``, ``stop_cmd``, ``restart_cmd``, ``health_url``,
    ``backup_keep``, ``drain``, ``wait_node_ready``, ``node_name``), which the action plugin
    gathers from the preflight's status task. Checked there, in the task's own process, rather
    than in a task of their own: that task cost every host a worker and its templates (10 hosts,
    ``apply.yml --check``: 3.2 -> 2.8 s of controller CPU)."""
    if not boolean(inputs.get("settings_defined"), strict=False):
        return ("kubelet_numa: kubelet_numa_settings is not set for %s: give the KubeletConfiguration fields to manage in "
                "the variable kubelet_numa_settings (check its spelling in the inventory, group_vars, host_vars or -e)" % host)
    settings, node_name = inputs.get("settings"), inputs.get("node_name")
    commands = [inputs.get(key) for key in ("start_cmd", "stop_cmd", "restart_cmd")]
    kubectl = boolean(inputs.get("drain"), strict=False) or boolean(inputs.get("wait_node_ready"), strict=False)
    backup_root, health_url = inputs.get("backup_root"), inputs.get("health_url")
    if (isinstance(settings, dict) and settings
            and inputs.get("config_mode") in ("dropin", "merge")
            and isinstance(backup_root, str) and os.path.isabs(backup_root)
            and all(isinstance(command, (str, list)) and command for command in commands)
            and isinstance(health_url, str) and re.match(r"^https?://", health_url)
            and _count(inputs.get("backup_keep")) is not None
            and (not kubectl or is_dns_subdomain(node_name))):
        return None
    return ("kubelet_numa: kubelet_numa_settings must be a non-empty dict of KubeletConfiguration fields, "
            "kubelet_numa_config_mode dropin or merge, kubelet_numa_backup_root an absolute path, the service commands "
            "non-empty, kubelet_numa_health_url an http(s) URL, kubelet_numa_backup_keep >= 0 and, when kubectl is used "
            "(drain / Node Ready), kubelet_numa_node_name a DNS-1123 subdomain (lower-case letters, digits, '-' and '.', "
            "at most 253 characters, starting and ending alphanumeric) (got settings=%s, mode=%s, backup_root=%s, "
            "health_url=%s, backup_keep=%s, node_name=%s)"
            % (json.dumps(settings), inputs.get("config_mode"), backup_root, health_url, inputs.get("backup_keep"),
               json.dumps(node_name)))


def _reset_keys(plan):
    reset = plan.get("reset") or {}
    return [key for key in ("cpu_manager_state", "memory_manager_state") if reset.get(key) is True]


def _locked_refusal(host, status, break_lock, state_dir):
    holder = status.get("lock_holder") or {}
    if not status.get("locked_by_other") or status.get("lock_stale") or holder.get("change_id") == break_lock:
        return None
    started = holder.get("started", "?")
    held = (", flock held on the host by pid %s" % holder["holder_pid"]) if holder.get("holder_pid") else ""
    if holder.get("transaction"):
        held += " (its transaction runs on the host and finishes or restores its change by itself)"
    return ("kubelet_numa: %s is locked by another rollout: pid %s on controller %s, started %s%s (change %s; lock file "
            "%s/rollout.lock). If that run is dead, clear the lock as docs/rollout.md says (kubelet_numa_break_lock=%s)."
            % (host, holder.get("pid", "?"), holder.get("controller", "?"), started, held, holder.get("change_id", "?"),
               state_dir, holder.get("change_id", "?")))


def readmit_args(plan, check):
    """The admission_check module's options for the role's re-admission check, or None when it is
    not needed: a change that resets a state file without a drain (the running pods stay and the
    kubelet re-admits each of them from a fresh state).

    ``plan``: kubelet_config's result; ``check``: the role's inputs - ``enabled``
    (kubelet_numa_readmit_check), ``repair_state``, ``drain``, ``sysfs_root``, ``kubelet_version`` (the
    role's, used when the plan resolved none), ``root_dir`` (the role's, when the plan located none),
    ``running_pods`` (None: the module reads the host's) and ``max_orders``. The admission engine then
    decides as the host's kubelet version (the plan resolved it)."""
    reset = _reset_keys(plan)
    if not check.get("enabled", True) or not reset or check.get("drain"):
        return None
    if not (plan.get("needs_write") or check.get("repair_state")):
        return None
    locations = plan.get("locations") or {}
    args = {
        "root": check.get("sysfs_root") or "/",
        "kubelet_config": plan.get("effective") or {},
        "kubelet_flags": {"root-dir": locations.get("root_dir") or check.get("root_dir") or "/var/lib/kubelet"},
        "readmit": {"start": "fresh", "reset": reset, "max_orders": check.get("max_orders", 100)},
    }
    version = plan.get("kubelet_version") or check.get("kubelet_version")
    if version:
        args["kubelet_version"] = version
    if check.get("running_pods") is not None:
        args["running_pods"] = check["running_pods"]
    return args


def decide(host, plan, status, readmit, options, check_mode):
    """The preflight's conclusion for one host.

    ``plan``: kubelet_config's result; ``status``: kubelet_rollout status (with lock_stale from the
    action plugin); ``readmit``: admission_check's result or None (skipped); ``options``: the role
    variables (repair_state, restart, drain, drain_on_every_change, readmit_on_reject, break_lock,
    state_dir). Returns ``{"refuse": message or None, "applies", "converged", "needs_reset",
    "drain", "explain", "summary" (the host's summary while nothing ran: preview or unchanged, or None)}``.
    """
    reset = plan.get("reset") or {}
    reasons = list(reset.get("reasons") or [])
    needs_reset = bool(_reset_keys(plan))
    needs_write = bool(plan.get("needs_write"))
    repair = bool(options.get("repair_state"))
    applies = needs_write or (repair and needs_reset)
    health = status.get("health") or {}
    problems = list(health.get("problems") or [])
    pending = bool(status.get("pending"))
    journal = status.get("journal") or {}
    # converged: the files as intended, a healthy kubelet, nothing pending AND state files it accepts
    converged = not applies and bool(health.get("healthy")) and not pending and not needs_reset
    why = []
    if pending:
        why.append("an interrupted change %s stopped at step %s (backup %s)"
                   % (journal.get("change_id"), journal.get("step"), journal.get("backup_dir") or "-"))
    if not needs_write and needs_reset:
        explain = "config unchanged, but the kubelet would refuse its state files: %s; %s" % (
            "; ".join(reasons), "repairing (kubelet_numa_repair_state)" if repair
            else "set kubelet_numa_repair_state: true to move them aside")
    elif not needs_write:
        explain = "config unchanged" + (", nothing to do" if converged else ", but the kubelet is not converged (%s)"
                                        % "; ".join(why + problems))
    elif needs_reset:
        explain = "state reset needed: %s" % "; ".join(reasons)
    else:
        explain = "config changes, state files stay (restart only)"
    refuse = _locked_refusal(host, status, options.get("break_lock") or "", options.get("state_dir") or "?")
    if refuse is None and not applies and needs_reset:
        refuse = ("kubelet_numa: %s is NOT converged (%s), and restarting its kubelet would fail: it would refuse its state "
                  "files (%s); set kubelet_numa_repair_state: true to move them aside (nothing was changed)"
                  % (host, "; ".join(why + problems) or "its state files do not match its configuration", "; ".join(reasons)))
    warning = None
    if readmit and isinstance(readmit.get("readmit"), dict) and not readmit["readmit"].get("all_readmitted", True):
        summary = "; ".join(readmit["readmit"].get("summary") or [])
        if refuse is None and options.get("readmit_on_reject", "fail") == "fail":
            refuse = ("kubelet_numa: resetting %s without a drain would get running pods rejected on re-admission: %s. Drain "
                      "the node (kubelet_numa_drain: true) or set kubelet_numa_readmit_on_reject: warn to go ahead."
                      % (" and ".join(readmit["readmit"].get("fresh_without") or _reset_keys(plan)), summary))
        else:
            warning = "WARNING kubelet_numa: %s" % summary
    drain = bool(options.get("drain")) and bool(options.get("restart", True)) and applies and \
        (needs_reset or bool(options.get("drain_on_every_change")))
    result = {"refuse": refuse, "applies": applies, "converged": converged, "needs_reset": needs_reset, "drain": drain,
              "explain": explain, "warning": warning, "summary": None,
              "preflight_journal": dict((k, journal.get(k)) for k in ("change_id", "status", "updated")) if journal else {}}
    if check_mode or converged:
        if not check_mode:
            preview = "unchanged"
        elif needs_write:
            preview = "would change"
        elif applies:
            preview = "would repair state"
        elif not converged:
            preview = "would bring the kubelet back (%s)" % "; ".join(why + problems)
        else:
            preview = "unchanged"
        result["summary"] = summary_fact(host, plan, {"result": preview}, applies)
    return result


def summary_fact(host, plan, outcome, applies, notes=()):
    """The ``kubelet_numa_summary`` fact rollout_summary reads."""
    reset = plan.get("reset") or {}
    result = str(outcome.get("result") or "")
    if notes:
        result = "%s (%s)" % (result, "; ".join(notes))
    return {
        "host": host, "result": result, "path": plan.get("path") or outcome.get("path") or "", "flags": plan.get("flags") or [],
        "reset_cpu_manager_state": bool(applies and reset.get("cpu_manager_state")),
        "reset_memory_manager_state": bool(applies and reset.get("memory_manager_state")),
        "reasons": list(reset.get("reasons") or []) if applies else [],
        "backup_dir": outcome.get("backup_dir") or "", "recovered": outcome.get("recovered"),
        "fenced": outcome.get("fenced"),
    }


def summary_line(summary, check_mode=False):
    """The per-host line printed after the host's change (or preview)."""
    notes = []
    if summary.get("reset_cpu_manager_state") and not check_mode:
        notes.append("; cpu_manager_state moved to backup")
    if summary.get("reset_memory_manager_state") and not check_mode:
        notes.append("; memory_manager_state moved to backup")
    if summary.get("backup_dir"):
        notes.append("; backup %s" % summary["backup_dir"])
    recovered = summary.get("recovered")
    if recovered:
        notes.append("; interrupted change %s %s (%s)" % (recovered.get("change_id"), recovered.get("action"), recovered.get("reason")))
    return " ".join(["%s:" % summary.get("host"), summary.get("result") or "", summary.get("path") or ""] + notes)


def drain_note(report):
    """Why the node was not drained (kubectl not usable), or None."""
    drain = report.get("drain_result")
    if not isinstance(drain, dict) or drain.get("skipped") or drain.get("rc") == 0:
        return None
    return ("kubelet_numa: '%s' is not usable on %s (%s); skipping cordon and drain of node %s"
            % (report.get("kubectl"), report.get("kubectl_host"), (drain.get("msg") or drain.get("stderr") or "").strip()[:200],
               report.get("node_name")))
