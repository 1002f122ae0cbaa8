# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Timestamped backups of kubelet config and state files, and byte-exact restore.

Why: a kubelet policy change needs its state files out of the way, and a failed restart must be
undone exactly. Nothing here deletes a file without keeping its bytes: state files are *moved*
into the backup directory (the kubelet then starts fresh), config files are *copied*; a
``manifest.json`` records for every path whether it existed, its sha256, mode and owner, so
:func:`restore_backup` can put back the exact previous bytes (and remove files that did not
exist before, such as a new drop-in or a checkpoint the failed kubelet created).

Safety rules (a manifest is data from disk, so it is distrusted):

* every path backed up or restored lies inside the kubelet directories given by the caller, and
  is neither a symlink nor has a symlinked parent leading outside them;
* a backup is built in ``.partial-*`` and renamed into place only when every copy is written,
  fsynced and verified; originals move only after that, so a failed or interrupted backup never
  holds the only copy of a file and is removed (or pruned later);
* a restore validates the whole manifest and every stored copy's sha256 before touching a file,
  and verifies each temporary copy again before it replaces anything.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import re
import shutil
import time

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._io import fsync_dir, write_file
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import nesting_exceeds

try:
    from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

MANIFEST = "manifest.json"
#: Written first into every backup this collection makes: prune removes nothing without it.
MARKER = ".numaguard-kubelet-backup"
MARKER_TEXT = b"numaguard.kubelet backup\n"
FILES = "files"
PARTIAL_PREFIX = ".partial-"
#: Default kubelet directories (the kubelet's --root-dir and its config tree).
DEFAULT_KUBELET_DIRS = ("/etc/kubernetes", "/var/lib/kubelet")
#: Bounds on what a manifest may hold (a real one has a handful of entries, a few KB).
MAX_MANIFEST_BYTES = 1 << 20
MAX_ENTRIES = 256
MAX_JSON_DEPTH = 16
PATH_MAX = 4096
NAME_MAX = 255
_STAMP = re.compile(r"^\d{8}T\d{6}Z(-[A-Za-z0-9.-]{1,80})?$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


class BackupError(NumaguardError):
    """A backup or restore that cannot be done safely; the message names the path."""


# ----------------------------------------------------------------------------------------------
# paths
# ----------------------------------------------------------------------------------------------

def path_problem(value: Any, must_be_absolute: bool = True) -> Optional[str]:
    """Why ``value`` cannot be a path on a Linux host, or None (NUL, too long, relative)."""
    if not isinstance(value, str):
        return "is not a string (%s)" % type(value).__name__
    if value == "":
        return "is empty"
    if "\x00" in value:
        return "contains a NUL byte"
    if len(value.encode("utf-8", "surrogateescape")) >= PATH_MAX:
        return "is longer than %d bytes" % PATH_MAX
    if any(len(part.encode("utf-8", "surrogateescape")) > NAME_MAX for part in value.split("/")):
        return "has a component longer than %d bytes" % NAME_MAX
    if must_be_absolute and not value.startswith("/"):
        return "is not an absolute path"
    return None


def check_path(option: str, value: Any, must_be_absolute: bool = True) -> str:
    """``value`` if it is a usable path, else BackupError naming ``option``."""
    problem = path_problem(value, must_be_absolute)
    if problem:
        raise BackupError("%s: %r %s" % (option, value, problem))
    return value


def _below(path: str, directory: str) -> bool:
    directory = directory.rstrip("/") or "/"
    return path == directory or path.startswith(directory if directory == "/" else directory + "/")


def inside(path: str, directories: Sequence[str]) -> bool:
    """Whether ``path`` lies inside one of ``directories``, both lexically and after resolving
    symlinks (a symlinked parent must not lead out of the kubelet directories)."""
    lexical = os.path.normpath(path)
    real = os.path.realpath(path)
    return any(_below(lexical, os.path.normpath(d)) for d in directories) and \
        any(_below(real, os.path.realpath(d)) for d in directories)


def _require_inside(what: str, path: str, kubelet_dirs: Sequence[str]) -> None:
    if not inside(path, kubelet_dirs):
        raise BackupError("%s %s is not inside the kubelet directories (%s)%s; refusing"
                          % (what, path, ", ".join(kubelet_dirs),
                             " (it resolves to %s)" % os.path.realpath(path) if os.path.realpath(path) != path else ""))


def check_backup_root(backup_root: str, kubelet_dirs: Sequence[str]) -> None:
    """A backup root is a normalised path (no ``..``, ``.`` or ``//``: the path given is the one
    used) inside the kubelet directories, also when it is reached through a symlink: backups,
    the rollout journal and prune's removals never happen anywhere else."""
    check_path("backup_root", backup_root)
    normal = os.path.normpath(backup_root)
    if normal != backup_root.rstrip("/") and backup_root != "/":
        raise BackupError("backup_root: %r is not a normalised path (it means %s); give that path" % (backup_root, normal))
    if os.path.realpath(backup_root) != normal:
        _require_inside("backup root (a symlink or below one)", backup_root, kubelet_dirs)
    else:
        _require_inside("backup root", backup_root, kubelet_dirs)


# ----------------------------------------------------------------------------------------------
# files
# ----------------------------------------------------------------------------------------------

def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(65536), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _copy_synced(source: str, target: str, mode: int = 0o600) -> str:
    """Copy ``source`` to the new file ``target`` (O_EXCL), fsync it; returns the copy's sha256."""
    digest = hashlib.sha256()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode)
    try:
        with open(source, "rb") as src:
            for chunk in iter(lambda: src.read(65536), b""):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
                digest.update(chunk)
        os.fsync(fd)
    finally:
        os.close(fd)
    return digest.hexdigest()


