# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""State files on disk: what discovery says about their content, and the atomic writer."""

from __future__ import absolute_import, division, print_function

import os
import stat

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine import checkpointmanager
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager import checkpoint as cpu_ck
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.kubelet_paths import verify_state

CPU_V2 = '{"policyName":"static","defaultCpuSet":"0-7","checksum":14413152}'
CPU_V4 = ('{"policyName":"static","defaultCpuSet":"0-1,4-7","entries":{"pod-uid-1":{"c1":"2-3"}},"checksum":0,'
          '"data":"{\\"policyName\\":\\"static\\",\\"defaultCpuSet\\":\\"0-1,4-7\\",\\"entries\\":{\\"pod-uid-1\\":'
          '{\\"c1\\":\\"2-3\\"}}}","dataChecksum":1750030131}')
MEM_V3_NONE = ('{"policyName":"None","machineState":{},"checksum":4236770233,"data":'
               '"{\\"policyName\\":\\"None\\",\\"machineState\\":{}}","dataChecksum":3093843326}')
MEM_V2 = ('{"policyName":"static","machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":'
          '{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}},'
          '"entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},'
          '"podEntries":{"pod":{"memoryBlocks":[{"numaAffinity":[0],"type":"memory","size":512}]}},'
          '"checksum":1278640530}')


@pytest.mark.parametrize("name, text, version, checksum_ok, error", [
    ("cpu_manager_state", CPU_V2, "v2", True, None),
    ("cpu_manager_state", CPU_V4, "v4", True, None),
    ("cpu_manager_state", CPU_V2.replace("14413152", "0"), "v2", None,
     "not verified: the file has checksum 0 (no checksum), which the kubelet accepts"),
    ("cpu_manager_state", CPU_V2.replace("14413152", "1"), None, False, "checkpoint is corrupted"),
    ("cpu_manager_state", CPU_V4.replace("1750030131", "1"), None, False,
     "could not load v4 checkpoint, no falling back to previous versions: checkpoint is corrupted"),
    ("cpu_manager_state", "", None, False, "unexpected end of JSON input"),
    ("memory_manager_state", MEM_V3_NONE, "v3", True, None),
    ("memory_manager_state", MEM_V2, "v2", True, None),
    ("memory_manager_state", MEM_V2.replace("1278640530", "7"), None, False, "checkpoint is corrupted"),
    # the data checksum does not depend on the struct: a memory V3 file "is" a CPU V4 file with
    # unknown fields (the kubelet would say the same), so the file name matters
    ("cpu_manager_state", MEM_V3_NONE, "v4", True, None),
    ("cpu_manager_state", MEM_V2, None, False,
     "json: cannot unmarshal array into Go struct field CPUManagerCheckpoint.entries of type string"),
    ("cpu_manager_state", MEM_V2.replace(
        '"entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},', ""),
     None, False, "checkpoint is corrupted"),
    # invalid UTF-8 is replaced as Go does, so the checksum no longer verifies
    ("cpu_manager_state", '{"policyName":"st\udcffatic","defaultCpuSet":"0-7","checksum":1}', None, False,
     "checkpoint is corrupted"),
])
def test_verify_state_file_content(name, text, version, checksum_ok, error):
    """What discovery reports for a state file (``_host/kubelet_paths.verify_state``, the one summary)."""
    verdict = verify_state(name, text.encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
    assert (verdict["version"], verdict["checksum_ok"], verdict["checksum_error"]) == (version, checksum_ok, error)
    assert verdict["valid"] is (version is not None)


def test_invalid_utf8_is_replaced_like_go(tmp_path):
    cp = cpu_ck.CPUManagerCheckpoint(policy_name="st\ufffd\ufffdatic", default_cpu_set="0", version=2)
    text = cpu_ck.dump_cpu_manager_state(cp)
    raw = text.encode("utf-8").replace("\ufffd\ufffd".encode("utf-8"), b"\xe2\x82")
    assert b"\xe2\x82a" in raw
    back = cpu_ck.load_cpu_manager_state(raw)
    assert back.policy_name == "st\ufffd\ufffdatic" and back.checksum_ok is True


def test_write_state_file_new_and_existing(tmp_path):
    path = str(tmp_path / "cpu_manager_state")
    checkpointmanager.write_state_file(path, CPU_V2)
    assert open(path).read() == CPU_V2
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    os.chmod(path, 0o600)
    checkpointmanager.write_state_file(path, CPU_V4)
    assert open(path).read() == CPU_V4
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(os.listdir(str(tmp_path))) == ["cpu_manager_state"]
    checkpointmanager.write_state_file(path, CPU_V2, mode=0o640)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_write_state_file_failure_keeps_old_file(tmp_path, monkeypatch):
    path = str(tmp_path / "memory_manager_state")
    checkpointmanager.write_state_file(path, MEM_V2)

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        checkpointmanager.write_state_file(path, MEM_V3_NONE)
    assert open(path).read() == MEM_V2
    assert sorted(os.listdir(str(tmp_path))) == ["memory_manager_state"]
