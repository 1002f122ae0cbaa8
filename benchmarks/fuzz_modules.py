# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Print what 10,000 fuzzed inputs do to the modules and the pod-file loader (issue 23).

The cases of ``tests/fleet/fuzz_inputs.py`` (seeded): kubelet_config, kubelet_backup,
admission_check, reserved_memory (in-process, each in its own case directory) and
admission_check's pod_file reader. Printed: tracebacks, writes outside the case root,
half-written files (all three must be 0), refusals, cases per module and the time per case.
Run from the repository root: ``.venv/bin/python benchmarks/fuzz_modules.py [COUNT] [SEED]``.
"""

from __future__ import absolute_import, division, print_function

import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "benchmarks"))

from _collection import importable  # noqa: E402  pylint: disable=import-error

importable()

from ansible_collections.numaguard.kubelet.tests.fleet.fuzz_inputs import run_cases  # noqa: E402


def main(argv):
    count = int(argv[0]) if argv else 10000
    seed = int(argv[1]) if len(argv) > 1 else 0
    started, cpu = time.monotonic(), time.process_time()

    def progress(done):
        if done % 1000 == 0:
            sys.stderr.write("%d cases, %.0f s\n" % (done, time.monotonic() - started))

    counts = run_cases(count, seed, progress=progress)
    wall, cpu = time.monotonic() - started, time.process_time() - cpu
    print("fuzzed inputs: %d cases, seed %d (PYTHONDONTWRITEBYTECODE=%s)"
          % (counts["cases"], seed, os.environ.get("PYTHONDONTWRITEBYTECODE", "")))
    for name in ("traceback", "outside", "half_written"):
        print("  %-14s %d" % (name, counts[name]))
    print("  %-14s %d (%.0f%%; the rest answered)" % ("refused", counts["failed"], 100.0 * counts["failed"] / max(1, counts["cases"])))
    print("  per module:    %s" % ", ".join("%s %d" % item for item in sorted(counts["per_module"].items())))
    print("  time:          %.1f s wall, %.1f s CPU, %.2f ms CPU per case" % (wall, cpu, 1000.0 * cpu / max(1, counts["cases"])))
    for example in counts["examples"]:
        print("  example: %s" % example)
    return 0 if not (counts["traceback"] or counts["outside"] or counts["half_written"]) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
