# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""The on-host rollout journal and lock, and "converged means healthy" checks.

Why: a rollout step runs as many short module processes, and the controller may die between any
two of them. So what a change is doing lives on the host, next to its backups:

* ``rollout.lock`` names the run that holds the host (change id, controller, pid, start time).
  Taking, checking and releasing it happen under ``flock`` so two runs cannot both win; the record
  outlives each module process and is what a second run is refused on. A record whose controller
  process is gone is stale (decided on the controller, which can see that process).
* ``journal.json`` records the change (id, intended config path and sha256, backup directory,
  step reached), written durably (temp file, fsync, rename, fsync of the directory) before each
  step, so the next run can finish the change or roll it back from *its own* backup.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import errno
import fcntl
import json
import os
import time

from ansible_collections.numaguard.kubelet.plugins.module_utils._io import fsync_dir
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.backup import (
    BackupError,
    load_json_bounded,
    sha256_file,
)

try:
    from typing import Any, Callable, Dict, List, Optional  # noqa: F401
except ImportError:  # pragma: no cover
    pass

JOURNAL = "journal.json"
LOCK = "rollout.lock"
MAX_RECORD_BYTES = 64 << 10
#: Steps of a change, in order; the journal holds the last one reached.
STEPS = ("begin", "stopped", "backed_up", "written", "started", "healthy", "rolling_back")
#: Journal states; only "in progress" needs the next run's attention.
IN_PROGRESS = "in progress"
FINAL_STATES = ("done", "rolled back", "failed")
HOLDER_KEYS = ("change_id", "controller", "pid", "started")


class LockHeld(BackupError):
    """The host is locked by another run; ``holder`` is its lock record."""

    def __init__(self, message: str, holder: Dict[str, Any]) -> None:
        super().__init__(message)
        self.holder = holder


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _read_record(handle: Any, source: str) -> Optional[Dict[str, Any]]:
    handle.seek(0)
    raw = handle.read(MAX_RECORD_BYTES + 1)
    if not raw.strip():
        return None
    if len(raw) > MAX_RECORD_BYTES:
        raise BackupError("%s is larger than %d bytes; move it away if no rollout is running" % (source, MAX_RECORD_BYTES))
    try:
        doc = load_json_bounded(raw.decode("utf-8", "replace"), source)
    except BackupError as exc:
        raise BackupError("%s; move it away if no rollout is running" % exc)
    if not isinstance(doc, dict):
        raise BackupError("%s does not hold a lock record; move it away if no rollout is running" % source)
    return doc


def describe_holder(holder: Dict[str, Any]) -> str:
    return "pid %s on controller %s, started %s (change %s)" % (
        holder.get("pid", "?"), holder.get("controller", "?"), holder.get("started", "?"), holder.get("change_id", "?"))


class _Flock:
    """``with _Flock(path) as handle``: the lock file open and flock'ed (waits up to ``wait`` s)."""

    def __init__(self, path: str, wait: float = 10.0) -> None:
        self.path = path
        self.wait = wait
        self.handle: Any = None

    def __enter__(self) -> Any:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        self.handle = os.fdopen(fd, "r+b")
        deadline = time.time() + self.wait
        while True:
            try:
                fcntl.flock(self.handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self.handle
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES) or time.time() > deadline:
                    self.handle.close()
                    raise BackupError("cannot lock %s: %s" % (self.path, exc.strerror or exc))
                time.sleep(0.05)

    def __exit__(self, *_exc: Any) -> None:
        self.handle.close()  # closing releases the flock


def _write_record(handle: Any, record: Optional[Dict[str, Any]]) -> None:
    handle.seek(0)
    handle.truncate()
    if record is not None:
        handle.write(json.dumps(record, sort_keys=True).encode("utf-8") + b"\n")
    handle.flush()
    os.fsync(handle.fileno())


def _ensure_dir(state_dir: str) -> None:
    if not os.path.isdir(state_dir):
        try:
            os.makedirs(state_dir, 0o700)
        except OSError as exc:
            raise BackupError("cannot create %s: %s" % (state_dir, exc.strerror or exc))


