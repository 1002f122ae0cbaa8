# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The collection is GPL-3.0-or-later, stated the same way everywhere, with no sanity ignore files.

validate-modules (``_check_gpl3_header``, ansible-core 2.16-2.19) wants "GNU General Public
License" and "version 3" or "v3.0" in a module's first 20 lines; galaxy-importer warns once for
every ``tests/sanity/ignore-*.txt`` whatever it holds. So every plugin file carries the header, and
no ignore file exists: sanity must pass on its own (docs/releasing.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re
import subprocess

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SPDX = "SPDX-License-Identifier: GPL-3.0-or-later"
HEADER = "GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)"


def _tracked_files():
    if not os.path.isdir(os.path.join(REPO, ".git")):
        pytest.skip("not a checkout: the built collection has no git metadata")
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return [f for f in out.splitlines() if os.path.isfile(os.path.join(REPO, f))]


def test_licence_file_is_the_gpl_version_3():
    with open(os.path.join(REPO, "LICENSE"), encoding="utf-8") as handle:
        head = handle.read(400)
    assert "GNU GENERAL PUBLIC LICENSE" in head and "Version 3, 29 June 2007" in head


def test_galaxy_and_role_metadata_say_gpl3_or_later():
    with open(os.path.join(REPO, "galaxy.yml"), encoding="utf-8") as handle:
        galaxy = handle.read()
    assert re.search(r"^license:\n  - GPL-3\.0-or-later\n", galaxy, re.M), "galaxy.yml licence"
    with open(os.path.join(REPO, "roles", "kubelet_numa", "meta", "main.yml"), encoding="utf-8") as handle:
        assert "license: GPL-3.0-or-later" in handle.read()


def test_no_sanity_ignore_files():
    found = sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, "tests", "sanity", "ignore-*.txt")))
    assert not found, "galaxy-importer warns once per ignore file; fix the finding instead: %s" % ", ".join(found)


def test_every_module_and_callback_has_the_gpl3_header_where_validate_modules_looks():
    plugins = sorted(glob.glob(os.path.join(REPO, "plugins", "modules", "*.py"))
                     + glob.glob(os.path.join(REPO, "plugins", "callback", "*.py")))
    assert plugins
    for path in plugins:
        with open(path, encoding="utf-8") as handle:
            first20 = "".join(handle.readline() for _line in range(20))
        assert "GNU General Public License" in first20 and "v3.0" in first20, os.path.relpath(path, REPO)


def test_no_file_keeps_another_licence_header():
    stale = []
    for name in _tracked_files():
        if name == "LICENSE" or name.startswith(("tests/unit/release/", "changelogs/")):
            continue  # the changelog tells the relicensing itself
        try:
            with open(os.path.join(REPO, name), encoding="utf-8") as handle:
                text = "".join(handle.readline() for _line in range(12))  # where a header stands
        except (UnicodeDecodeError, OSError):
            continue
        if "Apache License" in text or "Apache-2.0" in text:
            stale.append(name)
        elif "Copyright: numaguard.kubelet contributors" in text and SPDX not in text:
            stale.append(name)
    assert not stale, "files with a stale or missing licence header: %s" % ", ".join(stale)


def test_header_wording_is_one():
    with open(os.path.join(REPO, "plugins", "module_utils", "_k8s", "cpuset.py"), encoding="utf-8") as handle:
        text = handle.read(600)
    assert HEADER in text and SPDX in text
