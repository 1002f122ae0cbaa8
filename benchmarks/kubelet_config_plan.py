# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Print how long reading kubelet configs and planning a kubelet_config change takes (median).

Scenarios: a kubeadm-style main config (~60 keys) read with PyYAML and with the built-in reader;
the effective configuration with 0, 10 and 100 drop-ins; a full ``plan_change`` (read, merge,
validate against a 2-node topology, state-file decision) on such a tree.
Run from the repository root: ``.venv/bin/python benchmarks/kubelet_config_plan.py``.
"""

from __future__ import absolute_import, division, print_function

import os
import shutil
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
__import__("conftest")  # makes ansible_collections.numaguard.kubelet importable

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config import config as kc  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.plan import plan_change  # noqa: E402

HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"


def main_config():
    lines = [HEADER.rstrip("\n"), "authentication:", "  anonymous:", "    enabled: false", "  webhook:",
             "    cacheTTL: 0s", "    enabled: true", "  x509:", "    clientCAFile: /etc/kubernetes/pki/ca.crt",
             "clusterDNS:", "- 10.96.0.10", "featureGates: {MemoryQoS: false}"]
    for i in range(50):
        lines.append("key%02d: \"value %d\"  # comment" % (i, i))
    return "\n".join(lines) + "\n"


def timed(func, repeats=30):
    samples = []
    for _repeat in range(repeats):
        start = time.perf_counter()
        func()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000.0


def main():
    text = main_config()
    print("parse kubeadm-style config (%d bytes): PyYAML %.3f ms, built-in reader %.3f ms, emit %.3f ms" % (
        len(text), timed(lambda: kc.parse_yaml(text, use_pyyaml=True)), timed(lambda: kc.parse_yaml(text, use_pyyaml=False)),
        timed(lambda: kc.dump_yaml(kc.parse_yaml(text)))))
    topology = Topology.from_facts({"nodes": [
        {"id": n, "cpus": list(range(n * 32, n * 32 + 32)), "memory_total_bytes": 256 << 30, "memory_free_bytes": 200 << 30,
         "hugepages": {}, "distances": {"0": 10 if n == 0 else 21, "1": 21 if n == 0 else 10}} for n in (0, 1)]})
    for dropins in (0, 10, 100):
        tree = tempfile.mkdtemp(prefix="ng-bench-")
        try:
            conf_d = os.path.join(tree, "conf.d")
            os.makedirs(conf_d)
            os.makedirs(os.path.join(tree, "root"))
            with open(os.path.join(tree, "config.yaml"), "w") as handle:
                handle.write(text)
            for i in range(dropins):
                with open(os.path.join(conf_d, "%03d-x.conf" % i), "w") as handle:
                    handle.write(HEADER + "featureGates:\n  Gate%d: true\nkey%02d: override\n" % (i, i % 50))
            load = timed(lambda: kc.load_kubelet_config(os.path.join(tree, "config.yaml"), conf_d), repeats=10)
            plan = timed(lambda: plan_change({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0,32",
                                              "topologyManagerPolicy": "single-numa-node"},
                                             config=os.path.join(tree, "config.yaml"), config_dir=conf_d,
                                             path=os.path.join(conf_d, "999-numa.conf"),
                                             root_dir=os.path.join(tree, "root"), kubelet_version="1.31",
                                             topology=topology), repeats=10)
            print("%3d drop-ins: load_kubelet_config %.2f ms, plan_change (read + merge + validate + reset decision) %.2f ms"
                  % (dropins, load, plan))
        finally:
            shutil.rmtree(tree)


if __name__ == "__main__":
    main()
