# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 23: seeded fuzzing of kubelet_config, kubelet_backup, admission_check, reserved_memory
and the pod-file loader (tests/fleet/fuzz_inputs.py): no traceback, no write outside the case's
root, no half-written file. A small count here; benchmarks/fuzz_modules.py runs 10,000.

The harness itself is tested too: a module that writes outside or leaves half a file is caught.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends import kubelet_backup as kubelet_backup_backend
from ansible_collections.numaguard.kubelet.plugins.module_utils._backends import kubelet_config as kubelet_config_backend
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config import backup
from ansible_collections.numaguard.kubelet.tests.fleet import fuzz_inputs


@pytest.mark.parametrize("seed", [23, 2023])
def test_fuzzed_inputs_end_in_an_answer_or_a_clear_refusal(seed, tmp_path):
    counts = fuzz_inputs.run_cases(120, seed, work=str(tmp_path))
    assert counts["cases"] == 120
    assert (counts["traceback"], counts["outside"], counts["half_written"]) == (0, 0, 0), counts["examples"]
    assert all(n > 0 for n in counts["per_module"].values()), counts["per_module"]
    assert 0 < counts["failed"] < 120  # refusals and answers both happen


def test_the_harness_sees_a_write_outside(tmp_path, monkeypatch):
    # no more refusal of the symlinked backup root
    monkeypatch.setattr(backup, "check_backup_root", lambda root, dirs: None)
    monkeypatch.setattr(kubelet_backup_backend, "check_backup_root", lambda root, dirs: None)
    counts = fuzz_inputs.run_cases(150, 23, work=str(tmp_path), modules=("kubelet_backup",))
    assert counts["outside"] > 0


def test_the_harness_sees_a_half_written_file(tmp_path, monkeypatch):
    def torn(module, path, text, mode_bits):
        directory = os.path.dirname(path) or "."
        if not os.path.isdir(directory):
            os.makedirs(directory)
        with open(path, "w") as handle:
            handle.write(text[: len(text) // 2] + "\n  - [")  # a write cut short, in place

    monkeypatch.setattr(kubelet_config_backend, "write_config", torn)
    counts = fuzz_inputs.run_cases(60, 23, work=str(tmp_path), modules=("kubelet_config",))
    assert counts["half_written"] > 0
