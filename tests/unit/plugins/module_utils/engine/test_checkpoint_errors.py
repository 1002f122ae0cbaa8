# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every way a checkpoint file or a checkpoint object can be refused, with the exact message."""

from __future__ import absolute_import, division, print_function

import json

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine import checkpointmanager
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager import checkpoint as cpu_ck
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager import checkpoint as mem_ck

MEM_LEGACY = (
    '{"policyName":"static","machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":'
    '{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}},'
    '"entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},')
MEM_DATA = json.dumps(
    '{"policyName":"static","machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":'
    '{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}},'
    '"entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}}}')

SYNTAX = [
    ("", "unexpected end of JSON input"),
    ("{", "unexpected end of JSON input"),
    ('{"policyName":"sta', "unexpected end of JSON input"),
    ('{"a":[1,2', "unexpected end of JSON input"),
    ('{"a":1,}', "invalid character '}' looking for beginning of object key string"),
    ('{"a" 1}', "invalid character '1' after object key"),
    ('{"a":1 "b":2}', "invalid character '\"' after object key:value pair"),
    ('{"a":[1 2]}', "invalid character '2' after array element"),
    ("{} x", "invalid character 'x' after top-level value"),
    ("x", "invalid character 'x' looking for beginning of value"),
    ('{"a":NaN}', "invalid character 'N' looking for beginning of value"),
    ('{"a":-Infinity}', "invalid character 'I' in numeric literal"),
    ('{"a":"\n"}', "invalid character '\\n' in string literal"),
    ('{"a":"\x01"}', "invalid character '\\x01' in string literal"),
    ('{"a":"\\x"}', "invalid character 'x' in string escape code"),
    ('{"a":"\\u12G4"}', "invalid character 'G' in \\u hexadecimal character escape"),
    ('{"a":01}', "invalid character '1' after object key:value pair"),
    ('{"a":1.}', "invalid character '}' after decimal point in numeric literal"),
    ('{"a":1e}', "invalid character '}' in exponent of numeric literal"),
    ('{"a":-}', "invalid character '}' in numeric literal"),
    ('{"a":tru}', "invalid character '}' in literal true (expecting 'e')"),
    ('{"a":nul}', "invalid character '}' in literal null (expecting 'l')"),
    ("{'a':1}", "invalid character '\\'' looking for beginning of object key string"),
    ("\ufeff{}", "invalid character '\u00ef' looking for beginning of value"),
]


@pytest.mark.parametrize("text, message", SYNTAX)
def test_syntax_errors_cpu(text, message):
    with pytest.raises(checkpointmanager.CheckpointError) as info:
        cpu_ck.load_cpu_manager_state(text)
    assert str(info.value) == message


@pytest.mark.parametrize("text, message", SYNTAX)
def test_syntax_errors_memory(text, message):
    with pytest.raises(checkpointmanager.CheckpointError) as info:
        mem_ck.load_memory_manager_state(text)
    assert str(info.value) == message


def test_checkpoint_error_is_a_state_error():
    assert issubclass(checkpointmanager.CheckpointError, StateError)
    assert issubclass(checkpointmanager.CheckpointError, ValueError)


