# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Boot drift (KEP-6232): per-node memory moved after a reboot, with and without the
``MemoryManagerDriftTolerance`` gate and its ``memory-drift-tolerance`` option.

The state file is hand-written: two 8Gi nodes, 1124Mi reserved on node 0, ``big`` (10Gi) and
``small`` (1Gi) in the NUMA group {0,1}. After the "reboot" the kernel image (47.4MiB, as in
kubernetes/kubernetes#131253) moved from node 1 to node 0: node 0 lost 12130 pages, node 1
gained them; the sum is unchanged.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSetupError, AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.boot_drift import boot_drift as engine_boot_drift
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.checkpoint import restore_memory_manager_state
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.memory_drift import (
    GRACE_BYTES,
    DriftOptionError,
    kernel_image_size,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.memory_drift import (
    drift_tolerance as engine_drift_tolerance,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, HugePages, NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults
from ansible_collections.numaguard.kubelet.tests.unit.plugins.module_utils.engine.state_fixtures import SPANNING_MEMORY_STATE

GI = 1 << 30
#: memory-drift-tolerance exists from kubelet 1.38 (not released: the engine's default is 1.37)
KEP_6232_RELEASE = (1, 38, 0)


def boot_drift(*args, **kwargs):
    kwargs.setdefault("version", KEP_6232_RELEASE)
    return engine_boot_drift(*args, **kwargs)


def drift_tolerance(*args, **kwargs):
    kwargs.setdefault("version", KEP_6232_RELEASE)
    return engine_drift_tolerance(*args, **kwargs)


MOVED = 12130 * 4096
STATE = SPANNING_MEMORY_STATE
IOMEM = """00000000-00000fff : Reserved
00100000-7ffdffff : System RAM
  2d000000-2dc02a37 : Kernel code
  2de00000-2e4b7fff : Kernel rodata
  2e600000-2e8cf0ff : Kernel data
  2ed6e000-2effffff : Kernel bss
"""
IMAGE = 0x2effffff - 0x2d000000 + 1


def machine(deltas=(0, 0), hugepages=None):
    nodes, cpus = [], []
    for node in range(2):
        memory = 8 * GI + deltas[node]
        pools = {}
        if hugepages:
            pool = HugePages(page_size_bytes=2 << 20, total_pages=hugepages[node], free_pages=hugepages[node])
            pools[pool.resource_name] = pool
        nodes.append(NumaNode(id=node, cpus=tuple(range(node * 4, node * 4 + 4)), memory_total_bytes=memory,
                              memory_free_bytes=memory, hugepages=pools,
                              distances={0: 10 if node == 0 else 20, 1: 20 if node == 0 else 10}))
        cpus.extend(CPU(id=c, node=node, core=c, socket=node, die=0, online=True, siblings=(c,), cache_id=node)
                    for c in range(node * 4, node * 4 + 4))
    return Topology(nodes=tuple(nodes), cpus=tuple(cpus))


def config(option=None, gate=None):
    out = kubelet_defaults()
    out.update({"memoryManagerPolicy": "Static", "topologyManagerPolicy": "best-effort",
                "systemReserved": {"memory": "1Gi"}, "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}]})
    if option is not None:
        out["memoryManagerPolicyOptions"] = {"memory-drift-tolerance": option}
    if gate is not None:
        out["featureGates"] = {"MemoryManagerDriftTolerance": gate}
    return out


def checkpoint():
    return restore_memory_manager_state(STATE, "Static", "/var/lib/kubelet/memory_manager_state")


KASLR = (-MOVED, MOVED)


def test_the_file_matches_the_machine_it_was_written_on():
    report = boot_drift(machine(), config(), checkpoint())
    assert report["starts"] is True and report["how"] == "exact"
    assert [row["difference"] for row in report["nodes"]] == [0, 0]


def test_drift_without_the_gate_stops_the_kubelet_and_says_by_how_much():
    report = boot_drift(machine(KASLR), config(), checkpoint())
    assert report["checked"] is True and report["starts"] is False and report["how"] == "refused"
    assert report["message"] == "[memorymanager] the expected machine state is different from the real one"
    assert "total is 8589934592, expected 8540250112" in report["detail"]
    rows = dict((row["numa_node"], row) for row in report["nodes"])
    assert rows[0]["difference"] == -MOVED and rows[0]["difference_human"] == "-48520Ki"
    assert rows[1]["difference"] == MOVED
    assert report["memory_sum_difference"] == 0
    assert report["tolerance"]["bound_bytes"] == 0
    # the admission engine refuses the same way
    with pytest.raises(StateError, match="different from the real one"):
        AdmissionSimulator(machine(KASLR), config(), memory_checkpoint=checkpoint())


def test_gate_on_without_the_option_keeps_the_exact_comparison():
    report = boot_drift(machine(KASLR), config(gate=True), checkpoint())
    assert report["starts"] is False and report["tolerance"]["source"] == "option not set: exact comparison"


def test_option_with_the_gate_tolerates_and_rebaselines():
    report = boot_drift(machine(KASLR), config("128Mi", True), checkpoint())
    assert report["starts"] is True and report["how"] == "tolerated"
    assert report["starts_without_tolerance"] is False
    assert report["tolerance"]["bound_bytes"] == 128 << 20
    assert all(row["within_bound"] for row in report["nodes"])
    simulator = AdmissionSimulator(machine(KASLR), config("128Mi", True), memory_checkpoint=checkpoint(),
                                   kubelet_version="1.38")
    # re-baselined: the machine's totals now, the recorded assignments kept
    tables = simulator.memory_map()
    assert tables["0"]["memory"]["total"] == 8 * GI - MOVED
    assert tables["1"]["memory"]["total"] == 8 * GI + MOVED
    assert tables["0"]["memory"]["reserved"] + tables["1"]["memory"]["reserved"] == 11 * GI


def test_auto_derives_the_bound_from_the_kernel_image():
    assert kernel_image_size(IOMEM) == IMAGE
    tolerance = drift_tolerance(config("auto", True), IOMEM)
    assert tolerance.bound == IMAGE + GRACE_BYTES
    assert boot_drift(machine(KASLR), config("auto", True), checkpoint(), proc_iomem=IOMEM)["how"] == "tolerated"
    # unreadable or zeroed /proc/iomem: no guess, the exact comparison stays
    zeroed = IOMEM.replace("2d000000-2dc02a37", "00000000-00000000").replace("2e600000-2e8cf0ff", "00000000-00000000")
    zeroed = zeroed.replace("2ed6e000-2effffff", "00000000-00000000")
    assert kernel_image_size(zeroed) is None
    report = boot_drift(machine(KASLR), config("auto", True), checkpoint(), proc_iomem=None)
    assert report["starts"] is False and report["tolerance"]["bound_bytes"] == 0


def test_drift_beyond_the_bound_is_refused():
    report = boot_drift(machine(KASLR), config("16Mi", True), checkpoint())
    assert report["starts"] is False
    assert "more than the bound 16Mi" in report["detail"]


def test_a_loss_the_assignments_no_longer_fit_is_refused_whatever_the_bound():
    report = boot_drift(machine((-3 * GI, -3 * GI)), config("8Gi", True), checkpoint())
    assert report["starts"] is False
    assert "no longer fits" in report["detail"] and "uid-big" in report["detail"]


def test_off_and_option_errors():
    assert boot_drift(machine(KASLR), config("off", True), checkpoint())["starts"] is False
    with pytest.raises(DriftOptionError, match='requires the MemoryManagerDriftTolerance feature gate'):
        drift_tolerance(config("128Mi"))
    with pytest.raises(DriftOptionError, match='bad value for option "memory-drift-tolerance": "-1Mi" is negative'):
        drift_tolerance(config("-1Mi", True))
    with pytest.raises(DriftOptionError, match='bad value for option "memory-drift-tolerance"'):
        drift_tolerance(config("lots", True))
    bad = config(gate=True)
    bad["memoryManagerPolicyOptions"] = {"no-such-option": "true"}
    with pytest.raises(DriftOptionError, match='unknown Memory Manager Policy option: "no-such-option"'):
        drift_tolerance(bad)
    with pytest.raises(AdmissionSetupError if issubclass(DriftOptionError, AdmissionSetupError) else StateError,
                       match="requires the MemoryManagerDriftTolerance feature gate"):
        AdmissionSimulator(machine(), config("128Mi"), memory_checkpoint=checkpoint(), kubelet_version="1.38")
    report = boot_drift(machine(), config("128Mi"), checkpoint())
    assert report["starts"] is False and "feature gate" in report["message"]


def test_nothing_to_compare():
    assert boot_drift(machine(), config(), None)["checked"] is False
    none = config()
    none["memoryManagerPolicy"] = "None"
    assert boot_drift(machine(), none, checkpoint())["reason"] == "memory manager policy None keeps no machine state"


def test_gate_and_option_come_from_the_versions_table():
    """AllAlpha turns the alpha gate on (the table's rule); a release before 1.38 does not know the option."""
    all_alpha = config("128Mi")
    all_alpha["featureGates"] = {"AllAlpha": True}
    assert drift_tolerance(all_alpha).bound == 128 << 20
    with pytest.raises(DriftOptionError, match='unknown Memory Manager Policy option: "memory-drift-tolerance"'):
        drift_tolerance(config("128Mi", True), version=(1, 37, 0))
    assert drift_tolerance(config("128Mi", True), version=(1, 38, 0)).bound == 128 << 20


@pytest.mark.parametrize("version", [(1, 37, 0), "1.37"])
def test_the_admission_engine_and_boot_drift_decide_the_option_as_the_given_kubelet(version):
    """The kubelet version reaches the memory manager: a 1.37 kubelet does not know the option
    (it refuses to start), a 1.38 one with the gate tolerates the drift."""
    with pytest.raises(StateError, match='unknown Memory Manager Policy option: "memory-drift-tolerance"'):
        AdmissionSimulator(machine(KASLR), config("128Mi", True), memory_checkpoint=checkpoint(), kubelet_version=version)
    report = boot_drift(machine(KASLR), config("128Mi", True), checkpoint(), version=(1, 37, 0))
    assert report["starts"] is False and report["how"] == "refused"
    assert 'unknown Memory Manager Policy option: "memory-drift-tolerance"' in report["message"]
    simulator = AdmissionSimulator(machine(KASLR), config("128Mi", True), memory_checkpoint=checkpoint(),
                                   kubelet_version="1.38")
    assert simulator.memory_map()["0"]["memory"]["total"] == 8 * GI - MOVED
    assert boot_drift(machine(KASLR), config("128Mi", True), checkpoint(), version=(1, 38, 0))["how"] == "tolerated"
