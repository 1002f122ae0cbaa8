# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""kubelet_backup: exact backup/restore, and its refusals (symlinks, crafted manifests, full disks)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config import backup as kb
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.backup import (
    BackupError,
    create_backup,
    list_backups,
    plan_restore,
    prune_backups,
    restore_backup,
)


@pytest.fixture
def kdirs(tmp_path):
    """A kubelet root and config dir below tmp_path; returns (root, etc, [both])."""
    root = tmp_path / "var-lib-kubelet"
    etc = tmp_path / "etc-kubernetes"
    root.mkdir()
    etc.mkdir()
    return root, etc, [str(root), str(etc)]


def tree(*dirs):
    """Every path below ``dirs`` (to prove nothing was left behind)."""
    found = set()
    for top in dirs:
        for directory, subdirs, files in os.walk(str(top)):
            found.update(os.path.join(directory, n) for n in subdirs + files)
    return found


def test_backup_and_exact_restore(kdirs):
    root, etc, dirs = kdirs
    a, b, c = root / "cpu_manager_state", root / "memory_manager_state", etc / "50-numa.conf"
    a.write_bytes(b"\x00cpu state\n")
    b.write_bytes(b"memory state")
    os.chmod(str(b), 0o600)
    backup_root = str(root / "numaguard-backups")
    backup_dir, entries = create_backup(backup_root, [str(b), str(c), str(a)], [str(a)], dirs, now=0)
    assert os.path.basename(backup_dir) == "19700101T000000Z"
    assert os.path.basename(create_backup(backup_root, [str(b)], [], dirs, now=0)[0]) == "19700101T000000Z-1"
    assert [(os.path.basename(e["path"]), e["action"], e["existed"]) for e in entries] == [
        ("cpu_manager_state", "move", True), ("memory_manager_state", "copy", True), ("50-numa.conf", "copy", False)]
    assert not a.exists() and b.exists()
    a.write_text("new")
    b.write_text("changed")
    c.write_text("new drop-in")
    assert [r["result"] for r in restore_backup(backup_dir, dirs)] == ["restored", "restored", "removed"]
    assert a.read_bytes() == b"\x00cpu state\n" and b.read_bytes() == b"memory state"
    assert os.stat(str(b)).st_mode & 0o777 == 0o600
    assert not c.exists()
    assert [r["result"] for r in restore_backup(backup_dir, dirs)] == ["unchanged", "unchanged", "absent"]
    assert not [p for p in tree(root, etc) if "numaguard-restore" in p or ".partial-" in p]


def test_symlinked_backup_root_leading_outside_is_refused(kdirs, tmp_path):
    root, _etc, dirs = kdirs
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(str(outside), str(root / "numaguard-backups"))
    (root / "cpu_manager_state").write_text("x")
    with pytest.raises(BackupError) as err:
        create_backup(str(root / "numaguard-backups"), [str(root / "cpu_manager_state")], [], dirs)
    assert "backup root (a symlink or below one) %s is not inside the kubelet directories" % (root / "numaguard-backups") in str(err.value)
    assert "resolves to %s" % outside in str(err.value)
    assert os.listdir(str(outside)) == []


def test_symlinked_state_file_and_paths_outside_are_refused(kdirs, tmp_path):
    root, _etc, dirs = kdirs
    (tmp_path / "elsewhere").write_text("x")
    os.symlink(str(tmp_path / "elsewhere"), str(root / "cpu_manager_state"))
    with pytest.raises(BackupError) as err:
        create_backup(str(root / "b"), [], [str(root / "cpu_manager_state")], dirs)
    assert str(err.value).startswith("move path %s is not inside the kubelet directories" % (root / "cpu_manager_state"))
    os.unlink(str(root / "cpu_manager_state"))
    (root / "real").write_text("x")
    os.symlink(str(root / "real"), str(root / "cpu_manager_state"))
    with pytest.raises(BackupError) as err:
        create_backup(str(root / "b"), [], [str(root / "cpu_manager_state")], dirs)
    assert "is a symlink (to %s); refusing to back it up" % (root / "real") in str(err.value)
    with pytest.raises(BackupError) as err:
        create_backup(str(root / "b"), [str(tmp_path / "elsewhere")], [], dirs)
    assert "copy path %s is not inside the kubelet directories" % (tmp_path / "elsewhere") in str(err.value)
    with pytest.raises(BackupError) as err:
        create_backup(str(root / "b"), [str(root)], [], dirs)
    assert str(err.value) == "%s exists but is not a regular file; refusing to back it up" % root
    assert not (root / "b").exists() or list_backups(str(root / "b")) == []


