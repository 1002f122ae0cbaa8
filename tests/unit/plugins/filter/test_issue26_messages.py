# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 26, item 6: messages name the file or host and give only true fixes.

A reservedMemory the kubelet cannot read or convert is one error (and the sum it truly fails),
never followed by "Static needs a non-empty reservedMemory ... e.g. 0:memory=100Mi"; sysfs
fallback warnings say whose sysfs they are about; a missing pod file is said to be missing on
the controller, without Ansible's remote_src hint."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest
from ansible.errors import AnsibleError
from ansible.parsing.dataloader import DataLoader

from ansible_collections.numaguard.kubelet.plugins.action.admission_check import ActionModule
from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_check import reserved_memory_check
from ansible_collections.numaguard.kubelet.plugins.module_utils._backends import numa_facts as numa_facts_backend
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.facts import warning_prefix
from ansible_collections.numaguard.kubelet.tests.fleet import topologies

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
INTEL = os.path.join(REPO, "playbooks", "examples", "validate", "topologies", "intel-2s.json")
BASE = {"memoryManagerPolicy": "Static", "kubeReserved": {"memory": "1Gi"}, "systemReserved": {"memory": "512Mi"}}


def _check(reserved_memory):
    with open(INTEL) as handle:
        facts = json.load(handle)
    result = reserved_memory_check(facts, kubelet_config=dict(BASE, reservedMemory=reserved_memory),
                                   kubelet_version="1.31", errors="report")
    return result, [f["rule"] for f in result["findings"] if f["severity"] == "error"]


@pytest.mark.parametrize("reserved_memory", [
    [{"numaNode": 0, "limits": {"memory": "1.5Gi"}}],
    "0:memory=1.5Gi",
    [{"numaNode": 0, "limits": {"memory": "1.5"}}],
])
def test_an_unconvertible_quantity_is_not_followed_by_a_false_empty_reservation_error(reserved_memory):
    result, rules = _check(reserved_memory)
    # the kubelet's validateReservedMemory (the sum) runs before convertReserved (the int64
    # conversion); NewPolicyStatic's "you should specify the system reserved memory" is never reached
    assert rules == ["reserved-memory-integer", "reserved-memory-sum"], result["errors"]
    assert not any("0:memory=100Mi" in e for e in result["errors"]), result["errors"]


def test_an_unparsable_reservation_is_one_error():
    result, rules = _check("1.5Gi")
    assert rules == ["reserved-memory-syntax"], result["errors"]
    assert not any("0:memory=100Mi" in e or "1636Mi" in e for e in result["errors"]), result["errors"]
    # kubelet_numa_settings (a KubeletConfiguration) takes a list, not the flag's string: the fix says both
    assert "in a KubeletConfiguration such as kubelet_numa_settings reservedMemory is a list" in result["errors"][0]


def test_an_empty_reservation_under_static_still_says_so():
    result, rules = _check([])
    assert "static-needs-reservation" in rules, result["errors"]


def test_warning_prefix_names_the_host_or_the_snapshot():
    assert warning_prefix("/", "h07") == "host h07"
    assert warning_prefix("//", "h07") == "host h07"
    assert warning_prefix("/srv/snap/h07") == "snapshot /srv/snap/h07"
    assert warning_prefix("/") == "host %s" % os.uname().nodename


class _Module:
    """The module object the backend uses (params, warn, fail_json, exit_json)."""

    def __init__(self, params):
        self.params = params
        self.warnings = []
        self.result = None

    def warn(self, text):
        self.warnings.append(text)

    def exit_json(self, **result):
        self.result = result
        raise SystemExit(0)

    def fail_json(self, **result):
        self.result = dict(result, failed=True)
        raise SystemExit(1)


def test_sysfs_fallback_warnings_name_the_snapshot(tmp_path):
    root = tmp_path / "h03"
    topologies.write_tree("intel-2s", str(root), hostname="h03")
    os.remove(str(root / "sys/devices/system/node/node0/cpulist"))
    module = _Module({"root": str(root)})
    with pytest.raises(SystemExit):
        numa_facts_backend.run(module)
    fact = module.result["ansible_facts"]["numa_topology"]["warnings"]
    bare = "/sys/devices/system/node/node0/cpulist: does not exist; used cpumap (hex mask)"
    assert fact == [bare]  # the fact keeps the bare text (reports name the host on their rows)
    assert module.warnings == ["snapshot %s: %s" % (root, bare)]


class _Task:
    def __init__(self, path):
        self._path = path

    def get_search_path(self):
        return [self._path]


def test_a_missing_pod_file_is_missing_on_the_controller_without_the_remote_src_hint(tmp_path):
    action = object.__new__(ActionModule)
    action._loader = DataLoader()
    action._task = _Task(str(tmp_path))
    action._role = None
    missing = str(tmp_path / "pod.yaml")
    with pytest.raises(AnsibleError) as err:
        action._read_manifests(missing)
    text = str(err.value)
    assert text.startswith("pod_file: %s does not exist on the controller" % missing), text
    assert "remote_src" not in text and "remote" not in text.replace("not on the hosts", ""), text
    assert text.count("\n") == 0, text


def test_an_unreachable_host_is_worded_once():
    from ansible_collections.numaguard.kubelet.plugins.filter.validate_hosts import validate_hosts
    why = "unreachable: Failed to connect to the host via ssh: Connection refused"
    out = validate_hosts({"h01": {"_ng_gather_error": why, "kubelet_numa_settings": {}}}, ["h01"])
    result = out["results"]["h01"]
    assert result["errors"] == [why] and result["input_error"] == why, result
