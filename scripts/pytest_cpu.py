# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A pytest plugin: the CPU each test and each test file costs, printed before the summary line.

Wall time says little on a shared 2-core machine (an e2e test waits on ssh and on its fleet); CPU
time (user + system of the test process and of every child it waited for: ansible-playbook, ssh)
says what a test costs the suite. Works under pytest-xdist: each worker measures its own tests and
the figure travels to the controller in the report's user_properties.

A child's CPU counts when it is reaped: a process left running counts wherever Python's subprocess
module later collects it, so single tests can carry another's cost (read the files' and the total
figures, not one test's). The teardown of a fixture wider than a test (a module's or the session's
fleet, whose teardown reaps the fleet's daemons and so carries all their CPU) is not the test's it
happens after: it has a line of its own, "<teardown of SCOPE fixture NAME>", in the test's file
(module, class and package scope) or, for the session scope, in the test's directory.

Usage: python -m pytest -p pytest_cpu --cpu-top N ...   (scripts/ on PYTHONPATH; scripts/test does it)
"""

from __future__ import annotations

import os
import resource
from typing import Any, Dict, List, Tuple

import pytest

_KEY = "numaguard_cpu_seconds"
#: a wider fixture's teardown inside a test's teardown: (line name, seconds), not counted in the test's figure
_FIXTURE_KEY = "numaguard_cpu_fixture_teardown"
#: a wider fixture's teardown cheaper than this (seconds) stays in the test's figure
_NOTABLE = 0.05


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
def pytest_runtest_teardown(item):
    _STATE.item = item
    _STATE.teardowns = []
    yield
    _STATE.item = None


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef, request):
    yield
    if fixturedef.scope != "function":
        # added after the fixture's own teardown, so it runs first (finalizers run last-in first-out):
        # the start of its teardown; pytest_fixture_post_finalizer is its end
        fixturedef.addfinalizer(lambda: _STATE.started.__setitem__(id(fixturedef), _cpu()))


def pytest_fixture_post_finalizer(fixturedef, request):
    start = _STATE.started.pop(id(fixturedef), None)
    if start is None or _STATE.item is None:
        return
    nodeid = _STATE.item.nodeid.split("::", 1)[0]
    if fixturedef.scope == "session":
        nodeid = os.path.dirname(nodeid) or "."
    seconds = _cpu() - start
    if seconds >= _NOTABLE:  # tmp_path_factory and the like: left in the test's figure, not a line each
        _STATE.teardowns.append(("%s::<teardown of %s fixture %s>" % (nodeid, fixturedef.scope, fixturedef.argname),
                                 seconds))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "teardown" and _START in item.stash:
        report = outcome.get_result()
        fixtures = sum(seconds for _name, seconds in _STATE.teardowns)
        report.user_properties.append((_KEY, _cpu() - item.stash[_START] - fixtures))
        report.user_properties.extend((_FIXTURE_KEY, teardown) for teardown in _STATE.teardowns)
        _STATE.teardowns = []


_START = pytest.StashKey[float]()


class _State:
    """The test being torn down, the wider fixtures' teardowns inside it, the CPU at each one's start."""

    def __init__(self) -> None:
        self.item: Any = None
        self.teardowns: List[Tuple[str, float]] = []
        self.started: Dict[int, float] = {}


_STATE = _State()


class _Totals:
    def __init__(self) -> None:
        self.tests: List[Tuple[float, str]] = []  # the tests' and the wider fixtures' teardowns' lines
        self.teardowns = 0


_TOTALS = _Totals()


def pytest_runtest_logreport(report):
    if report.when != "teardown":
        return
    for key, value in report.user_properties:
        if key == _KEY:
            _TOTALS.tests.append((float(value), report.nodeid))
        elif key == _FIXTURE_KEY:
            name, seconds = value
            _TOTALS.tests.append((float(seconds), str(name)))
            _TOTALS.teardowns += 1


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
                             % (total, len(_TOTALS.tests) - _TOTALS.teardowns))
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
