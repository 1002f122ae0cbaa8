# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Page weight of the HTML report and size of every other rendering at fleet scale (issue 25).

SYNTHETIC host data, not playbook output: tests/fleet/report_hosts.py reads each bundled class once
for real (numa_facts gatherer, reserved_memory_check with the class's example settings, admission_check
with the sample db pod) and gives N hosts of six classes those answers, with per-host MemFree, free
hugepages and kubelet pids, plus exceptions (2 hosts without 1Gi pages, 3 invalid, 2 unreachable).
Prints, per report (discover, validate, check_pod): HTML bytes, text lines, JSON / Prometheus / JUnit
bytes, the number of answers (collapsed entries) and of distinct warnings. Figures only; never fails.

    .venv/bin/python benchmarks/report_page_weight.py [--hosts 400] [--out DIR]

``--out DIR`` keeps the renderings (``<kind>.html`` ...) to open in a browser.
For the same figures from a real validate.yml run on a simulated fleet (at most 50 hosts on a shared
machine), run playbooks/validate.yml with ``-e validate_html_file=...`` and measure that file.
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _collection import importable  # noqa: E402

importable()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--hosts", type=int, default=400)
    parser.add_argument("--out", help="directory to keep the renderings in")
    args = parser.parse_args(argv)

    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import check_pod_report, discover_report, validate_report
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report_html import render_html
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report_render import render_json, render_junit, render_prometheus, render_text
    from ansible_collections.numaguard.kubelet.tests.fleet.report_hosts import Fleet

    started = time.time()
    fleet = Fleet(args.hosts)
    topologies, groups, hosts, failed = fleet.discover_inputs()
    reports = [("discover", discover_report(topologies, groups, hosts, failed=failed))]
    results, topologies, groups, hosts = fleet.validate_inputs()
    reports.append(("validate", validate_report(results, topologies, groups, hosts)))
    results, topologies, groups, hosts, active = fleet.check_pod_inputs()
    reports.append(("check_pod", check_pod_report(results, topologies, groups, hosts, active)))
    print("report page weight at %d hosts of %d classes (SYNTHETIC host data from tests/fleet/report_hosts.py; "
          "inputs built in %.1f s, PYTHONDONTWRITEBYTECODE=%s)"
          % (args.hosts, len(set(fleet.topology.values())), time.time() - started, os.environ.get("PYTHONDONTWRITEBYTECODE", "")))
    print("%-10s %10s %6s %10s %12s %10s %8s %9s" % ("report", "html", "text", "json", "prometheus", "junit",
                                                     "answers", "warnings"))
    for kind, report in reports:
        renderings = {"html": render_html(report), "text": "\n".join(render_text(report)) + "\n",
                      "json": render_json(report), "prom": render_prometheus(report), "xml": render_junit(report)}
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            for ext, text in renderings.items():
                with open(os.path.join(args.out, "%s.%s" % (kind, ext)), "w", encoding="utf-8") as handle:
                    handle.write(text)
        size = dict((k, len(v.encode("utf-8"))) for k, v in renderings.items())
        print("%-10s %8.1f KB %6d %7.1f KB %9.1f KB %7.1f KB %8s %9d" % (
            kind, size["html"] / 1000.0, renderings["text"].count("\n"), size["json"] / 1000.0, size["prom"] / 1000.0,
            size["xml"] / 1000.0, len(report.get("answers") or []) or "-", len(report.get("warnings") or [])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