def _remove_quietly(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)
    except OSError:
        pass


def _oserror(what: str, path: str, exc: EnvironmentError) -> BackupError:
    return BackupError("%s %s: %s" % (what, path, exc.strerror or exc))


# ----------------------------------------------------------------------------------------------
# backup
# ----------------------------------------------------------------------------------------------

def plan_backup(copy_paths: List[str], move_paths: List[str],
                kubelet_dirs: Sequence[str] = DEFAULT_KUBELET_DIRS) -> List[Dict[str, Any]]:
    """What :func:`make_backup` would record (also its check mode): one entry per distinct path."""
    entries: List[Dict[str, Any]] = []
    seen = set()
    for option, action, paths in (("move", "move", move_paths), ("copy", "copy", copy_paths)):
        for path in paths:
            check_path(option, path)
            real = os.path.normpath(path)
            if real in seen:
                continue
            seen.add(real)
            _require_inside("%s path" % option, real, kubelet_dirs)
            if os.path.islink(real):
                raise BackupError("%s is a symlink (to %s); refusing to back it up (replace it by the file it names)"
                                  % (real, os.readlink(real)))
            exists = os.path.isfile(real)
            if os.path.lexists(real) and not exists:
                raise BackupError("%s exists but is not a regular file; refusing to back it up" % real)
            try:
                digest = sha256_file(real) if exists else None
            except OSError as exc:
                raise _oserror("cannot read", real, exc)
            entries.append({"path": real, "action": action, "existed": exists, "sha256": digest})
    return entries


def _stamp(now: Optional[float]) -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now if now is not None else time.time()))


def _ensure_root(backup_root: str) -> None:
    if not os.path.isdir(backup_root):
        try:
            os.makedirs(backup_root, 0o700)
        except OSError as exc:
            raise _oserror("cannot create backup root", backup_root, exc)


def _final_name(backup_root: str, now: Optional[float]) -> str:
    stamp = _stamp(now)
    for suffix in [""] + ["-%d" % i for i in range(1, 1000)]:
        candidate = os.path.join(backup_root, stamp + suffix)
        if not os.path.lexists(candidate):
            return candidate
    raise BackupError("too many backups in %s for %s" % (backup_root, stamp))


