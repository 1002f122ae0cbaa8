# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The test fleets' bytecode cache: a zip import answers as without it, a changed source is
compiled afresh, a damaged entry is ignored, and only a fleet asked for it gets it."""

import os
import subprocess
import zipfile

import pytest

from ansible_collections.numaguard.kubelet.tests.fleet import fleet as fleet_tool

#: the fleet hosts' interpreter (the inventory's ansible_python_interpreter); a virtualenv's
#: Python has no user site, so it would never import usercustomize
HOST_PYTHON = "/usr/bin/python3"
PROBE = "import sys, zipimport; sys.path.insert(0, sys.argv[1]); import zipped; print(zipped.ANSWER, zipimport._compile_source.__name__)"


def _zip(path, answer):
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("zipped.py", "ANSWER = %r\n" % answer)


def _run(zip_path, cache):
    """The probe run by a host's Python as a fleet with the cache runs it: usercustomize imported
    from the copy fleet.py installs (beside the zip here), so its bytecode never lands in the checkout."""
    hook = zip_path.parent / "hook"
    fleet_tool._install_usercustomize(str(hook))
    env = dict(os.environ, PYTHONPATH=str(hook / "site"), NUMAGUARD_FLEET_PYC=str(cache))
    env.pop("PYTHONPYCACHEPREFIX", None)
    done = subprocess.run([HOST_PYTHON, "-c", PROBE, str(zip_path)], env=env, capture_output=True, text=True,
                          check=True)
    return done.stdout.split()


pytestmark = pytest.mark.skipif(not os.access(HOST_PYTHON, os.X_OK), reason="no %s, as the fleet needs" % HOST_PYTHON)


def test_zip_imports_answer_the_same_and_a_changed_source_is_compiled_afresh(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    payload = tmp_path / "payload.zip"
    _zip(payload, "first")
    assert _run(payload, cache) == ["first", "_cached_compile"]
    entries = sorted(os.listdir(cache))
    assert len(entries) == 1
    assert _run(payload, cache) == ["first", "_cached_compile"]
    assert sorted(os.listdir(cache)) == entries
    _zip(payload, "second")
    assert _run(payload, cache) == ["second", "_cached_compile"]
    assert len(os.listdir(cache)) == 2


def test_a_damaged_entry_is_compiled_again(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    payload = tmp_path / "payload.zip"
    _zip(payload, "kept")
    _run(payload, cache)
    (entry,) = os.listdir(cache)
    (cache / entry).write_bytes(b"\x00not marshal")
    assert _run(payload, cache) == ["kept", "_cached_compile"]


def test_without_a_cache_directory_nothing_is_hooked(tmp_path):
    payload = tmp_path / "payload.zip"
    _zip(payload, "plain")
    assert _run(payload, tmp_path / "absent") == ["plain", "_compile_source"]
    assert not (tmp_path / "absent").exists()


def test_only_a_fleet_asked_for_it_gets_the_cache(tmp_path, monkeypatch):
    host = {"name": "h01", "port": 2201, "path": str(tmp_path / "h01")}
    state = {"dir": str(tmp_path), "bytecode_cache": None}
    assert "SetEnv" not in fleet_tool._sshd_config(state, host)
    monkeypatch.setenv("NUMAGUARD_FLEET_BYTECODE_CACHE", str(tmp_path / "pyc"))
    state["bytecode_cache"] = fleet_tool._bytecode_cache_dir()
    assert (tmp_path / "pyc").is_dir()
    line = [item for item in fleet_tool._sshd_config(state, host).splitlines() if item.startswith("SetEnv")]
    assert line == ["SetEnv PYTHONPATH=%s NUMAGUARD_FLEET_PYC=%s" % (tmp_path / "pyc" / "site", tmp_path / "pyc")]
    # the hosts import a copy that lives in the cache, so that their Pythons write its bytecode there, not into the checkout
    copy = tmp_path / "pyc" / "site" / "usercustomize.py"
    assert copy.read_bytes() == open(os.path.join(fleet_tool.HERE, "bytecode_cache", "usercustomize.py"), "rb").read()
    assert sorted(os.listdir(tmp_path / "pyc" / "site")) == ["usercustomize.py"]
    monkeypatch.delenv("NUMAGUARD_FLEET_BYTECODE_CACHE")
    assert fleet_tool._bytecode_cache_dir() is None


def test_a_path_sshd_cannot_carry_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMAGUARD_FLEET_BYTECODE_CACHE", str(tmp_path / "with space"))
    with pytest.raises(fleet_tool.FleetError, match="with space"):
        fleet_tool._bytecode_cache_dir()
