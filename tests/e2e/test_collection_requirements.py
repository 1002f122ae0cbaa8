# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection's declared Python requirements are enough to use it, as in an execution environment.

A fresh venv gets only the lowest claimed ansible-core and the packages meta/execution-environment.yml
declares (uv, from the package index); the built tarball is installed into it, and its controller
plugins (the admission_check action plugin's imports, a filter) and a module run there.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
UV = os.path.join(os.path.dirname(sys.executable), "uv")


def _lowest_core():
    with open(os.path.join(REPO, "meta", "runtime.yml"), encoding="utf-8") as handle:
        spec = yaml.safe_load(handle)["requires_ansible"]
    match = re.fullmatch(r">=\s*(\d+\.\d+)(?:\.\d+)?", spec.strip())
    assert match, "requires_ansible %r is not a plain lower bound" % spec
    return match.group(1)


def _run(args, **kwargs):
    proc = subprocess.run(args, capture_output=True, text=True, timeout=600, check=False, **kwargs)
    assert proc.returncode == 0, "%s failed (%d):\n%s\n%s" % (" ".join(args), proc.returncode, proc.stdout, proc.stderr)
    return proc


def test_ee_metadata_declares_the_requirements_file():
    with open(os.path.join(REPO, "meta", "execution-environment.yml"), encoding="utf-8") as handle:
        ee = yaml.safe_load(handle)
    assert ee["version"] == 1
    assert set(ee["dependencies"]) == {"python"}
    assert os.path.isfile(os.path.join(REPO, ee["dependencies"]["python"]))


def test_declared_requirements_install_and_suffice(tmp_path):
    with open(os.path.join(REPO, "meta", "execution-environment.yml"), encoding="utf-8") as handle:
        requirements = os.path.join(REPO, yaml.safe_load(handle)["dependencies"]["python"])
    venv = tmp_path / "venv"
    _run([UV, "venv", "-q", "-p", sys.executable, str(venv)])
    env = dict(os.environ, VIRTUAL_ENV=str(venv))
    _run([UV, "pip", "install", "-q", "-r", requirements, "ansible-core~=%s.0" % _lowest_core()], env=env)
    bin_dir = str(venv / "bin")
    collections = tmp_path / "collections"
    _run([os.path.join(bin_dir, "ansible-galaxy"), "collection", "build", "--output-path", str(tmp_path), REPO])
    tarball = glob.glob(str(tmp_path / "numaguard-kubelet-*.tar.gz"))[0]
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_NOCOLOR="1",
               PATH=bin_dir + os.pathsep + os.environ["PATH"])
    env.pop("PYTHONPATH", None)
    _run([os.path.join(bin_dir, "ansible-galaxy"), "collection", "install", "-p", str(collections), tarball], env=env)
    version = _run([os.path.join(bin_dir, "ansible"), "--version"], env=env).stdout
    assert "core %s." % _lowest_core() in version

    # the action plugin (imports PyYAML) and every module's documentation load
    listed = _run([os.path.join(bin_dir, "ansible-doc"), "-l", "numaguard.kubelet", "--json"], env=env).stdout
    assert "numaguard.kubelet.admission_check" in json.loads(listed)
    # a filter and a module run
    out = _run([os.path.join(bin_dir, "ansible"), "localhost", "-c", "local", "-e",
                "ansible_python_interpreter=" + os.path.join(bin_dir, "python"), "-m", "ansible.builtin.debug",
                "-a", "msg={{ '4Gi' | numaguard.kubelet.k8s_quantity_bytes }}"], env=env).stdout
    assert "4294967296" in out
    out = _run([os.path.join(bin_dir, "ansible"), "localhost", "-c", "local", "-e",
                "ansible_python_interpreter=" + os.path.join(bin_dir, "python"), "-m", "numaguard.kubelet.reserved_memory",
                "-a", json.dumps({"topology": {"nodes": [{"id": 0, "cpus": [0], "memory_total_bytes": 17179869184,
                                                          "memory_free_bytes": 0, "hugepages": {}, "distances": {}}]},
                                  "kube_reserved": "memory=1Gi", "strategy": "node0",
                                  "eviction_hard": "memory.available<100Mi"})], env=env).stdout
    assert '"flag": "0:memory=1124Mi"' in out, out
