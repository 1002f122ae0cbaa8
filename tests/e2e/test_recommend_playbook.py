# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""numaguard.kubelet.recommend end to end, by FQCN, offline: three hosts of two of the simulated
fleet's machine classes (gpu-sriov twice, vm-single), each with its topology saved as numa_facts
JSON (numa_topology_file, as validate.yml reads it). The recommendation works from facts, so no
host is contacted. Then validate.yml checks the written group_vars on the same hosts, grouped by
the written classes.yml."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "fleet"))

import playbook_runs  # noqa: E402  (tests/fleet/playbook_runs.py)
import topologies as topolib  # noqa: E402  (tests/fleet/topologies.py)

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.facts import gather  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.classes import hardware_class  # noqa: E402

WORKLOAD = os.path.join(REPO, "playbooks", "examples", "recommend", "workload.yml")
BIN = os.path.dirname(sys.executable)
HOSTS = (("gpu-a", "gpu-sriov"), ("gpu-b", "gpu-sriov"), ("vm-1", "vm-single"))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """An inventory of saved topologies, a collection path with this checkout, a work directory."""
    work = tmp_path_factory.mktemp("recommend-e2e")
    inventory = {"all": {"hosts": {}}}
    classes = {}
    for host, topology in HOSTS:
        root = str(work / ("root-" + host))
        topolib.write_tree(topology, root, hostname=host)
        facts = gather(root)
        path = work / ("%s.json" % host)
        path.write_text(json.dumps({"ansible_facts": {"numa_topology": facts}}))
        inventory["all"]["hosts"][host] = {"numa_topology_file": str(path), "kubelet_numa_kubelet_version": "1.34",
                                           "ansible_connection": "local"}
        classes.setdefault(hardware_class(facts)["group"], []).append(host)
    (work / "inventory.yml").write_text(yaml.safe_dump(inventory))
    env = playbook_runs.ansible_env({"ANSIBLE_COLLECTIONS_PATH": playbook_runs.collection_tree(str(work))}, BIN)
    return {"work": str(work), "inventory": str(work / "inventory.yml"), "env": env, "classes": classes}


def playbook(site, name, *args):
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", site["inventory"], name] + list(args)
    return subprocess.run(argv, cwd=site["work"], env=site["env"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=600, check=False)


def read_tree(directory):
    out = {}
    for dirpath, _dirs, files in os.walk(directory):
        for name in files:
            path = os.path.join(dirpath, name)
            with open(path) as handle:
                out[os.path.relpath(path, directory)] = handle.read()
    return out


def test_recommend_writes_group_vars_that_validate_passes(site):
    proc = playbook(site, "numaguard.kubelet.recommend", "-e", "workload_file=" + WORKLOAD, "-e", "recommend_dir=out")
    assert proc.returncode == 0, proc.stdout[-4000:]
    out = os.path.join(site["work"], "out")
    files = read_tree(out)
    expected = ["classes.yml", "recommend.html", "recommend.json"] + ["group_vars/%s.yml" % c for c in site["classes"]]
    assert sorted(files) == sorted(expected)
    # the screen summary: one line per class, winner and runner-up
    for name in site["classes"]:
        line = [raw for raw in proc.stdout.splitlines() if ('"%s: ' % name) in raw]
        assert len(line) == 1, proc.stdout[-4000:]
        assert "winner c" in line[0] and "runner-up c" in line[0]
    report = json.loads(files["recommend.json"])
    assert [m["class"] for m in report["classes"]] == sorted(site["classes"])
    for model in report["classes"]:
        assert model["counts"]["evaluated"] >= 50
        assert sorted(model["hosts"]) == sorted(site["classes"][model["class"]])
        settings = yaml.safe_load(files["group_vars/%s.yml" % model["class"]])["kubelet_numa_settings"]
        assert settings == model["winner"]["settings"]

    # the same input gives the same files
    again = playbook(site, "numaguard.kubelet.recommend", "-e", "workload_file=" + WORKLOAD, "-e", "recommend_dir=out")
    assert again.returncode == 0, again.stdout[-4000:]
    assert read_tree(out) == files

    # validate.yml accepts every written group_vars file as it is
    checked = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", site["inventory"], "-i",
                              os.path.join(out, "classes.yml"), "numaguard.kubelet.validate"],
                             cwd=site["work"], env=site["env"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True, timeout=600, check=False)
    assert checked.returncode == 0, checked.stdout[-4000:]
    assert "kubelet settings (reservedMemory included) are valid on all 3 host(s)" in checked.stdout


def test_recommend_names_a_bad_workload(site, tmp_path):
    bad = tmp_path / "bad.yml"
    bad.write_text("pods:\n  - {name: x, replicas: 0, template: {kind: Pod, spec: {containers: []}}}\n")
    proc = playbook(site, "numaguard.kubelet.recommend", "-e", "workload_file=%s" % bad, "-e", "recommend_dir=bad-out")
    assert proc.returncode != 0
    assert "pods[0].replicas must be a whole number from 1 to 10000, got 0" in proc.stdout
    assert "Traceback" not in proc.stdout
    assert not os.path.exists(os.path.join(site["work"], "bad-out"))


def test_recommend_requires_its_variables(site):
    proc = playbook(site, "numaguard.kubelet.recommend")
    assert proc.returncode != 0
    assert "give -e workload_file=WORKLOAD.yml -e recommend_dir=DIR" in proc.stdout


def test_check_mode_writes_nothing(site):
    proc = playbook(site, "numaguard.kubelet.recommend", "--check", "-e", "workload_file=" + WORKLOAD,
                    "-e", "recommend_dir=check-out")
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "recommend.json (not written: check mode)" in proc.stdout
    assert not os.path.exists(os.path.join(site["work"], "check-out"))
