# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: rollout_summary
short_description: Per-host outcome of a playbooks/apply.yml rollout (changed, rolled back, failed, untouched, unreachable)
version_added: 0.2.0
description:
  - Reads the facts the C(numaguard.kubelet.kubelet_numa) role and C(playbooks/apply.yml) leave on each host
    (C(kubelet_numa_preflight), C(kubelet_numa_summary), C(kubelet_numa_failed)) and classifies every targeted host.
  - C(unreachable) - no preflight result (the host never answered), or its batch started and it was lost before its
    change reported back (C(kubelet_numa_change) unreachable, or C(kubelet_numa_batch_started) set, no
    C(kubelet_numa_summary)); C(failed) - its preflight or its change failed
    (nothing or everything restored; see C(detail)); C(rolled back) - the change failed and the previous files were
    restored; C(changed) - applied, state repaired, kubelet brought back, or an interrupted change finished or undone;
    C(unchanged); C(untouched) - the rollout stopped before its batch; C(would change) - check mode.
options:
  _input:
    description: C(hostvars).
    type: dict
    required: true
  hosts:
    description: The targeted hosts, in order.
    type: list
    elements: str
    required: true
  batch_of:
    description: Host name to the index (from 0) of its batch (C(rollout_batches)' C(batch_of)), to name the batch of a lost host.
    type: dict
"""

EXAMPLES = r"""
- name: Print the rollout summary
  ansible.builtin.debug:
    msg: "{{ (hostvars | numaguard.kubelet.rollout_summary(hostvars.localhost.kubelet_numa_targets)).lines }}"
"""

RETURN = r"""
_value:
  description: C(hosts) (per host C(host), C(state), C(result), C(backup_dir), C(detail)), C(lines), C(counts), C(bad)
    (hosts failed, rolled back or unreachable) and C(failed_changes) (hosts whose change, not preflight, failed or
    lost its host).
  type: dict
"""

BAD = ("failed", "rolled back", "unreachable")


def _lost_in_batch(variables, batch=None):
    """The batch in which the host's change lost its connection (or None): the kubelet_numa_change
    result was unreachable (or, as before issue 22, the batch started without a summary)."""
    change = variables.get("kubelet_numa_change") or {}
    if isinstance(change, dict) and change.get("unreachable"):
        return batch or "?"
    return variables.get("kubelet_numa_batch_started")


def _state(variables, batch=None):
    preflight = variables.get("kubelet_numa_preflight")
    summary = variables.get("kubelet_numa_summary") or {}
    result = str(summary.get("result") or "").strip()
    if preflight is None:
        return "unreachable", "no preflight result (host unreachable?)"
    if preflight != "ok":
        return "failed", "preflight failed, nothing changed: %s" % variables.get("kubelet_numa_preflight_error", "?")
    if variables.get("kubelet_numa_failed"):
        failure = str(variables.get("kubelet_numa_failure") or "").strip()
        if result == "rolled back":
            return "rolled back", failure
        return "failed", failure or result
    lost = _lost_in_batch(variables, batch)
    if not summary and lost:
        return "unreachable", ("lost during its change in batch %s (connection cut or host down); the transaction on the "
                               "host finishes or restores the change by itself, else the next run does from the host's "
                               "journal" % lost)
    if not summary:
        return "untouched", "the rollout stopped before this host's batch"
    if result.startswith("would"):
        return "would change", result
    if result == "unchanged":
        return "unchanged", ""
    return "changed", result


def rollout_summary(hostvars, hosts, batch_of=None):
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.hostvars import host_names, host_variables

    hosts = host_names("rollout_summary", hostvars, hosts)
    rows = []
    for host in hosts:
        variables = host_variables("rollout_summary", hostvars, host)
        state, detail = _state(variables, (batch_of or {}).get(host, -1) + 1 if isinstance(batch_of, dict) and host in batch_of else None)
        summary = variables.get("kubelet_numa_summary") or {}
        recovered = summary.get("recovered") or None
        if recovered:
            detail = "%s; interrupted change %s %s (%s)" % (detail, recovered.get("change_id"), recovered.get("action"),
                                                            recovered.get("reason"))
        rows.append({"host": host, "state": state, "result": str(summary.get("result") or ""),
                     "backup_dir": str(summary.get("backup_dir") or ""), "detail": detail.strip("; ")})
    lines = ["%s: %s%s%s" % (r["host"], r["state"], (" - " + r["detail"]) if r["detail"] and r["detail"] != r["state"] else "",
                             (" (backup %s)" % r["backup_dir"]) if r["backup_dir"] else "") for r in rows]
    counts = {}
    for row in rows:
        counts[row["state"]] = counts.get(row["state"], 0) + 1
    return {"hosts": rows, "lines": lines, "counts": counts, "bad": [r["host"] for r in rows if r["state"] in BAD],
            "failed_changes": [r["host"] for r, v in zip(rows, (host_variables("rollout_summary", hostvars, h) for h in hosts))
                               if v.get("kubelet_numa_failed") or (r["state"] == "unreachable" and _lost_in_batch(v))]}


class FilterModule:
    def filters(self):
        return {"rollout_summary": rollout_summary}
