# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading a kubelet configuration file (what an admission_check run does) checks the managed
fields' types through _kubelet_config/fields.py without loading the settings checks
(_kubelet_config/settings.py, 42 KB) or the reservation validator (_reservation/, 58 KB): each is
compiled from source per module run (issue 24); the Static checks that need the validator still
word reserved-memory problems."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess
import sys

from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config import settings

ROOT = settings.__file__.split(os.sep + "ansible_collections" + os.sep, maxsplit=1)[0]
PREFIX = "ansible_collections.numaguard.kubelet.plugins.module_utils."
CONFIG = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\n"
          "memoryManagerPolicy: Static\nreservedMemory:\n  - numaNode: 0\n    limits: {memory: 1124Mi}\n")


def test_reading_a_config_file_loads_neither_the_settings_checks_nor_the_reservation_validator():
    code = ("import sys; from %s_kubelet_config.config import parse_config_text; "
            "parse_config_text(%r, 'config.yaml'); "
            "print(%r in sys.modules, %r in sys.modules, %r in sys.modules)"
            % (PREFIX, CONFIG, PREFIX + "_kubelet_config.fields", PREFIX + "_kubelet_config.settings",
               PREFIX + "_reservation.reservation"))
    env = dict(os.environ, PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.split() == ["True", "False", "False"]


def test_static_checks_still_word_reserved_memory_problems():
    assert settings.static_reserved_memory_errors([{"numaNode": 0, "limits": {"memory": "1Gi"}}]) == []
    problems = settings.static_reserved_memory_errors([])
    assert problems and all(p.startswith("reservedMemory: ") for p in problems)
