# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""numa_report's output files: written whole through _io.write_file, parent directories created."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.numaguard.kubelet.plugins.action.numa_report import write_whole


def test_write_whole_creates_parents_and_replaces_whole(tmp_path):
    path = str(tmp_path / "reports" / "html" / "fleet.html")
    write_whole(path, "<p>caf\u00e9</p>\n")
    assert open(path, "rb").read() == "<p>caf\u00e9</p>\n".encode("utf-8")
    assert os.stat(path).st_mode & 0o7777 == 0o644
    os.chmod(path, 0o600)
    write_whole(path, "second\n")
    assert (open(path).read(), os.stat(path).st_mode & 0o7777) == ("second\n", 0o644)
    assert os.listdir(os.path.dirname(path)) == ["fleet.html"]
