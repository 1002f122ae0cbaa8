# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The README's CI recipe, followed literally by a new user.

A fresh directory owned by an unprivileged user holds what the recipe assumes (captured topologies
in ``topologies/``, ``ci/inventory.yml`` pointing at them with relative paths, per-class settings,
the collection tarball built from this checkout); the ``script:`` lines of the README's CI job are
copied from README.md as written and run there, as that user, in a clean virtualenv. The JUnit
file must land in that directory. Slow (a virtualenv and ansible-core install): one test.
"""

from __future__ import annotations

import os
import pathlib
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
USER = "ngci"
TOPOLOGIES = os.path.join(REPO, "playbooks", "examples", "validate", "topologies")

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="creating the unprivileged CI user needs root")


def readme_script():
    """The ``script:`` lines of the README's CI job, exactly as written."""
    with open(os.path.join(REPO, "README.md")) as handle:
        text = handle.read()
    block = re.search(r"```yaml\nreserved-memory:\n(.*?)```", text, re.S)
    assert block, "README.md has no reserved-memory CI job"
    lines = block.group(1).split("\n")
    start = lines.index("  script:")
    script = []
    for line in lines[start + 1:]:
        if not line.startswith("    - "):
            break
        script.append(line[len("    - "):])
    assert script and script[-1].startswith("ansible-playbook"), script
    return script


def _user():
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", USER], check=True)
        return pwd.getpwnam(USER)


@pytest.fixture()
def job_dir():
    """A fresh directory the unprivileged user can reach (pytest's tmp_path is private to root)."""
    path = tempfile.mkdtemp(prefix="ng-readme-ci-")
    os.chmod(path, 0o755)
    try:
        yield pathlib.Path(path)
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_readme_ci_recipe_writes_junit_where_the_job_runs(job_dir):
    script = readme_script()
    user = _user()
    job = job_dir / "job"
    (job / "ci" / "group_vars").mkdir(parents=True)
    (job / "topologies").mkdir()
    # captured topologies, as the README's capture step names them: topologies/<host>.json
    shutil.copy(os.path.join(TOPOLOGIES, "intel-2s.json"), str(job / "topologies" / "worker-1.json"))
    shutil.copy(os.path.join(TOPOLOGIES, "vm-single.json"), str(job / "topologies" / "vm-1.json"))
    (job / "ci" / "inventory.yml").write_text(
        "all:\n  vars:\n    ansible_connection: local\n  children:\n"
        "    numa_2n_96c_2m_1g_f504513b:\n      hosts:\n        worker-1: {numa_topology_file: topologies/worker-1.json}\n"
        "    numa_1n_4c_nohp_51d61aeb:\n      hosts:\n        vm-1: {numa_topology_file: topologies/vm-1.json}\n")
    classes = os.path.join(REPO, "playbooks", "examples", "classes", "group_vars")
    for name in ("numa_2n_96c_2m_1g_f504513b.yml", "numa_1n_4c_nohp_51d61aeb.yml"):
        shutil.copy(os.path.join(classes, name), str(job / "ci" / "group_vars" / name))
    build = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-galaxy"), "collection", "build",
                            REPO, "--output-path", str(job), "--force"], capture_output=True, text=True, check=False)
    assert build.returncode == 0, build.stdout + build.stderr
    subprocess.run(["chown", "-R", "%s:%s" % (user.pw_uid, user.pw_gid), str(job)], check=True)
    # the job: a clean virtualenv (the CI image's python), then the README's lines as written
    lines = ["set -eux", "cd %s" % job, "python3 -m venv venv", ". venv/bin/activate"] + script
    (job / "job.sh").write_text("\n".join(lines) + "\n")
    env = {"HOME": user.pw_dir, "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8",
           "ANSIBLE_NOCOLOR": "1"}
    # the machine's package index settings stand for the CI runner's (pip also reads /etc/pip.conf)
    env.update((k, v) for k, v in os.environ.items() if k.startswith(("PIP_", "UV_", "HTTP_PROXY", "HTTPS_PROXY",
                                                                     "http_proxy", "https_proxy", "NO_PROXY", "no_proxy")))
    proc = subprocess.run(["/usr/sbin/runuser", "-u", USER, "--", "bash", str(job / "job.sh")], env=env, capture_output=True,
                          text=True, timeout=1200, check=False)
    output = proc.stdout[-4000:] + proc.stderr[-4000:]
    assert proc.returncode == 0, output
    junit = job / "reserved-memory.xml"
    assert junit.is_file(), "the JUnit file is not in the job directory:\n" + output
    assert os.stat(str(junit)).st_uid == user.pw_uid
    suite = ET.parse(str(junit)).getroot()
    assert suite.get("tests") == "2" and suite.get("failures") == "0" and suite.get("errors") == "0", output
    classnames = sorted(c.get("classname") for c in suite.iter("testcase"))
    assert classnames == ["validate.numa_1n_4c_nohp_51d61aeb", "validate.numa_2n_96c_2m_1g_f504513b"]
    # nothing was written inside the installed collection
    installed = os.path.join(user.pw_dir, ".ansible", "collections", "ansible_collections", "numaguard", "kubelet")
    assert not os.path.exists(os.path.join(installed, "playbooks", "reserved-memory.xml"))
