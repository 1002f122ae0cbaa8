# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Run the test suite's stages side by side, each timed, with pytest's summary line last.

`scripts/test` hands this a list of stages (name, command, the stages it waits for). At most
``--jobs`` run at once, started in the order listed (put the longest first); each stage's output is
captured and printed whole when it ends, so logs never interleave. One stage is the *final*
one (pytest): its log is printed last of all, and the table of stage times goes just above its
closing line, so that the log still ends with pytest's summary (what CI reads).

A failed stage does not stop the others (one run shows every failure); the exit status is the
first failure's, or 0. Standard library only: it runs before anything is installed.

Usage: python scripts/stages.py [--jobs N] STAGES_FILE
STAGES_FILE: one stage a line, ``name | after1,after2 | command`` (``|`` and ``,`` separate;
``final`` as the first word of the name marks the final stage); ``#`` lines are comments.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, NamedTuple, Optional, Tuple


class Stage(NamedTuple):
    name: str
    after: Tuple[str, ...]
    command: str
    final: bool


class Outcome(NamedTuple):
    rc: int
    started: float
    ended: float
    log: str
    cpu: float = 0.0


def parse_stages(text: str) -> List[Stage]:
    """The stages file: ``name | after,... | command`` per line; errors name the line."""
    stages: List[Stage] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split("|", 2)
        if len(parts) != 3 or not parts[0].strip() or not parts[2].strip():
            raise SystemExit("stages: line %d is not 'name | after,... | command': %r" % (number, line))
        name = parts[0].strip()
        final = name.split()[0] == "final"
        if final:
            name = name.split(None, 1)[1].strip()
        after = tuple(a.strip() for a in parts[1].split(",") if a.strip())
        stages.append(Stage(name, after, parts[2].strip(), final))
    names = [s.name for s in stages]
    for stage in stages:
        unknown = [a for a in stage.after if a not in names]
        if unknown:
            raise SystemExit("stages: %r waits for unknown stage(s) %s" % (stage.name, ", ".join(unknown)))
    if len(set(names)) != len(names) or sum(s.final for s in stages) > 1:
        raise SystemExit("stages: stage names must be unique and at most one stage final")
    return stages


def _minutes(seconds: float) -> str:
    return "%d:%02d" % divmod(int(round(seconds)), 60)


def time_table(stages: List[Stage], outcomes: Dict[str, Outcome], began: float, jobs: int) -> str:
    """The stage times, in start order, with the wall time and the summed stage time.

    CPU is user + system time of the stage and every descendant it waited for (wait4): the
    figure that says what a stage costs on a shared machine, where wall time says little."""
    rows = sorted((o.started, name, o) for name, o in outcomes.items())
    width = max([len(row[1]) for row in rows] + [len("total wall")])
    lines = ["", "=== stage times (wall, up to %d side by side; cpu = user + sys)" % jobs]
    for started, name, outcome in rows:
        status = "ok" if outcome.rc == 0 else "FAILED (exit %d)" % outcome.rc
        took = outcome.ended - outcome.started
        lines.append("  %s  %6.0f s  %s  cpu %6.1f s  start +%s  %s" % (
            name.ljust(width), took, _minutes(took), outcome.cpu, _minutes(started - began), status))
    skipped = [s.name for s in stages if s.name not in outcomes]
    for name in skipped:
        lines.append("  %s  not run (a stage it waits for failed)" % name.ljust(width))
    total = sum(o.ended - o.started for o in outcomes.values())
    cpu = sum(o.cpu for o in outcomes.values())
    end = max((o.ended for o in outcomes.values()), default=began)
    wall = end - began
    lines.append("  %s  %6.0f s  %s  cpu %6.0f s  (stage time summed: %.0f s)" % (
        "total wall".ljust(width), wall, _minutes(wall), cpu, total))
    return "\n".join(lines) + "\n"


def _reap(proc: subprocess.Popen) -> Optional[Tuple[int, float]]:
    """(exit status, CPU seconds) of a finished stage, or None while it runs.

    wait4 rather than poll: its rusage counts the stage's own process and every descendant it
    waited for (pytest's workers, ansible-test's containers of processes)."""
    pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
    if pid == 0:
        return None
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime


def run(stages: List[Stage], jobs: int, out=sys.stdout) -> int:
    began = time.time()
    logdir = tempfile.mkdtemp(prefix="numaguard-stages.")
    pending = list(stages)
    running: Dict[str, Tuple[subprocess.Popen, float, str]] = {}
    outcomes: Dict[str, Outcome] = {}
    failed: List[str] = []

    def ready(stage: Stage) -> Optional[bool]:
        """True: may start; False: must wait; None: never (a stage it waits for failed or was skipped)."""
        if any(a in failed for a in stage.after):
            return None
        return all(a in outcomes for a in stage.after)

    while pending or running:
        for stage in list(pending):
            if len(running) >= jobs:
                break
            state = ready(stage)
            if state is None:
                pending.remove(stage)
                failed.append(stage.name)
            elif state:
                pending.remove(stage)
                log = os.path.join(logdir, "%02d.log" % len(outcomes.keys() | running.keys()))
                handle = open(log, "wb")
                proc = subprocess.Popen(["bash", "-c", stage.command], stdout=handle, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL)
                handle.close()
                running[stage.name] = (proc, time.time(), log)
                out.write("=== started  %-40s (+%s)\n" % (stage.name, _minutes(time.time() - began)))
                out.flush()
        finished = [(name, _reap(entry[0])) for name, entry in running.items()]
        finished = [(name, done) for name, done in finished if done is not None]
        if not finished:
            time.sleep(0.2)
            continue
        for name, (rc, cpu) in finished:
            proc, started, log = running.pop(name)
            outcomes[name] = Outcome(rc, started, time.time(), log, cpu)
            if rc:
                failed.append(name)
            stage = next(s for s in stages if s.name == name)
            if not stage.final:
                out.write("\n=== %s: %s in %.0f s\n" % (name, "ok" if rc == 0 else "FAILED (exit %d)" % rc,
                                                        outcomes[name].ended - started))
                with open(log, encoding="utf-8", errors="replace") as handle:
                    out.write(handle.read())
                out.flush()
    table = time_table(stages, outcomes, began, jobs)
    final = next((s for s in stages if s.final), None)
    if final is not None and final.name in outcomes:
        with open(outcomes[final.name].log, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().rstrip("\n").split("\n")
        out.write("\n=== %s (its log last, so that its summary line ends this one)\n" % final.name)
        out.write("\n".join(lines[:-1]) + "\n")
        out.write(table)
        out.write(lines[-1] + "\n")
    else:
        out.write(table)
    out.flush()
    shutil.rmtree(logdir, ignore_errors=True)
    for name in [s.name for s in stages]:
        if name in outcomes and outcomes[name].rc:
            return outcomes[name].rc
    return 1 if failed else 0


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--jobs", type=int, default=2, help="stages at once (default 2)")
    parser.add_argument("stages_file")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1, got %d" % args.jobs)
    with open(args.stages_file, encoding="utf-8") as handle:
        stages = parse_stages(handle.read())
    return run(stages, args.jobs)


if __name__ == "__main__":
    sys.exit(main())
