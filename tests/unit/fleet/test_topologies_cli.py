# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""tests/fleet/topologies.py as a CLI and a writer: listing, refusing to clobber, overrides, quirks."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "fleet", "topologies.py")


def _cli(*args):
    return subprocess.run([sys.executable, SCRIPT] + list(args), capture_output=True, text=True,
                          check=False, timeout=120)


def test_list_names_every_required_machine_class():
    proc = _cli("--list")
    assert proc.returncode == 0, proc.stderr
    names = [line.split()[0] for line in proc.stdout.splitlines()]
    for required in ("vm-single", "vm-nonuma", "intel-2s", "amd-epyc-nps4", "sparse-ids", "cxl-memory",
                     "big16", "gpu-superchip", "offline-cpus"):
        assert required in names
    assert "amd-epyc-nps4   8 nodes  128 CPUs" in proc.stdout


def test_write_tree_layout(tmp_path):
    root = tmp_path / "h07"
    proc = _cli("--topology", "cxl-memory", "--root", str(root), "--hostname", "h07")
    assert proc.returncode == 0, proc.stderr
    node = root / "sys/devices/system/node"
    assert (node / "online").read_text() == "0-1\n"
    assert (node / "has_cpu").read_text() == "0\n"
    assert (node / "has_memory").read_text() == "0-1\n"
    assert (node / "node1/cpulist").read_text() == "\n"
    assert (node / "node0/distance").read_text() == "10 14\n"
    assert (node / "node0/cpumap").read_text() == "ffffffff,ffffffff\n"
    assert os.readlink(str(node / "node0/cpu5")) == "../../cpu/cpu5"
    assert (node / "node1/meminfo").read_text().startswith("Node 1 MemTotal:       134201344 kB\n")
    assert (node / "node0/hugepages/hugepages-1048576kB/nr_hugepages").read_text() == "32\n"
    cpu = root / "sys/devices/system/cpu"
    assert (cpu / "online").read_text() == "0-63\n"
    assert (cpu / "offline").read_text() == "\n"
    assert (cpu / "cpu1/topology/thread_siblings_list").read_text() == "1,33\n"
    assert (cpu / "cpu1/cache/index3/shared_cpu_list").read_text() == "0-63\n"
    assert os.readlink(str(cpu / "cpu1/node0")) == "../../node/node0"
    assert not (cpu / "cpu0/online").exists()
    assert (root / "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages").read_text() == "2048\n"
    assert (root / "proc/meminfo").read_text().startswith("MemTotal:         396791064 kB\n")
    assert (root / "etc/hostname").read_text() == "h07\n"
    assert sorted(os.listdir(str(root / "var/lib/kubelet"))) == []
    assert (root / "etc/kubernetes").is_dir()


def test_offline_cpu_has_no_topology(tmp_path):
    assert _cli("--topology", "offline-cpus", "--root", str(tmp_path / "r")).returncode == 0
    cpu = tmp_path / "r/sys/devices/system/cpu"
    assert (cpu / "offline").read_text() == "12-15\n"
    assert (cpu / "cpu13/online").read_text() == "0\n"
    assert not (cpu / "cpu13/topology").exists() and not (cpu / "cpu13/cache").exists()
    assert (tmp_path / "r/sys/devices/system/node/node1/cpulist").read_text() == "4-7\n"


def test_no_numa_tree_has_no_node_dir(tmp_path):
    assert _cli("--topology", "vm-nonuma", "--root", str(tmp_path / "r")).returncode == 0
    assert not (tmp_path / "r/sys/devices/system/node").exists()
    assert not (tmp_path / "r/sys/devices/system/cpu/cpu0/node0").exists()


def test_refuses_to_overwrite_without_force(tmp_path):
    root = tmp_path / "r"
    assert _cli("--topology", "vm-single", "--root", str(root)).returncode == 0
    (root / "var/lib/kubelet/cpu_manager_state").write_text("keep me")
    proc = _cli("--topology", "intel-2s", "--root", str(root))
    assert proc.returncode == 2
    assert proc.stderr == "topologies.py: error: %s/sys already exists; pass --force to replace the generated tree\n" % root
    proc = _cli("--topology", "legacy-2s", "--root", str(root), "--force")
    assert proc.returncode == 0, proc.stderr
    assert not (root / "sys/devices/system/node/node0/cpulist").exists()
    assert (root / "var/lib/kubelet/cpu_manager_state").read_text() == "keep me"


@pytest.mark.parametrize("args,message", [
    (["--topology", "nope", "--root", "x"],
     "topologies.py: error: unknown topology 'nope' (bundled: amd-epyc-nps4, big16, cxl-memory, gpu-sriov, "
     "gpu-superchip, intel-2s, legacy-2s, offline-cpus, sparse-ids, vm-nonuma, vm-single)\n"),
    (["--topology", "intel-2s", "--root", "x", "--hugepages", "2M=5"],
     "topologies.py: error: bad --hugepages '2M=5': expected SIZE=COUNT like 2Mi=512 or 1Gi=4\n"),
    (["--topology", "vm-single", "--root", "x", "--hugepages", "1Gi=4"],
     "topologies.py: error: topology vm-single has no 1048576 kB hugepage size (sizes: 2048 kB)\n"),
])
def test_bad_arguments(args, message):
    proc = _cli(*args)
    assert (proc.returncode, proc.stderr) == (2, message)


def test_hugepage_override_and_expected(tmp_path):
    proc = _cli("--topology", "intel-2s", "--hugepages", "1Gi=0", "--hugepages", "2Mi=8", "--expected")
    assert proc.returncode == 0, proc.stderr
    want = json.loads(proc.stdout)
    assert want["nodes"]["0"]["hugepages"]["hugepages-1Gi"]["total_pages"] == 0
    assert want["nodes"]["1"]["hugepages"]["hugepages-2Mi"]["total_pages"] == 8
    assert want["global_hugepages"] == {"2048": 16, "1048576": 0}


def test_missing_root_argument():
    proc = _cli("--topology", "vm-single")
    assert proc.returncode == 2
    assert proc.stderr.endswith("error: --root is required with --topology\n")
