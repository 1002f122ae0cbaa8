# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""compile_each_module_once: modules imported from a zip (an AnsiballZ payload) are compiled once
each, and behave as before (same code, file names, packages, errors)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys
import zipfile

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils import _zip_compile

zipimport = pytest.importorskip("zipimport")
pytestmark = pytest.mark.skipif(not hasattr(zipimport, "_compile_source"),
                                reason="zipimport without _compile_source: the wrapper does nothing here")

_RUN = r"""
import json, sys, zipimport
sys.path.insert(0, sys.argv[1])
compiled = []
original = zipimport._compile_source
def counting(pathname, source):
    compiled.append(pathname)
    return original(pathname, source)
zipimport._compile_source = counting
if sys.argv[2] == "once":
    from ansible_collections.numaguard.kubelet.plugins.module_utils._zip_compile import compile_each_module_once
    assert compile_each_module_once() and compile_each_module_once()
import zpkg.sub.leaf as leaf
import zpkg.other as other
try:
    import zpkg.broken
    error = None
except SyntaxError as exc:
    error = "%s:%s" % (type(exc).__name__, exc.lineno)
print(json.dumps({"compiled": compiled, "value": leaf.VALUE + other.VALUE, "file": leaf.__file__,
                  "package": leaf.__package__, "path": list(sys.modules["zpkg.sub"].__path__),
                  "error": error}))
"""


def _zip(tmp_path):
    archive = str(tmp_path / "payload.zip")
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as handle:
        handle.writestr("zpkg/__init__.py", "")
        handle.writestr("zpkg/sub/__init__.py", "X = 1\n")
        handle.writestr("zpkg/sub/leaf.py", "from zpkg.sub import X\nVALUE = X + 41\n")
        handle.writestr("zpkg/other.py", "VALUE = 100\n")
        handle.writestr("zpkg/broken.py", "x = 1\ndef (:\n")
    return archive


def _run(tmp_path, mode):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, "-c", _RUN, _zip(tmp_path), mode], capture_output=True, env=env,
                          check=False)
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


def test_each_module_is_compiled_once_and_behaves_the_same(tmp_path):
    before = _run(tmp_path, "twice")
    after = _run(tmp_path, "once")
    # the stock zipimport compiles each module twice (get_filename, then get_code)
    assert len(before["compiled"]) > len(set(before["compiled"]))
    assert len(after["compiled"]) == len(set(after["compiled"]))
    assert set(after["compiled"]) == set(before["compiled"])
    for key in ("value", "file", "package", "path", "error"):
        assert after[key] == before[key]
    assert after["value"] == 142 and after["error"] == "SyntaxError:2"


def test_a_changed_source_is_compiled_again():
    calls = []

    def compile_source(pathname, source):
        calls.append((pathname, source))
        return compile(source, pathname, "exec")

    once = _zip_compile._once(compile_source)
    first = once("m.py", b"A = 1\n")
    assert once("m.py", b"A = 1\n") is first          # the second ask of the same source: no compile
    assert once("m.py", b"A = 2\n") is not first      # other bytes: compiled
    assert once("m.py", b"A = 1\n") is not first      # a third ask compiles again (nothing kept forever)
    assert len(calls) == 3


def test_without_compile_source_it_does_nothing(monkeypatch):
    monkeypatch.delattr(zipimport, "_compile_source")
    assert _zip_compile.compile_each_module_once() is False
