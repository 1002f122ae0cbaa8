# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 9 audit, one reserved-memory model: the validator (reserved_memory, validate.yml,
kubelet_config) and the engine's memory manager start-up (``getSystemReservedMemory`` ->
``validateReservedMemory``) give the same sum verdict on the same configuration, for memory and
hugepages, with and without SystemReservedHugepages."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from hypothesis import example, given
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.memory_manager import (
    system_reserved_from_config,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import HugePages, NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import evaluate

MI = 1 << 20
GI = 1 << 30
SUM = "determined by Node Allocatable feature"
SUM_RULES = ("reserved-memory-sum", "reserved-memory-hugepages")


def topo():
    pools = {"hugepages-2Mi": HugePages(page_size_bytes=2 * MI, total_pages=512, free_pages=512)}
    return Topology(nodes=tuple(NumaNode(id=n, cpus=(2 * n, 2 * n + 1), memory_total_bytes=16 * GI,
                                         memory_free_bytes=GI, hugepages=pools) for n in (0, 1)))


MEMORY = ["1Gi", "100Mi", "1124Mi", "612Mi", "512Mi", "1.5Gi", "0.5Gi", " 100Mi"]
HUGE = [None, "512Mi", "256Mi", "1Gi"]


@st.composite
def configs(draw):
    entries = []
    for node in draw(st.lists(st.sampled_from([0, 1]), min_size=1, max_size=2, unique=True)):
        limits = {"memory": draw(st.sampled_from(MEMORY))}
        huge = draw(st.sampled_from(HUGE))
        if huge is not None:
            limits["hugepages-2Mi"] = huge
        entries.append({"numaNode": node, "limits": limits})
    config = kubelet_defaults()
    config.update({"memoryManagerPolicy": "Static", "reservedMemory": entries,
                   "kubeReserved": {"memory": draw(st.sampled_from(["1Gi", "512Mi", "1.5Gi"]))},
                   "systemReserved": {"memory": draw(st.sampled_from(["0", "412Mi", "1Gi"]))}})
    gate = draw(st.booleans())
    if gate:
        config["featureGates"] = {"SystemReservedHugepages": True}
        hugepages = draw(st.sampled_from([None, "512Mi", "256Mi"]))
        if hugepages is not None:
            config["kubeReserved"]["hugepages-2Mi"] = hugepages
    return config, gate


def _fixed(memory, huge=None, gate=False, kube_huge=None):
    config = kubelet_defaults()
    limits = {"memory": memory}
    if huge:
        limits["hugepages-2Mi"] = huge
    config.update({"memoryManagerPolicy": "Static", "reservedMemory": [{"numaNode": 0, "limits": limits}],
                   "kubeReserved": {"memory": "1Gi"}, "systemReserved": {"memory": "0"}})
    if gate:
        config["featureGates"] = {"SystemReservedHugepages": True}
        if kube_huge:
            config["kubeReserved"]["hugepages-2Mi"] = kube_huge
    return config, gate


BALANCED = _fixed("1124Mi")
BALANCED_HUGEPAGES = _fixed("1124Mi", "512Mi", True, "512Mi")


def test_the_fixed_cases_take_both_branches():
    for case, balanced in ((BALANCED, True), (BALANCED_HUGEPAGES, True), (_fixed("1Gi"), False),
                           (_fixed("1124Mi", "512Mi"), False), (_fixed("1124Mi", "256Mi", True, "512Mi"), False)):
        config, gate = case
        kubelet = KubeletAssumption.resolve("1.38" if gate else "1.37", None, config.get("featureGates"))
        assert evaluate(topo(), kubelet_config=config, kubelet=kubelet).valid is balanced, config


@given(configs())
@example(BALANCED)
@example(BALANCED_HUGEPAGES)
@example(_fixed("1Gi"))
@example(_fixed("1124Mi", "512Mi"))
@example(_fixed("1124Mi", "256Mi", True, "512Mi"))
def test_validator_and_engine_agree_on_the_sum_rule(case):
    config, gate = case
    kubelet = KubeletAssumption.resolve("1.38" if gate else "1.37", None, config.get("featureGates"))
    verdict = evaluate(topo(), kubelet_config=config, kubelet=kubelet)
    validator_sum = sorted(f.kubelet_message for f in verdict.errors if f.rule in SUM_RULES)
    try:
        system_reserved_from_config(topo(), config, feature_gates=kubelet.gates)
        engine = None
    except StateError as exc:
        engine = str(exc)
    engine_sum = engine if engine is not None and SUM in engine else None
    assert bool(validator_sum) == bool(engine_sum), (config, validator_sum, engine)
    if engine_sum is not None:
        # the engine stops at the first mismatch (sorted types); the validator reports every one
        assert any(m and m in engine_sum for m in validator_sum), (validator_sum, engine_sum)
