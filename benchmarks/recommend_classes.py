# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Time the recommendation (issue 27) on every bundled machine class of the simulated fleet.

    .venv/bin/python benchmarks/recommend_classes.py [WORKLOAD] [CLASS ...]

WORKLOAD defaults to playbooks/examples/recommend/workload.yml. Prints per class the candidates
evaluated and dropped, the seconds it took, the winner's figures and those of the collection's
documented defaults (playbooks/examples/classes/group_vars/<class>.yml); then the total. Wall
and CPU seconds both (a shared machine's wall time is mostly waiting), the load average, and
whether Python wrote bytecode (PYTHONDONTWRITEBYTECODE) so figures can be compared.
"""

from __future__ import absolute_import, division, print_function

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _collection import ROOT, importable  # noqa: E402

importable()

import yaml  # noqa: E402

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.facts import gather  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._recommend.recommend import recommend  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.classes import hardware_class  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.recommend_files import load_workload  # noqa: E402
from ansible_collections.numaguard.kubelet.tests.fleet import topologies  # noqa: E402

EXAMPLES = os.path.join(ROOT, "playbooks", "examples", "classes", "group_vars")


def main(argv):
    workload_file = argv[0] if argv and argv[0].endswith((".yml", ".yaml")) else \
        os.path.join(ROOT, "playbooks", "examples", "recommend", "workload.yml")
    names = [a for a in argv if not a.endswith((".yml", ".yaml"))] or sorted(topologies.TOPOLOGIES)
    workload = load_workload(workload_file)
    print("bytecode writing: %s" % ("off (PYTHONDONTWRITEBYTECODE set)" if sys.dont_write_bytecode else "on"))
    total = total_cpu = 0.0
    print("load average before: %.2f %.2f %.2f" % os.getloadavg())
    for name in names:
        root = tempfile.mkdtemp(prefix="recommend-bench-")
        topologies.write_tree(name, root, hostname="h")
        facts = gather(root)
        group = hardware_class(facts)["group"]
        baseline = None
        path = os.path.join(EXAMPLES, group + ".yml")
        if os.path.isfile(path):
            with open(path) as handle:
                baseline = yaml.safe_load(handle)["kubelet_numa_settings"]
        start, cpu_start = time.perf_counter(), time.process_time()
        report = recommend({group: facts}, workload, baselines={group: baseline} if baseline else None)
        seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        total += seconds
        total_cpu += cpu
        model = report["classes"][0]
        win = model["winner"]["result"] if model["winner"] else {"admitted": 0, "aligned": 0}
        base = (model.get("baseline") or {}).get("result") or {"admitted": "-", "aligned": "-"}
        print("%-14s %-32s %4d candidates %3d dropped %6.2f s wall %6.2f s CPU  winner %3s admitted %3s aligned  defaults %3s admitted %3s aligned"
              % (name, group, model["counts"]["evaluated"], model["counts"]["dropped"], seconds, cpu,
                 win["admitted"], win["aligned"], base["admitted"], base["aligned"]))
    print("total %.2f s wall, %.2f s CPU for %d class(es); load average after: %.2f %.2f %.2f"
          % ((total, total_cpu, len(names)) + os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
