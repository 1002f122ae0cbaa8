# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Make ``ansible_collections.numaguard.kubelet`` importable from a plain checkout (benchmarks
run as scripts, outside pytest's collection setup)."""

from __future__ import absolute_import, division, print_function

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def importable(root=ROOT):
    """Put a temporary ``ansible_collections/numaguard/kubelet`` -> ``root`` link on sys.path
    unless the collection is importable already."""
    try:
        import ansible_collections.numaguard.kubelet  # noqa: F401
        return
    except ImportError:
        pass
    import atexit  # here, not at the top: a fresh-process benchmark should not pay for them
    import shutil
    import tempfile

    tmp = tempfile.mkdtemp(prefix="numaguard-bench-")
    atexit.register(shutil.rmtree, tmp, True)
    os.makedirs(os.path.join(tmp, "ansible_collections", "numaguard"))
    os.symlink(root, os.path.join(tmp, "ansible_collections", "numaguard", "kubelet"))
    sys.path.insert(0, tmp)