def create_backup(backup_root: str, copy_paths: List[str], move_paths: List[str],
                  kubelet_dirs: Sequence[str] = DEFAULT_KUBELET_DIRS,
                  now: Optional[float] = None, name: Optional[str] = None) -> Tuple[str, List[Dict[str, Any]]]:
    """Back up into a new ``<backup_root>/<UTC timestamp>[-N]``; returns (backup_dir, entries).

    ``name`` (a timestamp-led name such as a change id) fixes the directory's name, so a journal can
    record it before the backup exists. The copies are made in a ``.partial-*`` directory, fsynced,
    verified and the manifest written;
    only then is it renamed to its timestamp and are the ``move_paths`` originals removed. Any
    failure before that removes the partial directory and names the file that failed.
    """
    check_backup_root(backup_root, kubelet_dirs)
    if name is not None and not _STAMP.match(name):
        raise BackupError("name: %r must look like 20260101T100000Z or 20260101T100000Z-<letters, digits, . or ->" % (name,))
    entries = plan_backup(copy_paths, move_paths, kubelet_dirs)
    _ensure_root(backup_root)
    if name is not None and os.path.lexists(os.path.join(backup_root, name)):
        raise BackupError("backup directory %s exists already; refusing to reuse it" % os.path.join(backup_root, name))
    partial = os.path.join(backup_root, "%s%s-%d" % (PARTIAL_PREFIX, _stamp(now), os.getpid()))
    try:
        os.mkdir(partial, 0o700)
        write_file(os.path.join(partial, MARKER), MARKER_TEXT)
        os.mkdir(os.path.join(partial, FILES), 0o700)
    except OSError as exc:
        _remove_quietly(partial)
        raise _oserror("cannot create backup directory", partial, exc)
    try:
        _fill(partial, entries)
        final = os.path.join(backup_root, name) if name is not None else _final_name(backup_root, now)
        os.rename(partial, final)
        fsync_dir(backup_root)
    except BaseException:
        _remove_quietly(partial)
        raise
    _move_originals(final, entries)
    return final, entries


def _fill(backup_dir: str, entries: List[Dict[str, Any]]) -> None:
    """Copy every existing file into ``backup_dir/files``, fsync, verify, write the manifest."""
    for index, entry in enumerate(entries):
        entry["stored"] = os.path.join(FILES, "%03d-%s" % (index, os.path.basename(entry["path"])))
        if not entry["existed"]:
            continue
        target = os.path.join(backup_dir, entry["stored"])
        try:
            info = os.stat(entry["path"])
        except OSError as exc:
            raise _oserror("cannot read", entry["path"], exc)
        entry["mode"] = info.st_mode & 0o7777
        entry["uid"] = info.st_uid
        entry["gid"] = info.st_gid
        try:
            copied = _copy_synced(entry["path"], target)
        except OSError as exc:
            if exc.filename == entry["path"]:
                raise _oserror("cannot read", entry["path"], exc)
            raise BackupError("cannot write the backup copy %s of %s: %s" % (target, entry["path"], exc.strerror or exc))
        if copied != entry["sha256"]:
            raise BackupError("%s changed while it was being backed up; try again" % entry["path"])
    try:
        fsync_dir(os.path.join(backup_dir, FILES))
        _write_manifest(backup_dir, entries)
    except OSError as exc:
        raise BackupError("cannot write the backup manifest %s: %s"
                          % (os.path.join(backup_dir, MANIFEST), exc.strerror or exc))


def _move_originals(backup_dir: str, entries: List[Dict[str, Any]]) -> None:
    """Remove the originals of moved files (their verified, fsynced copies are in the backup)."""
    moved = False
    for entry in entries:
        if entry["action"] == "move" and entry["existed"]:
            try:
                os.unlink(entry["path"])
            except OSError as exc:
                if moved:
                    _write_manifest(backup_dir, entries)
                raise BackupError("cannot move %s into the backup %s: %s (its copy is kept there)"
                                  % (entry["path"], backup_dir, exc.strerror or exc))
            entry["moved"] = True
            moved = True
            fsync_dir(os.path.dirname(entry["path"]))
    if moved:
        _write_manifest(backup_dir, entries)


def _write_manifest(backup_dir: str, entries: List[Dict[str, Any]]) -> None:
    data = json.dumps({"version": 1, "files": entries}, indent=1, sort_keys=True).encode("utf-8")
    write_file(os.path.join(backup_dir, MANIFEST), data)


def list_backups(backup_root: str) -> List[str]:
    """Complete backup directories below ``backup_root``, oldest first (by timestamp name)."""
    try:
        names = os.listdir(backup_root)
    except OSError:
        return []
    found = []
    for name in names:
        path = os.path.join(backup_root, name)
        if _STAMP.match(name) and os.path.isdir(path) and not os.path.islink(path):
            stamp, _sep, rest = name.partition("-")
            found.append(((stamp, int(rest) if rest.isdigit() else -1, os.stat(path).st_mtime, rest), path))
    return [path for _key, path in sorted(found)]


