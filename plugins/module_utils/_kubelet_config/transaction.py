# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A whole kubelet configuration change as one fenced transaction, in one process (issue 22).

Why: as many short module processes the change had an unsafe window (only the journal steps checked
the lock, and the lease lived on the lock file's mtime, which a clock jump moves), and every step
was an SSH round trip. Here one process takes ``rollout.lock``'s flock itself and keeps it for its
whole life: lock, journal, stop, back up / move state files, write, start, health gate (the
service, ``/healthz``, ``/configz`` where reachable, and the state files checked against the new
configuration as the kubelet checks them at start-up), finish; or restore and restart the previous
configuration.

Fencing: before each destructive step :meth:`OwnedLock.fence` checks that this process still owns
the change: the lock file on disk is the one it flocked, the record names its change, and nobody
asked it to give the host up (a take-over sends SIGTERM to the holder). The lease is renewed by
this process itself on the monotonic clock (``renewed_monotonic`` in the record); no file time is
consulted, so a clock jump cannot expire it. A fenced run restores what it changed (or changed
nothing) and says which.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import fcntl
import os
import signal
import time

from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config import rollout
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.backup import (
    MANIFEST,
    BackupError,
    check_writable,
    create_backup,
    plan_backup,
    plan_restore,
    prune_backups,
    restore_backup,
    space_wanted,
)

try:
    from typing import Any, Callable, Dict, List, Optional  # noqa: F401
except ImportError:  # pragma: no cover
    pass


class Fenced(BackupError):
    """This process no longer owns the host's change (taken over, lock file replaced or cleared)."""


#: Seconds the service status command is assumed to take at most (``systemctl is-active``).
STATUS_COMMAND_SECONDS = 10.0
#: Seconds a stop, start or log command is assumed to take at most (systemd's default
#: ``TimeoutStartSec`` / ``TimeoutStopSec``).
SERVICE_COMMAND_SECONDS = 90.0
#: Seconds allowed for restoring a backup (copies and renames within the kubelet's directories).
RESTORE_SECONDS = 60.0


def release_bound(retries: int, delay: float) -> float:
    """Worst case, in seconds, between a take-over's SIGTERM and this transaction's release of its
    flock, for its own ``retries`` and ``delay`` (both option-bounded, so is this): it notices the
    request at its next fence, which may follow a command in flight and a whole health wait
    (``retries`` + 1 probes ``delay`` apart, each the status command and two HTTP GETs); then it
    rolls back: the log, stop and start commands, the restore, and a health wait of the previous
    configuration. Assumes the service commands return within the allowances above (the module
    runs them without a timeout)."""
    probe = STATUS_COMMAND_SECONDS + 2 * rollout.HTTP_TIMEOUT  # /healthz and /configz, each within the probes' timeout
    wait = (max(0, retries) + 1) * probe + max(0, retries) * max(0.0, delay)
    return 2 * wait + 4 * SERVICE_COMMAND_SECONDS + RESTORE_SECONDS


#: The longest a take-over waits for a holder, whatever its lock record claims: the bound of the
#: largest retries (1000) and retries x delay (3600 s) the module accepts.
MAX_RELEASE_WAIT = release_bound(1000, 3.6)


def take_over_wait(record: Dict[str, Any], own: float) -> float:
    """How long a take-over waits for the holder of ``record`` to restore and let go: the bound the
    holder wrote (``release_within``, its own options), else ``own`` (this run's options, e.g. a
    record written before the bound was); never more than :data:`MAX_RELEASE_WAIT`."""
    claimed = record.get("release_within")
    if isinstance(claimed, (int, float)) and not isinstance(claimed, bool) and claimed >= 0:
        return min(float(claimed), MAX_RELEASE_WAIT)
    return min(own, MAX_RELEASE_WAIT)


def boot_id() -> str:
    """This boot's id (monotonic clock readings compare only within one boot)."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as handle:
            return handle.read().strip()
    except OSError:
        return ""


class OwnedLock:
    """``rollout.lock`` flocked by this very process for its whole life (no holder process)."""

    def __init__(self, state_dir: str, holder: Dict[str, Any], lease: float, release_within: float = MAX_RELEASE_WAIT) -> None:
        self.state_dir = state_dir
        self.path = os.path.join(state_dir, rollout.LOCK)
        self.holder = dict(holder)
        self.lease = lease
        #: this transaction's worst-case time from a take-over's SIGTERM to its release (release_bound)
        self.release_within = release_within
        self.fd: Optional[int] = None
        self.record: Dict[str, Any] = {}
        self.asked_to_stop: Optional[int] = None
        self.replaced: Optional[Dict[str, Any]] = None
        self.stale = False

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self.asked_to_stop = signum

    def take(self, take_over: Optional[str] = None, wait: float = 3.0) -> None:
        """flock the lock file (LockHeld naming the holder when another live run has it)."""
        rollout.ensure_dir(self.state_dir)
        fd = rollout.open_lock(self.path, create=True)
        if fd is None:  # never with create=True; narrows the type
            raise BackupError("cannot open lock file %s" % self.path)
        try:
            got = rollout.try_flock(fd, fcntl.LOCK_EX, wait)
            current = rollout.read_fd(fd, self.path)
            if not got:
                if current is None or not take_over or current.get("change_id") != take_over:
                    shown = current or {"change_id": "?", "controller": "?", "pid": "?", "started": "?"}
                    raise rollout.LockHeld("host is locked by another rollout: %s; lock file %s"
                                           % (rollout.describe_holder(shown), self.path), shown)
                rollout.stop_holder(current)
                # a transaction asked to give the host up restores what it changed first: wait for its worst case
                wait = take_over_wait(current, self.release_within)
                if not rollout.try_flock(fd, fcntl.LOCK_EX, wait):
                    raise rollout.LockHeld("cannot take over the lock of change %s: its flock on %s is still held after %.0f s, "
                                           "the holder's worst-case rollback time (holder pid %s did not go away); find the "
                                           "process with `fuser %s`"
                                           % (take_over, self.path, wait, current.get("holder_pid", "?"), self.path), current)
                self.replaced = current
            elif current is not None and current.get("change_id") != self.holder["change_id"]:
                self.replaced, self.stale = current, True
        except BaseException:
            os.close(fd)
            raise
        self.fd = fd
        # a take-over (SIGTERM) or a lost terminal (SIGHUP) only asks this process to give the host
        # up at its next fence; it then restores what it changed
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGHUP, self._on_signal)
        self.record = dict(self.holder, locked_at=rollout.now_iso(), lease=self.lease, holder_pid=os.getpid(),
                           holder_start=rollout.start_ticks(os.getpid()), boot_id=boot_id(), transaction=True,
                           release_within=self.release_within)
        self._write_record()

    def _write_record(self) -> None:
        if self.fd is None:
            raise Fenced("change %s does not hold the lock %s" % (self.holder["change_id"], self.path))
        self.record["renewed"] = rollout.now_iso()
        self.record["renewed_monotonic"] = time.monotonic()
        try:
            rollout.write_fd(self.fd, self.record)
        except OSError as exc:
            raise BackupError("cannot write lock file %s: %s" % (self.path, exc.strerror or exc))

    def fence(self, what: str) -> None:
        """Fenced unless this process still owns the change; renews the lease (monotonic clock)."""
        change = self.holder["change_id"]
        if self.fd is None:
            raise Fenced("change %s does not hold the lock %s; refusing to %s" % (change, self.path, what))
        if self.asked_to_stop is not None:
            raise Fenced("change %s was asked to give the host up (signal %d: another run takes it over); refusing to %s"
                         % (change, self.asked_to_stop, what))
        try:
            on_disk, mine = os.stat(self.path), os.fstat(self.fd)
            current = rollout.read_fd(self.fd, self.path)
        except OSError as exc:
            raise Fenced("change %s cannot see its lock file %s any more (%s); refusing to %s"
                         % (change, self.path, exc.strerror or exc, what))
        if (on_disk.st_dev, on_disk.st_ino) != (mine.st_dev, mine.st_ino) or mine.st_nlink == 0:
            raise Fenced("the lock file %s was replaced or removed while change %s held it; refusing to %s"
                         % (self.path, change, what))
        if current is None or current.get("change_id") != change:
            raise Fenced("the lock record of %s no longer names change %s (%s); refusing to %s"
                         % (self.path, change, rollout.describe_holder(current) if current else "it was cleared", what))
        self._write_record()

    def release(self) -> bool:
        """Clear the record (when it is still ours) and drop the flock."""
        if self.fd is None:
            return False
        try:
            current = rollout.read_fd(self.fd, self.path)
            same = os.stat(self.path).st_ino == os.fstat(self.fd).st_ino
            if same and current is not None and current.get("change_id") == self.holder["change_id"]:
                rollout.write_fd(self.fd, None)
                return True
            return False
        except (OSError, BackupError):
            return False
        finally:
            os.close(self.fd)
            self.fd = None
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


class Transaction:
    """One change of one host. ``ops`` gives what touches the host beyond files:

    * ``command(option)`` -> ``{"rc", "out", "cmd"}`` (``service_stop_cmd``, ...);
    * ``probe(expected)`` / ``wait_healthy(expected)`` -> the health dict of :func:`rollout.check_health`;
    * ``plan()`` -> a :func:`plan.plan_change` result for this run's settings, read now;
    * ``write(path, text)``: the durable config write;
    * ``pause(step)``: the e2e test hook;
    * ``recover(journal)``: finish or roll back another run's interrupted change.
    """

    def __init__(self, p: Dict[str, Any], lock: OwnedLock, ops: Dict[str, Callable[..., Any]]) -> None:
        self.p = p
        self.lock = lock
        self.ops = ops
        self.change_id = lock.holder["change_id"]
        self.state_dir = p["state_dir"]
        self.done: List[str] = []  # what this change did, in order (for the report)
        self.backup_dir: Optional[str] = None
        self.journalled = False

    # -- helpers ----------------------------------------------------------------------------------
    def _step(self, step: str, fields: Optional[Dict[str, Any]] = None) -> None:
        rollout.record_step(self.state_dir, self.change_id, step, fields)
        self.journalled = True
        self.ops["pause"](step)

    def _restart_cmd(self, needs_reset: bool, active: bool) -> str:
        if needs_reset or not active:
            return "service_start_cmd"
        return "service_restart_cmd"

    # -- the transaction --------------------------------------------------------------------------
    def run(self) -> Dict[str, Any]:
        result: Dict[str, Any] = {"change_id": self.change_id, "recovered": None, "fenced": None, "changed": False}
        self.preflight_fence(result)
        if result["fenced"]:
            return result
        journal = rollout.read_journal(self.state_dir)
        if journal and journal.get("status") == rollout.IN_PROGRESS and journal["change_id"] != self.change_id:
            self.lock.fence("finish or roll back the interrupted change %s" % journal["change_id"])
            result["recovered"] = self.ops["recover"](journal)
            result["changed"] = True
        plan = self.ops["plan"]()
        result["plan"] = plan
        reset = plan["reset"]
        needs_reset = bool(reset.get("cpu_manager_state") or reset.get("memory_manager_state"))
        applies = bool(plan["changed"] or (self.p["repair_state"] and needs_reset))
        health = self.ops["probe"](plan["previous"] if result["recovered"] is None else None)
        result.update(needs_reset=needs_reset, applies=applies, health_before=health)
        if not applies:
            if needs_reset:
                # files as intended, kubelet maybe healthy, but its next start would fail: never "unchanged"
                unhealthy = "" if health["healthy"] else " and it is not healthy now: " + "; ".join(health["problems"])
                raise BackupError("%s NOT converged: its configuration is as intended but the kubelet would refuse its state "
                                  "files at its next start (%s)%s; set kubelet_numa_repair_state: true to move them aside "
                                  "(nothing was changed)" % (self.p.get("host_name") or "the host", "; ".join(reset.get("reasons") or []),
                                                             unhealthy))
            if health["healthy"]:
                result["result"] = "interrupted change %s %s" % (result["recovered"]["change_id"], result["recovered"]["action"]) \
                    if result["recovered"] else "unchanged"
                return result
            self.lock.fence("bring the kubelet back")
            self.ops["command"](self._restart_cmd(False, health.get("active", False)))
            self.done.append("kubelet (re)started")
            after = self.ops["wait_healthy"](plan["effective"])
            result["changed"] = True
            if not after["healthy"]:
                raise BackupError("the kubelet is not healthy: %s" % "; ".join(after["problems"]))
            result["result"] = "kubelet brought back (%s)" % "; ".join(health["problems"])
            return result
        return self.apply(plan, needs_reset, health, result)

    def preflight_fence(self, result: Dict[str, Any]) -> None:
        """Fenced (nothing changed) when another change finished or began on this host after this
        run's preflight read the journal (``preflight_journal``: its change_id, status, updated)."""
        seen = self.p.get("preflight_journal")
        if seen is None:
            return
        now = rollout.read_journal(self.state_dir) or {}
        keys = ("change_id", "status", "updated")
        if tuple(now.get(k) for k in keys) != tuple((seen or {}).get(k) for k in keys):
            result["fenced"] = ("fenced: change %s (%s, %s) changed this host after this run's preflight read it; this run "
                                "changed nothing (re-run to apply its settings)" % (now.get("change_id", "?"), now.get("status", "?"),
                                                                                    now.get("updated", "?")))
            result["result"] = "fenced, nothing changed"
            result["msg"] = result["fenced"]

    def apply(self, plan: Dict[str, Any], needs_reset: bool, health: Dict[str, Any], result: Dict[str, Any]) -> Dict[str, Any]:
        p = self.p
        reset = plan["reset"]
        state_paths = [v["path"] for _k, v in sorted(plan["state_files"].items())]
        move = [plan["state_files"][k]["path"] for k in sorted(plan["state_files"]) if reset.get(k)] if p["restart"] else []
        copy = list(dict.fromkeys([plan["path"]] + state_paths))
        backup_root = self.state_dir
        # every file system the change writes has room, and every file can be backed up, before anything stops
        plan_backup(copy, move, p["kubelet_dirs"])
        check_writable(space_wanted(backup_root, copy, move))
        backup_dir = os.path.join(backup_root, self.change_id)
        self.lock.fence("begin the change")
        holder = dict((k, self.lock.holder[k]) for k in rollout.HOLDER_KEYS)
        self._step("begin", dict(holder, intended={"path": plan["path"], "sha256": plan["intended_sha256"]}, backup_dir=backup_dir))
        written = False
        try:
            if needs_reset and p["restart"]:
                self.lock.fence("stop the kubelet")
                self.ops["command"]("service_stop_cmd")
                self.done.append("kubelet stopped")
            self._step("stopped")
            self.lock.fence("back up and move the state files")
            self.backup_dir, _files = create_backup(backup_root, copy, move, p["kubelet_dirs"], name=self.change_id)
            self.done.append("backup %s made%s" % (self.backup_dir, (" (moved %s)" % ", ".join(move)) if move else ""))
            result["backup_dir"] = self.backup_dir
            result["pruned"] = prune_backups(backup_root, p["backup_keep"], [self.backup_dir])
            self._step("backed_up", {"backup_dir": self.backup_dir})
            self.lock.fence("write the configuration")
            if plan["changed"]:
                self.ops["write"](plan["path"], plan["after"])
                self.done.append("%s written" % plan["path"])
            written = True
            self._step("written")
            if p["restart"]:
                self.lock.fence("start the kubelet")
                self.ops["command"](self._restart_cmd(needs_reset, health.get("active", False)))
                self.done.append("kubelet started")
            self._step("started")
            if p["restart"]:
                after = self.ops["wait_healthy"](plan["effective"])
                if not after["healthy"]:
                    raise BackupError("the kubelet is not healthy: %s" % "; ".join(after["problems"]))
                result["health"] = after
                self.startup_gate()
            self.lock.fence("record the change as done")
            rollout.finish(self.state_dir, self.change_id, "done", "healthy with the new configuration" if p["restart"]
                           else "written; kubelet not restarted (kubelet_numa_restart=false)")
        except (BackupError, OSError) as exc:
            error = exc if isinstance(exc, BackupError) else BackupError(
                "%s: %s" % (getattr(exc, "filename", None) or self.state_dir, exc.strerror or exc))
            result.update(self.roll_back(error, written))
            return result
        result["changed"] = True
        result["result"] = "applied" if plan["changed"] else "state repaired"
        return result

    def startup_gate(self) -> None:
        """The state files the kubelet now runs with, checked against the new configuration as the
        kubelet checks them at start-up (the plan's reset decision, read again): nothing to reset."""
        again = self.ops["plan"]()
        reset = again["reset"]
        if again["changed"]:
            raise BackupError("%s no longer holds the intended configuration after the start" % again["path"])
        if reset.get("cpu_manager_state") or reset.get("memory_manager_state"):
            raise BackupError("the kubelet's state files do not match the new configuration after the start: %s"
                              % "; ".join(reset.get("reasons") or []))

    def roll_back(self, error: BackupError, written: bool) -> Dict[str, Any]:
        """Restore what this change did and restart the previous configuration (also when fenced:
        a take-over asks the holder to give up, and the files it changed are its to restore)."""
        fenced = isinstance(error, Fenced)
        rollout.record_step(self.state_dir, self.change_id, "rolling_back")
        self.ops["pause"]("rolling_back")
        log = self.ops["command"]("service_logs_cmd") if self.p.get("service_logs_cmd") else {"out": ""}
        restored: List[Dict[str, Any]] = []
        if self.done:
            self.ops["command"]("service_stop_cmd")
        if self.backup_dir and os.path.isfile(os.path.join(self.backup_dir, MANIFEST)):
            plan_restore(self.backup_dir, self.p["kubelet_dirs"])
            restored = restore_backup(self.backup_dir, self.p["kubelet_dirs"])
            where = "restored the previous config and state files from %s" % self.backup_dir
        else:
            where = "no file had been changed (no backup was made)"
        health: Dict[str, Any] = {"healthy": True, "problems": []}
        if self.done:
            self.ops["command"]("service_start_cmd")
            health = self.ops["wait_healthy"](None)
        status = "rolled back" if health["healthy"] else "failed"
        lines = [line for line in (log.get("out") or "").splitlines() if line.strip()]
        complaint = ([line for line in lines if line[:1] in ("E", "F")] or lines or ["(no log)"])[-1]
        rollout.finish(self.state_dir, self.change_id, status, "%s: %s; %s" % ("fenced" if fenced else "failed", error, where))
        return {
            "changed": bool(self.done),
            "result": ("fenced, " if fenced else "") + ("rolled back" if health["healthy"] else "failed (rollback not healthy)"),
            "fenced": str(error) if fenced else None, "failed_step": str(error), "did": list(self.done), "restored": restored,
            "rollback_health": health, "kubelet_said": complaint,
            "msg": "%s (%s). %s and started the kubelet again: %s. The kubelet said: %s" % (
                ("the change of %s was fenced" % (self.p.get("host_name") or "the host")) if fenced else
                ("kubelet on %s did not come back healthy with the new configuration" % (self.p.get("host_name") or "the host"))
                if written else ("the change of %s failed before the new configuration was written" % (self.p.get("host_name") or "the host")),
                error, where[0].upper() + where[1:], "healthy" if health["healthy"] else
                "STILL NOT HEALTHY (%s)" % "; ".join(health["problems"]), complaint),
        }
