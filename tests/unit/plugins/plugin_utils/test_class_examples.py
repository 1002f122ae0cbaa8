# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The per-class settings of playbooks/examples/classes/ (shown in the README) are valid on every
bundled fleet topology: each topology's hardware class has a group_vars file, and its
kubelet_numa_settings pass reserved_memory_check without error."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_check import reserved_memory_check
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import read_topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.classes import hardware_class
from ansible_collections.numaguard.kubelet.tests.fleet import topologies

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
GROUP_VARS = os.path.join(REPO, "playbooks", "examples", "classes", "group_vars")


@pytest.mark.parametrize("name", sorted(topologies.TOPOLOGIES))
def test_every_bundled_class_has_valid_settings(tmp_path, name):
    topologies.write_tree(name, str(tmp_path), hostname="h")
    facts = read_topology(str(tmp_path)).to_facts()
    path = os.path.join(GROUP_VARS, "%s.yml" % hardware_class(facts)["group"])
    assert os.path.isfile(path), "no per-class settings for %s (%s)" % (name, os.path.basename(path))
    with open(path) as handle:
        settings = yaml.safe_load(handle)["kubelet_numa_settings"]
    # a version given: no "kubelet version unknown" warning, so any warning left is about the settings
    result = reserved_memory_check(facts, kubelet_config=settings, errors="report", kubelet_version="1.37")
    assert result["valid"], result["errors"]
    assert result["warnings"] == []


def test_no_stale_class_files():
    classes = set()
    for name in topologies.TOPOLOGIES:
        import tempfile
        root = tempfile.mkdtemp()
        topologies.write_tree(name, root, hostname="h")
        classes.add(hardware_class(read_topology(root).to_facts())["group"] + ".yml")
    assert sorted(os.listdir(GROUP_VARS)) == sorted(classes)
