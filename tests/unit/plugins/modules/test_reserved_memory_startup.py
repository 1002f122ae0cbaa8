# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""reserved_memory: the kubelet's start-up refusals (AsInt64, Node Allocatable capacity) and the
whitespace rules of object quantities versus flags and string maps (issue 9); its start-up verdict
(``kubelet_startup``) is the engine's one start-up path, ``_engine/startup.py`` ``startup_verdict``,
and a refusal makes the reservation invalid even when no finding of ours words it (issue 21)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from ansible.module_utils.common import warnings as ansible_warnings
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.startup import REFUSES, STARTS, startup_verdict
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation import reservation
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import evaluate, topology_from_any
from ansible_collections.numaguard.kubelet.plugins.modules import reserved_memory
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import patch_module_args

GI = 1 << 30
ASINT64 = "could not covert a variable of type Quantity to int64"


def topology(memory_gi=16, cpus=2):
    return {"nodes": [{"id": 0, "cpus": list(range(cpus)), "memory_total_bytes": memory_gi * GI,
                       "memory_free_bytes": GI, "hugepages": {}, "distances": {"0": 10}}]}


@pytest.fixture(autouse=True)
def _fresh_warnings():
    ansible_warnings._global_warnings.clear()
    yield
    ansible_warnings._global_warnings.clear()


