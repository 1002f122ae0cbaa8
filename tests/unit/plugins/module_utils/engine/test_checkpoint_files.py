# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""State files on disk: the discovery summary (never raises) and the atomic writer."""

from __future__ import absolute_import, division, print_function

import os
import stat

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine import checkpoint as ck

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


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return str(path)


def _summary(**kwargs):
    base = {"present": True, "policy_name": None, "version": None, "checksum_ok": None,
            "legacy_checksum_ok": None, "error": None, "entries": 0, "pod_entries": 0}
    base.update(kwargs)
    return base


@pytest.mark.parametrize("name, text, expected", [
    ("cpu_manager_state", CPU_V2, _summary(kind="cpu", policy_name="static", version=2, checksum_ok=True)),
    ("cpu_manager_state", CPU_V4, _summary(kind="cpu", policy_name="static", version=4, checksum_ok=True,
                                           legacy_checksum_ok=True, entries=1)),
    ("cpu_manager_state", CPU_V2.replace("14413152", "0"),
     _summary(kind="cpu", policy_name="static", version=2)),
    ("cpu_manager_state", CPU_V2.replace("14413152", "1"),
     _summary(kind="cpu", checksum_ok=False, error="checkpoint is corrupted")),
    ("cpu_manager_state", CPU_V4.replace("1750030131", "1"),
     _summary(kind="cpu", checksum_ok=False,
              error="could not load v4 checkpoint, no falling back to previous versions: checkpoint is corrupted")),
    ("cpu_manager_state", "", _summary(kind="cpu", error="unexpected end of JSON input")),
    ("memory_manager_state", MEM_V3_NONE, _summary(kind="memory", policy_name="None", version=3,
                                                   checksum_ok=True, legacy_checksum_ok=True)),
    ("memory_manager_state", MEM_V2, _summary(kind="memory", policy_name="static", version=2, checksum_ok=True,
                                              entries=1, pod_entries=1)),
    ("memory_manager_state", MEM_V2.replace("1278640530", "7"),
     _summary(kind="memory", checksum_ok=False, error="checkpoint is corrupted")),
    # kind from the content when the file has another name (e.g. a copy in a backup dir)
    ("memory_manager_state.bak", MEM_V3_NONE, _summary(kind="memory", policy_name="None", version=3,
                                                       checksum_ok=True, legacy_checksum_ok=True)),
    ("cpu_manager_state.bak", CPU_V2, _summary(kind="cpu", policy_name="static", version=2, checksum_ok=True)),
])
def test_summarize_state_file(tmp_path, name, text, expected):
    path = _write(tmp_path, name, text)
    expected = dict(expected, path=path)
    assert ck.summarize_state_file(path) == expected


def test_summarize_missing_file(tmp_path):
    path = str(tmp_path / "memory_manager_state")
    assert ck.summarize_state_file(path) == _summary(path=path, present=False, kind="memory")


def test_summarize_directory_and_dangling_link(tmp_path):
    directory = tmp_path / "cpu_manager_state"
    directory.mkdir()
    result = ck.summarize_state_file(str(directory))
    assert result["present"] is True and result["kind"] == "cpu"
    assert result["error"] == "cannot read %s: Is a directory" % directory
    link = tmp_path / "memory_manager_state"
    os.symlink(str(tmp_path / "nowhere"), str(link))
    result = ck.summarize_state_file(str(link))
    assert result["present"] is True
    assert result["error"] == "cannot read %s: No such file or directory" % link


def test_summarize_explicit_kind(tmp_path):
    path = _write(tmp_path, "state", MEM_V3_NONE)
    assert ck.summarize_state_file(path, kind="memory")["version"] == 3
    # the data checksum does not depend on the struct: a memory V3 file "is" a CPU V4 file
    # with unknown fields (the kubelet would say the same), so the kind matters
    assert ck.summarize_state_file(path, kind="cpu")["policy_name"] == "None"
    legacy = _write(tmp_path, "state2", MEM_V2)
    assert ck.summarize_state_file(legacy, kind="cpu")["error"] == (
        "json: cannot unmarshal array into Go struct field CPUManagerCheckpoint.entries of type string")
    no_entries = _write(tmp_path, "state3", MEM_V2.replace(
        '"entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},', ""))
    assert ck.summarize_state_file(no_entries, kind="cpu")["error"] == "checkpoint is corrupted"
    assert ck.summarize_state_file(path, kind="gpu")["error"] == "kind must be 'cpu' or 'memory', got 'gpu'"


def test_summarize_invalid_utf8_is_reported_not_raised(tmp_path):
    path = tmp_path / "cpu_manager_state"
    path.write_bytes(b'{"policyName":"st\xffatic","defaultCpuSet":"0-7","checksum":1}')
    result = ck.summarize_state_file(str(path))
    assert result["error"] == "checkpoint is corrupted" and result["checksum_ok"] is False


def test_invalid_utf8_is_replaced_like_go(tmp_path):
    cp = ck.CPUManagerCheckpoint(policy_name="st\ufffd\ufffdatic", default_cpu_set="0", version=2)
    text = ck.dump_cpu_manager_state(cp)
    raw = text.encode("utf-8").replace("\ufffd\ufffd".encode("utf-8"), b"\xe2\x82")
    assert b"\xe2\x82a" in raw
    back = ck.load_cpu_manager_state(raw)
    assert back.policy_name == "st\ufffd\ufffdatic" and back.checksum_ok is True


def test_write_state_file_new_and_existing(tmp_path):
    path = str(tmp_path / "cpu_manager_state")
    ck.write_state_file(path, CPU_V2)
    assert open(path).read() == CPU_V2
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    os.chmod(path, 0o600)
    ck.write_state_file(path, CPU_V4)
    assert open(path).read() == CPU_V4
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(os.listdir(str(tmp_path))) == ["cpu_manager_state"]
    ck.write_state_file(path, CPU_V2, mode=0o640)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_write_state_file_failure_keeps_old_file(tmp_path, monkeypatch):
    path = str(tmp_path / "memory_manager_state")
    ck.write_state_file(path, MEM_V2)

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ck.os, "replace", broken_replace)
    with pytest.raises(OSError):
        ck.write_state_file(path, MEM_V3_NONE)
    assert open(path).read() == MEM_V2
    assert sorted(os.listdir(str(tmp_path))) == ["memory_manager_state"]