CPU_ERRORS = [
    ('{"policyName":"none","defaultCpuSet":"4-6","entries":{},"checksum":1337}', "checkpoint is corrupted"),
    ('{"policyName":"none","defaultCpuSet":"1-3","checksum":4294967296}', "checkpoint is corrupted"),
    ('{"policyName":5}',
     "json: cannot unmarshal number into Go struct field CPUManagerCheckpoint.policyName of type string"),
    ('{"policyName":"none","checksum":-1}',
     "json: cannot unmarshal number -1 into Go struct field CPUManagerCheckpoint.checksum of type checksum.Checksum"),
    ('{"policyName":"none","checksum":1.5}',
     "json: cannot unmarshal number 1.5 into Go struct field CPUManagerCheckpoint.checksum of type checksum.Checksum"),
    ('{"policyName":"none","checksum":18446744073709551616}',
     "json: cannot unmarshal number 18446744073709551616 into Go struct field CPUManagerCheckpoint.checksum "
     "of type checksum.Checksum"),
    ('{"checksum":"1"}',
     "json: cannot unmarshal string into Go struct field CPUManagerCheckpoint.checksum of type checksum.Checksum"),
    ('{"entries":[]}',
     "json: cannot unmarshal array into Go struct field CPUManagerCheckpoint.entries of type "
     "map[string]map[string]string"),
    ('{"entries":{"p":{"c":true}}}',
     "json: cannot unmarshal bool into Go struct field CPUManagerCheckpoint.entries of type string"),
    # a V1 file (flat entries) with a bad checksum: the V2 retry's error is what the kubelet reports
    ('{"policyName":"none","defaultCpuSet":"1-3","entries":{"id1":"4-6"},"checksum":1}',
     "json: cannot unmarshal string into Go struct field CPUManagerCheckpoint.entries of type "
     "map[string]string"),
    ("[]", "json: cannot unmarshal array into Go value of type state.CPUManagerCheckpoint"),
    ('"x"', "json: cannot unmarshal string into Go value of type state.CPUManagerCheckpoint"),
]


@pytest.mark.parametrize("text, message", CPU_ERRORS)
def test_cpu_load_errors(text, message):
    with pytest.raises(checkpointmanager.CheckpointError) as info:
        cpu_ck.load_cpu_manager_state(text)
    assert str(info.value) == message


V4_PREFIX = "could not load v4 checkpoint, no falling back to previous versions: "
V4_DATA = json.dumps('{"policyName":"static","defaultCpuSet":"0-1,4-7","entries":{"pod-uid-1":{"c1":"2-3"}}}')


@pytest.mark.parametrize("text, message", [
    ('{"policyName":"static","defaultCpuSet":"0-7","checksum":0,"data":' + V4_DATA + ',"dataChecksum":1}',
     V4_PREFIX + "checkpoint is corrupted"),
    ('{"policyName":"static","defaultCpuSet":"0-7","checksum":0,"data":' + V4_DATA + '}',
     V4_PREFIX + "checkpoint is corrupted"),
    ('{"policyName":"static","defaultCpuSet":"0-7","checksum":14413152,"dataChecksum":1234}',
     V4_PREFIX + "failed to deserialize cpu manager checkpoint data: unexpected end of JSON input"),
    ('{"policyName":"static","data":"{","dataChecksum":1234}',
     V4_PREFIX + "failed to deserialize cpu manager checkpoint data: unexpected end of JSON input"),
    ('{"policyName":"static","data":"{\\"policyName\\":1}","dataChecksum":1234}',
     V4_PREFIX + "failed to deserialize cpu manager checkpoint data: json: cannot unmarshal number into Go "
     "struct field CPUManagerCheckpointData.policyName of type string"),
    ('{"policyName":"static","entries":{"p":1},"data":' + V4_DATA + ',"dataChecksum":1750030131}',
     V4_PREFIX + "failed to deserialize cpu manager checkpoint: json: cannot unmarshal number into Go struct "
     "field CPUManagerCheckpoint.entries of type map[string]string"),
])
def test_cpu_v4_errors_never_fall_back(text, message):
    with pytest.raises(checkpointmanager.CheckpointError) as info:
        cpu_ck.load_cpu_manager_state(text)
    assert str(info.value) == message


V3_PREFIX = "could not load v3 checkpoint: "