def lock_holder(state_dir: str) -> Optional[Dict[str, Any]]:
    """The current lock record, or None (read-only; for check mode and status)."""
    path = os.path.join(state_dir, LOCK)
    if os.path.islink(path):
        raise BackupError("lock file %s is a symlink; refusing it" % path)
    try:
        with open(path, "rb") as handle:
            return _read_record(handle, path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise BackupError("cannot read lock file %s: %s" % (path, exc.strerror or exc))


def acquire(state_dir: str, holder: Dict[str, Any], take_over: Optional[str] = None) -> Dict[str, Any]:
    """Take the host for ``holder`` (idempotent for the same change id).

    ``take_over`` is the change id of a lock known to be stale; only that one is replaced.
    Returns ``{"acquired": True, "replaced": <old record or None>}``; raises LockHeld.
    """
    _ensure_dir(state_dir)
    path = os.path.join(state_dir, LOCK)
    with _Flock(path) as handle:
        current = _read_record(handle, path)
        replaced = None
        if current is not None and current.get("change_id") != holder["change_id"]:
            if not take_over or current.get("change_id") != take_over:
                raise LockHeld("host is locked by another rollout: %s; lock file %s" % (describe_holder(current), path), current)
            replaced = current
        record = dict(holder)
        same = current is not None and replaced is None
        record["locked_at"] = current.get("locked_at") if same and current.get("locked_at") else now_iso()
        try:
            _write_record(handle, record)
        except OSError as exc:
            raise BackupError("cannot write lock file %s: %s; nothing was changed" % (path, exc.strerror or exc))
    fsync_dir(state_dir)
    return {"acquired": True, "replaced": replaced}


def release(state_dir: str, change_id: str) -> bool:
    """Release the lock if ``change_id`` holds it; returns whether it did."""
    path = os.path.join(state_dir, LOCK)
    if not os.path.exists(path):
        return False
    with _Flock(path) as handle:
        current = _read_record(handle, path)
        if current is None or current.get("change_id") != change_id:
            return False
        _write_record(handle, None)
    return True


def require_holder(state_dir: str, change_id: str) -> None:
    """Fail unless ``change_id`` holds the lock (a step must never run on a host another run holds)."""
    current = lock_holder(state_dir)
    if current is None or current.get("change_id") != change_id:
        raise LockHeld("change %s does not hold the lock of %s (%s); refusing to continue"
                       % (change_id, state_dir, describe_holder(current) if current else "nobody holds it"), current or {})


def read_journal(state_dir: str) -> Optional[Dict[str, Any]]:
    path = os.path.join(state_dir, JOURNAL)
    if os.path.islink(path):
        raise BackupError("journal %s is a symlink; refusing it" % path)
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_RECORD_BYTES + 1)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise BackupError("cannot read journal %s: %s" % (path, exc.strerror or exc))
    if len(raw) > MAX_RECORD_BYTES:
        raise BackupError("journal %s is larger than %d bytes" % (path, MAX_RECORD_BYTES))
    doc = load_json_bounded(raw.decode("utf-8", "replace"), "journal %s" % path)
    if not isinstance(doc, dict) or not isinstance(doc.get("change_id"), str) or doc.get("status") not in (IN_PROGRESS,) + FINAL_STATES:
        raise BackupError("journal %s is not a rollout journal (change_id and status missing); "
                          "move it away after checking the host by hand (docs/rollout.md)" % path)
    backup_dir = doc.get("backup_dir")
    if backup_dir is not None and (not isinstance(backup_dir, str) or
                                   os.path.dirname(os.path.normpath(backup_dir)) != os.path.normpath(state_dir)):
        raise BackupError("journal %s names backup directory %r outside %s; refusing it" % (path, backup_dir, state_dir))
    return doc


