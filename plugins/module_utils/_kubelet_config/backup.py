# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""Timestamped backups of kubelet config and state files, and byte-exact restore.

Why: a kubelet policy change needs its state files out of the way, and a failed restart must be
undone exactly. Nothing here deletes a file without keeping its bytes: state files are *moved*
into the backup directory (the kubelet then starts fresh), config files are *copied*; a
``manifest.json`` records for every path whether it existed, its sha256, mode and owner, so
:func:`restore_backup` can put back the exact previous bytes (and remove files that did not
exist before, such as a new drop-in or a checkpoint the failed kubelet created).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import errno
import hashlib
import json
import os
import shutil
import time

from ansible_collections.numaguard.kubelet.plugins.module_utils._io import fsync_dir

try:
    from typing import Any, Dict, List, Optional  # noqa: F401
except ImportError:  # pragma: no cover
    pass

MANIFEST = "manifest.json"


class BackupError(ValueError):
    """A backup or restore that cannot be done safely; the message names the path."""


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(65536), b""):
            digest.update(chunk)
    return digest.hexdigest()


def new_backup_dir(backup_root: str, now: Optional[float] = None) -> str:
    """Create and return ``<backup_root>/<UTC timestamp>[-N]`` (never reuses a directory)."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now if now is not None else time.time()))
    if not os.path.isdir(backup_root):
        try:
            os.makedirs(backup_root, 0o700)
        except OSError as exc:
            raise BackupError("cannot create backup root %s: %s" % (backup_root, exc.strerror))
    for suffix in [""] + ["-%d" % i for i in range(1, 1000)]:
        candidate = os.path.join(backup_root, stamp + suffix)
        try:
            os.mkdir(candidate, 0o700)
            return candidate
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise BackupError("cannot create backup directory %s: %s" % (candidate, exc.strerror))
    raise BackupError("too many backups in %s for %s" % (backup_root, stamp))


def plan_backup(copy_paths: List[str], move_paths: List[str]) -> List[Dict[str, Any]]:
    """What :func:`make_backup` would record (for check mode): one entry per distinct path."""
    entries: List[Dict[str, Any]] = []
    seen = set()
    for action, paths in (("move", move_paths), ("copy", copy_paths)):
        for path in paths:
            real = os.path.abspath(path)
            if real in seen:
                continue
            seen.add(real)
            exists = os.path.isfile(real)
            if os.path.exists(real) and not exists:
                raise BackupError("%s exists but is not a regular file; refusing to back it up" % real)
            entries.append({"path": real, "action": action, "existed": exists,
                            "sha256": _sha256(real) if exists else None})
    return entries


def make_backup(backup_dir: str,
                copy_paths: List[str],
                move_paths: List[str]) -> List[Dict[str, Any]]:
    """Copy ``copy_paths`` and move ``move_paths`` into ``backup_dir``; write the manifest.

    A path listed in both is moved. Missing paths are recorded as absent. The manifest is
    written (and fsynced) before any file is moved, so an interruption never loses a file's
    origin.
    """
    entries = plan_backup(copy_paths, move_paths)
    store = os.path.join(backup_dir, "files")
    if not os.path.isdir(store):
        os.makedirs(store, 0o700)
    for index, entry in enumerate(entries):
        entry["stored"] = os.path.join("files", "%03d-%s" % (index, os.path.basename(entry["path"])))
        if entry["existed"]:
            info = os.stat(entry["path"])
            entry["mode"] = info.st_mode & 0o7777
            entry["uid"] = info.st_uid
            entry["gid"] = info.st_gid
            shutil.copy2(entry["path"], os.path.join(backup_dir, entry["stored"]))
            if _sha256(os.path.join(backup_dir, entry["stored"])) != entry["sha256"]:
                raise BackupError("%s changed while it was being backed up; try again" % entry["path"])
    _write_manifest(backup_dir, entries)
    for entry in entries:
        if entry["action"] == "move" and entry["existed"]:
            os.unlink(entry["path"])  # its bytes are in the backup (verified above)
            entry["moved"] = True
            fsync_dir(os.path.dirname(entry["path"]))
    _write_manifest(backup_dir, entries)
    return entries


def _write_manifest(backup_dir: str, entries: List[Dict[str, Any]]) -> None:
    path = os.path.join(backup_dir, MANIFEST)
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump({"version": 1, "files": entries}, handle, indent=1, sort_keys=True)
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(tmp, path)
    fsync_dir(backup_dir)


def read_manifest(backup_dir: str) -> List[Dict[str, Any]]:
    path = os.path.join(backup_dir, MANIFEST)
    try:
        with open(path) as handle:
            doc = json.load(handle)
    except (IOError, OSError) as exc:
        raise BackupError("cannot read backup manifest %s: %s" % (path, exc.strerror or exc))
    except ValueError as exc:
        raise BackupError("backup manifest %s is not valid JSON: %s" % (path, exc))
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, list):
        raise BackupError("backup manifest %s has no file list" % path)
    return files


def restore_backup(backup_dir: str) -> List[Dict[str, Any]]:
    """Put every file of the backup back exactly; remove files that did not exist before.

    Returns one entry per path with ``result`` in (restored, removed, unchanged, absent).
    Each restored file is written to a temp file in its directory and renamed over the target,
    then verified against the recorded sha256.
    """
    results = []
    for entry in read_manifest(backup_dir):
        path = entry["path"]
        if entry.get("existed"):
            stored = os.path.join(backup_dir, entry["stored"])
            if not os.path.isfile(stored):
                raise BackupError("backup copy %s of %s is missing" % (stored, path))
            if os.path.isfile(path) and _sha256(path) == entry["sha256"] and \
                    (os.stat(path).st_mode & 0o7777) == entry.get("mode", os.stat(path).st_mode & 0o7777):
                results.append({"path": path, "result": "unchanged"})
                continue
            directory = os.path.dirname(path)
            if not os.path.isdir(directory):
                os.makedirs(directory, 0o755)
            tmp = os.path.join(directory, ".%s.numaguard-restore" % os.path.basename(path))
            shutil.copyfile(stored, tmp)
            os.chmod(tmp, entry.get("mode", 0o644))
            try:
                os.chown(tmp, entry.get("uid", -1), entry.get("gid", -1))
            except OSError:
                pass
            os.rename(tmp, path)
            fsync_dir(directory)
            if _sha256(path) != entry["sha256"]:
                raise BackupError("restored %s does not match its backup (sha256 differs)" % path)
            results.append({"path": path, "result": "restored"})
        elif os.path.lexists(path):
            os.unlink(path)
            fsync_dir(os.path.dirname(path))
            results.append({"path": path, "result": "removed"})
        else:
            results.append({"path": path, "result": "absent"})
    return results