@pytest.mark.parametrize("text, message", [
    # upstream: "Fail to restore checkpoint without data section"
    (MEM_LEGACY + '"checksum":4215593881,"dataChecksum":1234}',
     V3_PREFIX + "failed to deserialize memory manager checkpoint data: unexpected end of JSON input"),
    # upstream: "Fail to restore checkpoint without dataChecksum section"
    (MEM_LEGACY + '"checksum":4215593881,"data":' + MEM_DATA + '}', V3_PREFIX + "checkpoint is corrupted"),
    # upstream: "Fail to restore checkpoint with invalid dataChecksum"
    (MEM_LEGACY + '"checksum":4215593881,"data":' + MEM_DATA + ',"dataChecksum":1234}',
     V3_PREFIX + "checkpoint is corrupted"),
    # upstream: "Fail to restore checkpoint with invalid data JSON"
    (MEM_LEGACY + '"checksum":4215593881,"data":"{","dataChecksum":1234}',
     V3_PREFIX + "failed to deserialize memory manager checkpoint data: unexpected end of JSON input"),
    (MEM_LEGACY + '"checksum":4215593881,"data":"{\\"machineState\\":{\\"a\\":{}}}","dataChecksum":1}',
     V3_PREFIX + "failed to deserialize memory manager checkpoint data: json: cannot unmarshal number a into "
     "Go struct field MemoryManagerCheckpointData.machineState of type int"),
    ('{"checksum":"x","data":' + MEM_DATA + ',"dataChecksum":1849615440}',
     V3_PREFIX + "failed to deserialize memory manager checkpoint: json: cannot unmarshal string into Go struct "
     "field MemoryManagerCheckpoint.checksum of type checksum.Checksum"),
    # upstream: "Fail to restore checkpoint from v1 with invalid checksum"
    (MEM_LEGACY.replace('"numaAffinity"', '"affinity"') + '"checksum":101010}', "checkpoint is corrupted"),
    # upstream: "Fail to restore checkpoint from v2 with invalid checksum"
    (MEM_LEGACY + '"podEntries":{"pod":{"memoryBlocks":[{"numaAffinity":[0],"type":"memory","size":512}]}},'
     '"checksum":101010}', "checkpoint is corrupted"),
    ('{"machineState":{"0":{"memoryMap":{"memory":{"total":1.5}}}}}',
     "json: cannot unmarshal number 1.5 into Go struct field MemoryTable.machineState.memoryMap.total of type uint64"),
    ('{"machineState":{"0":{"numberOfAssignments":9223372036854775808}}}',
     "json: cannot unmarshal number 9223372036854775808 into Go struct field "
     "NUMANodeState.machineState.numberOfAssignments of type int"),
    ('{"machineState":{"0":{"cells":{}}}}',
     "json: cannot unmarshal object into Go struct field NUMANodeState.machineState.cells of type []int"),
    ('{"entries":{"p":{"c":[{"size":-5}]}}}',
     "json: cannot unmarshal number -5 into Go struct field Block.entries.size of type uint64"),
    ('{"machineState":{"0":null},"checksum":0}', "machineState entry of NUMA node 0 is null"),
    ('{"machineState":{"0":{"memoryMap":{"memory":null}}},"checksum":0}',
     'machineState NUMA node 0 memoryMap entry "memory" is null'),
])
def test_memory_load_errors(text, message):
    with pytest.raises(checkpointmanager.CheckpointError) as info:
        mem_ck.load_memory_manager_state(text)
    assert str(info.value) == message


# ---- restoreState wrappers (the kubelet's start-up message) ---------------------------------

CPU_PATH = "/var/lib/kubelet/cpu_manager_state"
CPU_WRAP = ("could not restore state from checkpoint: %s, please drain this node and delete the CPU manager "
            'checkpoint file "/var/lib/kubelet/cpu_manager_state" before restarting Kubelet')


