# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 23, case 1: one schema for every kubelet setting, whatever its source.

A KubeletConfiguration file or drop-in the collection does not own, or a field given through
``kubelet_flags``, is checked against the same schema as the ``settings`` option: a wrong type is
an error naming the file (or the flags), the key and the value, never Python's own text.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission_inputs import AdmissionInputError
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import KubeletConfigError, load_kubelet_config
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.flags import flags_to_config
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.plan import plan_change

HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

#: (YAML line, the key path and value the message must name)
WRONG_TYPES = [
    ("featureGates: [a]\n", "featureGates: expected object, got array ['a']"),
    ("featureGates: a\n", "featureGates: expected object, got string 'a'"),
    ("featureGates: {A: 'yes'}\n", "featureGates.A: expected boolean, got string 'yes'"),
    ("kubeReserved: [a]\n", "kubeReserved: expected object, got array ['a']"),
    ("kubeReserved: 5\n", "kubeReserved: expected object, got integer 5"),
    ("systemReserved: {cpu: [1]}\n", "systemReserved.cpu: expected string or integer, got array [1]"),
    ("cpuManagerPolicyOptions: [x]\n", "cpuManagerPolicyOptions: expected object, got array ['x']"),
    ("topologyManagerPolicyOptions: 3\n", "topologyManagerPolicyOptions: expected object, got integer 3"),
    ("reservedMemory: {a: 1}\n", "reservedMemory: expected array, got object {'a': 1}"),
    ("reservedMemory: [5]\n", "reservedMemory[0]: expected object, got integer 5"),
    ("reservedMemory: [{numaNode: x, limits: {memory: 1Gi}}]\n", "reservedMemory[0].numaNode: expected integer, got string 'x'"),
    ("evictionHard: [a]\n", "evictionHard: expected object, got array ['a']"),
    ("evictionHard: {memory.available: 5}\n", "evictionHard.memory.available: expected string, got integer 5"),
    ("reservedSystemCPUs: [1]\n", "reservedSystemCPUs: expected string or integer, got array [1]"),
    ("cpuManagerPolicy: 5\n", "cpuManagerPolicy: expected string, got integer 5"),
]


@pytest.fixture
def host(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "config.yaml").write_text(HEADER + "cpuManagerPolicy: none\n")
    return tmp_path


@pytest.mark.parametrize("line,named", WRONG_TYPES)
@pytest.mark.parametrize("where", ["main", "dropin"])
@pytest.mark.parametrize("mode", ["dropin", "merge"])
def test_wrong_type_in_a_host_file_names_file_key_and_value(host, line, named, where, mode):
    bad = host / "config.yaml" if where == "main" else host / "conf.d" / "10-other.conf"
    bad.write_text(HEADER + line)
    with pytest.raises(KubeletConfigError) as err:
        plan_change({"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"}, mode=mode, config=str(host / "config.yaml"),
                    config_dir=str(host / "conf.d"), root_dir=str(host), kubelet_version="1.31")
    assert str(bad) in str(err.value)
    assert named in str(err.value)


@pytest.mark.parametrize("line,named", WRONG_TYPES[:4])
def test_every_reader_of_host_files_applies_the_schema(host, line, named):
    (host / "conf.d" / "10-other.conf").write_text(HEADER + line)
    with pytest.raises(KubeletConfigError) as err:
        load_kubelet_config(str(host / "config.yaml"), str(host / "conf.d"))
    assert "drop-in kubelet config file %s: %s" % (host / "conf.d" / "10-other.conf", named) in str(err.value)


def test_unmanaged_keys_and_nulls_are_not_the_schema_s_business(host):
    (host / "conf.d" / "10-other.conf").write_text(HEADER + "clusterDomain: x\nfeatureGates: null\nreservedMemory:\n"
                                                   "- numaNode: 0\n  limits: {memory: 1Gi}\n  extra: kept\n")
    merged = load_kubelet_config(str(host / "config.yaml"), str(host / "conf.d"))
    assert merged["reservedMemory"][0]["extra"] == "kept"  # the kubelet's lenient decoding keeps going


def test_config_fields_given_as_kubelet_flags_go_through_the_schema():
    with pytest.raises(AdmissionInputError) as err:
        flags_to_config({"featureGates": ["a"]})
    assert "kubelet_flags: featureGates: expected object, got array ['a']" in str(err.value)
    assert flags_to_config({"featureGates": {"A": True}})[0] == {"featureGates": {"A": True}}


def test_a_kubelet_config_dict_option_goes_through_the_schema():
    from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.admission_check import run_check

    topology = {"nodes": [{"id": 0, "cpus": [0, 1], "memory_total_bytes": 8 << 30, "memory_free_bytes": 8 << 30,
                           "hugepages": {}, "distances": {"0": 10}}]}
    pod = {"metadata": {"name": "web"}, "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}
    with pytest.raises(AdmissionInputError) as err:
        run_check({"pod": pod, "topology": topology, "kubelet_config": {"featureGates": 1.5}, "cpu_manager_state": "",
                   "memory_manager_state": "", "kubelet_version": "1.31"})
    assert str(err.value) == "kubelet_config: featureGates: expected object, got number 1.5"
