# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 23, case 7: check_pod.yml with an invalid pod ends with rc != 0 and Kubernetes'
validation message, distinct from "cannot check"; a valid pod still ends with rc 0.

No fleet: one local host reading a bundled topology tree through ``check_pod_root``.
"""

from __future__ import annotations

import os
import sys

import numaguard_fleet_topologies as topologies  # pylint: disable=import-error
import numaguard_playbook_runs as playbook_runs  # pylint: disable=import-error
import pytest

POD = """apiVersion: v1
kind: Pod
metadata: {name: %s}
spec:
  containers:
  - name: c
    image: i
    resources:
      limits: {cpu: %s, memory: 1Gi}
"""


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    work = tmp_path_factory.mktemp("invalid-pod")
    tree = str(work / "host")
    topologies.write_tree("vm-single", tree, hostname="h01")
    (work / "inventory").write_text("h01 ansible_connection=local ansible_python_interpreter=%s\n" % sys.executable)
    env = playbook_runs.ansible_env({"ANSIBLE_COLLECTIONS_PATH": playbook_runs.collection_tree(str(work))})
    return work, tree, env


def _run(local, name, cpu):
    work, tree, env = local
    (work / "pod.yaml").write_text(POD % (name, cpu))
    proc, _seconds = playbook_runs.run(
        ["ansible-playbook", "-i", str(work / "inventory"), os.path.join(playbook_runs.REPO, "playbooks", "check_pod.yml"),
         "-e", "pod_file=pod.yaml", "-e", "check_pod_root=%s" % tree], env, cwd=str(work), timeout=300)
    return proc


@pytest.mark.parametrize("name,cpu,message", [
    ('"web\\u202eevil"', '"1"', 'metadata.name: Invalid value: "web\\u202eevil": a lowercase RFC 1123 subdomain'),
    ("web", '"\uff12"', "quantities must match the regular expression"),
])
def test_an_invalid_pod_fails_the_play(local, name, cpu, message):
    proc = _run(local, name, cpu)
    assert proc.returncode != 0, proc.stdout[-3000:]
    work = local[0]
    assert "invalid pod: %s: " % (work / "pod.yaml") in proc.stdout and message in proc.stdout, proc.stdout[-3000:]
    assert "cannot check" not in proc.stdout.lower().replace("cannot be checked", "")
    assert "\u202e" not in proc.stdout  # escaped as Go's %q does, never printed raw


def test_a_valid_pod_still_passes(local):
    proc = _run(local, "web", '"1"')
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "admitted on 1" in proc.stdout