def write_journal(state_dir: str, doc: Dict[str, Any]) -> Dict[str, Any]:
    """Write the journal durably: temp file, fsync, rename, fsync of the directory."""
    _ensure_dir(state_dir)
    path = os.path.join(state_dir, JOURNAL)
    tmp = "%s.tmp-%d" % (path, os.getpid())
    doc = dict(doc, updated=now_iso())
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(json.dumps(doc, indent=1, sort_keys=True).encode("utf-8") + b"\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.rename(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise BackupError("cannot write journal %s: %s" % (path, exc.strerror or exc))
    fsync_dir(state_dir)
    return doc


def record_step(state_dir: str, change_id: str, step: str, fields: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Move the journal of ``change_id`` to ``step`` (creating it at "begin"), adding ``fields``."""
    if step not in STEPS:
        raise BackupError("step %r is not one of %s" % (step, ", ".join(STEPS)))
    journal = read_journal(state_dir)
    if step == "begin" or journal is None or journal.get("change_id") != change_id or journal.get("status") != IN_PROGRESS:
        if step != "begin":
            raise BackupError("journal of %s has no change %s in progress; cannot record step %s" % (state_dir, change_id, step))
        journal = {"version": 1, "change_id": change_id, "status": IN_PROGRESS, "history": []}
    journal.update(fields or {})
    journal["change_id"] = change_id
    journal["step"] = step
    journal["history"] = (journal.get("history") or [])[-20:] + [{"step": step, "at": now_iso()}]
    return write_journal(state_dir, journal)


def finish(state_dir: str, change_id: str, status: str, reason: str = "") -> Optional[Dict[str, Any]]:
    """Close the journal of ``change_id`` with a final status (kept as the host's last record)."""
    if status not in FINAL_STATES:
        raise BackupError("status %r is not one of %s" % (status, ", ".join(FINAL_STATES)))
    journal = read_journal(state_dir)
    if journal is None or journal.get("change_id") != change_id:
        return journal
    journal["status"] = status
    journal["reason"] = reason
    journal["history"] = (journal.get("history") or [])[-20:] + [{"step": status, "at": now_iso()}]
    return write_journal(state_dir, journal)


def sha256_or_none(path: str) -> Optional[str]:
    try:
        return sha256_file(path) if os.path.isfile(path) else None
    except OSError:
        return None


def resume_decision(journal: Dict[str, Any]) -> Dict[str, str]:
    """What to do with an unfinished change: ``complete`` when the intended configuration is fully
    in place (the kubelet only has to run healthy with it), else ``roll back`` from its backup."""
    intended = journal.get("intended") or {}
    path, digest = intended.get("path"), intended.get("sha256")
    step = journal.get("step")
    if step == "rolling_back":
        return {"action": "roll back", "reason": "the run was interrupted during a rollback (step rolling_back)"}
    if step in ("written", "started", "healthy") and path and digest and sha256_or_none(path) == digest:
        return {"action": "complete", "reason": "the new configuration was completely written (step %s)" % step}
    return {"action": "roll back",
            "reason": "the run was interrupted at step %s, before the new configuration was completely in place" % step}


# ----------------------------------------------------------------------------------------------
# health
# ----------------------------------------------------------------------------------------------

def compare_configz(document: Any, expected: Dict[str, Any]) -> List[str]:
    """Managed string fields whose value in force (``/configz``) differs from ``expected``."""
    config = document.get("kubeletconfig") if isinstance(document, dict) else None
    if not isinstance(config, dict):
        return ["/configz has no kubeletconfig object"]
    problems = []
    for key in sorted(expected):
        wanted = expected[key]
        if isinstance(wanted, str) and key in config and config[key] != wanted:
            problems.append("%s is %r in the running kubelet, %r intended" % (key, config[key], wanted))
    return problems


def check_health(run_status: Callable[[], Dict[str, Any]], fetch: Callable[[str], Dict[str, Any]],
                 health_url: str, configz_url: Optional[str], expected: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """One health probe: service active AND /healthz ok AND (where reachable) /configz as intended.

    ``run_status()`` returns ``{"rc", "out"}`` of the status command; ``fetch(url)`` returns
    ``{"status", "body"}`` (status 0 when the connection failed, body the error then).
    """
    result: Dict[str, Any] = {"healthy": False, "problems": []}
    status = run_status()
    result["active"] = status.get("rc") == 0
    result["status_output"] = (status.get("out") or "").strip()[-300:]
    if not result["active"]:
        result["problems"].append("the kubelet service is not active (status command exit %s: %s)"
                                  % (status.get("rc"), result["status_output"] or "no output"))
    health = fetch(health_url)
    result["healthz"] = health["status"] == 200 and health["body"].strip() == "ok"
    if not result["healthz"]:
        result["problems"].append("%s answered %s" % (health_url, ("HTTP %d %r" % (health["status"], health["body"][:100]))
                                                      if health["status"] else health["body"]))
    result["configz"] = "not checked"
    if configz_url and expected and result["healthz"]:
        answer = fetch(configz_url)
        if answer["status"] != 200:
            result["configz"] = "unreachable (%s)" % (("HTTP %d" % answer["status"]) if answer["status"] else answer["body"])
        else:
            try:
                mismatches = compare_configz(load_json_bounded(answer["body"], configz_url), expected)
            except BackupError as exc:
                mismatches = [str(exc)]
            result["configz"] = "mismatch" if mismatches else "as intended"
            result["configz_mismatches"] = mismatches
            result["problems"].extend(mismatches)
    result["healthy"] = not result["problems"]
    return result