def test_failed_copy_leaves_no_litter_and_names_the_copy(kdirs, monkeypatch):
    root, _etc, dirs = kdirs
    (root / "cpu_manager_state").write_text("state")
    (root / "memory_manager_state").write_text("memory")
    real_write = os.write
    calls = []

    def full_disk(fd, data):
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(kb.os, "write", full_disk)
    before = tree(root)
    with pytest.raises(BackupError) as err:
        create_backup(str(root / "numaguard-backups"), [str(root / "memory_manager_state")],
                      [str(root / "cpu_manager_state")], dirs)
    monkeypatch.undo()
    assert "cannot write the backup copy" in str(err.value) and "of %s: No space left on device" % (root / "memory_manager_state") in str(err.value)
    assert tree(root) - before == {str(root / "numaguard-backups")}  # only the (empty) root, no partial dir
    assert (root / "cpu_manager_state").read_text() == "state"


def _backup(root, dirs):
    (root / "cpu_manager_state").write_text("old state")
    backup_dir, _entries = create_backup(str(root / "bk"), [], [str(root / "cpu_manager_state")], dirs)
    (root / "cpu_manager_state").write_text("live state")
    return backup_dir


def _edit_manifest(backup_dir, change):
    path = os.path.join(backup_dir, "manifest.json")
    with open(path) as handle:
        doc = json.load(handle)
    replaced = change(doc)
    with open(path, "w") as handle:
        handle.write(replaced if isinstance(replaced, str) else json.dumps(doc))


def test_corrupt_copy_never_replaces_the_live_file(kdirs):
    root, _etc, dirs = kdirs
    backup_dir = _backup(root, dirs)
    stored = os.path.join(backup_dir, "files", "000-cpu_manager_state")
    with open(stored, "w") as handle:
        handle.write("corrupt")
    with pytest.raises(BackupError) as err:
        restore_backup(backup_dir, dirs)
    assert "does not match its sha256 (corrupt backup)" in str(err.value) and "nothing was changed" in str(err.value)
    assert (root / "cpu_manager_state").read_text() == "live state"


def test_corruption_between_check_and_rename_is_caught_on_the_temp_copy(kdirs, monkeypatch):
    root, _etc, dirs = kdirs
    backup_dir = _backup(root, dirs)
    real_copy = kb._copy_synced

    def bad_copy(source, target, mode=0o600):
        real_copy(source, target, mode)
        with open(target, "ab") as handle:
            handle.write(b"bitflip")
        return "0" * 64

    monkeypatch.setattr(kb, "_copy_synced", bad_copy)
    with pytest.raises(BackupError) as err:
        restore_backup(backup_dir, dirs)
    assert "does not match its sha256" in str(err.value)
    assert (root / "cpu_manager_state").read_text() == "live state"
    assert not [p for p in tree(root) if "numaguard-restore" in p]


@pytest.mark.parametrize("change, message", [
    (lambda d: d["files"][0].update(path="relative/cpu_manager_state"), "files[0].path 'relative/cpu_manager_state' is not an absolute path"),
    (lambda d: d["files"][0].update(path="/etc/passwd"), "files[0].path /etc/passwd is not inside the kubelet directories"),
    (lambda d: d["files"][0].update(stored="../../../../etc/passwd"), "files[0].stored '../../../../etc/passwd' must be a relative path"),
    (lambda d: d["files"][0].update(stored="/etc/passwd"), "files[0].stored '/etc/passwd' must be a relative path"),
    (lambda d: d["files"][0].update(sha256=None), "files[0].sha256 None is not a sha256 hex digest"),
    (lambda d: d["files"][0].update(mode="0777"), "files[0].mode '0777' is not an integer from 0 to 4095"),
    (lambda d: d["files"][0].update(existed="yes"), "files[0].existed must be true or false, got 'yes'"),
    (lambda d: d["files"].append(dict(d["files"][0])), "is listed twice"),
    (lambda d: d["files"].append({"path": "/tmp/x", "existed": False}), "files[2].path /tmp/x is not inside the kubelet directories"),
    (lambda d: d["files"].append(7), "files[2] is not an object"),
    (lambda d: d["files"][0].pop("path") and None, "files[0].path None is not a string"),
    (lambda d: d["files"][0].update(path="/x\x00y"), "contains a NUL byte"),
])
def test_crafted_manifests_are_refused_before_anything_changes(kdirs, change, message):
    root, etc, dirs = kdirs
    backup_dir = _backup(root, dirs)
    (etc / "new.conf").write_text("new")
    _edit_manifest(backup_dir, lambda d: d["files"].append({"path": str(etc / "new.conf"), "existed": False}))
    _edit_manifest(backup_dir, change)
    before = dict((p, open(p, "rb").read()) for p in tree(root, etc) if os.path.isfile(p))
    with pytest.raises(BackupError) as err:
        restore_backup(backup_dir, dirs)
    assert message in str(err.value)
    assert "nothing was restored" in str(err.value)
    assert dict((p, open(p, "rb").read()) for p in tree(root, etc) if os.path.isfile(p)) == before