def run(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            reserved_memory.main()
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("limit", ["1.5Gi", "0.5Gi", "1.0Gi", "1024.0Mi", "1073741824000m", "1073741824.0",
                                   "1073741824000000000000e-12"])
def test_limits_the_memory_manager_cannot_convert_are_refused(capsys, limit):
    # each equals a whole number of bytes; the kubelet still refuses it (representation)
    result = run(capsys, {"topology": topology(), "kube_reserved": {"memory": limit}, "eviction_hard": {},
                          "reserved_memory": [{"numaNode": 0, "limits": {"memory": limit}}],
                          "memory_manager_policy": "Static", "fail_on_invalid": False})
    assert result["valid"] is False
    finding = [f for f in result["findings"] if f["rule"] == "reserved-memory-integer"]
    assert finding and finding[0]["kubelet_message"] == ASINT64 and finding[0]["fatal"] is True
    assert "memory=%s for NUMA node 0" % limit in finding[0]["message"]


def test_more_than_18_significant_digits_is_refused_and_18_is_fine():
    eighteen, nineteen = "100000000000000000", "1000000000000000000"
    ok = evaluate(topology(), kube_reserved={"memory": eighteen}, eviction_hard={}, memory_capacity_bytes=1 << 62,
                  reserved_memory=[{"numaNode": 0, "limits": {"memory": eighteen}}], memory_manager_policy="Static")
    assert [f.rule for f in ok.errors if f.rule == "reserved-memory-integer"] == []
    bad = evaluate(topology(), kube_reserved={"memory": nineteen}, eviction_hard={}, memory_capacity_bytes=1 << 62,
                   reserved_memory=[{"numaNode": 0, "limits": {"memory": nineteen}}], memory_manager_policy="Static")
    assert [f.kubelet_message for f in bad.errors if f.rule == "reserved-memory-integer"] == [ASINT64]


def test_canonical_limits_pass_and_none_policy_only_warns(capsys):
    result = run(capsys, {"topology": topology(), "kube_reserved": {"memory": "1536Mi"}, "eviction_hard": {},
                          "reserved_memory": [{"numaNode": 0, "limits": {"memory": "1536Mi"}}],
                          "memory_manager_policy": "Static"})
    assert result["valid"] is True
    result = run(capsys, {"topology": topology(), "kube_reserved": {"memory": "1.5Gi"}, "eviction_hard": {},
                          "reserved_memory": [{"numaNode": 0, "limits": {"memory": "1.5Gi"}}],
                          "memory_manager_policy": "None"})
    assert result["valid"] is True
    assert "reserved-memory-integer" in [f["rule"] for f in result["findings"] if f["severity"] == "warning"]


@pytest.mark.parametrize("release", ["1.30", "1.35"])
def test_reservation_larger_than_the_node_is_refused_with_the_kubelets_message(capsys, release):
    result = run(capsys, {"topology": topology(memory_gi=11), "kube_reserved": {"memory": "11Gi"},
                          "system_reserved": {"memory": "11Gi"}, "eviction_hard": {},
                          "reserved_memory": "0:memory=22Gi", "memory_manager_policy": "Static",
                          "memory_capacity": "11Gi", "fail_on_invalid": False, "kubelet_version": release})
    assert result["valid"] is False
    finding = [f for f in result["findings"] if f["rule"] == "node-allocatable-capacity"][0]
    assert finding["fatal"] is True
    assert finding["kubelet_message"] == (
        'invalid Node Allocatable configuration. Resource "memory" has a reservation of '
        '{{23622320128 0} {<nil>}  BinarySI} but capacity of {{11811160064 0} {<nil>}  BinarySI}. '
        'Expected capacity >= reservation.')


@pytest.mark.parametrize("release", ["1.28", "1.29"])
def test_capacity_message_before_1_30_and_cpu(release):
    kubelet = KubeletAssumption.resolve(release)
    result = evaluate(topology(memory_gi=11, cpus=4), kube_reserved={"memory": "11Gi", "cpu": "3"},
                      system_reserved={"memory": "11Gi", "cpu": "2"}, eviction_hard={}, memory_capacity_bytes=11 * GI,
                      reserved_memory="0:memory=22Gi", memory_manager_policy="None", kubelet=kubelet)
    finding = [f for f in result.errors if f.rule == "node-allocatable-capacity"][0]
    assert finding.kubelet_message == (
        'invalid Node Allocatable configuration. Resource "cpu" has an allocatable of {{5 0} {<nil>}  DecimalSI}, '
        'capacity of {{-1000 -3} {<nil>}  DecimalSI} Resource "memory" has an allocatable of '
        '{{23622320128 0} {<nil>}  BinarySI}, capacity of {{-11811160064 0} {<nil>}  BinarySI}')
    # reservedSystemCPUs replaces the cpu of kube/system-reserved: 2 CPUs fit 4
    result = evaluate(topology(memory_gi=16, cpus=4), kube_reserved={"memory": "1Gi", "cpu": "3"},
                      system_reserved={"cpu": "2"}, eviction_hard={}, reserved_memory="0:memory=1Gi",
                      reserved_cpus="0-1", memory_manager_policy="Static")
    assert [f.rule for f in result.errors] == []
    # the hard eviction threshold counts too
    result = evaluate(topology(memory_gi=1), kube_reserved={"memory": "1Gi"}, memory_capacity_bytes=GI,
                      reserved_memory="0:memory=1124Mi", memory_manager_policy="Static")
    assert "node-allocatable-capacity" in [f.rule for f in result.errors]


def test_object_quantities_are_trimmed_flags_and_maps_are_not():
    config = {"kubeReserved": {"memory": "1Gi"}, "evictionHard": {"memory.available": "100Mi"},
              "memoryManagerPolicy": "Static", "reservedMemory": [{"numaNode": 0, "limits": {"memory": " 1124Mi\t"}}]}
    assert evaluate(topology(), kubelet_config=config).valid is True
    flag = evaluate(topology(), kubelet_config=dict(config, reservedMemory=None), reserved_memory="0:memory= 1124Mi")
    assert flag.valid is False and flag.errors[0].rule == "reserved-memory-syntax"
    spaced_map = evaluate(topology(), kubelet_config=dict(config, kubeReserved={"memory": " 1Gi"}))
    assert spaced_map.valid is False and spaced_map.errors[0].rule == "kube-reserved-syntax"


def test_engine_reads_config_limits_trimmed_too():
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.reserved import convert_reserved, parse_reserved_memory_config
    entries = parse_reserved_memory_config([{"numaNode": 0, "limits": {"memory": " 1Gi\n"}}])
    assert convert_reserved([0], entries) == {0: {"memory": GI}}
    entries = parse_reserved_memory_config([{"numaNode": 0, "limits": {"memory": "1.0Gi"}}])
    with pytest.raises(ValueError) as err:
        convert_reserved([0], entries)
    assert str(err.value) == ASINT64


def two_nodes(memory_gi=16, cpus=2):
    return {"nodes": [{"id": node, "cpus": list(range(node * cpus, (node + 1) * cpus)), "memory_total_bytes": memory_gi * GI,
                       "memory_free_bytes": GI, "hugepages": {}, "distances": {"0": 10 if node == 0 else 21,
                                                                               "1": 21 if node == 0 else 10}}
                      for node in (0, 1)]}


# -- issue 21: the verdict is the engine's one start-up path (``startup_verdict``) ------------------

def test_a_balanced_static_reservation_starts(capsys):
    result = run(capsys, {"topology": two_nodes(), "kube_reserved": {"memory": "1Gi"}, "eviction_hard": {},
                          "reserved_memory": "0:memory=1Gi", "memory_manager_policy": "Static", "kubelet_version": "1.32"})
    assert result["valid"] is True
    assert result["kubelet_startup"] == {"verdict": STARTS, "manager": "", "message": ""}


def test_a_sum_the_memory_manager_refuses_is_its_verdict_and_one_finding(capsys):
    result = run(capsys, {"topology": two_nodes(), "kube_reserved": {"memory": "1Gi"}, "eviction_hard": {},
                          "reserved_memory": "0:memory=2Gi", "memory_manager_policy": "Static",
                          "kubelet_version": "1.32", "fail_on_invalid": False})
    startup = result["kubelet_startup"]
    assert result["valid"] is False
    assert startup["verdict"] == REFUSES and startup["manager"] == "memory"
    quoting = [f for f in result["findings"] if f["kubelet_message"] and f["kubelet_message"] in startup["message"]]
    assert [f["rule"] for f in quoting] == ["reserved-memory-sum"]      # worded once, with the numbers and a fix
    assert "kubelet-startup" not in [f["rule"] for f in result["findings"]]


def test_node_allocatable_over_capacity_is_the_verdict_of_validatenodeallocatable(capsys):
    result = run(capsys, {"topology": two_nodes(memory_gi=4), "kube_reserved": {"memory": "6Gi"},
                          "system_reserved": {"memory": "6Gi"}, "eviction_hard": {}, "memory_capacity": "8Gi",
                          "memory_manager_policy": "None", "kubelet_version": "1.32", "fail_on_invalid": False})
    startup = result["kubelet_startup"]
    assert result["valid"] is False
    assert startup["verdict"] == REFUSES and startup["manager"] == "node_allocatable"
    finding = [f for f in result["findings"] if f["rule"] == "node-allocatable-capacity"][0]
    assert finding["kubelet_message"] == startup["message"]
    assert startup["message"].startswith('invalid Node Allocatable configuration. Resource "memory" has a reservation of ')


@pytest.mark.parametrize("fields", [
    dict(kube_reserved={"memory": "1Gi"}, eviction_hard={}, reserved_memory="0:memory=1Gi", memory_manager_policy="Static"),
    dict(kube_reserved={"memory": "1Gi"}, reserved_memory="0:memory=1Gi", memory_manager_policy="Static"),
    dict(kube_reserved={"memory": "1Gi"}, reserved_memory="0:memory=1124Mi;1:memory=0", memory_manager_policy="Static"),
    dict(system_reserved="memory=20Gi", eviction_hard={}, memory_manager_policy="None"),
    dict(kube_reserved={"memory": "1Gi"}, eviction_hard={}, reserved_memory="3:memory=1Gi", memory_manager_policy="Static"),
])
def test_the_verdict_is_startup_verdicts_on_the_same_configuration(fields):
    kubelet = KubeletAssumption.resolve("1.32")
    topo, capacity = topology_from_any(two_nodes())
    result = evaluate(two_nodes(), kubelet=kubelet, **fields).to_dict()
    config = reservation.startup_config(fields.get("kube_reserved"), fields.get("system_reserved"), fields.get("eviction_hard"),
                                        False, reservation.parse_reserved_memory(fields.get("reserved_memory") or "", "r")
                                        if fields.get("reserved_memory") else [], fields["memory_manager_policy"], None)
    expected = startup_verdict(topo, config, kubelet, memory_capacity_bytes=capacity)
    if any(f["rule"] == "reserved-memory-zero" for f in result["findings"]):
        expected = None  # the configuration's validation refuses a zero limit: the kubelet builds no manager
    assert result["kubelet_startup"] == expected
    assert result["valid"] is (expected is not None and expected["verdict"] == STARTS)


def test_a_refusal_no_finding_words_makes_the_reservation_invalid(monkeypatch):
    refusal = {"verdict": REFUSES, "manager": "cpu", "message": "not enough cpus available to satisfy request"}
    monkeypatch.setattr(reservation, "startup_verdict", lambda *args, **kwargs: dict(refusal))
    result = evaluate(two_nodes(), kube_reserved={"memory": "1Gi"}, eviction_hard={}, reserved_memory="0:memory=1Gi",
                      memory_manager_policy="Static")
    assert result.valid is False
    assert [(f.rule, f.kubelet_message, f.fatal) for f in result.errors] == [("kubelet-startup", refusal["message"], True)]
    assert "(cpu manager)" in result.errors[0].message


def test_no_verdict_where_the_engine_does_not_model_the_inputs():
    # allocatable_ignore_eviction (the kubelet's experimental flag) is not modelled by the start-up path
    result = evaluate(two_nodes(), kube_reserved={"memory": "1Gi"}, reserved_memory="0:memory=1Gi",
                      memory_manager_policy="Static", allocatable_ignore_eviction=True)
    assert result.to_dict()["kubelet_startup"] is None
    # an input the kubelet cannot parse stops it before any manager
    result = evaluate(two_nodes(), kube_reserved="memory=lots", reserved_memory="0:memory=1Gi", memory_manager_policy="Static")
    assert result.to_dict()["kubelet_startup"] is None and result.valid is False


@settings(max_examples=40)
@given(kube=st.integers(0, 40), node0=st.integers(0, 40), node1=st.integers(0, 40),
       policy=st.sampled_from(["None", "Static"]), eviction=st.sampled_from([{}, None]))
def test_a_refused_start_is_never_valid(kube, node0, node1, policy, eviction):
    entries = ";".join("%d:memory=%dMi" % (node, size * 256) for node, size in ((0, node0), (1, node1)) if size)
    result = evaluate(two_nodes(memory_gi=4), kube_reserved={"memory": "%dMi" % (kube * 256)} if kube else None,
                      eviction_hard=eviction, reserved_memory=entries or None, memory_manager_policy=policy,
                      kubelet=KubeletAssumption.resolve("1.32")).to_dict()
    startup = result["kubelet_startup"]
    assert startup is not None
    if startup["verdict"] == REFUSES:
        assert result["valid"] is False
        assert any(f["kubelet_message"] and (f["kubelet_message"] in startup["message"] or startup["message"] in f["kubelet_message"])
                   for f in result["findings"] if f["severity"] == "error")