@pytest.mark.parametrize("text, policy, inner", [
    ('{"policyName":"none","defaultCPUSet":"4-6","entries":{},"checksum":1337}', "none", "checkpoint is corrupted"),
    ("{", "none", "unexpected end of JSON input"),
    ('{"policyName":"other","defaultCPUSet":"1-3","entries":{},"checksum":1394507217}', "none",
     'configured policy "none" differs from state checkpoint policy "other"'),
    ('{"policyName":"none","defaultCPUSet":"1.3","entries":{},"checksum":3021697696}', "none",
     'could not parse default cpu set "1.3": strconv.Atoi: parsing "1.3": invalid syntax'),
    ('{"policyName":"none","defaultCPUSet":"1-3","entries":{"pod":{"container1":"4-6","container2":"asd"}},'
     '"checksum":962272150}', "none",
     'could not parse cpuset "asd" for container "container2" in pod "pod": strconv.Atoi: parsing "asd": '
     "invalid syntax"),
    ('{"policyName":"none","defaultCpuSet":"1-3","entries":{"containerID1":"4-6","containerID2":"1-3"},'
     '"checksum":3680390589}', "none",
     "error migrating v1 checkpoint state to v2 checkpoint state: containerID 'containerID1' not found in "
     "initial containers list"),
    ('{"policyName":"static","defaultCpuSet":"3-1","checksum":0}', "static",
     'could not parse default cpu set "3-1": invalid range "3-1" (3 > 1)'),
    ('{"policyName":"static","defaultCpuSet":"0, 1","checksum":0}', "static",
     'could not parse default cpu set "0, 1": strconv.Atoi: parsing " 1": invalid syntax'),
    ('{"policyName":"static","defaultCpuSet":"99999999999999999999","checksum":0}', "static",
     'could not parse default cpu set "99999999999999999999": strconv.Atoi: parsing "99999999999999999999": '
     "value out of range"),
    ('{"policyName":"static","defaultCpuSet":"-1","checksum":0}', "static",
     'could not parse default cpu set "-1": strconv.Atoi: parsing "": invalid syntax'),
])
def test_restore_cpu_errors(text, policy, inner):
    with pytest.raises(checkpointmanager.CheckpointError) as info:
        cpu_ck.restore_cpu_manager_state(text, policy, CPU_PATH)
    assert str(info.value) == CPU_WRAP % inner


def test_restore_cpu_ok_and_absent():
    assert cpu_ck.restore_cpu_manager_state(None, "static", CPU_PATH) is None
    cp = cpu_ck.restore_cpu_manager_state('{"policyName":"static","defaultCpuSet":"0-7","checksum":14413152}',
                                          "static", CPU_PATH)
    assert cp.default_cpu_set == "0-7"
    migrated = cpu_ck.restore_cpu_manager_state(
        '{"policyName":"none","defaultCpuSet":"1-3","entries":{"containerID1":"4-6"},"checksum":0}', "none",
        CPU_PATH, initial_containers={"containerID1": ("pod", "c1")})
    assert migrated.entries == {"pod": {"c1": "4-6"}}


MEM_PATH = "/var/lib/kubelet/memory_manager_state"
MEM_WRAP = ("could not restore state from checkpoint: %s, please drain this node and delete the memory manager "
            'checkpoint file "/var/lib/kubelet/memory_manager_state" before restarting Kubelet')


@pytest.mark.parametrize("text, policy, inner", [
    ("{", "None", "unexpected end of JSON input"),
    # upstream: "Fail to restore checkpoint with invalid policy name"
    ('{"policyName":"other","checksum":1234,"data":' + MEM_DATA + ',"dataChecksum":1849615440}', "none",
     '[memorymanager] configured policy "none" differs from state checkpoint policy "static"'),
    (MEM_LEGACY + '"checksum":4215593881,"dataChecksum":1234}', "Static",
     "could not load v3 checkpoint: failed to deserialize memory manager checkpoint data: unexpected end of "
     "JSON input"),
])
def test_restore_memory_errors(text, policy, inner):
    with pytest.raises(checkpointmanager.CheckpointError) as info:
        mem_ck.restore_memory_manager_state(text, policy, MEM_PATH)
    assert str(info.value) == MEM_WRAP % inner


def test_restore_memory_ok_and_absent():
    assert mem_ck.restore_memory_manager_state(None, "Static", MEM_PATH) is None
    cp = mem_ck.restore_memory_manager_state(MEM_LEGACY + '"checksum":4215593881}', "static", MEM_PATH)
    assert cp.version == 1


