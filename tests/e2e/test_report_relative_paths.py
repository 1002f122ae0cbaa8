# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every output path given relative lands in the current directory of ansible-playbook: the
report files of discover.yml, validate.yml and check_pod.yml, capture.yml's capture_dir, and the
relative inputs pod_file and numa_topology_file are read from there.

Each run starts in a fresh directory with ``PWD`` pointing somewhere else (what a wrapper that
changed directory leaves behind), so a path resolved against ``$PWD``, the playbook directory
(inside the collection) or the inventory directory is caught.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import numaguard_fleet_tool as fleet_tool  # pylint: disable=import-error
import numaguard_playbook_runs as playbook_runs  # pylint: disable=import-error
import pytest

pytestmark = pytest.mark.skipif(fleet_tool.unavailable() is not None, reason=str(fleet_tool.unavailable()))


@pytest.fixture
def job_dir(tmp_path):
    """A CI job's directory, and a decoy that $PWD names (nothing may be written there)."""
    job = tmp_path / "job"
    decoy = tmp_path / "decoy"
    job.mkdir()
    decoy.mkdir()
    yield job, {"PWD": str(decoy)}
    assert os.listdir(str(decoy)) == []


def _files(directory):
    return sorted(os.path.relpath(os.path.join(root, name), str(directory))
                  for root, _dirs, names in os.walk(str(directory)) for name in names)


def test_discover_and_check_pod_outputs(fleet, job_dir):
    job, env = job_dir
    host = fleet.names[0]
    proc = fleet.playbook("playbooks/discover.yml", "-e", "discover_report_file=out/discover.json",
                          "-e", "discover_html_file=out/discover.html", "-e", "discover_junit_file=discover.xml",
                          "-e", "discover_prometheus_file=numa.prom", "-e", "discover_classes_file=classes.yml",
                          limit=host, cwd=str(job), env=env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    playbook_runs.write_pod(str(job / "pod.yaml"), "web")
    proc = fleet.playbook("playbooks/check_pod.yml", "-e", "pod_file=pod.yaml", "-e", "check_pod_report_file=pod.json",
                          "-e", "check_pod_html_file=pod.html", "-e", "check_pod_junit_file=pod.xml",
                          "-e", "check_pod_prometheus_file=pod.prom", limit=host, cwd=str(job), env=env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert _files(job) == ["classes.yml", "discover.xml", "numa.prom", "out/discover.html", "out/discover.json",
                           "pod.html", "pod.json", "pod.prom", "pod.xml", "pod.yaml"]
    with open(str(job / "pod.json")) as handle:
        assert [h["host"] for h in json.load(handle)["hosts"]] == [host]
    assert ET.parse(str(job / "discover.xml")).getroot().find(".//testcase").get("name") == host


def test_validate_reads_and_writes_relative_to_the_current_directory(fleet, job_dir):
    job, env = job_dir
    host = fleet.names[0]
    facts = fleet.module(host, "numaguard.kubelet.numa_facts")[host]
    (job / "topologies").mkdir()
    (job / "topologies" / ("%s.json" % host)).write_text(json.dumps({"ansible_facts": facts["ansible_facts"]}))
    proc = fleet.playbook("playbooks/validate.yml", "-e", "validate_hosts=%s" % host, "-e", "validate_fail=false",
                          "-e", "numa_topology_file=topologies/%s.json" % host,
                          "-e", '{"kubelet_numa_settings": {"topologyManagerPolicy": "none"}}',  # unset: not configured
                          "-e", "validate_junit_file=reports/validate.xml", "-e", "validate_report_file=validate.json",
                          "-e", "validate_html_file=validate.html", cwd=str(job), env=env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert _files(job) == ["reports/validate.xml", "topologies/%s.json" % host, "validate.html", "validate.json"]
    with open(str(job / "validate.json")) as handle:
        entry = json.load(handle)["hosts"][0]
    assert entry["host"] == host and entry["status"] != "error", entry


def test_capture_dir(fleet, job_dir):
    job, env = job_dir
    host = fleet.names[0]
    proc = fleet.playbook("playbooks/capture.yml", "-e", "capture_dir=snapshots/today", limit=host, cwd=str(job), env=env)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert _files(job) == ["snapshots/today/%s.json" % host, "snapshots/today/%s.tar.gz" % host]
