# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""scripts/core-unit-targets: the unit test files ansible-test units runs on every older core.

ansible-test starts one pytest session (with its own xdist workers) per context it finds among
them: ``tests/unit/plugins/modules/``, ``tests/unit/plugins/module_utils/`` and the rest. A test
that runs a module's ``main()`` belongs with the module tests, so no target is a module_utils test
and an older core starts two sessions, not three. A file left out as the same on every core says
why.
"""

# core-unit-targets: same on every core: it runs scripts/core-unit-targets (bash and grep), no ansible

from __future__ import annotations

import os
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SCRIPT = os.path.join(REPO, "scripts", "core-unit-targets")


def _lines(*args):
    result = subprocess.run(["bash", SCRIPT] + list(args), capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


def test_no_target_is_a_module_utils_test():
    targets = _lines()
    assert targets and targets == sorted(targets)
    assert "tests/unit/plugins/modules/test_kubelet_transaction.py" in targets
    assert [path for path in targets if path.startswith("tests/unit/plugins/module_utils/")] == []


def test_a_file_left_out_as_the_same_on_every_core_says_why():
    targets = set(_lines())
    same = dict(line.split(": ", 1) for line in _lines("--same"))
    assert "tests/unit/plugins/test_check_pod_walk.py" in same
    for path, why in same.items():
        assert path not in targets and len(why.split()) >= 3, (path, why)
        with open(os.path.join(REPO, path), encoding="utf-8") as handle:
            assert "\n# core-unit-targets: same on every core: %s\n" % why in handle.read()
