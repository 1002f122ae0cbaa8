# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""numa_facts module: in-process with patch_module_args, and ad hoc through the ansible CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.numaguard.kubelet.plugins.modules import numa_facts
from ansible_collections.numaguard.kubelet.tests.fleet import topologies
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import patch_module_args


def _run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            numa_facts.main()
    return json.loads(capsys.readouterr().out)


@pytest.fixture(scope="module")
def sparse_root():
    cache = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "output", ".cache", "topologies")
    return topologies.cached_tree("sparse-ids", cache, hostname="h01")


@pytest.mark.parametrize("check_mode", [False, True])
def test_reads_snapshot(capsys, sparse_root, check_mode):
    result = _run_module(capsys, {"root": str(sparse_root), "_ansible_check_mode": check_mode})
    assert result["changed"] is False
    facts = result["ansible_facts"]["numa_topology"]
    want = topologies.expected("sparse-ids", "h01")
    assert facts["node_ids"] == [0, 1, 2, 33, 34]
    assert [n["id"] for n in facts["nodes"]] == want["node_ids"]
    for node in facts["nodes"]:
        exp = want["nodes"][node["id"]]
        assert node["cpus"] == exp["cpus"]
        assert node["memory_total_bytes"] == exp["memory_total_bytes"]
        assert node["hugepages"] == exp["hugepages"]
        assert node["distances"] == dict(("%d" % k, v) for k, v in exp["distances"].items())
    assert (facts["node_count"], facts["cpu_node_count"], facts["cpu_count"], facts["threads_per_core"]) == (5, 5, 80, 8)
    assert facts["hugepage_sizes"] == ["hugepages-16Mi", "hugepages-16Gi"]
    assert facts["system"]["memory_total_bytes"] == want["memory_total_bytes"]
    assert facts["kubelet"]["running"] is False
    assert facts["kubelet"]["root_dir"] == "/var/lib/kubelet"
    assert facts["kubelet"]["state_files"]["cpu_manager_state"]["present"] is False
    assert facts["fingerprint"].startswith("sha256:")


def test_bad_tree_fails_with_file_name(capsys, tmp_path):
    topologies.write_tree("vm-single", str(tmp_path / "h"), hostname="h")
    meminfo = tmp_path / "h" / "sys/devices/system/node/node0/meminfo"
    meminfo.write_text("garbage\n")
    result = _run_module(capsys, {"root": str(tmp_path / "h")})
    assert result["failed"] is True
    assert result["msg"] == "%s: line 1 is not 'Name: value [kB]': 'garbage'" % meminfo


def test_missing_root_fails(capsys, tmp_path):
    result = _run_module(capsys, {"root": str(tmp_path / "nope")})
    assert result["failed"] is True
    assert result["msg"] == ("%s/nope/sys/devices/system/cpu: directory does not exist "
                             "(is %s/nope a host root or a sysfs snapshot?)" % (tmp_path, tmp_path))


def test_unknown_option_rejected(capsys):
    result = _run_module(capsys, {"sysfs": "/x"})
    assert result["failed"] is True
    assert "Unsupported parameters" in result["msg"] and "sysfs" in result["msg"]


def _ansible():
    exe = os.path.join(os.path.dirname(sys.executable), "ansible")
    if not os.path.exists(exe):
        pytest.skip("ansible CLI not in the venv")
    return exe


def _adhoc(*extra):
    env = dict(os.environ, ANSIBLE_LOCALHOST_WARNING="False", ANSIBLE_INVENTORY_UNPARSED_WARNING="False",
               ANSIBLE_NOCOLOR="1")
    # ansible-test units points PYTHONPATH at a module_utils-only ansible; the CLI needs the real one.
    env.pop("PYTHONPATH", None)
    here = os.path.dirname(os.path.abspath(__file__))
    collection = os.path.normpath(os.path.join(here, "..", "..", "..", ".."))
    parts = collection.split(os.sep)
    if parts[-3:-2] == ["ansible_collections"]:
        env["ANSIBLE_COLLECTIONS_PATH"] = os.sep.join(parts[:-3])
    proc = subprocess.run([_ansible(), "localhost", "-m", "numaguard.kubelet.numa_facts"] + list(extra),
                          capture_output=True, text=True, env=env, check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # ad hoc output: "localhost | SUCCESS => {...json...}"
    head, sep, body = proc.stdout.partition(" => ")
    assert sep and head.strip() == "localhost | SUCCESS", proc.stdout[:500]
    return json.loads(body)["ansible_facts"]["numa_topology"]


def test_adhoc_cli_reads_snapshot(sparse_root):
    facts = _adhoc("-a", "root=%s" % sparse_root)
    assert facts["node_ids"] == [0, 1, 2, 33, 34]


def test_adhoc_cli_live_host():
    facts = _adhoc()
    assert facts["node_count"] >= 1 and facts["cpu_count"] >= 1
