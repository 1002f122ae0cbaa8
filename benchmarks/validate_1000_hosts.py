# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Time to validate 1,000 host configurations offline (target: <= 10 s), and what it costs per host.

Builds 1,000 (topology, settings) pairs from the bundled fleet topologies (tests/fleet/topologies.py,
read back through the real sysfs reader and the numa_facts fact dict, i.e. what CI would load
from saved JSON) with varied kube/system reservations, eviction settings and strategies, a
quarter of them deliberately broken, and runs the same entry point the validate.yml playbook uses
(the validate_hosts filter: reserved_memory_check -> reservation.evaluate, plus the rollout
preflight's start-up verdict). Prints figures; never fails on time.

    .venv/bin/python benchmarks/validate_1000_hosts.py [--hosts 1000] [--repeat 3] [--playbook-hosts 200]

With ``--playbook-hosts N`` it also runs playbooks/validate.yml itself over a generated inventory of N
hosts (saved topology JSON files, no connection) and prints the wall time: Ansible's per-host task
overhead, not the validation, dominates there.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _collection_path():
    tmp = tempfile.mkdtemp(prefix="ng-bench-")
    os.makedirs(os.path.join(tmp, "ansible_collections", "numaguard"))
    os.symlink(REPO, os.path.join(tmp, "ansible_collections", "numaguard", "kubelet"))
    sys.path.insert(0, tmp)


def _load_fleet():
    path = os.path.join(REPO, "tests", "fleet", "topologies.py")
    spec = importlib.util.spec_from_file_location("ng_bench_topologies", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def build_facts():
    from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import read_system_memory, read_topology

    fleet = _load_fleet()
    facts = {}
    for name in sorted(fleet.TOPOLOGIES):
        root = tempfile.mkdtemp(prefix="ng-bench-%s-" % name)
        fleet.write_tree(name, root, force=True)
        data = read_topology(root).to_facts()
        data["system"] = read_system_memory(root)
        facts[name] = json.loads(json.dumps(data))  # as it comes back from a saved JSON file
    return facts


def build_hosts(facts, count):
    names = sorted(facts)
    hosts = []
    for i in range(count):
        name = names[i % len(names)]
        kube = 256 * (1 + i % 16)
        system = 128 * (1 + i % 8)
        settings = {"memoryManagerPolicy": "Static", "kubeReserved": {"cpu": "500m", "memory": "%dMi" % kube},
                    "systemReserved": {"memory": "%dMi" % system}}
        strategy = None
        kind = i % 4
        if kind == 0:
            strategy = ("node0", "spread", "proportional")[i % 3]
        elif kind == 1:
            settings["reservedMemory"] = [{"numaNode": 0, "limits": {"memory": "%dMi" % (kube + system + 100)}}]
        elif kind == 2:
            settings["evictionHard"] = {"memory.available": "%d%%" % (1 + i % 5), "nodefs.available": "10%",
                                        "nodefs.inodesFree": "5%", "imagefs.available": "15%", "imagefs.inodesFree": "5%"}
            strategy = "spread"
        else:  # broken: forgot the 100Mi, or a hugepages entry
            settings["reservedMemory"] = [{"numaNode": 0, "limits": {"memory": "%dMi" % (kube + system)}}]
            if i % 8 == 7:
                settings["reservedMemory"][0]["limits"]["hugepages-2Mi"] = "2Mi"
        hosts.append((name, settings, strategy))
    return hosts


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--playbook-hosts", type=int, default=0)
    args = parser.parse_args(argv)
    _collection_path()
    from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_check import reserved_memory_check
    from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_junit import reserved_memory_junit
    from ansible_collections.numaguard.kubelet.plugins.filter.validate_hosts import validate_hosts

    t0 = time.perf_counter()
    facts = build_facts()
    hosts = build_hosts(facts, args.hosts)
    setup = time.perf_counter() - t0
    print("setup: %d topologies written and read back, %d host configs built in %.2f s"
          % (len(facts), len(hosts), setup))
    best = None
    for run in range(args.repeat):
        start = time.perf_counter()
        hostvars = {}
        for index, (name, settings, strategy) in enumerate(hosts):
            hostvars["h%04d-%s" % (index, name)] = {"numa_topology": facts[name], "kubelet_numa_settings": settings,
                                                    "validate_strategy": strategy, "kubelet_numa_kubelet_version": "1.37"}
        results = validate_hosts(hostvars, list(hostvars))["results"]
        checked = time.perf_counter() - start
        xml_start = time.perf_counter()
        xml = reserved_memory_junit(results)
        xml_time = time.perf_counter() - xml_start
        invalid = sum(1 for r in results.values() if not r["valid"])
        total = checked + xml_time
        best = total if best is None else min(best, total)
        print("run %d: %d hosts validated in %.3f s (%.2f ms/host), %d invalid; JUnit XML %d bytes in %.3f s; "
              "total %.3f s" % (run + 1, len(results), checked, 1000.0 * checked / len(results), invalid, len(xml),
                                xml_time, total))
    print("best of %d: %.3f s for %d hosts (target <= 10 s for 1000)" % (args.repeat, best, len(hosts)))
    per_topology = {}
    for name in sorted(facts):
        start = time.perf_counter()
        for _round in range(50):
            reserved_memory_check(facts[name], kubelet_config={"kubeReserved": {"memory": "4Gi"}}, strategy="spread")
        per_topology[name] = (time.perf_counter() - start) / 50 * 1000.0
    print("per topology (spread, ms/host): " + ", ".join("%s %.2f" % kv for kv in sorted(per_topology.items())))
    if args.playbook_hosts:
        run_playbook(facts, hosts[:args.playbook_hosts])
    return 0


def run_playbook(facts, hosts):
    import subprocess

    work = tempfile.mkdtemp(prefix="ng-bench-play-")
    for name, data in facts.items():
        with open(os.path.join(work, name + ".json"), "w") as handle:
            json.dump({"ansible_facts": {"numa_topology": data}}, handle)
    lines = ["all:", "  vars:", "    ansible_connection: local", "  hosts:"]
    for index, (name, settings, strategy) in enumerate(hosts):
        host = {"numa_topology_file": name + ".json", "kubelet_numa_settings": settings}
        if strategy:
            host["validate_strategy"] = strategy
        lines.append("    h%04d: %s" % (index, json.dumps(host)))
    inventory = os.path.join(work, "inventory.yml")
    with open(inventory, "w") as handle:
        handle.write("\n".join(lines) + "\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=sys.path[0], ANSIBLE_FORKS="10", ANSIBLE_NOCOLOR="1")
    binary = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    start = time.perf_counter()
    proc = subprocess.run([binary, "-i", inventory, os.path.join(REPO, "playbooks", "validate.yml"),
                           "-e", "validate_junit_file=%s" % os.path.join(work, "report.xml"), "-e", "validate_fail=false"],
                          env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    print("playbooks/validate.yml over %d hosts (forks 10, saved topologies): %.1f s wall (%.0f ms/host), rc %d"
          % (len(hosts), wall, 1000.0 * wall / len(hosts), proc.returncode))


if __name__ == "__main__":
    sys.exit(main())
