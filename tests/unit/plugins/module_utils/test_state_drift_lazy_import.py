# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_reservation/state_drift.py imports the memory_manager_state format only when a state is given,
so kubelet_config and reserved_memory runs without one do not load it at start-up."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess
import sys

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation import state_drift

ROOT = state_drift.__file__.split(os.sep + "ansible_collections" + os.sep, maxsplit=1)[0]
PREFIX = "ansible_collections.numaguard.kubelet.plugins.module_utils."
STATE_FORMAT = ("_engine.memorymanager.checkpoint", "_engine.memorymanager.validate_state",
                "_engine.memorymanager.machine_state", "_engine.checkpointmanager")


@pytest.mark.parametrize("backend", ["kubelet_config", "reserved_memory"])
def test_module_start_does_not_load_the_state_format(backend):
    module = PREFIX + "_backends." + backend
    code = ("import sys, importlib; importlib.import_module(%r); "
            "print('\\n'.join(m for m in %r if %r + m in sys.modules))" % (module, STATE_FORMAT, PREFIX))
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == []


def test_a_given_state_still_loads_and_checks_it():
    findings, summary = state_drift.predict_state(None, {}, "Static", "not json", "/x/memory_manager_state")
    assert summary["accepted"] is False and findings[0].severity == "error"
    assert "/x/memory_manager_state" in findings[0].message