def test_go_parse_cpuset():
    assert cpu_ck.go_parse_cpuset("") == frozenset()
    assert cpu_ck.go_parse_cpuset("0-2,5,7-7") == frozenset([0, 1, 2, 5, 7])
    assert cpu_ck.go_parse_cpuset("+1") == frozenset([1])
    with pytest.raises(ValueError, match='^strconv.Atoi: parsing "": invalid syntax$'):
        cpu_ck.go_parse_cpuset("1,")


# ---- writing: bad objects are refused, naming the field --------------------------------------

def _cpu(**kwargs):
    base = dict(policy_name="static", default_cpu_set="0-7")
    base.update(kwargs)
    return cpu_ck.CPUManagerCheckpoint(**base)


@pytest.mark.parametrize("cp, version, message", [
    (_cpu(), 5, "unsupported cpu_manager_state version 5 (supported: 1, 2, 3, 4)"),
    (_cpu(pod_entries={"p": "1"}), 2,
     "cpu_manager_state version 2 cannot hold podEntries (1 pods); write version 3 or 4"),
    (_cpu(pod_entries={"p": "1.5"}), 3,
     'could not parse cpuset "1.5" of pod "p" in podEntries: strconv.Atoi: parsing "1.5": invalid syntax'),
    (_cpu(entries={"p": {"c": "1"}}), 1,
     "cpu_manager_state version 1 keys entries by container id: put them in v1_entries, not entries"),
    (_cpu(v1_entries={"id": "1"}), 4,
     "v1_entries (container id keyed) can only be written as version 1; migrate them to entries first"),
    (_cpu(policy_name=None), 4, "policy_name must be a string, got None"),
    (_cpu(default_cpu_set=[1]), 4, "default_cpu_set must be a string, got [1]"),
    (_cpu(entries={"p": ["c"]}), 4, "entries['p'] must be a mapping of container name to cpuset, got ['c']"),
    (_cpu(entries={"p": {"c": 1}}), 4, "entries['p']['c'] must be a string, got 1"),
    (_cpu(entries=[]), 4, "entries must be a mapping of pod UID to containers, got []"),
    (_cpu(pod_entries={"p": {"x": 1}}), 4, "pod_entries['p'] has no cpuSet: {'x': 1}"),
])
def test_dump_cpu_refuses(cp, version, message):
    with pytest.raises(checkpointmanager.CheckpointError) as info:
        cpu_ck.dump_cpu_manager_state(cp, version)
    assert str(info.value) == message


def test_dump_cpu_bad_legacy_mode():
    with pytest.raises(checkpointmanager.CheckpointError, match="^v4_legacy_checksum must be 'zero' or 'v2', got 'x'$"):
        cpu_ck.dump_cpu_manager_state(_cpu(), 4, v4_legacy_checksum="x")


def test_dump_cpu_accepts_manager_pod_entry_shape():
    text = cpu_ck.dump_cpu_manager_state(_cpu(pod_entries={"p": {"cpu_set": "2-3"}}))
    assert cpu_ck.load_cpu_manager_state(text).pod_entries == {"p": "2-3"}


def _node(**kwargs):
    node = {"numberOfAssignments": 0, "cells": [0],
            "memoryMap": {"memory": {"total": 4, "systemReserved": 0, "allocatable": 4, "reserved": 0, "free": 4}}}
    node.update(kwargs)
    return node


def _table(**kwargs):
    table = {"total": 0, "systemReserved": 0, "allocatable": 0, "reserved": 0, "free": 0}
    table.update(kwargs)
    return table


def _mem(**kwargs):
    base = dict(policy_name="Static", machine_state={0: _node()})
    base.update(kwargs)
    return mem_ck.MemoryManagerCheckpoint(**base)