def _regular_file(path: str) -> bool:
    return os.path.isfile(path) and not os.path.islink(path)


def made_by_us(backup_dir: str, complete: bool = True) -> bool:
    """Whether ``backup_dir`` is a backup this collection made: a directory (not a symlink) with
    our marker file (written first, with its exact text) and, when ``complete``, a manifest."""
    if os.path.islink(backup_dir) or not os.path.isdir(backup_dir):
        return False
    marker = os.path.join(backup_dir, MARKER)
    if not _regular_file(marker) or (complete and not _regular_file(os.path.join(backup_dir, MANIFEST))):
        return False
    try:
        with open(marker, "rb") as handle:
            return handle.read(len(MARKER_TEXT) + 1) == MARKER_TEXT
    except OSError:
        return False


def prune_backups(backup_root: str, keep: int, protect: Iterable[str] = ()) -> List[str]:
    """Remove all but the newest ``keep`` backups (never one in ``protect``), and leftover
    ``.partial-*`` directories of interrupted backups; returns what was removed.

    Only what this collection made goes (:func:`made_by_us`): a timestamp-named directory
    without our marker and manifest, or a ``.partial-*`` entry without our marker, is someone
    else's and stays, as does everything else in the backup root."""
    removed: List[str] = []
    protected = set(os.path.normpath(p) for p in protect if p)
    try:
        names = os.listdir(backup_root)
    except OSError:
        return removed
    for name in names:
        path = os.path.join(backup_root, name)
        if name.startswith(PARTIAL_PREFIX) and not name.endswith("-%d" % os.getpid()) and made_by_us(path, complete=False):
            _remove_quietly(path)
            removed.append(path)
    if keep > 0:
        backups = [b for b in list_backups(backup_root) if os.path.normpath(b) not in protected and made_by_us(b)]
        for path in backups[:max(0, len(backups) - keep)]:
            _remove_quietly(path)
            removed.append(path)
    if removed:
        fsync_dir(backup_root)
    return removed


# ----------------------------------------------------------------------------------------------
# restore
# ----------------------------------------------------------------------------------------------