def test_deep_huge_and_odd_manifests(kdirs):
    root, _etc, dirs = kdirs
    backup_dir = _backup(root, dirs)
    _edit_manifest(backup_dir, lambda d: "[" * 100000 + "]" * 100000)
    with pytest.raises(BackupError) as err:
        restore_backup(backup_dir, dirs)
    assert "nests deeper than 16 levels" in str(err.value)
    with open(os.path.join(backup_dir, "manifest.json"), "w") as handle:
        handle.write(json.dumps({"files": []}) + " " * (2 << 20))
    with pytest.raises(BackupError) as err:
        restore_backup(backup_dir, dirs)
    assert "is larger than" in str(err.value)
    with open(os.path.join(backup_dir, "manifest.json"), "wb") as handle:
        handle.write(b"\xff\xfe")
    with pytest.raises(BackupError) as err:
        restore_backup(backup_dir, dirs)
    assert "is not UTF-8" in str(err.value)


def test_a_directory_where_a_file_was_is_refused_without_litter(kdirs):
    root, _etc, dirs = kdirs
    backup_dir = _backup(root, dirs)
    os.unlink(str(root / "cpu_manager_state"))
    (root / "cpu_manager_state").mkdir()
    with pytest.raises(BackupError) as err:
        restore_backup(backup_dir, dirs)
    assert "%s is a directory now" % (root / "cpu_manager_state") in str(err.value)
    assert not [p for p in tree(root) if "numaguard-restore" in p]


def test_prune_keeps_newest_and_protected_and_removes_partials(kdirs):
    root, _etc, dirs = kdirs
    (root / "f").write_text("x")
    made = [create_backup(str(root / "bk"), [str(root / "f")], [], dirs, now=t)[0] for t in range(5)]
    os.mkdir(str(root / "bk" / ".partial-19700101T000000Z-1"))  # an interrupted backup of ours: marker first
    (root / "bk" / ".partial-19700101T000000Z-1" / kb.MARKER).write_bytes(kb.MARKER_TEXT)
    removed = prune_backups(str(root / "bk"), 2, protect=[made[0]])
    assert sorted(removed) == sorted(made[1:3] + [str(root / "bk" / ".partial-19700101T000000Z-1")])
    assert list_backups(str(root / "bk")) == [made[0]] + made[3:]


def test_check_writable_names_the_path(tmp_path):
    report = kb.check_writable([(str(tmp_path / "not" / "yet"), 10)])
    assert report[0]["checked"] == str(tmp_path) and report[0]["free_bytes"] > 0
    with pytest.raises(BackupError) as err:
        kb.check_writable([(str(tmp_path), 1 << 62)])
    assert str(err.value).startswith("not enough free space in %s (for %s)" % (tmp_path, tmp_path))
    os.chmod(str(tmp_path), 0o500)
    try:
        if os.geteuid() != 0:
            with pytest.raises(BackupError) as err:
                kb.check_writable([(str(tmp_path), 1)])
            assert str(err.value).startswith("cannot write to %s" % tmp_path)
    finally:
        os.chmod(str(tmp_path), 0o700)


ENTRY = st.dictionaries(
    st.sampled_from(["path", "existed", "stored", "sha256", "mode", "uid", "gid", "action"]),
    st.one_of(st.none(), st.booleans(), st.integers(-2, 2 ** 40), st.text(max_size=30),
              st.sampled_from(["/etc/kubernetes/x", "../x", "files/000-x", "/", "", "files/../../x", "a" * 300]),
              st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2)),
    max_size=8)
DOCS = st.one_of(st.none(), st.integers(), st.text(max_size=20), st.lists(ENTRY, max_size=4),
                 st.fixed_dictionaries({"files": st.one_of(st.lists(st.one_of(ENTRY, st.integers(), st.text(max_size=5)), max_size=5),
                                                           st.text(max_size=5), st.none())}))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=DOCS)
def test_fuzzed_manifests_fail_cleanly_and_change_nothing(kdirs, doc):
    root, _etc, dirs = kdirs
    (root / "live").write_text("live")
    backup = root / "fuzz-backup"
    (backup / "files").mkdir(parents=True, exist_ok=True)
    (backup / "files" / "000-x").write_text("x")
    (backup / "manifest.json").write_text(json.dumps(doc))
    before = tree(root)
    try:
        plan_restore(str(backup), dirs)
        restore_backup(str(backup), dirs)
    except BackupError as exc:
        assert str(exc)
    assert (root / "live").read_text() == "live"
    assert not [p for p in tree(root) - before if "numaguard-restore" in p]
