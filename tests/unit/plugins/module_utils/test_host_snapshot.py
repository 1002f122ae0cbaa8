# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Capture -> root= round trip: the snapshot reads back to byte-identical facts."""

from __future__ import annotations

import io
import json
import os
import pathlib
import tarfile

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.facts import gather
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.snapshot import SnapshotError, archive_bytes, capture, collect
from ansible_collections.numaguard.kubelet.tests.fleet import quirks, topologies

CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "output", ".cache", "topologies")


def _json(facts):
    return json.dumps(facts, sort_keys=True)


def _extract(archive, dest):
    with tarfile.open(archive, "r:gz") as tar:
        members = tar.getmembers()
        for member in members:   # our own archive: relative names, no devices
            assert not member.name.startswith("/") and ".." not in member.name.split("/")
        tar.extractall(str(dest), members=members)


@pytest.mark.parametrize("name", sorted(topologies.TOPOLOGIES))
def test_every_bundled_topology_round_trips_byte_identical(tmp_path, name):
    tree = topologies.cached_tree(name, CACHE, hostname="h01")
    live = gather(tree)
    result = capture(tree, str(tmp_path / "snap.tar.gz"), gather)
    assert _json(result["numa_topology"]) == _json(live)
    _extract(str(tmp_path / "snap.tar.gz"), tmp_path / "root")
    assert _json(gather(str(tmp_path / "root"))) == _json(live)


@pytest.mark.parametrize("name", sorted(quirks.QUIRKS))
def test_quirk_trees_round_trip_with_the_same_warnings(tmp_path, name):
    tree = tmp_path / "tree"
    quirks.write_quirk_tree(name, str(tree))
    live = gather(str(tree))
    capture(str(tree), str(tmp_path / "snap.tar.gz"))
    _extract(str(tmp_path / "snap.tar.gz"), tmp_path / "root")
    assert _json(gather(str(tmp_path / "root"))) == _json(live)


def test_kubelet_files_and_process_are_captured(tmp_path):
    tree = tmp_path / "tree"
    topologies.write_tree("gpu-sriov", str(tree), hostname="h01")
    (tree / "etc/kubernetes/kubelet.conf.d").mkdir(parents=True)
    (tree / "etc/kubernetes/kubelet.conf.d/10-numa.conf").write_text("cpuManagerPolicy: static\n")
    (tree / "etc/kubernetes/kubelet-config.yaml").write_text("kind: KubeletConfiguration\n")
    (tree / "etc/kubernetes/admin.conf").write_text("secret\n")
    (tree / "var/lib/kubelet/cpu_manager_state").write_text('{"policyName":"none","defaultCpuSet":"","checksum":0}')
    (tree / "proc/4242").mkdir()
    (tree / "proc/4242/cmdline").write_bytes(b"/usr/bin/kubelet\x00--config=kubelet-config.yaml\x00"
                                             b"--kubeconfig=/etc/kubernetes/admin.conf\x00")
    os.symlink("/etc/kubernetes", str(tree / "proc/4242/cwd"))
    os.symlink("/usr/bin/kubelet", str(tree / "proc/4242/exe"))
    (tree / "proc/4242/status").write_text("Name:\tkubelet\nUid:\t0\t0\t0\t0\n")
    (tree / "proc/77").mkdir()
    (tree / "proc/77/cmdline").write_bytes(b"/usr/sbin/sshd\x00")
    live = gather(str(tree))
    assert live["kubelet"]["config"] == "/etc/kubernetes/kubelet-config.yaml"
    entries = collect(str(tree))
    assert "etc/kubernetes/kubelet-config.yaml" in entries and "proc/4242/cmdline" in entries
    assert entries["proc/4242/cwd"] == ("link", "/etc/kubernetes")
    assert "etc/kubernetes/admin.conf" not in entries and "proc/77/cmdline" not in entries
    assert entries["var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"][0] == "file"
    assert entries["sys/bus/pci/devices/0000:3b:01.0/physfn"] == ("link", "../0000:3b:00.0")
    capture(str(tree), str(tmp_path / "snap.tar.gz"))
    _extract(str(tmp_path / "snap.tar.gz"), tmp_path / "root")
    assert _json(gather(str(tmp_path / "root"))) == _json(live)


def test_archive_is_deterministic_and_contents_only(tmp_path):
    tree = topologies.cached_tree("vm-single", CACHE, hostname="h01")
    first = archive_bytes(collect(tree))
    assert first == archive_bytes(collect(tree))
    with tarfile.open(fileobj=io.BytesIO(first), mode="r:gz") as tar:
        names = tar.getnames()
        assert all(m.mtime == 0 and m.uid == 0 for m in tar.getmembers())
    assert "sys/devices/system/node/node0/meminfo" in names and "proc/meminfo" in names
    assert not any(n.startswith("etc/numaguard") or n == "etc/hostname" for n in names)


def test_capture_check_mode_and_bad_destination(tmp_path):
    tree = topologies.cached_tree("vm-single", CACHE, hostname="h01")
    result = capture(tree, None, gather)
    assert "sha256" not in result and result["numa_topology"]["node_ids"] == [0]
    with pytest.raises(SnapshotError, match="cannot write the snapshot"):
        capture(tree, str(tmp_path / "missing-dir" / "x.tar.gz"))
    assert not list(pathlib.Path(tmp_path).glob("**/.x.tar.gz.*"))
    with pytest.raises(SnapshotError, match="directory does not exist"):
        collect(str(tmp_path))
