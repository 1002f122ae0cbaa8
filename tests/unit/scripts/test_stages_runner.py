# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""scripts/stages.py, the runner behind scripts/test: stages side by side, each log whole, the
final stage's log last with the time table just above its closing line, failures reported."""

from __future__ import annotations

import importlib.util
import io
import os
import re
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
_SPEC = importlib.util.spec_from_file_location("numaguard_stages", os.path.join(REPO, "scripts", "stages.py"))
stages = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(stages)


def run(text, jobs=2):
    out = io.StringIO()
    rc = stages.run(stages.parse_stages(text), jobs, out)
    return rc, out.getvalue()


def test_final_log_last_with_the_table_above_its_closing_line():
    rc, out = run("final tests | | echo one; echo '== 3 passed in 0.1s =='\n"
                  "slow | | sleep 0.3; echo slow done\n"
                  "after | slow | echo after done\n")
    assert rc == 0
    lines = out.rstrip("\n").split("\n")
    assert lines[-1] == "== 3 passed in 0.1s =="
    table = out.index("=== stage times")
    assert out.index("slow done") < out.index("after done") < table < out.index("== 3 passed")
    assert out.index("one\n", out.index("=== tests (its log last")) < table
    for name in ("tests", "slow", "after", "total wall"):
        assert "  " + name in out[table:]


def test_stages_run_side_by_side_up_to_jobs():
    started = time.time()
    rc, _out = run("a | | sleep 0.6\nb | | sleep 0.6\nc | | sleep 0.6\n", jobs=3)
    assert rc == 0 and time.time() - started < 1.5


def test_a_failure_skips_its_dependents_runs_the_rest_and_sets_the_exit_status():
    rc, out = run("final t | | echo '1 passed'\nbad | | echo broken; exit 3\nneeds bad | bad | echo never\nother | | echo fine\n")
    assert rc == 3
    assert "=== bad: FAILED (exit 3)" in out and "broken" in out and "fine" in out
    assert "never" not in out
    assert re.search(r"^  needs bad +not run \(a stage it waits for failed\)$", out, re.M)
    assert out.rstrip("\n").split("\n")[-1] == "1 passed"


@pytest.mark.parametrize("text, message", [
    ("just a name\n", "line 1 is not 'name | after,... | command'"),
    ("a | nope | true\n", "'a' waits for unknown stage(s) nope"),
    ("a | | true\na | | true\n", "must be unique"),
    ("final a | | true\nfinal b | | true\n", "at most one stage final"),
])
def test_bad_stage_files_are_named(text, message):
    with pytest.raises(SystemExit) as caught:
        stages.parse_stages(text)
    assert message in str(caught.value)


def test_each_stage_reports_the_cpu_it_and_its_children_used():
    # A busy child of the stage's shell: its CPU counts (wait4), a sleeping stage's does not.
    busy_loop = "exec('import time\\\\nt = time.process_time()\\\\nwhile time.process_time() - t < 0.5: pass')"
    rc, out = run('busy | | python3 -c "%s"\nidle | | sleep 0.5\n' % busy_loop)
    assert rc == 0
    busy = float(re.search(r"^  busy +\d+ s +\S+ +cpu +([\d.]+) s", out, re.M).group(1))
    idle = float(re.search(r"^  idle +\d+ s +\S+ +cpu +([\d.]+) s", out, re.M).group(1))
    assert busy >= 0.5 and idle < 0.1
    assert re.search(r"^  total wall +\d+ s +\S+ +cpu +\d+ s", out, re.M)
