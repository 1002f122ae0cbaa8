# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Controller CPU to build each module's AnsiballZ payload, the way a playbook run builds it.

Ansible builds a module's payload once per playbook run, in the first task worker that needs it,
while the other forks wait on the payload cache's lock: for a play whose first task runs the
module on every host, the build is on the critical path, once per run. The build walks the
module's imports statically (``recursive_finder``: every module_utils file it can reach is read
and parsed into a Python AST, then zipped), so it costs in proportion to the code shipped, not
to the code a run imports (``benchmarks/import_closure.py`` shows that split). This script runs
``ansible.executor.module_common.modify_module`` for each module in a fresh interpreter (no
payload cache, as at the start of a playbook run) and prints the median CPU of ``--runs`` builds,
the files shipped and their size, next to ``ansible.builtin.ping``'s. Prints figures, not a test.

    .venv/bin/python benchmarks/payload_build.py [--runs 5] [--module numaguard.kubelet.numa_facts ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from import_closure import payload_entries  # noqa: E402  (benchmarks/import_closure.py)
from rollout_overhead import collection_path  # noqa: E402  (benchmarks/rollout_overhead.py)

DEFAULT_MODULES = ("ansible.builtin.ping", "numaguard.kubelet.numa_facts", "numaguard.kubelet.kubelet_rollout",
                   "numaguard.kubelet.admission_check")


def _child(module, collections):
    """In a fresh interpreter: build ``module``'s payload once; print its CPU ms and what it ships."""
    from ansible import constants as C  # pylint: disable=import-outside-toplevel
    from ansible.plugins.loader import init_plugin_loader, module_loader  # pylint: disable=import-outside-toplevel

    init_plugin_loader([collections])
    from ansible.executor.module_common import modify_module  # pylint: disable=import-outside-toplevel
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.template import Templar  # pylint: disable=import-outside-toplevel

    C.DEFAULT_LOCAL_TMP = tempfile.mkdtemp()
    try:
        found = module_loader.find_plugin_with_context(module)
        templar = Templar(loader=DataLoader())
        began = time.process_time()
        built = modify_module(module_name=found.resolved_fqcn, module_path=found.plugin_resolved_path, module_args={},
                              templar=templar, task_vars={"ansible_python_interpreter": sys.executable},
                              module_compression="ZIP_DEFLATED")
        spent = time.process_time() - began
    finally:
        shutil.rmtree(C.DEFAULT_LOCAL_TMP, ignore_errors=True)
    data = built.b_module_data
    names = payload_entries(data)
    print(json.dumps({"ms": spent * 1000.0, "payload": len(data), "files": len([n for n in names if n.filename.endswith(".py")]),
                      "source": sum(n.file_size for n in names)}))


def build_once(module, collections):
    """One build of ``module``'s payload in a fresh interpreter: its CPU ms and what it ships."""
    done = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", module, collections],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit("benchmark: building %s failed:\n%s" % (module, done.stderr[-2000:]))
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--runs", type=int, default=5, help="builds per module, alternating (default 5)")
    parser.add_argument("--module", action="append", default=[], help="a module to build (repeatable; default: %s)"
                        % ", ".join(DEFAULT_MODULES))
    parser.add_argument("--child", nargs=2, metavar=("MODULE", "COLLECTIONS"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(*args.child)
        return 0
    modules = args.module or list(DEFAULT_MODULES)
    work = collection_path(REPO)
    try:
        samples = dict((m, []) for m in modules)
        shipped = {}
        for _round in range(args.runs):
            for module in modules:
                result = build_once(module, work)
                samples[module].append(result["ms"])
                shipped[module] = result
    finally:
        shutil.rmtree(work, ignore_errors=True)  # removes the link, not the checkout it points to
    print("AnsiballZ payload build on the controller (modify_module, no payload cache), %d runs each, %s, load average %s, "
          "PYTHONDONTWRITEBYTECODE=%s" % (args.runs, sys.executable, " ".join("%.1f" % x for x in os.getloadavg()),
                                          os.environ.get("PYTHONDONTWRITEBYTECODE", "")))
    print("%-36s %9s %9s %7s %11s %11s" % ("module", "median ms", "min ms", "files", "source KB", "payload KB"))
    for module in modules:
        values, built = samples[module], shipped[module]
        row = (module, statistics.median(values), min(values), built["files"], built["source"] // 1024, built["payload"] // 1024)
        print("%-36s %9.0f %9.0f %7d %11d %11d" % row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
