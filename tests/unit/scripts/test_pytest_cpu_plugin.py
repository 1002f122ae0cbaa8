# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""scripts/pytest_cpu.py: the CPU of each test, its children's included, printed before pytest's
summary line (which must stay the last line: CI reads it), also under pytest-xdist."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _pytest_env():
    """The inner pytest's environment: scripts/ on the path, and only the plugins it is given by name
    (``-p pytest_cpu``, ``-p xdist``). Every other installed plugin (hypothesis, pytest-mock, ...) is
    left out: loading them cost each inner pytest process about 1.3 s of CPU (an xdist run starts
    three), and none of them is what these tests look at."""
    return dict(os.environ, PYTHONPATH=os.path.join(REPO, "scripts"), PYTEST_DISABLE_PLUGIN_AUTOLOAD="1")


TESTS = '''
import subprocess, sys, time

def test_busy_child():
    subprocess.run([sys.executable, "-c", "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.6: pass"], check=True)

def test_sleeps():
    time.sleep(0.3)
'''


@pytest.mark.parametrize("workers", [[], ["-p", "xdist", "-n", "2"]], ids=["serial", "xdist"])
def test_cpu_by_test_and_file_before_the_summary_line(tmp_path, workers):
    (tmp_path / "test_sample.py").write_text(TESTS)
    env = _pytest_env()
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_cpu",
                             "--cpu-top", "5", "-c", os.devnull, "--rootdir", str(tmp_path)] + workers
                            + [str(tmp_path / "test_sample.py")],
                            cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600, check=False)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr
    busy = float(re.search(r"^ +([\d.]+) s  \S*test_sample.py::test_busy_child$", out, re.M).group(1))
    idle = float(re.search(r"^ +([\d.]+) s  \S*test_sample.py::test_sleeps$", out, re.M).group(1))
    assert busy >= 0.6 and idle < 0.2
    assert re.search(r"CPU \(user \+ sys, with the children each test waited for\): \d+ s in 2 tests", out)
    assert re.search(r"^(=+ )?2 passed in ", out.rstrip("\n").split("\n")[-1])


FIXTURE_TESTS = '''
import subprocess, sys, time
import pytest

def _burn(seconds):
    subprocess.run([sys.executable, "-c", "import time\\nt = time.process_time()\\nwhile time.process_time() - t < %s: pass" % seconds],
                   check=True)

@pytest.fixture(scope="session")
def fleet():
    yield
    _burn(0.6)

@pytest.fixture(scope="module")
def host():
    yield
    _burn(0.4)

def test_first(fleet, host):
    pass

def test_last(fleet, host):
    time.sleep(0.1)
'''


@pytest.mark.parametrize("workers", [[], ["-p", "xdist", "-n", "1"]], ids=["serial", "xdist"])
def test_a_wider_fixtures_teardown_has_a_line_of_its_own(tmp_path, workers):
    (tmp_path / "tests" / "e2e").mkdir(parents=True)
    (tmp_path / "tests" / "e2e" / "test_fixtures.py").write_text(FIXTURE_TESTS)
    env = _pytest_env()
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "pytest_cpu",
                             "--cpu-top", "10", "-c", os.devnull, "--rootdir", str(tmp_path)] + workers + ["tests/e2e/test_fixtures.py"],
                            cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=600, check=False)
    out = result.stdout
    assert result.returncode == 0, out + result.stderr

    def seconds(name):
        return float(re.search(r"^ +([\d.]+) s  %s$" % re.escape(name), out, re.M).group(1))

    assert seconds("tests/e2e::<teardown of session fixture fleet>") >= 0.6
    assert seconds("tests/e2e/test_fixtures.py::<teardown of module fixture host>") >= 0.4
    # the last test, after which both are torn down, carries neither
    assert seconds("tests/e2e/test_fixtures.py::test_last") < 0.3
    assert re.search(r"CPU \(user \+ sys, with the children each test waited for\): \d+ s in 2 tests", out)
    # the session fixture's line counts for its directory, the module fixture's for its file
    assert re.search(r"^ +[\d.]+ s +[\d.]+ % +tests/e2e/test_fixtures.py$", out, re.M)
    assert re.search(r"^ +[\d.]+ s +[\d.]+ % +tests/e2e$", out, re.M)
    assert re.search(r"^by directory: tests/e2e 1 s$", out, re.M)
    assert re.search(r"^(=+ )?2 passed in ", out.rstrip("\n").split("\n")[-1])
