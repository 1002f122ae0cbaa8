# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The on-host rollout journal and lock, and "converged means healthy" checks.

Why: a rollout step runs as many short module processes, and the controller may die between any
two of them. So what a change is doing lives on the host, next to its backups:

* ``rollout.lock`` is locked with ``flock`` for the whole change on the host: ``begin`` takes
  the flock and hands it to a small *holder process* (forked, detached, holding nothing but that
  file) which keeps it until the change releases it, another run takes it over, or nothing of the
  change ran for ``lease`` seconds. The file holds the record of the change (change id,
  controller, controller pid and start time, holder pid). A second run finds the flock held and
  is refused with that record. A record whose flock is free is *stale* (its holder is gone: lease
  expired, killed, host rebooted) and is replaced. Every step checks that its change still holds
  the flock and renews the lease (the file's mtime).
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
import signal
import time

from ansible_collections.numaguard.kubelet.plugins.module_utils._io import fsync_dir
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.backup import (
    BackupError,
    load_json_bounded,
    sha256_file,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.rollout_common import start_ticks

try:
    from typing import Any, Callable, Dict, List, Optional, Tuple  # noqa: F401
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
#: Seconds without any step of the change after which its holder process lets the flock go.
DEFAULT_LEASE = 1800
#: How often the holder process looks at the lock file.
HOLDER_INTERVAL = 0.5
#: Seconds one HTTP GET of a health probe may take (``/healthz``, ``/configz``: connect and read).
HTTP_TIMEOUT = 5.0


class LockHeld(BackupError):
    """The host is locked by another run; ``holder`` is its lock record."""

    def __init__(self, message: str, holder: Dict[str, Any]) -> None:
        super().__init__(message)
        self.holder = holder


def now_iso() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _parse_record(raw: bytes, source: str) -> Optional[Dict[str, Any]]:
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


def read_fd(fd: int, source: str) -> Optional[Dict[str, Any]]:
    return _parse_record(os.pread(fd, MAX_RECORD_BYTES + 1, 0), source)


def write_fd(fd: int, record: Optional[Dict[str, Any]]) -> None:
    """Replace the record in place (the flock belongs to the file, so it is never renamed over)."""
    data = json.dumps(record, sort_keys=True).encode("utf-8") + b"\n" if record is not None else b""
    os.ftruncate(fd, 0)
    if data:
        os.pwrite(fd, data, 0)
    os.fsync(fd)


def try_flock(fd: int, mode: int, wait: float) -> bool:
    """flock ``fd`` (LOCK_EX or LOCK_SH), retrying up to ``wait`` seconds; whether it was got."""
    deadline = time.monotonic() + wait  # a wall-clock jump neither ends nor stretches the wait
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES):
                raise
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def describe_holder(holder: Dict[str, Any]) -> str:
    text = "pid %s on controller %s, started %s (change %s)" % (
        holder.get("pid", "?"), holder.get("controller", "?"), holder.get("started", "?"), holder.get("change_id", "?"))
    if holder.get("holder_pid"):
        text += ", flock held on the host by pid %s since %s" % (holder["holder_pid"], holder.get("locked_at", "?"))
    return text


def ensure_dir(state_dir: str) -> None:
    if not os.path.isdir(state_dir):
        try:
            os.makedirs(state_dir, 0o700)
        except OSError as exc:
            raise BackupError("cannot create %s: %s" % (state_dir, exc.strerror or exc))


def open_lock(path: str, create: bool) -> Optional[int]:
    flags = (os.O_RDWR | os.O_CREAT if create else os.O_RDONLY) | getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ENOENT and not create:
            return None
        if exc.errno == errno.ELOOP or os.path.islink(path):
            raise BackupError("lock file %s is a symlink; refusing it" % path)
        raise BackupError("cannot open lock file %s: %s" % (path, exc.strerror or exc))


def lock_state(state_dir: str) -> Dict[str, Any]:
    """``{"record": <lock record or None>, "held": <whether a process holds the flock>}``
    (read-only: a shared flock is tried and dropped at once)."""
    path = os.path.join(state_dir, LOCK)
    fd = open_lock(path, create=False)
    if fd is None:
        return {"record": None, "held": False}
    try:
        record = read_fd(fd, path)
        held = not try_flock(fd, fcntl.LOCK_SH, 0)
        return {"record": record, "held": held}
    finally:
        os.close(fd)  # drops the shared flock if it was got


def lock_holder(state_dir: str) -> Optional[Dict[str, Any]]:
    """The record of the run holding the host, or None when the flock is free (read-only)."""
    state = lock_state(state_dir)
    if not state["held"]:
        return None
    return state["record"] or {"change_id": "?", "controller": "?", "pid": "?", "started": "?",
                               "note": "the flock is held but the record is empty (being taken or released)"}


def stop_holder(record: Dict[str, Any]) -> bool:
    """SIGTERM the holder process a record names, only if it is that very process (pid + start)."""
    pid = record.get("holder_pid")
    if not pid or not record.get("holder_start") or start_ticks(pid) != record.get("holder_start"):
        return False
    try:
        os.kill(int(pid), signal.SIGTERM)
    except OSError:
        return False
    return True


def _hold(fd: int, path: str, change_id: str, lease: float) -> None:
    """The holder process: keep the flock while the record names ``change_id``, the file is the
    one locked and the change renewed the lease (mtime) within ``lease`` seconds."""
    empty = 0
    while True:
        time.sleep(HOLDER_INTERVAL)
        try:
            on_disk, mine = os.stat(path), os.fstat(fd)
            record = read_fd(fd, path)
        except (OSError, BackupError):
            return
        if (on_disk.st_dev, on_disk.st_ino) != (mine.st_dev, mine.st_ino) or mine.st_nlink == 0:
            return
        if time.time() - mine.st_mtime > lease:
            return
        if record is None:
            empty += 1
            if empty >= 2:  # released (a single empty read may be a rewrite in progress)
                return
            continue
        empty = 0
        if record.get("change_id") != change_id:
            return


def _spawn_holder(fd: int, path: str, change_id: str, lease: float) -> Tuple[int, Optional[str]]:
    """Fork the detached holder process (it inherits ``fd`` and so the flock); its pid and start."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover (runs in the forked processes)
        try:
            os.close(read_end)
            os.setsid()
            if os.fork():
                os._exit(0)
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            os.chdir("/")
            null = os.open(os.devnull, os.O_RDWR)
            for target in (0, 1, 2):
                os.dup2(null, target)
            keep = sorted({fd, write_end})
            os.closerange(3, keep[0])
            os.closerange(keep[0] + 1, keep[1])
            os.closerange(keep[1] + 1, 65536)
            os.write(write_end, b"%d\n" % os.getpid())
            os.close(write_end)
            _hold(fd, path, change_id, lease)
        finally:
            os._exit(0)
    os.close(write_end)
    os.waitpid(child, 0)
    data = b""
    while True:
        chunk = os.read(read_end, 64)
        if not chunk:
            break
        data += chunk
    os.close(read_end)
    try:
        pid = int(data.strip())
    except ValueError:
        raise BackupError("lock file %s: the holder process did not start" % path)
    return pid, start_ticks(pid)


def acquire(state_dir: str, holder: Dict[str, Any], take_over: Optional[str] = None,
            lease: float = DEFAULT_LEASE, wait: float = 3.0) -> Dict[str, Any]:
    """Take the host for ``holder`` and keep it: the flock stays with a holder process until
    :func:`release` (idempotent for the same change id).

    ``take_over`` is the change id of a lock known to be stale; only that one is replaced (its
    holder process is stopped). A record whose flock is free is stale and replaced without it.
    Returns ``{"acquired": True, "replaced": <old record or None>, "stale": bool}``; raises LockHeld.
    """
    ensure_dir(state_dir)
    path = os.path.join(state_dir, LOCK)
    fd = open_lock(path, create=True)
    if fd is None:  # never with create=True (ENOENT raises); narrows the type without an assert
        raise BackupError("cannot open lock file %s" % path)
    try:
        got = try_flock(fd, fcntl.LOCK_EX, wait)
        current = read_fd(fd, path)
        replaced, stale = None, False
        if not got:
            if current is not None and current.get("change_id") == holder["change_id"]:
                os.utime(path)  # our own holder process keeps it: renew the lease
                return {"acquired": True, "replaced": None, "stale": False}
            if current is None or not take_over or current.get("change_id") != take_over:
                shown = current or {"change_id": "?", "controller": "?", "pid": "?", "started": "?"}
                raise LockHeld("host is locked by another rollout: %s; lock file %s" % (describe_holder(shown), path), shown)
            stop_holder(current)
            if not try_flock(fd, fcntl.LOCK_EX, 5.0):
                raise LockHeld("cannot take over the lock of change %s: its flock on %s is still held (holder pid %s did "
                               "not go away); find the process with `fuser %s`" % (take_over, path, current.get("holder_pid", "?"), path),
                               current)
            replaced = current
        elif current is not None and current.get("change_id") != holder["change_id"]:
            replaced, stale = current, True  # the flock was free: its holder is gone
        record = dict(holder)
        record.update(locked_at=now_iso(), lease=lease)
        try:
            write_fd(fd, record)
            record["holder_pid"], record["holder_start"] = _spawn_holder(fd, path, holder["change_id"], lease)
            write_fd(fd, record)
        except OSError as exc:
            raise BackupError("cannot write lock file %s: %s; nothing was changed" % (path, exc.strerror or exc))
    finally:
        os.close(fd)  # the holder process keeps its copy, and with it the flock
    fsync_dir(state_dir)
    return {"acquired": True, "replaced": replaced, "stale": stale}


def release(state_dir: str, change_id: str, wait: float = 5.0) -> bool:
    """Release the lock if ``change_id`` holds it (clear the record, stop the holder process and
    wait until the flock is free); returns whether it did."""
    path = os.path.join(state_dir, LOCK)
    if not os.path.exists(path):
        return False
    fd = open_lock(path, create=True)
    if fd is None:  # never with create=True (ENOENT raises); narrows the type without an assert
        raise BackupError("cannot open lock file %s" % path)
    try:
        current = read_fd(fd, path)
        if current is None or current.get("change_id") != change_id:
            return False
        if try_flock(fd, fcntl.LOCK_EX, 0):
            write_fd(fd, None)
            return True
        # the holder process has the flock: only the owner writes the record while it is held
        write_fd(fd, None)
        stop_holder(current)
        if not try_flock(fd, fcntl.LOCK_EX, wait):
            raise BackupError("released the lock record of change %s, but its flock on %s is still held (holder pid %s)"
                              % (change_id, path, current.get("holder_pid", "?")))
        return True
    finally:
        os.close(fd)


def require_holder(state_dir: str, change_id: str) -> None:
    """Fail unless ``change_id`` holds the lock (record and flock); renews the lease."""
    path = os.path.join(state_dir, LOCK)
    state = lock_state(state_dir)
    current = state["record"]
    if current is None or current.get("change_id") != change_id:
        raise LockHeld("change %s does not hold the lock of %s (%s); refusing to continue"
                       % (change_id, state_dir, describe_holder(current) if current else "nobody holds it"), current or {})
    if not state["held"]:
        raise LockHeld("change %s lost the lock of %s: its holder process (pid %s) is gone (no step for %ss, or it was "
                       "killed); refusing to continue" % (change_id, state_dir, current.get("holder_pid", "?"),
                                                          current.get("lease", "?")), current)
    try:
        os.utime(path)
    except OSError as exc:
        raise BackupError("cannot renew the lock %s: %s" % (path, exc.strerror or exc))


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
    ensure_dir(state_dir)
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


def input_snapshot(files: List[str], dirs: List[str]) -> Dict[str, Any]:
    """What a plan read: sha256 of each file (None when missing) and the names in each directory
    (None when missing). Equal snapshots mean a plan made from them is still current."""
    snapshot: Dict[str, Any] = {"files": {}, "dirs": {}}
    for path in sorted(set(f for f in files if f)):
        snapshot["files"][path] = sha256_or_none(path)
    for directory in sorted(set(d for d in dirs if d)):
        try:
            snapshot["dirs"][directory] = sorted(os.listdir(directory))
        except OSError:
            snapshot["dirs"][directory] = None
    return snapshot


def plan_is_current(snapshot: Any) -> bool:
    """Whether the files and directories of an :func:`input_snapshot` are unchanged."""
    if not isinstance(snapshot, dict) or not isinstance(snapshot.get("files"), dict) or not isinstance(snapshot.get("dirs"), dict):
        raise BackupError("plan_inputs: give the inputs returned by kubelet_config (files and dirs)")
    return input_snapshot(list(snapshot["files"]), list(snapshot["dirs"])) == \
        {"files": dict(snapshot["files"]), "dirs": dict((k, list(v) if v is not None else None) for k, v in snapshot["dirs"].items())}


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
