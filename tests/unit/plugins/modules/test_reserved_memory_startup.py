# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""reserved_memory: the kubelet's start-up refusals (AsInt64, Node Allocatable capacity) and the
whitespace rules of object quantities versus flags and string maps (issue 9)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from ansible.module_utils.common import warnings as ansible_warnings

from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import evaluate
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
