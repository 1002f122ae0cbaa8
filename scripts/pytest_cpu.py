# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A pytest plugin: the CPU each test and each test file costs, printed before the summary line.

Wall time says little on a shared 2-core machine (an e2e test waits on ssh and on its fleet); CPU
time (user + system of the test process and of every child it waited for: ansible-playbook, ssh)
says what a test costs the suite. Works under pytest-xdist: each worker measures its own tests and
the figure travels to the controller in the report's user_properties.

A child's CPU counts when it is reaped: a fleet's daemons count at the test that tears the fleet
down, and a process left running counts wherever Python's subprocess module later collects it, so
single tests can carry another's cost (read the files' and the total figures, not one test's).

Usage: python -m pytest -p pytest_cpu --cpu-top N ...   (scripts/ on PYTHONPATH; scripts/test does it)
"""

from __future__ import annotations

import os
import resource
from typing import Dict, List, Tuple

import pytest

_KEY = "numaguard_cpu_seconds"


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_addoption(parser):
    parser.addoption("--cpu-top", type=int, default=15, metavar="N",
                     help="print the N tests and N test files that used the most CPU (0: none)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    item.stash[_START] = _cpu()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "teardown" and _START in item.stash:
        outcome.get_result().user_properties.append((_KEY, _cpu() - item.stash[_START]))


_START = pytest.StashKey[float]()


class _Totals:
    def __init__(self) -> None:
        self.tests: List[Tuple[float, str]] = []


_TOTALS = _Totals()


def pytest_runtest_logreport(report):
    if report.when != "teardown":
        return
    for key, value in report.user_properties:
        if key == _KEY:
            _TOTALS.tests.append((float(value), report.nodeid))


def pytest_terminal_summary(terminalreporter, config):
    top = config.getoption("--cpu-top")
    if top <= 0 or not _TOTALS.tests:
        return
    files: Dict[str, float] = {}
    for seconds, nodeid in _TOTALS.tests:
        path = nodeid.split("::", 1)[0]
        files[path] = files.get(path, 0.0) + seconds
    total = sum(seconds for seconds, _nodeid in _TOTALS.tests)
    write = terminalreporter.write_line
    terminalreporter.section("CPU (user + sys, with the children each test waited for): %.0f s in %d tests"
                             % (total, len(_TOTALS.tests)))
    write("by file:")
    for path, seconds in sorted(files.items(), key=lambda item: -item[1])[:top]:
        write("  %8.1f s  %4.1f %%  %s" % (seconds, 100.0 * seconds / total if total else 0.0, path))
    write("by test:")
    for seconds, nodeid in sorted(_TOTALS.tests, reverse=True)[:top]:
        write("  %8.1f s  %s" % (seconds, nodeid))
    directories: Dict[str, float] = {}
    for path, seconds in files.items():
        top_dir = os.sep.join(path.split("/")[:2])
        directories[top_dir] = directories.get(top_dir, 0.0) + seconds
    write("by directory: " + ", ".join("%s %.0f s" % item for item in sorted(directories.items())))
