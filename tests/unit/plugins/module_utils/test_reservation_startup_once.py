# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""validate_reservation takes the kubelet's start-up verdict once per (machine, configuration,
kubelet release and gates, capacity): the same answer as building the managers every time."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine import startup
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import HugePages, NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation import reservation

GI = 1 << 30
MI = 1 << 20


def _machine(memory_gi=16):
    """A new, equal object on every call: the key is the machine, not the object."""
    pools = {"hugepages-1Gi": HugePages(page_size_bytes=GI, total_pages=2, free_pages=2)}
    return Topology(nodes=(NumaNode(id=0, cpus=(0, 1), memory_total_bytes=memory_gi * GI, memory_free_bytes=GI, hugepages=pools),
                           NumaNode(id=1, cpus=(2, 3), memory_total_bytes=memory_gi * GI, memory_free_bytes=GI)))


SETTINGS = dict(kube_reserved="memory=4Gi", system_reserved={"memory": "1Gi"}, memory_manager_policy="Static")


@pytest.fixture
def builds(monkeypatch):
    """The start-up verdicts actually built, with an empty memo."""
    calls = []
    real = startup.startup_verdict

    def counting(*args, **kwargs):
        calls.append(args[1])
        return real(*args, **kwargs)

    monkeypatch.setattr(reservation, "startup_verdict", counting)
    monkeypatch.setattr(reservation, "_STARTUP_VERDICTS", reservation._StartupVerdicts())
    return calls


def _startup(result):
    return result.extra["kubelet_startup"]


def test_the_same_reservation_on_an_equal_machine_builds_the_managers_once(builds):
    first = reservation.validate_reservation(_machine(), reserved_memory="0:memory=3Gi;1:memory=2148Mi", **SETTINGS)
    again = reservation.validate_reservation(_machine(), reserved_memory="0:memory=3Gi;1:memory=2148Mi", **SETTINGS)
    assert len(builds) == 1
    assert _startup(first) == _startup(again) == {"verdict": startup.STARTS, "manager": "", "message": ""}
    _startup(again)["verdict"] = "changed by a caller"  # each result has its own copy
    assert _startup(reservation.validate_reservation(_machine(), reserved_memory="0:memory=3Gi;1:memory=2148Mi",
                                                     **SETTINGS))["verdict"] == startup.STARTS


@pytest.mark.parametrize("other", [
    dict(reserved_memory="0:memory=2148Mi;1:memory=3Gi"),  # another configuration
    dict(reserved_memory="0:memory=3Gi;1:memory=2148Mi", memory_capacity_bytes=40 * GI),  # another capacity
    dict(reserved_memory="0:memory=3Gi;1:memory=2148Mi", kubelet=KubeletAssumption.resolve("1.28.0")),  # another release
    dict(reserved_memory="0:memory=3Gi;1:memory=2148Mi", machine=_machine(memory_gi=32)),  # another machine
])
def test_anything_the_verdict_depends_on_builds_again(builds, other):
    reservation.validate_reservation(_machine(), reserved_memory="0:memory=3Gi;1:memory=2148Mi", **SETTINGS)
    other = dict(other)
    machine = other.pop("machine", None) or _machine()
    result = reservation.validate_reservation(machine, **dict(SETTINGS, **other))
    assert len(builds) == 2
    assert _startup(result) == startup.startup_verdict(machine, builds[-1], other.get("kubelet") or KubeletAssumption.resolve(),
                                                       memory_capacity_bytes=result.extra["memory_capacity_bytes"])


def test_a_refusal_is_remembered_with_its_message(builds):
    # kube-reserved 8Gi + system-reserved 1Gi on a 2 x 2Gi machine: more than its capacity
    refused = [reservation.validate_reservation(_machine(memory_gi=2), kube_reserved="memory=8Gi",
                                                system_reserved={"memory": "1Gi"}, memory_manager_policy="None")
               for _attempt in range(2)]
    assert len(builds) == 1
    assert _startup(refused[0]) == _startup(refused[1])
    assert _startup(refused[0])["verdict"] == startup.REFUSES and _startup(refused[0])["message"]


def test_a_value_the_key_cannot_spell_is_never_looked_up():
    memo = reservation._StartupVerdicts()
    calls = []
    memo_verdict = memo.verdict

    class Opaque:
        pass

    original = reservation.startup_verdict

    def counting(*args, **kwargs):
        calls.append(args)
        return {"verdict": startup.STARTS, "manager": "", "message": ""}

    try:
        reservation.startup_verdict = counting
        for _attempt in range(2):
            memo_verdict(_machine(), {"kubeReserved": Opaque()}, KubeletAssumption.resolve(), 32 * GI)
        assert len(calls) == 2 and not memo.verdicts
        # YAML's 1 and "1", True and 1 are different keys
        for value in (1, "1", True, 1.0):
            memo_verdict(_machine(), {"x": value}, KubeletAssumption.resolve(), 32 * GI)
        assert len(calls) == 6 and len(memo.verdicts) == 4
    finally:
        reservation.startup_verdict = original
