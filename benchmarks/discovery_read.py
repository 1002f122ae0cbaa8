# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Print how long discovery and capture take per bundled topology (figures, never a pass/fail).

For each tree of tests/fleet/topologies.py: files in the tree, median wall time of
``_host.facts.gather`` (what numa_facts does: topology, system memory, kubelet files, devices),
the size of the resulting fact JSON, and for the capture (``_host.snapshot.capture`` with the
facts read back, what numa_snapshot does): entries copied, archive size and wall time.
Run: ``.venv/bin/python benchmarks/discovery_read.py`` from the repository root (``--repeat N``,
default 15).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
# The root conftest makes ansible_collections.numaguard.kubelet importable.
import conftest  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.facts import gather  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.snapshot import capture  # noqa: E402


def _topologies():
    spec = importlib.util.spec_from_file_location("numaguard_fleet_topologies",
                                                  os.path.join(REPO, "tests", "fleet", "topologies.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    topologies = _topologies()
    work = tempfile.mkdtemp(prefix="numaguard-bench-")
    try:
        print("%-14s %6s %6s %7s %10s %10s %9s %8s %9s %11s" % (
            "topology", "nodes", "cpus", "files", "median ms", "max ms", "json KiB", "captured", "tgz KiB",
            "capture ms"))
        for name in sorted(topologies.TOPOLOGIES):
            root = os.path.join(work, name)
            topologies.write_tree(name, root, hostname="bench")
            files = sum(len(entry[2]) for entry in os.walk(root))
            times = []
            facts = None
            for _dummy in range(args.repeat):
                start = time.perf_counter()
                facts = gather(root)
                times.append(time.perf_counter() - start)
            start = time.perf_counter()
            snap = capture(root, os.path.join(work, name + ".tar.gz"), gather)
            capture_ms = (time.perf_counter() - start) * 1000
            spec = topologies.TOPOLOGIES[name]
            print("%-14s %6d %6d %7d %10.1f %10.1f %9.1f %8d %9.1f %11.1f" % (
                name, len(spec.nodes), len(spec.cpus), files, statistics.median(times) * 1000,
                max(times) * 1000, len(json.dumps(facts)) / 1024.0, snap["files"], snap["bytes"] / 1024.0,
                capture_ms))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
