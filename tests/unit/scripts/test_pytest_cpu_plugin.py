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

TESTS = '''
import subprocess, sys, time

def test_busy_child():
    subprocess.run([sys.executable, "-c", "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.6: pass"], check=True)

def test_sleeps():
    time.sleep(0.3)
'''


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_cpu_by_test_and_file_before_the_summary_line(tmp_path, workers):
    (tmp_path / "test_sample.py").write_text(TESTS)
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "scripts"))
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
