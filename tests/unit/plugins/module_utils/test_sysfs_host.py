# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""On the machine running the tests, read_topology('/') must agree with numactl and lscpu."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import read_topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import parse_cpuset


def _run(tool, *args):
    if shutil.which(tool) is None:
        pytest.skip("%s is not installed (scripts/bootstrap installs numactl)" % tool)
    proc = subprocess.run([tool] + list(args), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.skip("%s %s failed here: %s" % (tool, " ".join(args), proc.stderr.strip()))
    return proc.stdout


@pytest.fixture(scope="module")
def host():
    return read_topology("/")


def _sizes(out):
    return dict((int(m.group(1)), int(m.group(2))) for m in re.finditer(r"^node (\d+) size: (\d+) MB$", out, re.M))


def test_matches_numactl_hardware():
    # Memory can be hot-plugged while we look (virtio-mem/balloon VMs change MemTotal): take a
    # numactl run and a read that agree on sizes, retrying a few times, then compare everything.
    for _attempt in range(5):
        out = _run("numactl", "--hardware")
        host = read_topology("/")
        if _sizes(out) == dict((n.id, n.memory_total_bytes >> 20) for n in host.nodes):
            break
    available = re.search(r"^available: (\d+) nodes \(([^)]*)\)$", out, re.M)
    assert available, out
    assert int(available.group(1)) == len(host.nodes)
    assert sorted(parse_cpuset(available.group(2))) == list(host.node_ids())
    for node in host.nodes:
        cpus = re.search(r"^node %d cpus:(.*)$" % node.id, out, re.M)
        assert cpus, out
        assert [int(c) for c in cpus.group(1).split()] == list(node.cpus)
        size = re.search(r"^node %d size: (\d+) MB$" % node.id, out, re.M)
        assert size, out
        assert int(size.group(1)) == node.memory_total_bytes >> 20
    lines = out[out.index("node distances:"):].splitlines()
    header = [int(n) for n in lines[1].split()[1:]]
    assert header == list(host.node_ids())
    for row in lines[2:2 + len(header)]:
        node_id = int(row.split(":")[0])
        values = [int(v) for v in row.split(":")[1].split()]
        assert dict(zip(header, values)) == host.node(node_id).distances


def test_matches_lscpu_json(host):
    summary = dict((f["field"].rstrip(":"), f["data"]) for f in json.loads(_run("lscpu", "-J"))["lscpu"])
    assert sorted(parse_cpuset(summary["On-line CPU(s) list"])) == list(host.online_cpus())
    if "NUMA node(s)" in summary:
        assert int(summary["NUMA node(s)"]) == len(host.nodes)
        for node in host.nodes:
            key = "NUMA node%d CPU(s)" % node.id
            assert sorted(parse_cpuset(summary.get(key, ""))) == list(node.cpus)
    per_cpu = json.loads(_run("lscpu", "-J", "-e=CPU,NODE,SOCKET,ONLINE"))["cpus"]
    for row in per_cpu:
        cpu = host.cpu(int(row["cpu"]))
        online = row["online"] in (True, "yes", "y")
        assert cpu.online == online
        if online:
            assert int(row["socket"]) == cpu.socket
            if row.get("node") not in (None, "-"):
                assert int(row["node"]) == cpu.node
