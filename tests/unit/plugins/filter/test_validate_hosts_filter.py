# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The validate_hosts filter (validate.yml's check of every host): the rollout preflight's start-up
verdict, not only reserved memory; hosts without settings are not configured; topology files that
cannot be used are named."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.numaguard.kubelet.plugins.filter.validate_hosts import validate_hosts
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import read_topology
from ansible_collections.numaguard.kubelet.tests.fleet import topologies

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
TOPOLOGIES = os.path.join(REPO, "playbooks", "examples", "validate", "topologies")
INTEL = os.path.join(TOPOLOGIES, "intel-2s.json")
GOOD = {"memoryManagerPolicy": "Static", "kubeReserved": {"cpu": "500m", "memory": "4Gi"}, "systemReserved": {"memory": "1Gi"},
        "reservedMemory": [{"numaNode": 0, "limits": {"memory": "3Gi"}}, {"numaNode": 1, "limits": {"memory": "2148Mi"}}]}


def judge(**variables):
    variables.setdefault("numa_topology_file", INTEL)
    variables.setdefault("kubelet_numa_kubelet_version", "1.37")
    return validate_hosts({"h": variables}, ["h"])["results"]["h"]


def test_good_settings_are_valid():
    result = judge(kubelet_numa_settings=GOOD)
    assert result["valid"], result["errors"]
    assert result["flag"] == "0:memory=3Gi;1:memory=2148Mi"


@pytest.mark.parametrize("extra, words", [
    # reserved CPUs the host does not have: reserved memory alone never looked at them
    ({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0,4095"}, "is not a subset of online-cpus"),
    # an option the release does not know
    ({"topologyManagerPolicy": "restricted", "topologyManagerPolicyOptions": {"no-such-option": "true"}}, "no-such-option"),
    # the none CPU policy with options
    ({"cpuManagerPolicyOptions": {"full-pcpus-only": "true"}}, "the none policy cannot apply cpu policy options"),
    # a field the rollout cannot apply
    ({"cpuManagerPolicyy": "static"}, "cpuManagerPolicyy"),
])
def test_what_the_rollout_refuses_validate_refuses(extra, words):
    result = judge(kubelet_numa_settings=dict(GOOD, **extra))
    assert not result["valid"]
    assert any(words in e for e in result["errors"]), result["errors"]


def test_too_many_numa_nodes_for_the_topology_manager(tmp_path):
    settings = {"topologyManagerPolicy": "restricted", "memoryManagerPolicy": "Static", "kubeReserved": {"memory": "2Gi"},
                "systemReserved": {"memory": "1Gi"}}
    result = judge(numa_topology_file=os.path.join(TOPOLOGIES, "amd-epyc-nps4.json"), kubelet_numa_settings=settings,
                   validate_strategy="spread")
    assert result["valid"], result["errors"]  # 8 nodes: allowed; the computed reservation is what is judged
    topologies.write_tree("gpu-superchip", str(tmp_path), hostname="h")
    facts = read_topology(str(tmp_path)).to_facts()
    result = judge(numa_topology_file=None, numa_topology=facts, kubelet_numa_settings=settings, validate_strategy="node0")
    assert any("unsupported on machines with more than 8 NUMA Nodes (this host has 9)" in e for e in result["errors"]), result
    allowed = dict(settings, topologyManagerPolicyOptions={"max-allowable-numa-nodes": "9"})
    result = judge(numa_topology_file=None, numa_topology=facts, kubelet_numa_settings=allowed, validate_strategy="node0")
    assert result["valid"], result["errors"]
    result = judge(numa_topology_file=None, numa_topology=facts, kubelet_numa_settings=allowed, validate_strategy="node0",
                   kubelet_numa_kubelet_version="1.30")
    assert any("max-allowable-numa-nodes" in e for e in result["errors"]), result["errors"]


def test_a_host_without_settings_is_not_configured():
    result = judge()
    assert not result["valid"]
    assert result["errors"] == ["not configured: kubelet_numa_settings is not set for this host (check the variable's "
                                "spelling in the inventory, group_vars or host_vars)"]


def test_a_message_of_both_checks_is_listed_once():
    settings = dict(GOOD, reservedMemory=[{"numaNode": 0, "limits": {"memory": "5220Mi"}},
                                          {"numaNode": 0, "limits": {"memory": "0"}}])
    result = judge(kubelet_numa_settings=settings)
    assert not result["valid"]
    assert sum("[static-needs-reservation]" in e for e in result["errors"]) <= 1, result["errors"]
    assert len(result["errors"]) == len(set(result["errors"]))


def test_unusable_topology_files_are_named(tmp_path):
    binary = tmp_path / "bin.json"
    binary.write_bytes(b"\x00\xff\xfe")
    result = judge(numa_topology_file=str(binary), kubelet_numa_settings=GOOD)
    assert result["input_error"] == "the topology file %s of h is not text (not a saved numa_facts JSON)" % binary
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    result = judge(numa_topology_file=str(broken), kubelet_numa_settings=GOOD)
    assert result["input_error"].startswith("the topology file %s of h is not valid JSON: " % broken)
    result = judge(numa_topology_file=str(tmp_path / "none.json"), kubelet_numa_settings=GOOD)
    assert result["input_error"].startswith("cannot read the topology file %s of h: neither" % (tmp_path / "none.json"))


def test_bad_arguments():
    with pytest.raises(AnsibleFilterError, match="hosts must be a list"):
        validate_hosts({}, "h")
    with pytest.raises(AnsibleFilterError, match="not in the inventory"):
        validate_hosts({}, ["h"])


def test_hosts_sharing_a_file_and_settings_are_judged_once_and_named_each(tmp_path):
    hosts = dict(("h%d" % i, {"numa_topology_file": INTEL, "kubelet_numa_settings": GOOD, "kubelet_numa_kubelet_version": "1.37"})
                 for i in range(3))
    hosts["missing-a"] = {"numa_topology_file": str(tmp_path / "none.json"), "kubelet_numa_settings": GOOD}
    hosts["missing-b"] = dict(hosts["missing-a"])
    results = validate_hosts(hosts, sorted(hosts))["results"]
    assert [results["h%d" % i] for i in range(3)] == [results["h0"]] * 3 and results["h0"]["valid"]
    assert results["h0"] is not results["h1"]  # each host its own dict
    assert " of missing-a: neither" in results["missing-a"]["input_error"]
    assert " of missing-b: neither" in results["missing-b"]["input_error"]
