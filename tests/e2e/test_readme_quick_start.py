# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The README's quick start, copied literally from README.md and run as a new user would (issue 26).

The install lines of its fenced block (everything before the first ``ansible-playbook``) run with
the machine's system ``python3`` (Debian 12's is externally managed: a bare ``pip install`` is
refused), in a fresh directory holding the collection tarball built from this checkout under the
name the README gives, with a fresh ``HOME``; then the README's ``validate`` line runs, as written,
on a two-host inventory of saved topologies. Package downloads go to the machine's index (PyPI or
its mirror), as for the CI recipe test. Slow (a virtualenv and ansible-core install): one test.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOPOLOGIES = os.path.join(REPO, "playbooks", "examples", "validate", "topologies")
CLASSES = os.path.join(REPO, "playbooks", "examples", "classes", "group_vars")
SYSTEM_PYTHON = "/usr/bin/python3"


def quick_start():
    """(install lines, playbook lines) of the README's quick start block, exactly as written."""
    with open(os.path.join(REPO, "README.md")) as handle:
        text = handle.read()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block, "README.md's quick start has no bash block"
    lines = [line for line in block.group(1).split("\n") if line.strip() and not line.lstrip().startswith("#")]
    first_play = next(i for i, line in enumerate(lines) if line.startswith("ansible-playbook"))
    return lines[:first_play], lines[first_play:]


def _galaxy_version():
    with open(os.path.join(REPO, "galaxy.yml")) as handle:
        return yaml.safe_load(handle)["version"]


def test_the_quick_start_names_the_current_release_and_installs_in_a_virtualenv():
    install, plays = quick_start()
    tarballs = [w for line in install for w in line.split() if w.endswith(".tar.gz")]
    assert tarballs == ["numaguard-kubelet-%s.tar.gz" % _galaxy_version()], install
    # no pip outside the virtualenv the block creates and activates
    venv = next(i for i, line in enumerate(install) if re.match(r"python3 -m venv \S+$", line))
    activate = next(i for i, line in enumerate(install) if line.startswith(". ") and line.endswith("/bin/activate"))
    pips = [i for i, line in enumerate(install) if "pip install" in line]
    assert pips and venv < activate < min(pips), install
    assert not any(line.startswith("python3 -m pip") for line in install), install
    assert any("numaguard.kubelet.validate" in line for line in plays), plays


@pytest.mark.skipif(not os.path.exists(SYSTEM_PYTHON), reason="no system python3")
def test_the_quick_start_runs_as_written(tmp_path):
    install, plays = quick_start()
    home = tmp_path / "home"
    work = tmp_path / "work"
    home.mkdir()
    (work / "group_vars").mkdir(parents=True)
    build = subprocess.run([os.path.join(os.path.dirname(sys.executable), "ansible-galaxy"), "collection", "build",
                            REPO, "--output-path", str(work), "--force"], capture_output=True, text=True, check=False)
    assert build.returncode == 0, build.stdout + build.stderr
    assert (work / ("numaguard-kubelet-%s.tar.gz" % _galaxy_version())).is_file(), os.listdir(str(work))
    # what the validate line needs: saved topologies and settings per class
    shutil.copy(os.path.join(TOPOLOGIES, "intel-2s.json"), str(work / "worker-1.json"))
    shutil.copy(os.path.join(TOPOLOGIES, "vm-single.json"), str(work / "vm-1.json"))
    (work / "inventory.yml").write_text(
        "all:\n  vars:\n    ansible_connection: local\n  children:\n"
        "    numa_2n_96c_2m_1g_f504513b:\n      hosts:\n        worker-1: {numa_topology_file: worker-1.json}\n"
        "    numa_1n_4c_nohp_51d61aeb:\n      hosts:\n        vm-1: {numa_topology_file: vm-1.json}\n")
    for name in ("numa_2n_96c_2m_1g_f504513b.yml", "numa_1n_4c_nohp_51d61aeb.yml"):
        shutil.copy(os.path.join(CLASSES, name), str(work / "group_vars" / name))
    validate = [line.split("#", 1)[0].rstrip() for line in plays if "numaguard.kubelet.validate" in line]
    assert len(validate) == 1, plays
    script = ["set -eux", "cd %s" % work] + install + validate
    (tmp_path / "quick-start.sh").write_text("\n".join(script) + "\n")
    # a new user's shell: the system python3 first on PATH, nothing of this checkout's virtualenv
    env = {"HOME": str(home), "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8",
           "ANSIBLE_NOCOLOR": "1"}
    env.update((k, v) for k, v in os.environ.items() if k.startswith(("PIP_", "UV_", "HTTP_PROXY", "HTTPS_PROXY",
                                                                     "http_proxy", "https_proxy", "NO_PROXY", "no_proxy")))
    proc = subprocess.run(["bash", str(tmp_path / "quick-start.sh")], env=env, capture_output=True, text=True,
                          timeout=1200, check=False)
    output = proc.stdout[-4000:] + proc.stderr[-4000:]
    assert proc.returncode == 0, output
    assert "valid on 2 of 2 host(s)" in proc.stdout, output
    installed = home / ".ansible" / "collections" / "ansible_collections" / "numaguard" / "kubelet"
    assert (installed / "MANIFEST.json").is_file(), output


@pytest.mark.skipif(not os.path.exists("/usr/lib/python3.11/EXTERNALLY-MANAGED"), reason="not Debian 12's Python")
def test_the_old_quick_start_line_fails_on_the_system_python(tmp_path):
    """Why the virtualenv: the line the quick start had (issue 26) is refused by Debian 12's python3."""
    req = tmp_path / "requirements.txt"
    req.write_text("PyYAML>=5.1\n")
    env = {"HOME": str(tmp_path), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PIP_NO_INDEX": "1"}
    proc = subprocess.run([SYSTEM_PYTHON, "-m", "pip", "install", "-r", str(req)], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    if "No module named pip" in proc.stderr:
        pytest.skip("the system python3 has no pip")
    assert proc.returncode != 0 and "externally-managed-environment" in proc.stdout + proc.stderr, proc.stderr
