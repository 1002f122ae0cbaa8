# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 9 audit, validate.yml's half: the reserved_memory_check filter it calls refuses the start-up
failures with the kubelet's words and accepts a trimmed config quantity (the modules' half, with the
shared inputs, is tests/unit/plugins/modules/test_issue9_audit_modules.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_check import reserved_memory_check
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.test_issue9_audit_modules import (
    ASINT64,
    CAPACITY_1_37,
    NOT_INT64,
    OVER_CAPACITY,
    topology,
)


@pytest.mark.parametrize("config, rule, message", [
    (NOT_INT64, "reserved-memory-integer", ASINT64),
    (OVER_CAPACITY, "node-allocatable-capacity", CAPACITY_1_37),
])
def test_validate_filter_reports_the_start_up_failures(config, rule, message):
    result = reserved_memory_check(topology(memory_gi=11), kubelet_config=config, errors="report")
    assert result["valid"] is False
    assert any(e.startswith("[%s]" % rule) for e in result["errors"]), result["errors"]
    assert any(message in e for e in result["errors"]), result["errors"]


def test_validate_filter_accepts_a_trimmed_config_limit():
    config = {"memoryManagerPolicy": "Static", "kubeReserved": {"memory": "1Gi"},
              "evictionHard": {"memory.available": "100Mi"},
              "reservedMemory": [{"numaNode": 0, "limits": {"memory": " 1124Mi"}}]}
    result = reserved_memory_check(topology(), kubelet_config=config, errors="report")
    assert result["valid"] is True, result["errors"]
