# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 23, case 2: only a root kubelet binary decides where the kubelet's files are.

A process whose ``argv[0]`` says ``kubelet`` but that runs as another user, or whose executable is
not a kubelet binary, is ignored (and reported as ignored); two trusted kubelets that disagree on
their paths are a refusal naming both and saying how to pin the paths.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tarfile

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends import kubelet_config as kubelet_config_backend
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.kubelet_paths import KubeletPathsError, locate_kubelet
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.snapshot import capture, collect
from ansible_collections.numaguard.kubelet.plugins.modules import kubelet_config
from ansible_collections.numaguard.kubelet.tests.fleet import topologies
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import patch_module_args


def proc(root, pid, argv, uid=0, exe="/usr/bin/kubelet"):
    pdir = root / "proc" / str(pid)
    pdir.mkdir(parents=True)
    (pdir / "cmdline").write_bytes(b"\x00".join(a.encode() for a in argv) + b"\x00")
    (pdir / "status").write_text("Name:\tkubelet\nUid:\t%d\t%d\t%d\t%d\nGid:\t0\t0\t0\t0\n" % (uid, uid, uid, uid))
    if exe:
        os.symlink(exe, str(pdir / "exe"))


def test_an_unprivileged_process_named_kubelet_is_ignored(tmp_path):
    proc(tmp_path, 10, ["kubelet", "--config-dir=/home/mallory/d", "--root-dir=/home/mallory/r"], uid=1000,
         exe="/home/mallory/kubelet")
    proc(tmp_path, 500, ["/usr/bin/kubelet", "--config=/etc/k/kubelet.yaml", "--root-dir=/data/kubelet"])
    found = locate_kubelet(str(tmp_path))
    assert (found["pid"], found["pids"], found["root_dir"], found["config_dir"]) == (500, [500], "/data/kubelet", None)
    assert found["ignored"] == [{"pid": 10, "reason": "runs as uid 1000, not root"}]


@pytest.mark.parametrize("exe,reason", [
    ("/usr/bin/python3.11", "its executable /usr/bin/python3.11 is not a kubelet binary"),
    (None, "its executable cannot be read (no %s/proc/11/exe)"),
])
def test_a_root_process_that_is_not_a_kubelet_binary_is_ignored(tmp_path, exe, reason):
    proc(tmp_path, 11, ["kubelet", "--root-dir=/tmp/x"], exe=exe)
    found = locate_kubelet(str(tmp_path))
    assert (found["running"], found["source"], found["root_dir"]) == (False, "default", "/var/lib/kubelet")
    assert found["ignored"] == [{"pid": 11, "reason": reason.replace("%s", str(tmp_path)) if "%s" in reason else reason}]


def test_a_replaced_binary_is_still_the_kubelet(tmp_path):
    proc(tmp_path, 12, ["/usr/bin/kubelet", "--root-dir=/data/kubelet"], exe="/usr/bin/kubelet (deleted)")
    assert locate_kubelet(str(tmp_path))["root_dir"] == "/data/kubelet"


def test_missing_status_is_not_trusted(tmp_path):
    proc(tmp_path, 13, ["kubelet", "--root-dir=/x"])
    os.unlink(str(tmp_path / "proc" / "13" / "status"))
    found = locate_kubelet(str(tmp_path))
    assert not found["running"] and found["ignored"][0]["pid"] == 13


def test_trusted_kubelets_that_disagree_are_a_refusal_naming_both(tmp_path):
    proc(tmp_path, 20, ["/usr/bin/kubelet", "--config=/etc/a.yaml", "--root-dir=/a"])
    proc(tmp_path, 30, ["/usr/bin/kubelet", "--config=/etc/b.yaml", "--root-dir=/b"])
    with pytest.raises(KubeletPathsError) as err:
        locate_kubelet(str(tmp_path))
    text = str(err.value)
    assert "pid 20 (config /etc/a.yaml, config-dir none, root-dir /a)" in text
    assert "pid 30 (config /etc/b.yaml, config-dir none, root-dir /b)" in text
    assert "pin" in text and "config_dir" in text and "root_dir" in text


def test_trusted_kubelets_that_agree_are_one_answer(tmp_path):
    proc(tmp_path, 40, ["/usr/bin/kubelet", "--config=/etc/a.yaml"])
    proc(tmp_path, 41, ["/usr/bin/kubelet", "--config", "/etc/a.yaml"])
    found = locate_kubelet(str(tmp_path))
    assert (found["pid"], found["pids"], found["config"]) == (40, [40, 41], "/etc/a.yaml")


def test_a_snapshot_keeps_what_the_trust_check_reads(tmp_path):
    tree = tmp_path / "tree"
    topologies.write_tree("vm-single", str(tree), hostname="h01")
    proc(tree, 50, ["/usr/bin/kubelet", "--config=/etc/a.yaml"])
    proc(tree, 60, ["/usr/bin/kubelet", "--config=/etc/b.yaml"])
    proc(tree, 70, ["kubelet", "--config=/etc/c.yaml"], uid=1000)
    for name in ("a", "b", "c"):
        (tree / "etc" / ("%s.yaml" % name)).write_text("kind: KubeletConfiguration\n")
    entries = collect(str(tree))
    assert entries["proc/50/exe"] == ("link", "/usr/bin/kubelet")
    assert "proc/50/status" in entries and "proc/70/status" in entries
    # the two trusted kubelets disagree: both their files are kept, the untrusted one's are not
    assert "etc/a.yaml" in entries and "etc/b.yaml" in entries and "etc/c.yaml" not in entries
    capture(str(tree), str(tmp_path / "snap.tar.gz"))
    with tarfile.open(str(tmp_path / "snap.tar.gz")) as archive:
        archive.extractall(str(tmp_path / "root"))
    with pytest.raises(KubeletPathsError):
        locate_kubelet(str(tmp_path / "root"))


def _refuse(root):
    raise KubeletPathsError("2 kubelets run as root and disagree on their files: pid 20 (...), pid 30 (...)")


def test_kubelet_config_refuses_disagreeing_kubelets_unless_the_paths_are_pinned(capsys, tmp_path, monkeypatch):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "config.yaml").write_text("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n")
    monkeypatch.setattr(kubelet_config_backend, "locate_kubelet", _refuse)
    args = {"settings": {"topologyManagerPolicy": "restricted"}, "kubelet_version": "1.31", "validate_host": False,
            "config": str(tmp_path / "config.yaml"), "_ansible_check_mode": True}
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            kubelet_config.main()
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] and result["msg"].startswith("2 kubelets run as root and disagree on their files: pid 20")
    with patch_module_args(dict(args, config_dir=str(tmp_path / "conf.d"), root_dir=str(tmp_path))):
        with pytest.raises(SystemExit):
            kubelet_config.main()
    result = json.loads(capsys.readouterr().out)
    assert not result.get("failed") and result["path"] == str(tmp_path / "conf.d" / "50-numaguard-numa.conf"), result
