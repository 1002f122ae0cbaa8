# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every collection the shipped playbooks and roles use is declared (issue 26).

``kubernetes.core`` was used (``check_pod.yml``'s ``k8s_info``) but declared nowhere. Galaxy has no
optional dependencies: every collection in ``galaxy.yml``'s ``dependencies`` ends up in the built
``MANIFEST.json`` and ``ansible-galaxy collection install`` installs it. So a collection is either
required (``galaxy.yml``) or optional (the README's "Optional collections" list), and nothing else
may be used."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os
import re
import subprocess
import sys
import tarfile

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
OWN = {"ansible.builtin", "ansible.legacy", "numaguard.kubelet"}
#: a task's module or action by FQCN: "  - community.x.mod:" or "    community.x.mod:"
TASK_KEY = re.compile(r"^\s*(?:- )?([a-z][a-z0-9_]*\.[a-z][a-z0-9_]*)\.[a-z][a-z0-9_]*:\s*(?:#.*)?$", re.M)


def _galaxy():
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)


def used_collections():
    used = {}
    for pattern in ("playbooks/**/*.yml", "roles/**/*.yml"):
        for path in glob.glob(os.path.join(REPO, pattern), recursive=True):
            with open(path) as handle:
                text = handle.read()
            for name in TASK_KEY.findall(text):
                if name not in OWN:
                    used.setdefault(name, []).append(os.path.relpath(path, REPO))
    return used


def optional_collections():
    with open(os.path.join(REPO, "README.md")) as handle:
        text = handle.read()
    section = text[text.index("**Optional collections**"):]
    section = section[:section.index("\n- Targets:")]
    return set(re.findall(r"^  - `([a-z0-9_]+\.[a-z0-9_]+)`", section, re.M))


def test_every_used_collection_is_declared():
    required = set((_galaxy().get("dependencies") or {}).keys())
    optional = optional_collections()
    used = used_collections()
    assert "kubernetes.core" in used, used  # the scan finds what it must
    undeclared = dict((n, where) for n, where in used.items() if n not in required | optional)
    assert not undeclared, undeclared
    # and nothing declared that is not used
    assert optional <= set(used), optional - set(used)
    assert not (required & optional)


def test_the_built_collection_requires_no_optional_collection(tmp_path):
    build = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-galaxy"), "collection", "build", REPO,
                            "--output-path", str(tmp_path), "--force"], capture_output=True, text=True, check=False,
                           timeout=300)
    assert build.returncode == 0, build.stdout + build.stderr
    tarball = os.path.join(str(tmp_path), "numaguard-kubelet-%s.tar.gz" % _galaxy()["version"])
    with tarfile.open(tarball) as archive:
        manifest = json.load(archive.extractfile("MANIFEST.json"))
    dependencies = manifest["collection_info"]["dependencies"]
    assert dependencies == (_galaxy().get("dependencies") or {})
    assert not set(dependencies) & optional_collections()