@pytest.mark.parametrize("cp, version, message", [
    (_mem(), 0, "unsupported memory_manager_state version 0 (supported: 1, 2, 3)"),
    (_mem(pod_entries={"p": []}), 1, "memory_manager_state version 1 cannot hold podEntries (1 pods); "
                                     "write version 2 or 3"),
    (_mem(machine_state=[]), 3, "machine_state must be a mapping of NUMA id to node state, got []"),
    (_mem(machine_state={"x": _node()}), 3,
     "machine_state NUMA id must be an integer between -9223372036854775808 and 9223372036854775807, got 'x'"),
    (_mem(machine_state={0: 5}), 3, "machine_state[0] must be a mapping, got 5"),
    (_mem(machine_state={0: {"cells": []}}), 3, "machine_state[0] has no memory_map"),
    (_mem(machine_state={0: _node(memoryMap={"memory": {"total": 1}})}), 3,
     "machine_state[0] memory_map['memory'] has no systemReserved, allocatable, reserved, free"),
    (_mem(machine_state={0: _node(memoryMap={"memory": _table(total=-1)})}), 3,
     "machine_state[0] memory_map['memory'] total must be an integer between 0 and 18446744073709551615, got -1"),
    (_mem(machine_state={0: _node(memoryMap={"memory": _table(total=2 ** 64)})}), 3,
     "machine_state[0] memory_map['memory'] total must be an integer between 0 and 18446744073709551615, "
     "got 18446744073709551616"),
    (_mem(machine_state={0: _node(memoryMap={"memory": _table(total=True)})}), 3,
     "machine_state[0] memory_map['memory'] total must be an integer between 0 and 18446744073709551615, got True"),
    (_mem(machine_state={0: _node(cells="0")}), 3, "machine_state[0] cells must be a list of NUMA ids, got '0'"),
    (_mem(machine_state={0: _node(numberOfAssignments=1.0)}), 3,
     "machine_state[0] number_of_assignments must be an integer between -9223372036854775808 and "
     "9223372036854775807, got 1.0"),
    (_mem(entries={"p": {"c": [5]}}), 3, "entries['p']['c'][0] must be a Block or a mapping, got 5"),
    (_mem(entries={"p": {"c": None}}), 3, "entries['p']['c'] must be a list of blocks, got None"),
    (_mem(entries={"p": {"c": [{"numaAffinity": None, "type": "memory", "size": 1}]}}), 3,
     "entries['p']['c'][0] numa_affinity must be a list of NUMA ids, got None"),
    (_mem(entries={"p": {"c": [{"numaAffinity": [0], "type": 7, "size": 1}]}}), 3,
     "entries['p']['c'][0] type must be a string, got 7"),
    (_mem(entries={"p": {"c": [{"numaAffinity": [0], "type": "memory", "size": "1Gi"}]}}), 3,
     "entries['p']['c'][0] size must be an integer between 0 and 18446744073709551615, got '1Gi'"),
    (_mem(pod_entries={"p": {"memoryBlocks": []}}), 3,
     "pod_entries['p'] must be a list of blocks, got {'memoryBlocks': []}"),
])
def test_dump_memory_refuses(cp, version, message):
    with pytest.raises(checkpointmanager.CheckpointError) as info:
        mem_ck.dump_memory_manager_state(cp, version)
    assert str(info.value) == message


def test_dump_memory_accepts_snake_case_and_string_numa_ids():
    snake = {"number_of_assignments": 1, "cells": ["0"],
             "memory_map": {"memory": {"total": 4, "system_reserved": 0, "allocatable": 4, "reserved": 1,
                                       "free": 3}}}
    camel = _node(numberOfAssignments=1, memoryMap={"memory": {"total": 4, "systemReserved": 0, "allocatable": 4,
                                                               "reserved": 1, "free": 3}})
    assert (mem_ck.dump_memory_manager_state(_mem(machine_state={"0": snake}))
            == mem_ck.dump_memory_manager_state(_mem(machine_state={0: camel})))
