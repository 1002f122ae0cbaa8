# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_io.write_file: the one durable write (temp file, fsync, rename, directory fsync), with faults injected."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils import _io
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import patch_module_args


def _listing(directory):
    return sorted(os.listdir(str(directory)))


def test_new_file_gets_default_mode_and_content(tmp_path):
    path = str(tmp_path / "config.yaml")
    _io.write_file(path, b"a: 1\n")
    assert open(path, "rb").read() == b"a: 1\n"
    assert os.stat(path).st_mode & 0o7777 == _io.DEFAULT_MODE
    assert _listing(tmp_path) == ["config.yaml"]


def test_replacing_keeps_the_mode_unless_given(tmp_path):
    path = str(tmp_path / "state")
    _io.write_file(path, b"1", 0o600)
    _io.write_file(path, b"2")
    assert os.stat(path).st_mode & 0o7777 == 0o600
    _io.write_file(path, b"3", 0o640)
    assert (open(path, "rb").read(), os.stat(path).st_mode & 0o7777) == (b"3", 0o640)


def _umask_mode_rename(src, dst):
    """Renames as AnsibleModule.atomic_move does when it creates ``dst``: the mode from the umask."""
    creating = not os.path.exists(dst)
    os.rename(src, dst)
    if creating:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(dst, 0o666 & ~umask)


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644, 0o755])
def test_a_new_file_gets_the_requested_mode_whatever_the_rename_does(tmp_path, mode):
    path = str(tmp_path / "kubelet-config.yaml")
    old_umask = os.umask(0o022)
    try:
        _io.write_file(path, b"a: 1\n", mode, rename=_umask_mode_rename)
    finally:
        os.umask(old_umask)
    assert os.stat(path).st_mode & 0o7777 == mode
    os.chmod(path, 0o640)
    _io.write_file(path, b"a: 2\n", rename=_umask_mode_rename)
    assert (open(path, "rb").read(), os.stat(path).st_mode & 0o7777) == (b"a: 2\n", 0o640)


def test_a_new_file_written_through_atomic_move_gets_the_requested_mode(tmp_path):
    """The real AnsibleModule.atomic_move (what the kubelet_config backend passes): a new file
    with mode 0600 stays 0600 under umask 022; a replaced file keeps its own mode."""
    from ansible.module_utils.basic import AnsibleModule

    with patch_module_args({}):
        module = AnsibleModule(argument_spec={})
    path = str(tmp_path / "10-numaguard.conf")
    old_umask = os.umask(0o022)
    try:
        _io.write_file(path, b"a: 1\n", 0o600, rename=module.atomic_move)
        assert os.stat(path).st_mode & 0o7777 == 0o600
        os.chmod(path, 0o640)
        _io.write_file(path, b"a: 2\n", rename=module.atomic_move)
    finally:
        os.umask(old_umask)
    assert (open(path, "rb").read(), os.stat(path).st_mode & 0o7777) == (b"a: 2\n", 0o640)
    assert _listing(tmp_path) == ["10-numaguard.conf"]


@pytest.mark.parametrize("fault", ["write", "fsync", "chmod", "rename"])
def test_a_failure_keeps_the_old_file_and_leaves_no_temp_file(tmp_path, monkeypatch, fault):
    path = str(tmp_path / "state")
    _io.write_file(path, b"old")

    def boom(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    rename = None
    if fault == "rename":
        rename = boom
    elif fault == "write":
        monkeypatch.setattr(_io.os, "fdopen", lambda fd, mode: _FailingWriter(fd))
    else:
        monkeypatch.setattr(_io.os, fault, boom)
    with pytest.raises(OSError):
        _io.write_file(path, b"new", rename=rename)
    monkeypatch.undo()
    assert open(path, "rb").read() == b"old"
    assert _listing(tmp_path) == ["state"]


class _FailingWriter:
    def __init__(self, fd):
        self.fd = fd

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        os.close(self.fd)
        return False

    def write(self, data):
        raise OSError(5, "Input/output error")


def test_rename_hook_and_directory_fsync(tmp_path, monkeypatch):
    calls = []
    monkeypatch.setattr(_io, "fsync_dir", lambda directory: calls.append(("fsync_dir", directory)))

    def rename(src, dst):
        calls.append(("rename", os.path.dirname(src) == os.path.dirname(dst)))
        os.replace(src, dst)

    path = str(tmp_path / "kubelet.yaml")
    _io.write_file(path, b"x", rename=rename)
    assert calls == [("rename", True), ("fsync_dir", str(tmp_path))]


def test_fsync_dir_skips_what_it_cannot_open(tmp_path):
    _io.fsync_dir(str(tmp_path / "missing"))  # no exception
    _io.fsync_dir(str(tmp_path))


def test_read_file_if_exists_has_one_answer_for_missing(tmp_path):
    path = tmp_path / "memory_manager_state"
    assert _io.read_file_if_exists(str(path)) is None
    os.symlink(str(tmp_path / "nowhere"), str(tmp_path / "dangling"))
    assert _io.read_file_if_exists(str(tmp_path / "dangling")) is None
    path.write_bytes(b"{}")
    assert _io.read_file_if_exists(str(path)) == b"{}"


def test_read_file_if_exists_raises_other_failures(tmp_path):
    with pytest.raises(OSError):
        _io.read_file_if_exists(str(tmp_path))  # a directory
