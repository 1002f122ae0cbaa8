# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""validate.yml's host line under memoryManagerPolicy None: the kubelet does not read
--reserved-memory (memory_manager.go NewManager: policy None never calls getSystemReservedMemory),
so the line says so, and a host with no reservedMemory gets no sum warning next to it (demo fleet
host h13: "no --reserved-memory needed (None)" beside "the total amount "0" ... "100Mi")."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import evaluate
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import validate_report
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report_render import render_text

GI = 1 << 30


def topo():
    return Topology(nodes=tuple(NumaNode(id=i, cpus=(2 * i, 2 * i + 1), memory_total_bytes=16 * GI,
                                         memory_free_bytes=GI) for i in (0, 1)))


def line(config):
    result = evaluate(topo(), kubelet_config=config).to_dict()
    report = validate_report({"h13": result}, {}, {}, ["h13"])
    return result, report["hosts"][0], render_text(report)


def test_no_settings_is_ok_and_says_the_flag_is_not_read():
    result, entry, text = line({})
    assert result["valid"] and result["warnings"] == []
    assert entry["status"] == "ok"
    assert entry["summary"] == "memoryManagerPolicy None: no --reserved-memory (the kubelet reads it only with Static)"
    assert not any("not equal to the value" in t for t in text)
    # the equation is still in the result, for whoever switches to Static later
    assert result["totals"]["memory"]["balanced"] is False


def test_a_written_reservation_under_none_is_called_ignored_and_its_warning_says_why():
    result, entry, text = line({"reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}]})
    assert entry["status"] == "warning"
    assert entry["summary"] == ("--reserved-memory=0:memory=1Gi (ignored while memoryManagerPolicy is None: the kubelet "
                                "reads it only with Static)")
    [warning] = result["warnings"]
    assert warning.startswith('[reserved-memory-sum] the total amount "1Gi" of type "memory" is not equal to the value '
                              '"100Mi" determined by Node Allocatable feature')
    assert ("memoryManagerPolicy is None, so the kubelet ignores this today, but it will refuse to start once the "
            "policy is switched to Static." in warning)
    assert any("h13" in t and "ignored while memoryManagerPolicy is None" in t for t in text)


def test_static_keeps_the_flag_line_and_the_sum_error():
    _result, entry, _text = line({"memoryManagerPolicy": "Static"})
    assert entry["status"] == "invalid" and "[static-needs-reservation]" in entry["summary"] + " ".join(entry["errors"])
    _result, entry, text = line({"memoryManagerPolicy": "Static",
                                 "reservedMemory": [{"numaNode": 0, "limits": {"memory": "100Mi"}},
                                                    {"numaNode": 1, "limits": {"memory": "1075038415"}}],
                                 "kubeReserved": {"memory": "1075038415"}})
    assert entry["status"] == "ok" and entry["summary"] == "--reserved-memory=0:memory=100Mi;1:memory=1075038415"
    assert any(t.endswith("--reserved-memory=0:memory=100Mi;1:memory=1075038415 (node 1 1.0 GiB)") for t in text), text
