# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every task worker on the controller imports the kubelet_rollout action plugin afresh (no
bytecode cached): it must not import the on-host rollout code (issue 24: 58 -> 9 ms per worker)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

_MU = "ansible_collections.numaguard.kubelet.plugins.module_utils."
_SCRIPT = ("import json, sys\n"
           "from ansible_collections.numaguard.kubelet.plugins.action import kubelet_rollout\n"
           "print(json.dumps(sorted(sys.modules)))\n")


def test_kubelet_rollout_action_imports_no_onhost_rollout():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, env=env, check=False)
    assert done.returncode == 0, done.stderr.decode()
    modules = json.loads(done.stdout.decode().strip().splitlines()[-1])
    heavy = [_MU + "_kubelet_config.rollout", _MU + "_kubelet_config.backup", _MU + "_kubelet_config.config",
             _MU + "_kubelet_config.yaml_reader", _MU + "_engine.eviction"]
    assert [m for m in heavy if m in modules] == []
    assert _MU + "_kubelet_config.rollout_common" in modules
