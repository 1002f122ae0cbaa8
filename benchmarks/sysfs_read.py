# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Print how long ``read_topology`` takes per bundled topology (figures, never a pass/fail).

For each tree of tests/fleet/topologies.py (or the names given): nodes, CPUs, the median and
minimum wall time of ``_host.sysfs.read_topology`` in this process (``--repeat`` calls, default
50), and, with ``--fresh N``, the median wall time of N fresh ``python -B`` processes that import
the reader and read the tree once (what a module run pays: no bytecode, cold imports), next to
the whole process's wall time. Issue 12: big16 is the case.

Run: ``.venv/bin/python benchmarks/sysfs_read.py [--repeat 50] [--fresh 9] [topology ...]``
from the repository root.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, REPO)
# The root conftest makes ansible_collections.numaguard.kubelet importable.
import conftest  # noqa: E402,F401  pylint: disable=unused-import,wrong-import-position
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import read_topology  # noqa: E402
from ansible_collections.numaguard.kubelet.tests.fleet import topologies  # noqa: E402

_FRESH = """import sys, time
sys.path.insert(0, %r)
start = time.perf_counter()
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import read_topology
imported = time.perf_counter()
read_topology(%r)
print(imported - start, time.perf_counter() - imported)
"""


def _collections_root():
    """The directory holding ``ansible_collections`` (conftest's symlink tree, or a real one)."""
    return getattr(conftest, "_TMP", None) or conftest._ROOT  # pylint: disable=protected-access


def _fresh(root, runs):
    """Median (read s, whole process s) of ``runs`` fresh interpreters without bytecode."""
    reads, walls = [], []
    for _dummy in range(runs):
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-B", "-c", _FRESH % (_collections_root(), root)],
                             check=True, capture_output=True, text=True).stdout.split()
        walls.append(time.perf_counter() - start)
        reads.append(float(out[1]))
    return statistics.median(reads), statistics.median(walls)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--repeat", type=int, default=50)
    parser.add_argument("--fresh", type=int, default=0, help="fresh processes per topology (0: none)")
    parser.add_argument("names", nargs="*", help="bundled topologies (default: all)")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="numaguard-sysfs-bench-")
    try:
        print("load average: %.2f %.2f %.2f" % os.getloadavg())
        header = ("topology", "nodes", "cpus", "median ms", "min ms", "fresh read ms", "fresh process ms")
        print("%-14s %6s %6s %10s %8s %14s %16s" % header)
        for name in args.names or sorted(topologies.TOPOLOGIES):
            root = os.path.join(work, name)
            topologies.write_tree(name, root, hostname="bench")
            read_topology(root)  # warm the page cache
            times = []
            for _dummy in range(args.repeat):
                start = time.perf_counter()
                read_topology(root)
                times.append(time.perf_counter() - start)
            fresh = ("-", "-")
            if args.fresh:
                fresh = tuple("%.1f" % (value * 1000) for value in _fresh(root, args.fresh))
            spec = topologies.TOPOLOGIES[name]
            row = (name, len(spec.nodes), len(spec.cpus), statistics.median(times) * 1000, min(times) * 1000,
                   fresh[0], fresh[1])
            print("%-14s %6d %6d %10.2f %8.2f %14s %16s" % row)
        print("load average: %.2f %.2f %.2f" % os.getloadavg())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
