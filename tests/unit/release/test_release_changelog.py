# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The release and its changelog agree (issue 26: galaxy.yml and CHANGELOG.rst stopped at 0.1.0
while 33 fragments waited): ``galaxy.yml``'s version is the newest release of
``changelogs/changelog.yaml``, ``CHANGELOG.rst`` has its section, no fragment waiting for the next
release is one a release already consumed, and antsibull-changelog accepts the whole changelog."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import subprocess
import sys

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def _yaml(*path):
    with open(os.path.join(REPO, *path)) as handle:
        return yaml.safe_load(handle)


def _key(version):
    return tuple(int(p) for p in version.split("."))


def test_galaxy_version_is_the_newest_release():
    version = _yaml("galaxy.yml")["version"]
    releases = _yaml("changelogs", "changelog.yaml")["releases"]
    assert max(releases, key=_key) == version
    assert "release_summary" in releases[version]["changes"]
    with open(os.path.join(REPO, "CHANGELOG.rst")) as handle:
        rst = handle.read()
    assert "\nv%s\n%s\n" % (version, "=" * (len(version) + 1)) in rst


def test_no_waiting_fragment_was_released_already():
    released = set()
    for release in _yaml("changelogs", "changelog.yaml")["releases"].values():
        released.update(release.get("fragments") or [])
    waiting = set(os.listdir(os.path.join(REPO, "changelogs", "fragments"))) - {".keep", ".gitkeep"}
    assert not waiting & released, sorted(waiting & released)


def test_antsibull_changelog_lint():
    exe = os.path.join(os.path.dirname(sys.executable), "antsibull-changelog")
    if not os.path.exists(exe):
        exe = shutil.which("antsibull-changelog")
    if not exe:
        pytest.skip("antsibull-changelog is not installed")
    proc = subprocess.run([exe, "lint"], cwd=REPO, capture_output=True, text=True, check=False, timeout=300)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_no_fragment_is_named_like_a_playbook():
    """ansible-lint (galaxy-importer runs it) takes any ``*playbook*.yml`` for a playbook: a fragment
    named so is one importer warning (``A playbook must be a list of plays``)."""
    fragments = os.path.join(REPO, "changelogs", "fragments")
    named = [name for name in os.listdir(fragments) if "playbook" in name.lower()]
    assert named == [], "rename these fragments: %s" % ", ".join(named)
