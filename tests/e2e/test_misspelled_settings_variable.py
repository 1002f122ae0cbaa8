# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A misspelled kubelet_numa_setings: validate.yml says the host is not configured and fails;
apply.yml (the role's preflight entry point) fails naming the variable, not with a templating
error. A local host, a saved topology, check mode: nothing connects anywhere or changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)
TOPOLOGY = os.path.join(REPO, "playbooks", "examples", "validate", "topologies", "intel-2s.json")
SETTINGS = {"memoryManagerPolicy": "Static", "kubeReserved": {"memory": "4Gi"}, "systemReserved": {"memory": "1Gi"},
            "reservedMemory": [{"numaNode": 0, "limits": {"memory": "3Gi"}}, {"numaNode": 1, "limits": {"memory": "2148Mi"}}]}


def _run(tmp_path, playbook, *extra):
    inventory = tmp_path / "inventory.json"
    inventory.write_text(json.dumps({"all": {"hosts": {"worker-1": {
        "ansible_connection": "local", "ansible_python_interpreter": sys.executable, "numa_topology_file": TOPOLOGY,
        "kubelet_numa_kubelet_version": "1.31", "kubelet_numa_setings": SETTINGS}}}}))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCALHOST_WARNING="0",
               PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    argv = [os.path.join(BIN, "ansible-playbook"), "-i", str(inventory), os.path.join(REPO, "playbooks", playbook)] + list(extra)
    return subprocess.run(argv, cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300, check=False)


def test_validate_says_not_configured(tmp_path):
    proc = _run(tmp_path, "validate.yml")
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "worker-1: not configured: kubelet_numa_settings is not set for this host" in proc.stdout, proc.stdout[-3000:]


def test_apply_preflight_names_the_variable(tmp_path):
    proc = _run(tmp_path, "apply.yml", "--check", "-e", "kubelet_numa_sysfs_root=/nonexistent")
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "worker-1: failed - preflight failed, nothing changed: kubelet_numa: kubelet_numa_settings is not set for worker-1" \
        in proc.stdout, proc.stdout[-3000:]
    assert "undefined" not in proc.stdout.lower(), proc.stdout[-3000:]
