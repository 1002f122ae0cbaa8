# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Legacy checkpoint checksums confirmed with the real go-spew, not with our own renderer.

Each ``checksum`` below was computed by a throw-away Go program (not part of this repository):
Go 1.19 with go-spew 1.1.1 (Debian bookworm ``golang-github-davecgh-go-spew-dev``), the
checkpoint structs declared as upstream (packages named ``state``, ``checksum`` and ``v1``, same
type names, field order and JSON tags), the file decoded with ``encoding/json`` into a checkpoint
whose ``entries``/``machineState`` (and ``podEntries``) maps are pre-initialised as the kubelet
does, ``Checksum`` set to 0, then FNV-1a 32 over ``ConfigState{Indent: " ", SortKeys,
DisableMethods, SpewKeys, DisablePointerAddresses, DisableCapacities}.Fprintf("%#v", &cp)``
(``pkg/util/hash.DeepHashObject``).

The same program reproduces the upstream unit-test fixtures (354655845, 3610638499, 4215593881,
1278640530). For the two example files of the engine specification this project started from it gives 74981384 (CPU V2, the
spec prints 2078951854) and 540586451 (memory V1, the spec prints 4098441207): the spec's two
values are wrong, ours are right.

``roundtrip``: the content is what the kubelet's ``json.Marshal`` writes for the decoded struct,
so ``dump(load(content))`` must give it back byte for byte.
"""

from __future__ import absolute_import, division, print_function

import json

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine import checkpointmanager
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager import checkpoint as cpu_ck
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager import checkpoint as mem_ck

# (label, file, content with the go-spew checksum, checksum, roundtrip)
GO_VERIFIED = [
    ('fixture cpu none 4-6 empty', 'cpu',
     '{"policyName":"none","defaultCPUSet":"4-6","entries":{},"checksum":354655845}',
     354655845, False),
    ('fixture cpu none 1-3 entries', 'cpu',
     '{"policyName":"none","defaultCPUSet":"1-3","entries":{"pod":{"container1":"4-6","con'
     'tainer2":"1-3"}},"checksum":3610638499}',
     3610638499, False),
    ('fixture mem V1', 'memory',
     '{"policyName":"static","machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"me'
     'mory":{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":10'
     '24}},"cells":[]}},"entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory'
     '","size":512}]}},"checksum":4215593881}',
     4215593881, True),
    ('fixture mem V2 podEntries', 'memory',
     '{"policyName":"static","machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"me'
     'mory":{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":10'
     '24}},"cells":[]}},"entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory'
     '","size":512}]}},"checksum":1278640530,"podEntries":{"pod":{"memoryBlocks":[{"numaAf'
     'finity":[0],"type":"memory","size":512}]}}}',
     1278640530, False),
    ('disputed cpu V2 1.7.1', 'cpu',
     '{"policyName":"static","defaultCpuSet":"0-1,4-7","entries":{"pod-uid-1":{"c1":"2-3"}'
     '},"checksum":74981384}',
     74981384, True),
    ('disputed mem V1 1.7.2', 'memory',
     '{"policyName":"Static","machineState":{"0":{"numberOfAssignments":1,"memoryMap":{"me'
     'mory":{"total":8589934592,"systemReserved":1073741824,"allocatable":7516192768,"rese'
     'rved":2147483648,"free":5368709120}},"cells":[0]},"1":{"numberOfAssignments":0,"memo'
     'ryMap":{"memory":{"total":8589934592,"systemReserved":0,"allocatable":8589934592,"re'
     'served":0,"free":8589934592}},"cells":[1]}},"entries":{"pod-uid-1":{"c1":[{"numaAffi'
     'nity":[0],"type":"memory","size":2147483648}]}},"checksum":540586451}',
     540586451, True),
    ('fresh cpu static 0-7', 'cpu',
     '{"policyName":"static","defaultCpuSet":"0-7","checksum":14413152}',
     14413152, True),
    ('fresh mem None', 'memory',
     '{"policyName":"None","machineState":{},"checksum":4236770233}',
     4236770233, True),
    ('upstream cpu fixture spelling defaultCPUSet', 'cpu',
     '{"policyName":"none","defaultCPUSet":"1-3","entries":{"pod":{"container1":"4-6","con'
     'tainer2":"1-3"}},"checksum":3610638499}',
     3610638499, False),
    ('cpu unicode and <>& names', 'cpu',
     '{"policyName":"static","defaultCpuSet":"0,5-7,10-11","entries":{"Z":{"z":"12"},"pod-'
     '\\u003ca\\u0026b\\u003e":{"ctr\\u2028x":"1","Ä":"2-3"},"日本語-pod":{"c":"8-9","c😀":"4"}},"'
     'checksum":2371948735}',
     2371948735, True),
    ('cpu pod with empty container map', 'cpu',
     '{"policyName":"static","defaultCpuSet":"0-3","entries":{"p0":{"c":"4-5"},"p1":{}},"c'
     'hecksum":3597716176}',
     3597716176, True),
    ('cpu odd policy and empty cpuset', 'cpu',
     '{"policyName":"x y","defaultCpuSet":"","entries":{"a":{"b":""}},"checksum":295500602'
     '2}',
     2955006022, True),
    ('cpu entries null', 'cpu',
     '{"policyName":"static","defaultCpuSet":"0-7","entries":null,"checksum":1897607687}',
     1897607687, False),
    ('cpu pod value null', 'cpu',
     '{"policyName":"static","defaultCpuSet":"0-3","entries":{"p":null,"q":{"c":"4"}},"che'
     'cksum":3089188261}',
     3089188261, False),
    ('mem 4 NUMA nodes 0,1,10,11 with hugepages', 'memory',
     '{"policyName":"Static","machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"hu'
     'gepages-1Gi":{"total":4294967296,"systemReserved":0,"allocatable":4294967296,"reserv'
     'ed":0,"free":4294967296},"hugepages-2Mi":{"total":2147483648,"systemReserved":0,"all'
     'ocatable":2147483648,"reserved":0,"free":2147483648},"memory":{"total":68719476736,"'
     'systemReserved":1073741824,"allocatable":67645734912,"reserved":0,"free":67645734912'
     '}},"cells":[0]},"1":{"numberOfAssignments":0,"memoryMap":{"hugepages-1Gi":{"total":4'
     '294967296,"systemReserved":0,"allocatable":4294967296,"reserved":0,"free":4294967296'
     '},"hugepages-2Mi":{"total":2147483648,"systemReserved":0,"allocatable":2147483648,"r'
     'eserved":0,"free":2147483648},"memory":{"total":68719476736,"systemReserved":0,"allo'
     'catable":68719476736,"reserved":0,"free":68719476736}},"cells":[1]},"10":{"numberOfA'
     'ssignments":2,"memoryMap":{"hugepages-1Gi":{"total":4294967296,"systemReserved":0,"a'
     'llocatable":4294967296,"reserved":1073741824,"free":3221225472},"hugepages-2Mi":{"to'
     'tal":2147483648,"systemReserved":0,"allocatable":2147483648,"reserved":0,"free":2147'
     '483648},"memory":{"total":68719476736,"systemReserved":0,"allocatable":68719476736,"'
     'reserved":3221225472,"free":65498251264}},"cells":[10,11]},"11":{"numberOfAssignment'
     's":0,"memoryMap":{"hugepages-1Gi":{"total":4294967296,"systemReserved":0,"allocatabl'
     'e":4294967296,"reserved":0,"free":4294967296},"hugepages-2Mi":{"total":2147483648,"s'
     'ystemReserved":0,"allocatable":2147483648,"reserved":0,"free":2147483648},"memory":{'
     '"total":68719476736,"systemReserved":0,"allocatable":68719476736,"reserved":0,"free"'
     ':68719476736}},"cells":[10,11]}},"entries":{"pod-ü":{"c0":[{"numaAffinity":[10,11],"'
     'type":"memory","size":1073741824}],"c1":[{"numaAffinity":[10],"type":"memory","size"'
     ':2147483648},{"numaAffinity":[10],"type":"hugepages-1Gi","size":1073741824}]}},"chec'
     'ksum":3640958725}',
     3640958725, True),
    ('mem empty block list and empty affinity', 'memory',
     '{"policyName":"Static","machineState":{"2":{"numberOfAssignments":1,"memoryMap":{},"'
     'cells":[]}},"entries":{"p2":{},"p\\u003c\\u0026\\u003e":{"empty":[],"noaff":[{"numaAffi'
     'nity":[],"type":"hugepages-2Mi","size":0}]}},"checksum":3067596712}',
     3067596712, True),
    ('mem extreme integers', 'memory',
     '{"policyName":"Static","machineState":{"-1":{"numberOfAssignments":-7,"memoryMap":{"'
     'memory":{"total":18446744073709551615,"systemReserved":9223372036854775808,"allocata'
     'ble":0,"reserved":1,"free":2}},"cells":[-1,0]},"12":{"numberOfAssignments":922337203'
     '6854775807,"memoryMap":{"hugepages-32Mi":{"total":1,"systemReserved":1,"allocatable"'
     ':1,"reserved":1,"free":1}},"cells":[12]}},"checksum":4006439219}',
     4006439219, True),
    ('mem V2 pod-level blocks', 'memory',
     '{"policyName":"Static","machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"hu'
     'gepages-1Gi":{"total":4294967296,"systemReserved":0,"allocatable":4294967296,"reserv'
     'ed":0,"free":4294967296},"hugepages-2Mi":{"total":2147483648,"systemReserved":0,"all'
     'ocatable":2147483648,"reserved":0,"free":2147483648},"memory":{"total":68719476736,"'
     'systemReserved":1073741824,"allocatable":67645734912,"reserved":0,"free":67645734912'
     '}},"cells":[0]},"1":{"numberOfAssignments":0,"memoryMap":{"hugepages-1Gi":{"total":4'
     '294967296,"systemReserved":0,"allocatable":4294967296,"reserved":0,"free":4294967296'
     '},"hugepages-2Mi":{"total":2147483648,"systemReserved":0,"allocatable":2147483648,"r'
     'eserved":0,"free":2147483648},"memory":{"total":68719476736,"systemReserved":0,"allo'
     'catable":68719476736,"reserved":0,"free":68719476736}},"cells":[1]}},"entries":{"p":'
     '{"c":[{"numaAffinity":[0],"type":"memory","size":1073741824}]}},"podEntries":{"p":{"'
     'memoryBlocks":[{"numaAffinity":[0,1],"type":"memory","size":2147483648}]},"q":{},"日本'
     '":{"memoryBlocks":[{"numaAffinity":[1],"type":"hugepages-2Mi","size":4194304}]}},"ch'
     'ecksum":3130129697}',
     3130129697, True),
    ('mem cells null and numaAffinity absent', 'memory',
     '{"policyName":"Static","machineState":{"0":{"numberOfAssignments":1,"memoryMap":{"me'
     'mory":{"total":8,"systemReserved":0,"allocatable":8,"reserved":4,"free":4}},"cells":'
     'null},"1":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":8,"systemReserved"'
     ':0,"allocatable":8,"reserved":0,"free":8}}}},"entries":{"p":{"c":[{"type":"memory","'
     'size":4}]}},"checksum":2106670994}',
     2106670994, False),
    ('mem entries null', 'memory',
     '{"policyName":"Static","machineState":{"0":{"numberOfAssignments":0,"memoryMap":{},"'
     'cells":[0]}},"entries":null,"checksum":2323634155}',
     2323634155, False),
    ('mem machineState null, container blocks null', 'memory',
     '{"policyName":"None","machineState":null,"entries":{"p":{"c":null}},"checksum":24776'
     '89184}',
     2477689184, False),
    ('mem V2 memoryBlocks null', 'memory',
     '{"policyName":"Static","machineState":{"0":{"numberOfAssignments":0,"memoryMap":{},"'
     'cells":[0]}},"podEntries":{"p":{"memoryBlocks":null},"q":{"memoryBlocks":[{"numaAffi'
     'nity":null,"type":"memory","size":1}]}},"checksum":4124390662}',
     4124390662, False),
]

_IDS = [row[0] for row in GO_VERIFIED]


def _load(kind, content):
    if kind == "cpu":
        return cpu_ck.load_cpu_manager_state(content)
    return mem_ck.load_memory_manager_state(content)


def _dump(kind, cp):
    if kind == "cpu":
        return cpu_ck.dump_cpu_manager_state(cp)
    return mem_ck.dump_memory_manager_state(cp)


@pytest.mark.parametrize("label, kind, content, checksum, roundtrip", GO_VERIFIED, ids=_IDS)
def test_go_spew_checksum_verifies(label, kind, content, checksum, roundtrip):
    assert json.loads(content)["checksum"] == checksum
    cp = _load(kind, content)
    assert cp.checksum_ok is True
    assert cp.legacy_checksum_kind == checkpointmanager.LEGACY_UNVERSIONED


@pytest.mark.parametrize("label, kind, content, checksum, roundtrip", GO_VERIFIED, ids=_IDS)
def test_go_spew_checksum_is_exact(label, kind, content, checksum, roundtrip):
    wrong = content.replace('"checksum":%d' % checksum, '"checksum":%d' % ((checksum + 1) & 0xFFFFFFFF))
    assert wrong != content
    with pytest.raises(checkpointmanager.CheckpointError, match="checkpoint is corrupted"):
        _load(kind, wrong)


@pytest.mark.parametrize("label, kind, content, checksum, roundtrip",
                         [row for row in GO_VERIFIED if row[4]], ids=[row[0] for row in GO_VERIFIED if row[4]])
def test_go_spew_checksum_roundtrip(label, kind, content, checksum, roundtrip):
    assert _dump(kind, _load(kind, content)) == content


def test_spec_examples_disputed_values():
    """The engine specification this project started from prints 2078951854 and 4098441207; go-spew disagrees."""
    by_label = dict((row[0], row) for row in GO_VERIFIED)
    assert by_label["disputed cpu V2 1.7.1"][3] == 74981384
    assert by_label["disputed mem V1 1.7.2"][3] == 540586451
    for label in ("disputed cpu V2 1.7.1", "disputed mem V1 1.7.2"):
        kind, content, checksum = by_label[label][1:4]
        spec = 2078951854 if kind == "cpu" else 4098441207
        with pytest.raises(checkpointmanager.CheckpointError, match="checkpoint is corrupted"):
            _load(kind, content.replace('"checksum":%d' % checksum, '"checksum":%d' % spec))


# Legacy checksums computed by go-spew 1.1.1 for files with a null pointer as a map's last value:
# go-spew then drops the next field's type prefix, and the kubelet hashes that text. Such files
# pass the checksum and are refused right after, with the structural error, as the kubelet does.
@pytest.mark.parametrize("content, go_checksum, error", [
    ('{"policyName":"None","machineState":{"0":null},"checksum":%d}', 768281552,
     "machineState entry of NUMA node 0 is null"),
    ('{"policyName":"None","machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":null},'
     '"cells":null}},"checksum":%d}', 4186483679, 'memoryMap entry "memory" is null'),
])
def test_go_spew_nil_last_map_value(content, go_checksum, error):
    with pytest.raises(checkpointmanager.CheckpointError) as err:
        mem_ck.load_memory_manager_state(content % go_checksum)
    assert error in str(err.value) and "corrupted" not in str(err.value)
    with pytest.raises(checkpointmanager.CheckpointError, match="checkpoint is corrupted"):
        mem_ck.load_memory_manager_state(content % (go_checksum + 1))
