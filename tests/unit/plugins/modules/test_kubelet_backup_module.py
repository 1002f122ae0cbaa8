# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The two writing modules (kubelet_backup, kubelet_config) in-process: refusals and fuzzing.

A module run either exits with a result or fails with a message; an exception escaping main()
(a traceback on the host) fails these tests.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.modules import kubelet_backup, kubelet_config
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import patch_module_args
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import run_main as run

HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"


@pytest.fixture
def host(tmp_path):
    root = tmp_path / "kubelet"
    etc = tmp_path / "etc"
    (etc / "conf.d").mkdir(parents=True)
    root.mkdir()
    (etc / "config.yaml").write_text(HEADER + "cpuManagerPolicy: none\n")
    (root / "cpu_manager_state").write_text('{"policyName":"none","defaultCpuSet":"","checksum":1}')
    return {"root": str(root), "etc": str(etc), "dirs": [str(root), str(etc)]}


def test_backup_module_roundtrip_check_and_prune(capsys, host):
    state = os.path.join(host["root"], "cpu_manager_state")
    backup_root = os.path.join(host["root"], "numaguard-backups")
    args = {"operation": "backup", "backup_root": backup_root, "move": [state], "kubelet_dirs": host["dirs"]}
    result = run(kubelet_backup, capsys, dict(args, _ansible_check_mode=True))
    assert result["changed"] and os.path.exists(state) and not os.path.exists(backup_root)
    checked = run(kubelet_backup, capsys, dict(args, operation="check"))
    assert not checked["changed"] and checked["writable"][0]["path"] == backup_root
    assert checked["writable"][0]["checked"] == host["root"]  # backup root not made yet
    result = run(kubelet_backup, capsys, args)
    assert result["changed"] and not os.path.exists(state)
    with open(state, "w") as handle:
        handle.write("new")
    preview = run(kubelet_backup, capsys, {"operation": "restore", "backup_dir": result["backup_dir"],
                                           "kubelet_dirs": host["dirs"], "_ansible_check_mode": True})
    assert preview["files"] == [{"path": state, "result": "would be restored"}]
    restored = run(kubelet_backup, capsys, {"operation": "restore", "backup_dir": result["backup_dir"], "kubelet_dirs": host["dirs"]})
    assert restored["files"] == [{"path": state, "result": "restored"}]
    with open(state) as handle:
        assert handle.read().startswith('{"policyName":"none"')
    for _attempt in range(3):
        run(kubelet_backup, capsys, dict(args, move=[], copy=[state]))
    pruned = run(kubelet_backup, capsys, {"operation": "prune", "backup_root": backup_root, "keep": 2, "kubelet_dirs": host["dirs"]})
    assert len(pruned["pruned"]) == 2 and result["backup_dir"] in pruned["pruned"]
    assert len(os.listdir(backup_root)) == 2


@pytest.mark.parametrize("args, message", [
    ({"operation": "restore"}, "backup_dir: required by operation=restore"),
    ({"operation": "restore", "backup_dir": "/x\x00y"}, "backup_dir: '/x\\x00y' contains a NUL byte"),
    ({"operation": "backup", "backup_root": ""}, "backup_root: '' is empty"),
    ({"operation": "backup", "backup_root": "rel"}, "backup_root: 'rel' is not an absolute path"),
    ({"operation": "backup", "backup_root": "/b", "copy": ["/etc/kubernetes/" + "x" * 300]}, "copy[0]:"),
    ({"operation": "backup", "backup_root": "/b", "move": ["/var/lib/kubelet/\x00"]}, "move[0]: '/var/lib/kubelet/\\x00' contains a NUL byte"),
    ({"operation": "backup", "backup_root": "/b", "kubelet_dirs": []}, "kubelet_dirs: give at least one kubelet directory"),
    ({"operation": "prune", "backup_root": "/b", "keep": -1}, "keep: -1 is negative"),
    ({"operation": "backup", "backup_root": "/var/lib/kubelet/numaguard-backups", "copy": ["/etc/shadow"]},
     "copy path /etc/shadow is not inside the kubelet directories"),
])
def test_backup_module_refusals(capsys, args, message):
    result = run(kubelet_backup, capsys, args)
    assert result["failed"] and message in result["msg"], result["msg"]