def load_json_bounded(text: str, source: str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` that fails with a message instead of RecursionError on deep nesting."""
    try:
        doc = json.loads(text)
    except RecursionError:
        raise BackupError("%s nests deeper than %d levels; refusing it" % (source, max_depth))
    except ValueError as exc:
        raise BackupError("%s is not valid JSON: %s" % (source, exc))
    if nesting_exceeds(doc, max_depth):
        raise BackupError("%s nests deeper than %d levels; refusing it" % (source, max_depth))
    return doc


def read_manifest(backup_dir: str) -> List[Dict[str, Any]]:
    """The raw file list of a backup's manifest (bounded read; see :func:`validate_manifest`)."""
    check_path("backup_dir", backup_dir)
    path = os.path.join(backup_dir, MANIFEST)
    try:
        if os.path.islink(path):
            raise BackupError("backup manifest %s is a symlink; refusing it" % path)
        with open(path, "rb") as handle:
            raw = handle.read(MAX_MANIFEST_BYTES + 1)
    except OSError as exc:
        raise BackupError("cannot read backup manifest %s: %s" % (path, exc.strerror or exc))
    if len(raw) > MAX_MANIFEST_BYTES:
        raise BackupError("backup manifest %s is larger than %d bytes; refusing it" % (path, MAX_MANIFEST_BYTES))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BackupError("backup manifest %s is not UTF-8 (byte %d)" % (path, exc.start))
    doc = load_json_bounded(text, "backup manifest %s" % path)
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, list):
        raise BackupError("backup manifest %s has no file list" % path)
    return files


def validate_manifest(backup_dir: str, kubelet_dirs: Sequence[str]) -> List[Dict[str, Any]]:
    """Read and check a manifest as a whole; every problem is listed in one BackupError.

    Each entry needs an absolute, normalised ``path`` inside the kubelet directories, a boolean
    ``existed``; an existing one also a ``stored`` file inside ``<backup_dir>/files`` (a regular
    file, not a symlink), a sha256 and optional integer mode/uid/gid.
    """
    files = read_manifest(backup_dir)
    where = os.path.join(backup_dir, MANIFEST)
    if len(files) > MAX_ENTRIES:
        raise BackupError("backup manifest %s lists %d files (at most %d); refusing it" % (where, len(files), MAX_ENTRIES))
    problems: List[str] = []
    entries: List[Dict[str, Any]] = []
    seen = set()
    store = os.path.join(os.path.realpath(backup_dir), FILES)
    for index, raw in enumerate(files):
        label = "files[%d]" % index
        if not isinstance(raw, dict):
            problems.append("%s is not an object" % label)
            continue
        path = raw.get("path")
        problem = path_problem(path)
        if problem or not isinstance(path, str):  # path_problem says why a non-string is refused
            problems.append("%s.path %r %s" % (label, path, problem))
            continue
        if os.path.normpath(path) != path:
            problems.append("%s.path %r is not a normalised path" % (label, path))
            continue
        if not inside(path, kubelet_dirs):
            problems.append("%s.path %s is not inside the kubelet directories (%s)" % (label, path, ", ".join(kubelet_dirs)))
            continue
        if path in seen:
            problems.append("%s.path %s is listed twice" % (label, path))
            continue
        seen.add(path)
        existed = raw.get("existed")
        if not isinstance(existed, bool):
            problems.append("%s.existed must be true or false, got %r" % (label, existed))
            continue
        entry: Dict[str, Any] = {"path": path, "existed": existed}
        if existed:
            stored, digest = raw.get("stored"), raw.get("sha256")
            problem = path_problem(stored, must_be_absolute=False)
            if problem or not isinstance(stored, str) or stored.startswith("/") or os.path.normpath(stored) != stored or ".." in stored.split("/"):
                problems.append("%s.stored %r must be a relative path below %s/" % (label, stored, FILES))
                continue
            full = os.path.join(backup_dir, stored)
            if not _below(os.path.realpath(full), store) or os.path.realpath(full) == store:
                problems.append("%s.stored %r is not inside %s" % (label, stored, os.path.join(backup_dir, FILES)))
                continue
            if not isinstance(digest, str) or not _SHA256.match(digest):
                problems.append("%s.sha256 %r is not a sha256 hex digest" % (label, digest))
                continue
            for key, top in (("mode", 0o7777), ("uid", 2 ** 32 - 1), ("gid", 2 ** 32 - 1)):
                value = raw.get(key)
                if value is None:
                    continue
                if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
                    problems.append("%s.%s %r is not an integer from 0 to %d" % (label, key, value, top))
                    break
                entry[key] = value
            else:
                if os.path.islink(full) or not os.path.isfile(full):
                    problems.append("backup copy %s of %s is missing (or not a regular file)" % (full, path))
                    continue
                entry.update(stored=full, sha256=digest)
                entries.append(entry)
            continue
        entries.append(entry)
    if problems:
        raise BackupError("backup manifest %s is not usable, nothing was restored: %s" % (where, "; ".join(problems)))
    return entries


def plan_restore(backup_dir: str, kubelet_dirs: Sequence[str]) -> List[Dict[str, Any]]:
    """Validate the backup completely (manifest, stored copies' sha256, targets); returns entries
    with ``result`` set to what :func:`restore_backup` will do. Touches nothing."""
    entries = validate_manifest(backup_dir, kubelet_dirs)
    problems = []
    for entry in entries:
        path = entry["path"]
        if os.path.isdir(path) and not os.path.islink(path):
            problems.append("%s is a directory now; move it away first" % path)
            continue
        if entry["existed"]:
            try:
                if sha256_file(entry["stored"]) != entry["sha256"]:
                    problems.append("backup copy %s of %s does not match its sha256 (corrupt backup)" % (entry["stored"], path))
                    continue
            except OSError as exc:
                problems.append("cannot read backup copy %s: %s" % (entry["stored"], exc.strerror or exc))
                continue
            same = False
            if os.path.isfile(path) and not os.path.islink(path):
                try:
                    same = sha256_file(path) == entry["sha256"] and \
                        ("mode" not in entry or os.stat(path).st_mode & 0o7777 == entry["mode"])
                except OSError:
                    same = False
            entry["result"] = "unchanged" if same else "restored"
        else:
            entry["result"] = "removed" if os.path.lexists(path) else "absent"
    if problems:
        raise BackupError("backup %s cannot be restored, nothing was changed: %s" % (backup_dir, "; ".join(problems)))
    return entries


def restore_backup(backup_dir: str, kubelet_dirs: Sequence[str] = DEFAULT_KUBELET_DIRS) -> List[Dict[str, Any]]:
    """Put every file of the backup back exactly; remove files that did not exist before.

    Returns one entry per path with ``result`` in (restored, removed, unchanged, absent). The
    whole backup is validated first (:func:`plan_restore`); each file is then copied to a temp
    file in its directory, fsynced and verified, and only then renamed over the target.
    """
    entries = plan_restore(backup_dir, kubelet_dirs)
    results = []
    for entry in entries:
        path = entry["path"]
        if entry["result"] == "restored":
            _restore_one(entry)
        elif entry["result"] == "removed":
            try:
                os.unlink(path)
            except OSError as exc:
                raise _oserror("cannot remove", path, exc)
            fsync_dir(os.path.dirname(path))
        results.append({"path": path, "result": entry["result"]})
    return results


def _restore_one(entry: Dict[str, Any]) -> None:
    path = entry["path"]
    directory = os.path.dirname(path)
    try:
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
    except OSError as exc:
        raise _oserror("cannot create", directory, exc)
    tmp = os.path.join(directory, ".%s.numaguard-restore-%d" % (os.path.basename(path), os.getpid()))
    _remove_quietly(tmp)
    try:
        try:
            copied = _copy_synced(entry["stored"], tmp, 0o600)
        except OSError as exc:
            raise BackupError("cannot write %s (restoring %s): %s" % (tmp, path, exc.strerror or exc))
        if copied != entry["sha256"] or sha256_file(tmp) != entry["sha256"]:
            raise BackupError("the copy of %s made for restoring %s does not match its sha256; %s left as it was"
                              % (entry["stored"], path, path))
        os.chmod(tmp, entry.get("mode", 0o644))
        try:
            os.chown(tmp, entry.get("uid", -1), entry.get("gid", -1))
        except OSError:
            pass
        os.rename(tmp, path)
    except OSError as exc:
        raise _oserror("cannot restore", path, exc)
    finally:
        _remove_quietly(tmp)
    fsync_dir(directory)


# ----------------------------------------------------------------------------------------------
# room to write
# ----------------------------------------------------------------------------------------------

def _existing_ancestor(path: str) -> str:
    while not os.path.isdir(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    return path


def space_wanted(backup_root: str, copy: List[str], move: List[str]) -> List[Any]:
    """``(directory, bytes)`` a backup of ``copy`` + ``move`` and the rewrite of the copied files need."""
    def size(paths: List[str]) -> int:
        total = 0
        for path in paths:
            try:
                total += os.path.getsize(path)
            except OSError:
                pass
        return total

    wanted: List[Any] = [(backup_root, size(copy + move))]
    for path in copy:
        directory = os.path.dirname(path)
        if directory not in [w[0] for w in wanted]:
            wanted.append((directory, size([path]) + 65536))
    return wanted


def check_writable(directories: Sequence[Tuple[str, int]]) -> List[Dict[str, Any]]:
    """Check that each ``(directory, bytes_needed)`` (or its nearest existing ancestor, where it
    would be created) can take a new file of that size. Writes and removes a probe file.

    Returns per directory ``path``, ``checked`` (the directory probed), ``free_bytes``,
    ``needed_bytes``; raises BackupError naming the first directory that fails.
    """
    report = []
    for directory, needed in directories:
        check_path("path", directory)
        probe_dir = _existing_ancestor(directory)
        probe = os.path.join(probe_dir, ".numaguard-write-probe-%d" % os.getpid())
        try:
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            try:
                os.write(fd, b"x")
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise BackupError("cannot write to %s (for %s): %s; nothing was changed" % (probe_dir, directory, exc.strerror or exc))
        finally:
            _remove_quietly(probe)
        info = os.statvfs(probe_dir)
        free = info.f_bavail * info.f_frsize
        # every file needs whole blocks, and the manifest and journal need a few more
        margin = 64 * info.f_frsize
        if free < needed + margin:
            raise BackupError("not enough free space in %s (for %s): %d bytes free, %d needed; nothing was changed"
                              % (probe_dir, directory, free, needed + margin))
        report.append({"path": directory, "checked": probe_dir, "free_bytes": free, "needed_bytes": needed + margin})
    return report
