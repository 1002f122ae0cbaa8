# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Tests for kubelet_plan (drop-in / merge planning)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import KubeletConfigError
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.plan import plan_change
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.settings import SettingsError

HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
MAIN = HEADER + "# keep me\nclusterDomain: cluster.local\nfeatureGates:\n  MemoryQoS: true\ncpuManagerPolicy: none\n"


@pytest.fixture
def host(tmp_path):
    root = tmp_path
    (root / "etc").mkdir()
    (root / "etc" / "conf.d").mkdir()
    (root / "state").mkdir()
    (root / "etc" / "config.yaml").write_text(MAIN)
    (root / "state" / "cpu_manager_state").write_text('{"policyName":"none","defaultCpuSet":"","checksum":1}')
    return {"config": str(root / "etc" / "config.yaml"), "config_dir": str(root / "etc" / "conf.d"),
            "root_dir": str(root / "state"), "root": root}


def plan(host, settings, **kwargs):
    args = dict(config=host["config"], config_dir=host["config_dir"], root_dir=host["root_dir"], kubelet_version="1.31")
    args.update(kwargs)
    return plan_change(settings, **args)


def test_dropin_plan(host):
    result = plan(host, {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "featureGates": {"X": True}})
    assert result["path"] == os.path.join(host["config_dir"], "50-numaguard-numa.conf")
    assert result["before"] is None and result["changed"]
    assert result["after"] == HEADER + 'cpuManagerPolicy: static\nfeatureGates:\n  X: true\nreservedSystemCPUs: "0"\n'
    assert result["effective"]["featureGates"] == {"MemoryQoS": True, "X": True}  # the kubelet merges maps
    assert result["previous"]["cpuManagerPolicy"] == "none"
    assert result["reset"]["cpu_manager_state"] is True
    assert result["state_files"]["memory_manager_state"] == {"path": os.path.join(host["root_dir"], "memory_manager_state"), "exists": False}
    # once written, the same settings plan no change
    with open(result["path"], "w") as handle:
        handle.write(result["after"])
    again = plan(host, {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "featureGates": {"X": True}})
    assert not again["changed"] and not again["effective_changed"]


def test_later_dropin_overriding_our_field_is_an_error(host):
    with open(os.path.join(host["config_dir"], "90-other.conf"), "w") as handle:
        handle.write(HEADER + "cpuManagerPolicy: none\n")
    with pytest.raises(SettingsError) as err:
        plan(host, {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"})
    assert err.value.errors == [
        "cpuManagerPolicy is overridden by %s; drop-ins apply in file-name order, so rename 50-numaguard-numa.conf "
        "to sort after them or remove the field there" % os.path.join(host["config_dir"], "90-other.conf")]
    # sorting after it is fine
    result = plan(host, {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"},
                  path=os.path.join(host["config_dir"], "99-numa.conf"))
    assert result["effective"]["cpuManagerPolicy"] == "static"


def test_dropin_path_checks(host):
    with pytest.raises(KubeletConfigError) as err:
        plan(host, {"topologyManagerPolicy": "restricted"}, path=os.path.join(host["config_dir"], "numa.yaml"))
    assert str(err.value).endswith("must end in .conf or the kubelet ignores it (option path)")
    with pytest.raises(KubeletConfigError) as err:
        plan(host, {"topologyManagerPolicy": "restricted"}, path="/tmp/elsewhere.conf")
    assert str(err.value) == "drop-in path /tmp/elsewhere.conf is not inside the kubelet drop-in directory %s" % host["config_dir"]


def test_merge_mode_keeps_unmanaged_keys_and_merges_gates(host):
    result = plan(host, {"topologyManagerPolicy": "restricted", "featureGates": {"X": True}}, mode="merge")
    assert result["path"] == host["config"]
    assert result["content"]["clusterDomain"] == "cluster.local"
    assert result["content"]["featureGates"] == {"MemoryQoS": True, "X": True}
    assert result["changed"] and "# keep me" not in result["after"]
    with open(host["config"], "w") as handle:
        handle.write(MAIN.replace("cpuManagerPolicy: none\n", "cpuManagerPolicy: none\ntopologyManagerPolicy: restricted\n"))
    result = plan(host, {"topologyManagerPolicy": "restricted"}, mode="merge")
    assert not result["changed"] and "# keep me" in result["after"]  # no reformatting when nothing changes


def test_errors_are_collected(host):
    with pytest.raises(SettingsError) as err:
        plan(host, {"cpuManagerPolicy": "static", "topologyManagerPolicyOptions": {"max-allowable-numa-nodes": "4"}})
    assert len(err.value.errors) == 2
    with pytest.raises(SettingsError) as err:
        plan(host, {})
    assert err.value.errors[0].startswith("settings: give at least one KubeletConfiguration field")


def test_merge_mode_on_main_config_overridden_by_dropin(host):
    with open(os.path.join(host["config_dir"], "10-x.conf"), "w") as handle:
        handle.write(HEADER + "topologyManagerPolicy: none\n")
    with pytest.raises(SettingsError) as err:
        plan(host, {"topologyManagerPolicy": "restricted"}, mode="merge")
    assert err.value.errors == [
        "topologyManagerPolicy is overridden by %s; drop-ins override the main config: use mode dropin or remove the field "
        "from those drop-ins" % os.path.join(host["config_dir"], "10-x.conf")]


def test_merge_mode_on_an_existing_dropin(host):
    dropin = os.path.join(host["config_dir"], "60-site.conf")
    with open(dropin, "w") as handle:
        handle.write(HEADER + "maxPods: 200\n")
    result = plan(host, {"topologyManagerPolicy": "restricted"}, mode="merge", path=dropin)
    assert result["content"]["maxPods"] == 200
    assert result["effective"]["topologyManagerPolicy"] == "restricted"
    assert result["previous"]["topologyManagerPolicy"] == "none"


def test_dropin_without_config_dir(host, tmp_path):
    result = plan(host, {"topologyManagerPolicy": "restricted"}, config_dir=None, path=str(tmp_path / "x.conf"))
    assert result["effective"]["topologyManagerPolicy"] == "restricted"