@pytest.mark.parametrize("option", ["config", "config_dir", "root_dir", "path"])
def test_kubelet_config_refuses_explicitly_empty_locations(capsys, host, option):
    args = {"settings": {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"}, "validate_host": False,
            "config": os.path.join(host["etc"], "config.yaml"), "config_dir": os.path.join(host["etc"], "conf.d"),
            "root_dir": host["root"]}
    args[option] = ""
    result = run(kubelet_config, capsys, args)
    assert result["failed"]
    assert result["msg"] == "%s: '' is empty; leave the option out to use the running kubelet's (or the default) location" % option
    assert os.listdir(os.path.join(host["etc"], "conf.d")) == []


@pytest.mark.parametrize("option", ["config", "config_dir", "root_dir", "path", "sysfs_root"])
def test_kubelet_config_refuses_nul_bytes_naming_the_option(capsys, host, option):
    result = run(kubelet_config, capsys, {"settings": {"cpuManagerPolicy": "none"}, option: "/etc/x\x00y"})
    assert result["failed"] and result["msg"] == "%s: '/etc/x\\x00y' contains a NUL byte" % option


def test_kubelet_config_refuses_deep_settings_and_files(capsys, host):
    deep = {"memory": "1Gi"}
    for _level in range(40):
        deep = {"x": deep}
    base = {"config": os.path.join(host["etc"], "config.yaml"), "config_dir": os.path.join(host["etc"], "conf.d"),
            "root_dir": host["root"], "validate_host": False}
    result = run(kubelet_config, capsys, dict(base, settings={"kubeReserved": deep}))
    assert result["failed"] and result["msg"] == "settings: nests deeper than 16 levels; refusing it"
    with open(os.path.join(host["etc"], "conf.d", "10-deep.conf"), "w") as handle:
        handle.write(HEADER + "x: " + "[" * 50000 + "]" * 50000 + "\n")
    result = run(kubelet_config, capsys, dict(base, settings={"cpuManagerPolicy": "none"}))
    assert result["failed"] and "10-deep.conf nests deeper than 64 levels; refusing it" in result["msg"]
    with open(os.path.join(host["etc"], "conf.d", "10-deep.conf"), "w") as handle:
        handle.write(HEADER + "x:\n" + "- " * 200000 + "1\n")
    result = run(kubelet_config, capsys, dict(base, settings={"cpuManagerPolicy": "none"}))
    assert result["failed"] and "10-deep.conf nests deeper than 64 levels; refusing it" in result["msg"]
    os.unlink(os.path.join(host["etc"], "conf.d", "10-deep.conf"))
    with open(os.path.join(host["root"], "cpu_manager_state"), "w") as handle:
        handle.write("[" * 100000 + "]" * 100000)
    result = run(kubelet_config, capsys, dict(base, settings={"cpuManagerPolicy": "none"}))
    assert not result.get("failed"), result


TEXT = st.one_of(st.text(max_size=12), st.sampled_from(["", "/", "/etc/kubernetes", "../x", "/x\x00", "a" * 300, "~"]))
VALUE = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), TEXT),
                     lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)), max_leaves=8)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(operation=st.sampled_from(["backup", "restore", "check", "prune"]),
       args=st.dictionaries(st.sampled_from(["backup_root", "backup_dir", "copy", "move", "kubelet_dirs", "keep", "protect"]),
                            VALUE, max_size=4))
def test_fuzzed_backup_module_args_never_traceback(capsys, host, operation, args):
    # paths point into the test's own directories so no fuzzed run writes on this machine's /
    safe = dict((k, v) for k, v in args.items())
    safe["kubelet_dirs"] = host["dirs"]
    for key in ("backup_root", "backup_dir"):
        if isinstance(safe.get(key), str) and safe[key].startswith("/"):
            safe[key] = host["root"] + safe[key]
    with patch_module_args(dict(safe, operation=operation)):
        with pytest.raises(SystemExit):
            kubelet_backup.main()
    result = json.loads(capsys.readouterr().out)
    assert result.get("failed") is True or "changed" in result


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(settings_value=st.dictionaries(st.sampled_from(["cpuManagerPolicy", "reservedSystemCPUs", "reservedMemory", "kubeReserved",
                                                       "featureGates", "topologyManagerPolicyOptions", "bogus"]), VALUE, max_size=3),
       config_text=st.one_of(st.none(), st.text(max_size=40), st.sampled_from(["{", "[" * 3000, HEADER + "a: &a [1]\nb: *a\n"])))
def test_fuzzed_kubelet_config_never_tracebacks(capsys, host, settings_value, config_text):
    dropin = os.path.join(host["etc"], "conf.d", "20-fuzz.conf")
    if config_text is None:
        if os.path.exists(dropin):
            os.unlink(dropin)
    else:
        with open(dropin, "w") as handle:
            handle.write(config_text)
    args = {"settings": settings_value, "config": os.path.join(host["etc"], "config.yaml"),
            "config_dir": os.path.join(host["etc"], "conf.d"), "root_dir": host["root"], "validate_host": False,
            "kubelet_version": "1.31", "_ansible_check_mode": True}
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            kubelet_config.main()
    result = json.loads(capsys.readouterr().out)
    assert result.get("failed") is True or "changed" in result
