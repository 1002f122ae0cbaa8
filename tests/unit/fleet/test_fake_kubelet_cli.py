# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The stand-in kubelet's command line: argparse's answers without argparse, and a ``status``
as light as ``systemctl is-active`` (no HTTP server, no argparse imported)."""

import os
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from ansible_collections.numaguard.kubelet.tests.fleet import fake_kubelet

SCRIPT = os.path.abspath(fake_kubelet.__file__)


def _run(*argv):
    return subprocess.run([sys.executable, SCRIPT] + list(argv), capture_output=True, text=True, check=False)


def test_options_take_both_spellings_and_keep_the_defaults():
    args = fake_kubelet.Options(["restart", "--healthz", "127.0.0.9:10248", "--root-dir=/r", "--lines", "5"])
    assert (args.command, args.healthz, args.root_dir, args.lines) == ("restart", "127.0.0.9:10248", "/r", 5)
    assert (args.config, args.config_dir) == ("/etc/kubernetes/kubelet-config.yaml", "/etc/kubernetes/kubelet.conf.d")


@pytest.mark.parametrize("argv, named", [
    ([], "give one of the commands"),
    (["bogus"], "'bogus'"),
    (["status", "stop"], "'stop'"),
    (["logs", "--lines", "many"], "'many'"),
    (["start", "--healthz"], "--healthz needs a value"),
    (["status", "--unknown=1"], "'--unknown=1'"),
])
def test_a_bad_command_line_exits_2_naming_the_bad_value(argv, named):
    done = _run(*argv)
    assert done.returncode == 2
    assert named in done.stderr and done.stderr.startswith("usage: fake_kubelet.py {start,")


def test_status_logs_and_marker_on_an_empty_root_dir(tmp_path):
    done = _run("status", "--root-dir", str(tmp_path))
    assert (done.returncode, done.stdout) == (3, "inactive\n")
    assert _run("fail-next-start", "--root-dir", str(tmp_path)).returncode == 0
    assert (tmp_path / "fake-kubelet" / "fail-next-start").read_text() == "fail\n"
    (tmp_path / "fake-kubelet" / "kubelet.log").write_text("".join("line %d\n" % i for i in range(30)))
    assert _run("logs", "--root-dir", str(tmp_path), "--lines", "2").stdout == "line 28\nline 29\n"


def test_status_imports_neither_argparse_nor_the_http_server(tmp_path):
    probe = ("import runpy, sys; sys.argv = [%r, 'status', '--root-dir', %r]\n"
             "try:\n    runpy.run_path(%r, run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('argparse', 'http.server', 'tempfile', 'hashlib') if m in sys.modules))"
             % (SCRIPT, str(tmp_path), SCRIPT))
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines()[-1] == "[]"


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_started_kubelet_serves_healthz_and_keeps_its_bytecode_out_of_the_checkout(tmp_path):
    config = tmp_path / "kubelet-config.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n")
    (tmp_path / "conf.d").mkdir()
    address = "127.0.0.1:%d" % _free_port()
    options = ["--root-dir", str(tmp_path / "root"), "--config", str(config), "--config-dir", str(tmp_path / "conf.d"),
               "--healthz", address]
    env = dict(os.environ)
    for name in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX"):
        env.pop(name, None)
    started = time.time() - 1
    assert subprocess.run([sys.executable, SCRIPT, "start"] + options, env=env, check=False).returncode == 0
    try:
        for _attempt in range(100):
            if _run("status", *options).returncode == 0:
                break
            time.sleep(0.1)
        with urllib.request.urlopen("http://%s/healthz" % address, timeout=5) as answer:
            assert answer.read() == b"ok"
    finally:
        assert _run("stop", *options).returncode == 0
    assert _run("status", *options).returncode == 3
    cached = os.path.join(os.path.dirname(os.path.dirname(SCRIPT)), "..", "plugins", "module_utils", "_kubelet_config",
                          "__pycache__")
    fresh = [name for name in (os.listdir(cached) if os.path.isdir(cached) else [])
             if name.startswith("config.") and os.path.getmtime(os.path.join(cached, name)) >= started]
    assert fresh == [], "the stand-in kubelet wrote bytecode into the checkout: %s" % fresh
