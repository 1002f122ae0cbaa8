# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""validate.yml (the CI check) and apply.yml --check (the rollout's preflight) give the same
verdict on every host of the session fleet: each host gets its class's example settings from
playbooks/examples/classes/group_vars (all must pass both), and one host settings the kubelet
refuses at start-up for a reason other than reserved memory (reserved CPUs that do not exist),
which both must refuse. The hosts have no kubelet configuration of their own (validate.yml assumes so).
One run of each playbook."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GROUP_VARS = os.path.join(REPO, "playbooks", "examples", "classes", "group_vars")
FAKE = os.path.join(REPO, "tests", "fleet", "fake_kubelet.py")
#: the oldest kubelet the 9- and 16-node examples allow (max-allowable-numa-nodes is beta in 1.31)
VERSION = "1.31"


def _class_settings(fleet, name, scratch):
    from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import read_topology
    from ansible_collections.numaguard.kubelet.plugins.module_utils._report.classes import hardware_class
    from ansible_collections.numaguard.kubelet.tests.fleet import topologies

    # the bundled topology's class (a host with hugepage pools changed gets its topology's settings)
    host = fleet.host(name)
    root = str(scratch / name)
    topologies.write_tree(host["topology"], root, hostname=name)
    group = hardware_class(read_topology(root).to_facts())["group"]
    with open(os.path.join(GROUP_VARS, group + ".yml")) as handle:
        return yaml.safe_load(handle)["kubelet_numa_settings"]


def _validate_verdicts(junit):
    verdicts = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        verdicts[case.get("name")] = "refused" if (case.find("failure") is not None or case.find("error") is not None) else "ok"
    return verdicts


def _apply_verdicts(output, names):
    summary = output[output.find("Per-host summary"):]
    verdicts = {}
    for name in names:
        if re.search(r"\b%s: (would change|unchanged)" % re.escape(name), summary):
            verdicts[name] = "ok"
        elif re.search(r"\b%s: failed" % re.escape(name), summary):
            verdicts[name] = "refused"
    return verdicts


def test_validate_and_apply_check_agree_on_every_example_class(fleet, tmp_path):
    names = fleet.names
    # the odd host (pools changed) gets settings the kubelet refuses
    refused = ([h["name"] for h in fleet.hosts if h.get("hugepages")] or names)[-1]
    host_vars = tmp_path / "host_vars"
    host_vars.mkdir()
    for name in names:
        settings = _class_settings(fleet, name, tmp_path / "trees")
        if name == refused:
            settings = dict(settings, cpuManagerPolicy="static", reservedSystemCPUs="0,4095")
        (host_vars / (name + ".yml")).write_text(yaml.safe_dump({"kubelet_numa_settings": settings}))
    with open(fleet.inventory) as handle:
        (tmp_path / "inventory.yml").write_text(handle.read())
    fake = "/usr/bin/python3 %s" % FAKE
    extra = tmp_path / "vars.json"
    extra.write_text(json.dumps({
        "kubelet_numa_kubelet_version": VERSION,
        "kubelet_numa_kubelet_config_dir": "/etc/kubernetes/kubelet.conf.d",
        "kubelet_numa_health_url": "http://{{ fleet_loopback }}:10248/healthz",
        "kubelet_numa_service_status_cmd": fake + " status",
    }))
    inventory = str(tmp_path / "inventory.yml")
    junit = str(tmp_path / "validate.xml")
    validate = fleet.playbook("playbooks/validate.yml", "-e", "@" + str(extra), "-e", "validate_junit_file=" + junit,
                              "-e", "validate_fail=false", inventory=inventory, timeout=900)
    assert validate.returncode == 0, validate.stdout[-4000:]
    check = fleet.playbook("playbooks/apply.yml", "--check", "-e", "@" + str(extra), inventory=inventory, timeout=900)
    from_validate = _validate_verdicts(junit)
    from_apply = _apply_verdicts(check.stdout, names)
    assert sorted(from_validate) == sorted(names), (from_validate, validate.stdout[-3000:])
    assert sorted(from_apply) == sorted(names), (from_apply, check.stdout[-4000:])
    assert from_validate == from_apply, (from_validate, check.stdout[check.stdout.find("Per-host summary"):][:6000])
    assert [n for n in names if from_validate[n] == "refused"] == [refused], from_validate
    # both name the same reason
    assert "reserved-cpus: 0,4095 is not a subset of online-cpus" in check.stdout, check.stdout[-4000:]
    assert "reserved-cpus: 0,4095 is not a subset of online-cpus" in validate.stdout, validate.stdout[-4000:]
