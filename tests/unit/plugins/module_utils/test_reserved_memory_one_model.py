# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""kubelet_config reads reservedMemory through the one model (_engine/memorymanager/reserved.py):
the Static start-up check and the state-reset decision, with the same parser (object quantities
trimmed), the same AsInt64 rule and the same messages as reserved_memory; and both modules give
the same verdict on the same configuration."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import HugePages, NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.plan import plan_change
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.settings import (
    reset_decision,
    static_reserved_memory_errors,
    validate_settings,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import evaluate, reservation_validator, validate_reservation

#: the kubelet's words (typo included) when Quantity.AsInt64 fails in convertReserved
COVERT = "could not covert a variable of type Quantity to int64"
MI = 1 << 20
GI = 1024 * MI


def topo():
    """Two 16Gi nodes, each with a 2Mi pool (512 pages) and a 1Gi pool (2 pages)."""
    nodes = []
    for node_id in (0, 1):
        pools = dict((name, HugePages(page_size_bytes=size, total_pages=count, free_pages=count))
                     for name, size, count in (("hugepages-2Mi", 2 * MI, 512), ("hugepages-1Gi", GI, 2)))
        nodes.append(NumaNode(id=node_id, cpus=(2 * node_id, 2 * node_id + 1), memory_total_bytes=16 * GI,
                              memory_free_bytes=GI, hugepages=pools))
    return Topology(nodes=tuple(nodes))


def effective(**fields):
    config = kubelet_defaults()
    config.update(fields)
    return config


def static(*entries, **fields):
    return effective(memoryManagerPolicy="Static", reservedMemory=list(entries), **fields)


def entry(node, **limits):
    return {"numaNode": node, "limits": dict((k.replace("_", "-"), v) for k, v in limits.items())}


# -- the Static check (no host needed) -------------------------------------------------------------

@pytest.mark.parametrize("written", ["1.5Gi", "0.5Gi", "1.0Gi", "1024.0Mi", "1073741824000m", "1000m",
                                     "1234567890123456789"])
def test_static_check_refuses_what_asint64_refuses(written):
    errors = static_reserved_memory_errors([entry(0, memory=written)])
    assert len(errors) == 1 and errors[0].startswith("reservedMemory: [reserved-memory-integer] reservedMemory memory=")
    assert COVERT in errors[0]
    # the same words as reserved_memory (the validator) for the same entry
    found = validate_reservation(topo(), reserved_memory=[entry(0, memory=written)], memory_manager_policy="Static")
    assert ["reservedMemory: %s" % f for f in found.errors if f.rule == "reserved-memory-integer"] == errors


def test_static_check_converts_hugepages_too():
    # convertReserved converts every type, not only memory
    errors = static_reserved_memory_errors([entry(0, memory="1Gi", hugepages_2Mi="1.5Mi")])
    assert len(errors) == 1 and "reservedMemory hugepages-2Mi=1.5Mi for NUMA node 0" in errors[0] and COVERT in errors[0]
    assert static_reserved_memory_errors([entry(0, memory="1Gi", hugepages_1Gi="1Gi")]) == []


def test_static_check_accepts_a_trimmed_object_quantity_and_counts_only_memory():
    assert static_reserved_memory_errors([entry(0, memory=" 100Mi")]) == []
    assert static_reserved_memory_errors([entry(0, memory="100Mi\t")]) == []
    # hugepages alone are no system reserved memory (NewPolicyStatic sums the memory type)
    [only_huge] = static_reserved_memory_errors([entry(0, hugepages_1Gi="1Gi")])
    assert only_huge.startswith("reservedMemory: [static-needs-reservation] ")
    assert "[memorymanager] you should specify the system reserved memory" in only_huge


def test_static_check_reports_the_parser_error_with_its_path():
    [error] = static_reserved_memory_errors([entry(0, memory="1 Gi")])
    assert error.startswith("reservedMemory[0].limits.memory: ")


def test_validate_settings_static_check_goes_through_the_model():
    errors, _warnings = validate_settings({"memoryManagerPolicy": "Static"}, static(entry(0, memory="1.5Gi")), "1.37")
    assert len(errors) == 1 and COVERT in errors[0]
    # a config file with " 100Mi" is what the kubelet reads as 100Mi: no error (it was one before)
    errors, _warnings = validate_settings({"memoryManagerPolicy": "Static"}, static(entry(0, memory=" 100Mi")), "1.37")
    assert errors == []


def test_host_check_reads_numa_node_as_the_kubelet_decodes_it():
    # no numaNode in a config file entry: Go's zero value, node 0 (it was "NUMA node None does not exist")
    errors, _warnings = validate_settings({"memoryManagerPolicy": "Static"}, static({"limits": {"memory": "100Mi"}}),
                                          "1.37", topo())
    assert errors == []
    errors, _warnings = validate_settings({"memoryManagerPolicy": "Static"}, static(entry(3, memory="100Mi")), "1.37", topo())
    found = validate_reservation(topo(), reserved_memory=[entry(3, memory="100Mi")], memory_manager_policy="Static")
    assert errors == ["reservedMemory: %s" % f for f in found.errors if f.rule == "reserved-memory-numa-node"] != []


def test_plan_accepts_a_trimmed_quantity_in_the_main_config_file(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
                      "reservedMemory:\n- numaNode: 0\n  limits:\n    memory: ' 100Mi'\n")
    (tmp_path / "conf.d").mkdir()
    result = plan_change({"memoryManagerPolicy": "Static"}, config=str(config), config_dir=str(tmp_path / "conf.d"),
                         root_dir=str(tmp_path), kubelet_version="1.37")
    assert result["effective"]["reservedMemory"] == [{"numaNode": 0, "limits": {"memory": " 100Mi"}}]


# -- the reset decision -------------------------------------------------------------------------------

def mem_state():
    return {"policyName": "Static", "machineState": {}}


@pytest.mark.parametrize("old, new, reset", [
    ([entry(0, memory="100Mi")], [entry(0, memory=" 100Mi")], False),     # trimmed: the same bytes
    ([entry(0, memory="1Gi")], [entry(0, memory="1024Mi")], False),
    ([entry(0, memory="1Gi")], [entry(0, memory="1Gi\n")], False),
    ([entry(0, memory="1Gi", hugepages_1Gi="1Gi")], [entry(0, memory="1Gi", hugepages_1Gi="1024Mi")], False),
    ([entry(0, memory="1Gi", hugepages_1Gi="1Gi")], [entry(0, memory="1Gi", hugepages_1Gi="2Gi")], True),
    ([entry(0, memory="1Gi", hugepages_2Mi="2Mi")], [entry(0, memory="1Gi")], True),
    # convertReserved: a later entry for the same node replaces the earlier one
    ([entry(0, memory="1Gi"), entry(0, memory="2Gi")], [entry(0, memory="2Gi")], False),
    # a limit the kubelet cannot convert: the old state cannot be trusted
    ([entry(0, memory="1.5Gi")], [entry(0, memory="1536Mi")], True),
    ([entry(0, memory="1.0Gi")], [entry(0, memory="1Gi")], True),
    ([entry(0, memory="1073741824000m")], [entry(0, memory="1Gi")], True),
    ([entry(0, memory="1234567890123456789")], [entry(0, memory="1234567890123456789")], True),
])
def test_reset_decision_reads_reserved_memory_through_the_model(old, new, reset):
    result = reset_decision(static(*old), static(*new), None, mem_state(), None)
    assert result["memory_manager_state"] is reset
    if reset:
        assert result["reasons"] == ["reservedMemory changed, so the checkpoint's systemReserved per NUMA node no "
                                     "longer matches"]


# -- one verdict in both modules ----------------------------------------------------------------------

QUANTITIES = ["1Gi", "1124Mi", "100Mi", " 100Mi", "1024Mi\t", "1.5Gi", "1.0Gi", "1073741824000m",
              "1234567890123456789", "612Mi", "1 Gi"]
HUGE = [None, "2Mi", "1.5Mi", "1Gi"]


@st.composite
def configs(draw):
    policy = draw(st.sampled_from(["Static", "None"]))
    entries = []
    for node in draw(st.lists(st.sampled_from([0, 1, 3]), max_size=3, unique=True)):
        limits = {}
        if draw(st.booleans()):
            limits["memory"] = draw(st.sampled_from(QUANTITIES))
        for size in ("hugepages-2Mi", "hugepages-1Gi"):
            value = draw(st.sampled_from(HUGE))
            if value is not None:
                limits[size] = value
        entries.append({"numaNode": node, "limits": limits})
    fields = {"memoryManagerPolicy": policy, "kubeReserved": {"memory": draw(st.sampled_from(["1Gi", "512Mi"]))}}
    if entries or draw(st.booleans()):
        fields["reservedMemory"] = entries
    return fields


@given(configs())
def test_kubelet_config_and_reserved_memory_agree(fields):
    topology = topo()
    config = effective(**fields)
    errors, _warnings = validate_settings({"memoryManagerPolicy": fields["memoryManagerPolicy"]}, config, "1.37",
                                          topology, reservation_validator=reservation_validator)
    verdict = evaluate(topology, kubelet_config=config)
    assert (not errors) == verdict.valid, (errors, [str(f) for f in verdict.errors])
