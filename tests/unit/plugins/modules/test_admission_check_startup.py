# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""admission_check (run_check) on the two start-up classes of issue 21: reservations above the
node's capacity refuse to start (validateNodeAllocatable), and prefer-closest-numa-nodes on sparse
NUMA ids starts, then crashes at the pod whose merge compares two different equal-width masks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.admission_check import run_check
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import check_pod_report
from ansible_collections.numaguard.kubelet.tests.fleet import topologies

GIB = 1 << 30
PREFER_CLOSEST = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "topologyManagerPolicy": "best-effort",
                  "topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": "true"}}


def pod(name, cpu=None):
    container = {"name": "c", "image": "x"}
    if cpu is not None:
        resources = {"cpu": str(cpu), "memory": "256Mi"}
        container["resources"] = {"requests": dict(resources), "limits": dict(resources)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": {"containers": [container]}}


def facts(ids):
    return {"nodes": [{"id": n, "cpus": [2 * i, 2 * i + 1], "memory_total_bytes": 4 * GIB,
                       "distances": dict((str(p), 10 if p == n else 21) for p in ids)} for i, n in enumerate(ids)]}


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("startup") / "h01")
    topologies.write_tree("sparse-ids", path, hostname="h01")
    os.makedirs(os.path.join(path, "var", "lib", "kubelet"), exist_ok=True)
    return path


def params(root, **kw):
    base = {"root": root, "pod": None, "pod_file": None, "pod_file_content": None, "topology": None,
            "kubelet_config": None, "kubelet_config_dir": None, "kubelet_flags": None,
            "memory_manager_state": "", "cpu_manager_state": "", "devices": None,
            "device_allocations": None, "return_state": False, "merge_method": "fast", "kubelet_version": "1.32"}
    base.update(kw)
    return base


def test_reservations_above_capacity_refuse_to_start(root):
    config = {"kubeReserved": {"memory": "4Gi"}, "systemReserved": {"memory": "4Gi"}}  # + 100Mi > 8 GiB
    with pytest.raises(ValueError) as err:
        run_check(params(root, pod=pod("a", 1), topology=facts([0, 1]), kubelet_config=config))
    assert str(err.value).startswith('invalid Node Allocatable configuration. Resource "memory" has a reservation of ')
    config["systemReserved"] = {"memory": "3Gi"}
    result = run_check(params(root, pod=pod("a", 1), topology=facts([0, 1]), kubelet_config=config))
    assert result["pods"][0]["verdict"] == "admitted"


@pytest.mark.parametrize("ids, panic", [
    ([0, 2], "runtime error: index out of range [2] with length 2"),
    ([0, 1, 3], "runtime error: index out of range [3] with length 3"),
])
def test_sparse_ids_crash_at_the_guaranteed_pod(root, ids, panic):
    result = run_check(params(root, pod=[pod("be"), pod("g", 1), pod("after", 1)], topology=facts(ids),
                              kubelet_config=PREFER_CLOSEST))
    be, crashed, after = result["pods"]
    assert be["verdict"] == "admitted"
    assert crashed["verdict"] == "crashed" and not crashed["admitted"]
    assert crashed["crash"] == {"pod": "default/g", "panic": panic}
    assert after["verdict"] == "crashed" and after["crash"]["pod"] == "default/g"
    assert "default/g crashes the kubelet: panic: %s" % panic in result["msg"]
    assert "default/after not admitted: the kubelet crashed at default/g" in result["msg"]
    # check_pod.yml's report: the host is a failure of its own
    report = check_pod_report({"h01": result}, {}, {}, ["h01"])
    assert report["crashed"] == ["h01"] and report["hosts"][0]["status"] == "crashed"
    assert "the kubelet crashes (panic) on 1: h01" in report["headline"]


def test_sparse_ids_single_numa_node_admits(root):
    config = dict(PREFER_CLOSEST, topologyManagerPolicy="single-numa-node")
    result = run_check(params(root, pod=[pod("g", 1), pod("h", 1)], topology=facts([0, 2]), kubelet_config=config))
    assert [p["verdict"] for p in result["pods"]] == ["admitted", "admitted"]
    assert all(p["crash"] is None for p in result["pods"])


def test_bundled_sparse_machine_from_sysfs_crashes(root):
    """The POWER9 tree (nodes 0,1,2,33,34; sysfs distance files of five entries)."""
    result = run_check(params(root, pod=pod("g", 1), kubelet_config=PREFER_CLOSEST))
    assert result["pods"][0]["verdict"] == "crashed"
    assert result["pods"][0]["crash"]["panic"] == "runtime error: index out of range [33] with length 5"
