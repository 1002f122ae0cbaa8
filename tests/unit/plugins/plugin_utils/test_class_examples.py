# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The per-class settings of playbooks/examples/classes/ (shown in the README) are valid on every
bundled fleet topology: each topology's hardware class has a group_vars file, and its
kubelet_numa_settings pass the whole start-up verdict - the one validate.yml gives through the
validate_hosts filter and the rollout's preflight through kubelet_config's plan_change (policies,
options against the NUMA node count and the kubelet release, reserved CPUs, reserved memory)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.numaguard.kubelet.plugins.filter.validate_hosts import validate_hosts
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import read_topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.plan import kubelet_reservation_validator, plan_change
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.classes import hardware_class
from ansible_collections.numaguard.kubelet.tests.fleet import topologies

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
GROUP_VARS = os.path.join(REPO, "playbooks", "examples", "classes", "group_vars")


#: the kubelet's warning for max-allowable-numa-nodes above 8 (the only one an example may carry)
MANY_NODES = "the kubelet warns that admission time grows exponentially with the number of NUMA nodes"


def _class_settings(tmp_path, name):
    topologies.write_tree(name, str(tmp_path), hostname="h")
    facts = read_topology(str(tmp_path)).to_facts()
    path = os.path.join(GROUP_VARS, "%s.yml" % hardware_class(facts)["group"])
    assert os.path.isfile(path), "no per-class settings for %s (%s)" % (name, os.path.basename(path))
    with open(path) as handle:
        return facts, yaml.safe_load(handle)["kubelet_numa_settings"]


@pytest.mark.parametrize("version", ["1.31", "1.37"])
@pytest.mark.parametrize("name", sorted(topologies.TOPOLOGIES))
def test_every_bundled_class_has_valid_settings(tmp_path, name, version):
    facts, settings = _class_settings(tmp_path, name)
    # validate.yml's path: the validate_hosts filter on the host's variables
    host = {"kubelet_numa_settings": settings, "numa_topology": facts, "kubelet_numa_kubelet_version": version}
    result = validate_hosts({"h": host}, ["h"])["results"]["h"]
    assert result["valid"], result["errors"]
    # a version given: no "kubelet version unknown" warning, so any warning left is about the settings
    many = len(facts["nodes"]) > 8
    assert [w for w in result["warnings"] if not (many and MANY_NODES in w)] == []
    # the rollout preflight's path: kubelet_config's plan on a host with no kubelet configuration
    kubelet = KubeletAssumption.resolve(version, None)
    plan = plan_change(settings, config_dir=str(tmp_path / "conf.d"), root_dir=str(tmp_path / "state"),
                       kubelet_version=kubelet, topology=Topology.from_facts(facts),
                       reservation_validator=kubelet_reservation_validator(kubelet))
    assert [w for w in plan["warnings"] if not (many and MANY_NODES in w)] == []


@pytest.mark.parametrize("name", ["big16", "gpu-superchip"])
def test_more_than_8_nodes_need_max_allowable_numa_nodes_and_kubelet_1_31(tmp_path, name):
    facts, settings = _class_settings(tmp_path, name)
    host = {"numa_topology": facts, "kubelet_numa_kubelet_version": "1.30", "kubelet_numa_settings": settings}
    result = validate_hosts({"h": host}, ["h"])["results"]["h"]
    assert not result["valid"]
    assert any("max-allowable-numa-nodes" in e for e in result["errors"]), result["errors"]
    without = dict(settings)
    without.pop("topologyManagerPolicyOptions")
    host = dict(host, kubelet_numa_kubelet_version="1.37", kubelet_numa_settings=without)
    errors = validate_hosts({"h": host}, ["h"])["results"]["h"]["errors"]
    assert any("unsupported on machines with more than 8 NUMA Nodes (this host has %d)" % len(facts["nodes"]) in e
               for e in errors), errors


def test_no_stale_class_files():
    classes = set()
    for name in topologies.TOPOLOGIES:
        import tempfile
        root = tempfile.mkdtemp()
        topologies.write_tree(name, root, hostname="h")
        classes.add(hardware_class(read_topology(root).to_facts())["group"] + ".yml")
    assert sorted(os.listdir(GROUP_VARS)) == sorted(classes)
