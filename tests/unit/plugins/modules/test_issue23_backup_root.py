# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 23, case 4: the backup root is normalised and inside the kubelet directories, and
``prune`` removes only the backups this collection made (manifest plus our marker)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config import backup as kb
from ansible_collections.numaguard.kubelet.plugins.modules import kubelet_backup
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import run_main


def run(capsys, args):
    return run_main(kubelet_backup, capsys, args)


@pytest.fixture
def host(tmp_path):
    kubelet = tmp_path / "var-lib-kubelet"
    kubelet.mkdir()
    (kubelet / "cpu_manager_state").write_text("{}")
    return kubelet, [str(kubelet)]


def test_a_backup_root_outside_the_kubelet_directories_is_refused(capsys, host, tmp_path):
    kubelet, dirs = host
    outside = tmp_path / "srv-data"
    outside.mkdir()
    for operation in ("backup", "prune", "check"):
        result = run(capsys, {"operation": operation, "backup_root": str(outside), "kubelet_dirs": dirs, "keep": 1,
                              "copy": [str(kubelet / "cpu_manager_state")]})
        assert result["failed"] and result["msg"].startswith("backup root %s is not inside the kubelet directories" % outside)
    assert os.listdir(str(outside)) == []


@pytest.mark.parametrize("suffix", ["/../srv-data", "/./numaguard-backups", "//numaguard-backups", "/x/../numaguard-backups"])
def test_a_backup_root_that_is_not_normalised_is_refused(capsys, host, suffix):
    kubelet, dirs = host
    root = str(kubelet) + suffix
    result = run(capsys, {"operation": "backup", "backup_root": root, "kubelet_dirs": dirs,
                          "copy": [str(kubelet / "cpu_manager_state")]})
    assert result["failed"]
    assert result["msg"] == "backup_root: %r is not a normalised path (it means %s); give that path" % (root, os.path.normpath(root))
    assert sorted(os.listdir(str(kubelet))) == ["cpu_manager_state"]


def test_prune_removes_only_the_backups_this_collection_made(capsys, host):
    kubelet, dirs = host
    root = kubelet / "numaguard-backups"
    made = [kb.create_backup(str(root), [str(kubelet / "cpu_manager_state")], [], dirs, now=t)[0] for t in range(3)]
    # someone else's: timestamp-named directories without our marker (one with a manifest), a
    # marker that is not ours, and .partial-* entries we did not make
    theirs = []
    for name in ("19600101T000000Z", "19610101T000000Z", "19620101T000000Z"):
        os.mkdir(str(root / name))
        (root / name / "data").write_text("keep me")
        theirs.append(str(root / name))
    (root / "19610101T000000Z" / kb.MANIFEST).write_text('{"version": 1, "files": []}')
    (root / "19620101T000000Z" / kb.MANIFEST).write_text('{"version": 1, "files": []}')
    (root / "19620101T000000Z" / kb.MARKER).write_text("not ours\n")
    (root / ".partial-foreign").write_text("a file")
    os.mkdir(str(root / ".partial-19700101T000000Z-7"))
    (root / ".partial-19700101T000000Z-7" / "data").write_text("keep me")
    ours_partial = root / ".partial-19700101T000000Z-8"
    os.mkdir(str(ours_partial))
    (ours_partial / kb.MARKER).write_bytes(kb.MARKER_TEXT)
    result = run(capsys, {"operation": "prune", "backup_root": str(root), "keep": 1, "kubelet_dirs": dirs})
    assert sorted(result["pruned"]) == sorted(made[:2] + [str(ours_partial)])
    for path in theirs + [str(root / ".partial-foreign"), str(root / ".partial-19700101T000000Z-7")]:
        assert os.path.exists(path), path
    assert os.path.isdir(made[2])


def test_every_backup_carries_the_marker(host):
    kubelet, dirs = host
    backup_dir, _entries = kb.create_backup(str(kubelet / "b"), [str(kubelet / "cpu_manager_state")], [], dirs)
    assert kb.made_by_us(backup_dir)
    with open(os.path.join(backup_dir, kb.MARKER), "rb") as handle:
        assert handle.read() == kb.MARKER_TEXT
