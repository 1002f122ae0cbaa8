#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: kubelet_rollout
short_description: On-host rollout journal, per-host lock and kubelet health for the kubelet_numa role
version_added: 0.2.0
description:
  - Keeps, under O(state_dir) (the role's backup root, C(<kubelet root>/numaguard-backups)), a lock file
    C(rollout.lock) naming the run that holds the host and a journal C(journal.json) recording the change
    in progress (change id, controller, pid, start time, step reached, backup directory, intended config
    path and sha256). Both are written durably (fsync of the file and of the directory).
  - O(operation=begin) takes the lock (failing with the holder's pid, controller and start time when another
    run holds it) and keeps it for the whole change - C(flock) on C(rollout.lock), held by a small detached
    holder process on the host until O(operation=release) or O(operation=finish), a take-over, or O(lock_lease)
    seconds without any step of the change. A lock record whose flock nobody holds any more is stale and is
    replaced (RV(stale_lock_replaced)). It then finishes an unfinished earlier change when its new configuration is completely in
    place and the kubelet is healthy with it, or rolls it back from its own backup; RV(recovered) says which
    and why. It then probes the kubelet's health.
  - O(operation=transaction) performs a whole change in this one module process, which takes the C(flock) of
    C(rollout.lock) itself and holds it for its whole life (no holder process, no lease on file times); it finishes or
    rolls back an unfinished earlier change, plans O(settings) from the files as they are now (as
    M(numaguard.kubelet.kubelet_config) does, with the host's kubelet version), then journals, stops the kubelet (when
    a state file must be reset), backs up and moves the state files, writes the configuration, starts the kubelet and
    gates on its health (service, O(health_url), O(configz_url) where it answers, and the state files checked against
    the new configuration as the kubelet checks them at start-up), and finishes the journal; on any failure it restores
    its own backup and restarts the previous configuration. Before each destructive step it checks that it still owns
    the change (fencing) - the lock file is the one it locked, its record names this change, and no take-over asked it to
    stop (SIGTERM); a fenced change restores what it changed, or changed nothing, and RV(fenced) says which. A change
    of another run finished since this run's preflight read the journal (O(preflight_journal)) fences it before anything.
    Configuration as intended and a healthy kubelet whose state files the kubelet would refuse at its next start is not
    converged, refused with the reason, or repaired with O(repair_state).
  - O(operation=status) reads the lock, the journal and the health, changing nothing (used in check mode). With
    O(settings) it also plans them as M(numaguard.kubelet.kubelet_config) in check mode does (the same options, O(config_mode)
    for its O(numaguard.kubelet.kubelet_config#module:mode), O(path), O(config), O(config_dir), O(root_dir),
    O(kubelet_version), O(validate_host), O(sysfs_root), O(topology)) in the same module process, returns that result as
    RV(plan) (with C(--diff), its diff is the task's) and, without O(expected), compares O(configz_url) with the
    fields in force now (the plan's C(previous)); so the kubelet_numa role's preflight is one module call per host.
  - O(operation=step) records the step reached; O(operation=finish) closes the journal and releases the lock;
    O(operation=release) only releases it; O(operation=wait_healthy) waits until the kubelet is healthy.
  - Healthy means the service status command exits 0 AND O(health_url) answers C(ok) AND, where O(configz_url)
    answers, the string-valued managed fields of O(expected) are in force.
  - The action plugin fills in the controller's identity (O(change_id), O(controller), O(pid), O(started)) and
    takes over a lock whose holder ran on this controller and no longer runs (a stale lock); see docs/rollout.md
    for clearing a stale lock of another controller.
author:
  - numaguard.kubelet contributors (@numaguard)
extends_documentation_fragment:
  - numaguard.kubelet.kubelet_dirs
options:
  operation:
    description: What to do.
    type: str
    choices: [status, begin, step, wait_healthy, finish, release, transaction]
    required: true
  state_dir:
    description: Directory holding the journal and the lock (the backup root).
    type: path
    required: true
  change_id:
    description: Identity of this run's change (filled in by the action plugin).
    type: str
  controller:
    description: Host name of the controller (filled in by the action plugin).
    type: str
  pid:
    description: Process id of ansible-playbook on the controller (filled in by the action plugin).
    type: int
  pid_start:
    description: Start time of that process (filled in by the action plugin; tells a reused pid apart).
    type: str
  started:
    description: When the run started, UTC (filled in by the action plugin).
    type: str
  take_over:
    description:
      - Change id of a lock known to be stale; only a lock with exactly this change id is replaced.
      - A live O(operation=transaction) holding it is asked (SIGTERM) to restore what it changed and let go; the take-over
        waits at most that transaction's worst-case rollback time (C(release_within) of its lock record, from its
        O(retries) and O(delay)), then fails saying the flock is still held.
    type: str
  service_start_cmd:
    description: Command starting the kubelet (split into words, no shell).
    type: str
  service_stop_cmd:
    description: Command stopping the kubelet.
    type: str
  service_status_cmd:
    description: Command whose exit status 0 means the kubelet service is active.
    type: str
  health_url:
    description: The kubelet's C(/healthz) URL.
    type: str
  configz_url:
    description: The kubelet's C(/configz) URL; when it does not answer 200 the check is skipped (reported as unreachable).
    type: str
  expected:
    description:
      - Managed KubeletConfiguration fields that must be in force (compared with C(/configz)).
      - O(operation=status) with O(settings) - default the planned C(previous) (the fields of the files as they are).
    type: dict
  retries:
    description: Health probes after the first before O(operation=wait_healthy) (and a recovery) gives up. 0 to 1000.
    type: int
    default: 30
  delay:
    description: Seconds between health probes. 0 to 600.
    type: float
    default: 2.0
  step:
    description: The step reached, for O(operation=step).
    type: str
    choices: [begin, stopped, backed_up, written, started, healthy, rolling_back]
  intended:
    description: C(path) and C(sha256) of the configuration file this change writes (recorded at O(step=begin)).
    type: dict
  backup_dir:
    description: The backup directory holding this change's originals (recorded in the journal).
    type: path
  status:
    description: Final status for O(operation=finish).
    type: str
    choices: [done, rolled back, failed]
  reason:
    description: Why, for O(operation=finish).
    type: str
    default: ""
  pause_dir:
    description:
      - Test hook. When C(<pause_dir>/pause-<step>) exists, the module writes C(reached-<step>) there after recording
        the step (C(status) - after reading the status) and waits for C(continue-<step>). Never set in production.
    type: path
  pause_timeout:
    description: Seconds the test hook waits. 0 to 86400.
    type: float
    default: 300.0
  lock_lease:
    description:
      - Seconds without any step of the change (each step renews it) after which the holder process lets the lock
        go, so that a run that died leaves the host free for others after this long. 60 to 604800 (a week).
    type: int
    default: 1800
  plan_inputs:
    description:
      - The C(inputs) returned by M(numaguard.kubelet.kubelet_config) when it planned the change (sha256 of every file it
        read, listing of the drop-in directory). O(operation=status) and O(operation=begin) then return
        RV(plan_current), whether those inputs are unchanged, so that a plan made earlier in the run can be reused.
    type: dict
  settings:
    description:
      - O(operation=transaction) and O(operation=status) (then also planned) - the KubeletConfiguration fields to manage
        (as M(numaguard.kubelet.kubelet_config)).
    type: dict
  config_mode:
    description: O(operation=transaction) - C(dropin) (own file in the drop-in directory) or C(merge) (the main file).
    type: str
    choices: [dropin, merge]
    default: dropin
  path:
    description: O(operation=transaction) - the file to write (the preflight plan's C(path)).
    type: path
  config:
    description: O(operation=transaction) - the kubelet's C(--config) file.
    type: path
  config_dir:
    description: O(operation=transaction) - the kubelet's C(--config-dir).
    type: path
  root_dir:
    description: O(operation=transaction) - the kubelet's C(--root-dir) (its state files).
    type: path
  kubelet_version:
    description:
      - O(operation=transaction) - the kubelet's release; default the host's C(kubelet --version), else the newest
        released kubelet the collection knows, with a warning.
    type: str
  validate_host:
    description: O(operation=transaction) - check the settings against the host's NUMA topology.
    type: bool
    default: true
  sysfs_root:
    description: O(operation=transaction) - sysfs root read for O(validate_host) when O(topology) is not given.
    type: path
    default: /
  topology:
    description: O(operation=transaction) - the host's C(numa_topology) fact (else read from O(sysfs_root)).
    type: dict
  mode_bits:
    description: O(operation=transaction) - permissions of a newly created configuration file.
    type: str
    default: "0644"
  backup_keep:
    description: O(operation=transaction) - backups kept (older ones are pruned after the new one); 0 keeps all. 0 to 10000.
    type: int
    default: 10
  repair_state:
    description: O(operation=transaction) - move state files the kubelet would refuse aside even when the configuration is as intended.
    type: bool
    default: false
  restart:
    description: O(operation=transaction) - restart the kubelet after the change (false - write only).
    type: bool
    default: true
  service_restart_cmd:
    description: O(operation=transaction) - command restarting the kubelet (a change that resets no state file).
    type: str
  service_logs_cmd:
    description: O(operation=transaction) - command printing the kubelet's recent log (its complaint is quoted on a rollback).
    type: str
  preflight_journal:
    description:
      - O(operation=transaction) - C(change_id), C(status) and C(updated) of the journal as this run's preflight read
        it (RV(journal) of O(operation=status)); a different journal now fences this run before it changes anything.
    type: dict
  host_name:
    description: O(operation=transaction) - the inventory name used in messages.
    type: str
attributes:
  check_mode:
    support: full
    description: O(operation=begin) reports the lock holder, what would be recovered and the health, and takes nothing.
  diff_mode:
    support: partial
    details: O(operation=status) with O(settings) returns the diff of the planned configuration file.
    description: No diff.
"""

EXAMPLES = r"""
- name: Which run holds the host, what is unfinished, is the kubelet healthy
  numaguard.kubelet.kubelet_rollout:
    operation: status
    state_dir: /var/lib/kubelet/numaguard-backups
    service_status_cmd: systemctl is-active kubelet
    health_url: http://127.0.0.1:10248/healthz

- name: Release a stale lock left by a dead run (change id from the lock message)
  numaguard.kubelet.kubelet_rollout:
    operation: begin
    state_dir: /var/lib/kubelet/numaguard-backups
    take_over: 20260101T100000Z-ctl1-4242
    service_start_cmd: systemctl start kubelet
    service_stop_cmd: systemctl stop kubelet
    service_status_cmd: systemctl is-active kubelet
    health_url: http://127.0.0.1:10248/healthz
"""

RETURN = r"""
lock_holder:
  description: The lock record (change_id, controller, pid, started, locked_at), or null.
  returned: operation=status, or when the host is locked by another run
  type: dict
journal:
  description: The journal (change_id, status, step, backup_dir, intended, history, ...).
  returned: operation=status, step, finish
  type: dict
recovered:
  description:
    - An earlier unfinished change dealt with by O(operation=begin), or null. C(change_id), C(step) it reached,
      C(action) (completed, rolled back, or in check mode would complete / would roll back), C(reason), C(backup_dir).
  returned: operation=begin
  type: dict
stale_lock_replaced:
  description: The lock record replaced (O(take_over), or a record whose flock nobody held any more), or null.
  returned: operation=begin
  type: dict
stale_lock_free:
  description: Whether the replaced record was stale because no process held its flock any more.
  returned: operation=begin
  type: bool
stale_lock:
  description: A lock record left behind whose flock nobody holds (its holder is gone), or null.
  returned: operation=status
  type: dict
lock_held:
  description: Whether a process holds the flock of C(rollout.lock).
  returned: operation=status
  type: bool
plan_current:
  description: Whether the files named by O(plan_inputs) are unchanged (null without O(plan_inputs)).
  returned: operation=status, begin
  type: bool
health:
  description: C(healthy), C(active), C(healthz), C(configz) (as intended, mismatch, unreachable, not checked), C(problems).
  returned: operation=status (with health_url), begin, wait_healthy
  type: dict
plan:
  description:
    - The result M(numaguard.kubelet.kubelet_config) returns in check mode for O(settings) and the plan options
      (C(needs_write), C(path), C(content), C(effective), C(previous), C(reset), C(state_files), C(locations),
      C(kubelet_version), ...), without its C(diff).
  returned: operation=status with settings
  type: dict
released:
  description: Whether the lock was released.
  returned: operation=finish, release, transaction
  type: bool
result:
  description:
    - What the transaction did - C(applied), C(state repaired), C(unchanged), C(kubelet brought back (...)),
      C(interrupted change <id> completed|rolled back), C(rolled back), C(failed (rollback not healthy)),
      C(fenced, rolled back) or C(fenced, nothing changed).
  returned: operation=transaction
  type: str
fenced:
  description: Why this change stopped owning the host (null when it was not fenced).
  returned: operation=transaction
  type: str
did:
  description: What a rolled back or fenced change had done before it stopped, in order.
  returned: operation=transaction, when rolled back
  type: list
  elements: str
backup_dir:
  description: The change's own backup of the config and state files.
  returned: operation=transaction, when a backup was made
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.numaguard.kubelet.plugins.module_utils._zip_compile import compile_each_module_once


def main():
    compile_each_module_once()  # first: the backend's imports then compile once (see _zip_compile.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.kubelet_rollout import module_kwargs, run_module

    run_module(AnsibleModule(**module_kwargs()))


if __name__ == "__main__":
    main()
