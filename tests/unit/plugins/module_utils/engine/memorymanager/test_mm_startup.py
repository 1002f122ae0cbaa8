# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Memory Manager start-up: reserved-memory maths, default machine state, state restore/validation."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from mm_helpers import GI, MI, hint, pod, static_config, topology  # noqa: E402

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.machine_state import (  # noqa: E402
    Block,
    MachineStateError,
    default_machine_state,
    entries_from_plain,
    entries_to_plain,
    machine_state_from_plain,
    machine_state_to_plain,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.memory_manager import (  # noqa: E402
    new_memory_manager,
    system_reserved_from_config,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.reserved import (  # noqa: E402
    ReservedMemoryError,
    convert_reserved,
    parse_reserved_memory_config,
    total_memory_type_reserved,
    validate_reserved_memory,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.validate_state import (  # noqa: E402
    MemoryStateError,
    validate_state,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.node_allocatable import reservation_from_config  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import ReservationSyntaxError  # noqa: E402

TWO = topology((0, 8 * GI), (1, 8 * GI))


# ---- reserved memory maths --------------------------------------------------------------------

def test_totals_keep_kubelet_formats():
    entries = parse_reserved_memory_config([{"numaNode": 0, "limits": {"memory": "3Gi"}},
                                            {"numaNode": 1, "limits": {"memory": "2148Mi"}}])
    totals = total_memory_type_reserved(entries, [0, 1])
    assert str(totals["memory"]) == "5220Mi" and totals["memory"].value() == 5473566720


@pytest.mark.parametrize("config, entries, message", [
    ({}, [{"numaNode": 0, "limits": {"memory": "1Gi"}}],
     'the total amount "1Gi" of type "memory" is not equal to the value "100Mi" determined by Node Allocatable feature'),
    ({"systemReserved": {"memory": "1G"}}, [{"numaNode": 0, "limits": {"memory": "1Gi"}}],
     'the total amount "1Gi" of type "memory" is not equal to the value "1104857600" determined by Node '
     'Allocatable feature'),
    ({"evictionHard": {"memory.available": "0%"}}, [],
     None),
    ({"evictionHard": {"memory.available": "0%"}, "kubeReserved": {"memory": "500M"}}, [],
     'the total amount "0" of type "memory" is not equal to the value "500M" determined by Node Allocatable feature'),
    ({}, [{"numaNode": 2, "limits": {"memory": "100Mi"}}],
     "the reserved memory configuration references a NUMA node 2 that does not exist on this machine"),
    ({}, [{"numaNode": 0, "limits": {"memory": "100Mi", "hugepages-2Mi": "2Mi"}}],
     'the total amount "2Mi" of type "hugepages-2Mi" is not equal to the value "0" determined by Node '
     'Allocatable feature'),
    ({}, [{"numaNode": 0, "limits": {"memory": "50Mi"}}, {"numaNode": 1, "limits": {"memory": "50Mi"}}], None),
])
def test_validate_reserved_memory(config, entries, message):
    names = ["cpu", "memory"]
    allocatable = reservation_from_config(config, names, 16 * GI)
    parsed = parse_reserved_memory_config(entries)
    if message is None:
        validate_reserved_memory([0, 1], allocatable, parsed)
        return
    with pytest.raises(ReservedMemoryError) as err:
        validate_reserved_memory([0, 1], allocatable, parsed)
    assert str(err.value) == message


def test_node_allocatable_reservation_parts():
    config = {"systemReserved": {"cpu": "1", "memory": "1Gi"}, "kubeReserved": {"cpu": "4", "memory": "4Gi"}}
    result = reservation_from_config(config, ["cpu", "memory", "hugepages-2Mi"], 16 * GI)
    assert dict((k, str(v)) for k, v in result.items()) == {"cpu": "5", "memory": "5220Mi"}
    with_cpus = reservation_from_config(config, ["cpu"], 16 * GI, reserved_cpus_count=2)
    assert str(with_cpus["cpu"]) == "2"
    percent = reservation_from_config({"evictionHard": {"memory.available": "5%"}}, ["memory"], 10 * GI)
    assert percent["memory"].value() == 536870920  # float32 percentage, as the kubelet computes it
    assert reservation_from_config({"evictionHard": {"nodefs.available": "10%"}}, ["memory"], GI) == {}


def test_convert_reserved_later_entry_replaces():
    entries = parse_reserved_memory_config([{"numaNode": 0, "limits": {"memory": "1Gi"}},
                                            {"numaNode": 0, "limits": {"memory": "2Gi"}}])
    assert str(total_memory_type_reserved(entries, [0, 1])["memory"]) == "3Gi"
    assert convert_reserved([0, 1], entries) == {0: {"memory": 2 * GI}, 1: {}}
    bad = parse_reserved_memory_config([{"numaNode": 0, "limits": {"memory": "1500m"}}])
    with pytest.raises(ReservedMemoryError) as err:
        convert_reserved([0], bad)
    assert str(err.value) == "could not covert a variable of type Quantity to int64"


@pytest.mark.parametrize("value, message", [
    ("x", "reservedMemory must be a list of {numaNode, limits} entries, got str"),
    ([5], "reservedMemory[0] must be a dict with numaNode and limits, got int 5"),
    ([{"numaNode": "a"}], "reservedMemory[0].numaNode must be an integer, got str 'a'"),
    ([{"numaNode": 0, "limit": {}}], "reservedMemory[0] has unknown key(s) limit (expected numaNode and limits; the "
                                     "kubelet's strict decoding refuses them)"),
    ([{"numaNode": 0, "limits": []}],
     "reservedMemory[0].limits must be a map of type to quantity, got list []"),
])
def test_parse_reserved_memory_errors(value, message):
    """One parser for the validator and the engine (the wording is the validator's)."""
    with pytest.raises(ReservationSyntaxError) as err:
        parse_reserved_memory_config(value)
    assert str(err.value) == message


def test_bad_quantity_named():
    with pytest.raises(ReservationSyntaxError) as err:
        parse_reserved_memory_config([{"numaNode": 0, "limits": {"memory": "1 Gi"}}])
    assert str(err.value).startswith("reservedMemory[0].limits.memory: ")


# ---- construction errors -------------------------------------------------------------------------

@pytest.mark.parametrize("config, message", [
    ({"memoryManagerPolicy": "static"}, 'unknown policy: "static"'),
    ({"memoryManagerPolicy": "BestEffort"}, 'policy "BestEffort" is not available for platform "linux"'),
    ({"memoryManagerPolicy": "Static", "evictionHard": {"memory.available": "0%"}},
     "[memorymanager] you should specify the system reserved memory"),
    ({"memoryManagerPolicy": "Static"},
     'the total amount "0" of type "memory" is not equal to the value "100Mi" determined by Node Allocatable '
     'feature'),
])
def test_construction_errors(config, message):
    with pytest.raises(StateError) as err:
        new_memory_manager(TWO, config)
    assert str(err.value) == message


def test_system_reserved_from_config_doc_example():
    config = {"kubeReserved": {"memory": "4Gi"}, "systemReserved": {"memory": "1Gi"},
              "reservedMemory": [{"numaNode": 0, "limits": {"memory": "3Gi"}},
                                 {"numaNode": 1, "limits": {"memory": "2148Mi"}}]}
    assert system_reserved_from_config(TWO, config) == {0: {"memory": 3 * GI}, 1: {"memory": 2148 * MI}}


def test_default_machine_state_wraps_like_uint64():
    topo = topology((0, GI))
    state = default_machine_state(topo, {0: {"memory": 2 * GI}})
    assert state[0].memory_map["memory"].allocatable == (1 << 64) - GI


# ---- plain data ------------------------------------------------------------------------------------

SPEC_PLAIN = {
    "0": {"numberOfAssignments": 1, "memoryMap": {"memory": {
        "total": 8589934592, "systemReserved": 1073741824, "allocatable": 7516192768,
        "reserved": 2147483648, "free": 5368709120}}, "cells": [0]},
    "1": {"numberOfAssignments": 0, "memoryMap": {"memory": {
        "total": 8589934592, "systemReserved": 0, "allocatable": 8589934592,
        "reserved": 0, "free": 8589934592}}, "cells": [1]},
}
SPEC_ENTRIES = {"pod-uid-1": {"c1": [{"numaAffinity": [0], "type": "memory", "size": 2147483648}]}}


def test_plain_round_trip():
    state = machine_state_from_plain(SPEC_PLAIN)
    assert sorted(state) == [0, 1]
    assert machine_state_to_plain(state) == dict((int(k), v) for k, v in SPEC_PLAIN.items())
    entries = entries_from_plain(SPEC_ENTRIES)
    assert entries == {"pod-uid-1": {"c1": [Block((0,), "memory", 2 * GI)]}}
    assert entries_to_plain(entries) == SPEC_ENTRIES
    # Go's JSON decoding matches field names case-insensitively
    assert machine_state_from_plain({"0": {"NumberOfAssignments": 2, "memorymap": {}, "Cells": None}})[0].cells is None


@pytest.mark.parametrize("plain, message", [
    ({"x": {}}, "machineState key 'x' must be an integer, got 'x'"),
    ({"0": []}, "machineState[0] must be a mapping, got []"),
    ({"0": {"memoryMap": {"memory": {"free": -1}}}},
     "machineState[0].memoryMap[memory].free must be between 0 and 18446744073709551615, got -1"),
    ({"0": {"cells": "0"}}, "machineState[0].cells must be a list of NUMA ids, got '0'"),
    ({"0": {"numberOfAssignments": True}}, "machineState[0].numberOfAssignments must be an integer, got True"),
])
def test_plain_errors(plain, message):
    with pytest.raises(MachineStateError) as err:
        machine_state_from_plain(plain)
    assert str(err.value) == message


def test_entries_errors():
    with pytest.raises(MachineStateError) as err:
        entries_from_plain({"p": {"c": [{"numaAffinity": [0], "type": 5, "size": 1}]}})
    assert str(err.value) == "entries[p][c][0].type must be a resource name string, got 5"


# ---- restore and validateState ------------------------------------------------------------------

SPEC_CONFIG = dict(static_config({0: {"memory": "1Gi"}}), systemReserved={"memory": "924Mi"})


def checkpoint(machine_state=None, entries=None, policy="Static"):
    return {"policy_name": policy, "machine_state": SPEC_PLAIN if machine_state is None else machine_state,
            "entries": SPEC_ENTRIES if entries is None else entries}


def test_restore_spec_state_and_continue():
    mm = new_memory_manager(TWO, SPEC_CONFIG, checkpoint())
    assert mm.state()["entries"] == SPEC_ENTRIES
    p = pod([("c", {"memory": "6Gi"})])
    assert mm.get_topology_hints(p, p.containers[0])["memory"][0].affinity.bits() == (1,)


def test_fresh_and_empty_states_get_default():
    fresh = new_memory_manager(TWO, SPEC_CONFIG)
    empty = new_memory_manager(TWO, SPEC_CONFIG, checkpoint(machine_state={}, entries={}))
    assert fresh.state() == empty.state()
    assert fresh.state()["machine_state"][0]["memoryMap"]["memory"]["allocatable"] == 7 * GI


@pytest.mark.parametrize("change, message", [
    (lambda s, e: s.__setitem__("0", dict(s["0"], numberOfAssignments=2)),
     "[memorymanager] the expected machine state is different from the real one"),
    (lambda s, e: s["0"]["memoryMap"]["memory"].__setitem__("total", 8589934592 + 4096),
     "[memorymanager] the expected machine state is different from the real one"),
    (lambda s, e: e["pod-uid-1"]["c1"][0].__setitem__("numaAffinity", [7]),
     "[memorymanager] (pod: pod-uid-1, container: c1) the memory assignment uses the NUMA that does not exist"),
    (lambda s, e: e["pod-uid-1"]["c1"][0].__setitem__("type", "hugepages-2Mi"),
     "[memorymanager] (pod: pod-uid-1, container: c1) the memory assignment uses memory resource that does not "
     "exist"),
    (lambda s, e: s.clear(),
     "[memorymanager] machine state can not be empty when it has memory assignments"),
])
def test_validate_state_errors(change, message):
    import copy
    state, entries = copy.deepcopy(SPEC_PLAIN), copy.deepcopy(SPEC_ENTRIES)
    change(state, entries)
    with pytest.raises(MemoryStateError) as err:
        new_memory_manager(TWO, SPEC_CONFIG, checkpoint(state, entries))
    assert str(err.value) == message


def test_validate_state_compares_group_sums_not_nodes():
    topo = topology((0, 8 * GI), (1, 8 * GI))
    config = dict(static_config({0: {"memory": "1Gi"}}), systemReserved={"memory": "924Mi"})
    mm = new_memory_manager(topo, config)
    big = pod([("c", {"memory": "9Gi"})], name="big")
    mm.allocate(big, big.containers[0], hint([0, 1], True))
    plain = mm.state()
    moved = machine_state_to_plain(machine_state_from_plain(plain["machine_state"]))
    moved[0]["memoryMap"]["memory"]["free"] += GI
    moved[0]["memoryMap"]["memory"]["reserved"] -= GI
    moved[1]["memoryMap"]["memory"]["free"] -= GI
    moved[1]["memoryMap"]["memory"]["reserved"] += GI
    again = new_memory_manager(topo, config, {"policy_name": "Static", "machine_state": moved,
                                              "entries": plain["entries"]})
    assert again.state()["machine_state"][1]["memoryMap"]["memory"]["reserved"] == 3 * GI
    # reserved memory changed in the config: refused
    changed = dict(static_config({0: {"memory": "2Gi"}}), systemReserved={"memory": "1948Mi"})
    with pytest.raises(MemoryStateError) as err:
        new_memory_manager(topo, changed, {"policy_name": "Static", "machine_state": moved,
                                           "entries": plain["entries"]})
    assert err.value.detail == "NUMA node 0 memory: systemReserved is 1073741824, expected 2147483648"


def test_policy_mismatch_wrapped():
    with pytest.raises(MemoryStateError) as err:
        new_memory_manager(TWO, SPEC_CONFIG, checkpoint(policy="None"), state_file="/var/lib/kubelet/memory_manager_state")
    assert str(err.value) == (
        'could not restore state from checkpoint: [memorymanager] configured policy "Static" differs from state '
        'checkpoint policy "None", please drain this node and delete the memory manager checkpoint file '
        '"/var/lib/kubelet/memory_manager_state" before restarting Kubelet')
    with pytest.raises(MemoryStateError) as err:
        new_memory_manager(TWO, {"rootDir": "/data/kubelet"}, checkpoint())
    assert '"/data/kubelet/memory_manager_state"' in str(err.value)
    none = new_memory_manager(TWO, {}, {"policyName": "None", "machineState": {}})
    assert none.state()["policy_name"] == "None"


def test_validate_state_direct_keeps_stored_values():
    default = default_machine_state(TWO, {0: {"memory": GI}})
    stored = machine_state_from_plain(SPEC_PLAIN)
    result = validate_state(stored, entries_from_plain(SPEC_ENTRIES), default)
    assert machine_state_to_plain(result) == machine_state_to_plain(stored)


# ---- checkpoint files (engine.checkpoint writes what we hold) ---------------------------------

SPEC_FILE = (
    '{"policyName":"Static","machineState":{"0":{"numberOfAssignments":1,"memoryMap":{"memory":{"total":8589934592,'
    '"systemReserved":1073741824,"allocatable":7516192768,"reserved":2147483648,"free":5368709120}},"cells":[0]},'
    '"1":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":8589934592,"systemReserved":0,'
    '"allocatable":8589934592,"reserved":0,"free":8589934592}},"cells":[1]}},"entries":{"pod-uid-1":{"c1":'
    '[{"numaAffinity":[0],"type":"memory","size":2147483648}]}},"checksum":540586451}')
# The spec prints legacy checksum 4098441207 for this content; engine.checkpoint (verified on the
# upstream fixtures) computes 540586451, and the V3 dataChecksum 2465132334 of the spec matches.


def test_state_file_round_trip_byte_identical():
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.checkpoint import dump_memory_manager_state, load_memory_manager_state
    mm = new_memory_manager(TWO, SPEC_CONFIG)
    p = pod([("c1", {"memory": "2Gi"})], uid="pod-uid-1")
    mm.allocate(p, p.containers[0], hint([0], True))
    assert dump_memory_manager_state(mm.checkpoint(), version=1) == SPEC_FILE
    restored = new_memory_manager(TWO, SPEC_CONFIG, load_memory_manager_state(SPEC_FILE))
    assert dump_memory_manager_state(restored.checkpoint(), version=1) == SPEC_FILE
    assert dump_memory_manager_state(restored.checkpoint(), version=3).endswith(',"dataChecksum":2465132334}')
    none = new_memory_manager(TWO, {"memoryManagerPolicy": "None"})
    assert dump_memory_manager_state(none.checkpoint(), version=1) == (
        '{"policyName":"None","machineState":{},"checksum":4236770233}')
