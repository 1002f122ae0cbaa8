# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""scripts/bootstrap on a freshly booted machine whose apt is busy: it waits for the package lock,
bounded, names the holder, and gives up with a message instead of failing at once (issue 26)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
HOLD = "import fcntl, sys, time\nf = open(sys.argv[1], 'r+')\nfcntl.lockf(f, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(float(sys.argv[2]))\n"


def hold_lock(path, seconds):
    """A process (not this one: fcntl locks are per process) holding an apt-style lock on ``path``."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "held"
    return proc


def wait_only(lock, limit):
    env = dict(os.environ, BOOTSTRAP_WAIT_ONLY="1", BOOTSTRAP_APT_LOCKS=str(lock), BOOTSTRAP_APT_WAIT=str(limit))
    return subprocess.run(["bash", os.path.join(REPO, "scripts", "bootstrap")], env=env, capture_output=True, text=True,
                          timeout=60, check=False)


def test_free_lock_no_wait(tmp_path):
    lock = tmp_path / "lock-frontend"
    lock.write_text("")
    proc = wait_only(lock, 10)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""


def test_held_lock_named_then_given_up_after_the_bound(tmp_path):
    lock = tmp_path / "lock-frontend"
    lock.write_text("")
    holder = hold_lock(lock, 30)
    try:
        started = time.time()
        proc = wait_only(lock, 4)
        elapsed = time.time() - started
    finally:
        holder.kill()
        holder.wait()
    assert proc.returncode == 1
    assert "waiting for the package lock: pid %d (python" % holder.pid in proc.stdout
    assert "the package lock is still held after 4 s: pid %d" % holder.pid in proc.stderr
    assert "raise BOOTSTRAP_APT_WAIT" in proc.stderr
    assert 3.5 < elapsed < 30


def test_waits_until_the_holder_lets_go(tmp_path):
    lock = tmp_path / "lock"
    lock.write_text("")
    holder = hold_lock(lock, 3)
    reaper = threading.Thread(target=holder.wait)
    reaper.start()
    proc = wait_only(lock, 60)
    reaper.join()
    assert proc.returncode == 0, proc.stderr
    assert "waiting for the package lock: pid %d" % holder.pid in proc.stdout


def test_a_bad_bound_is_named(tmp_path):
    proc = wait_only(tmp_path / "none", "soon")
    assert proc.returncode == 2 and "BOOTSTRAP_APT_WAIT must be whole seconds, got 'soon'" in proc.stderr


def test_the_probe_takes_no_lock(tmp_path):
    lock = tmp_path / "lock"
    lock.write_text("")
    subprocess.run([sys.executable, os.path.join(REPO, "scripts", "apt_lock.py"), str(lock)], check=True)
    with open(lock, "r+") as handle:  # still free for apt: nothing was left held
        fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
