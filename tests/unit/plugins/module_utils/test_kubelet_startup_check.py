# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""kubelet_config's preflight and validate.yml (``plan.startup_check`` / ``settings_verdict``) on the
start-up classes of issue 21: they decide with the engine's start-up path (``_engine/startup.py``)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.startup import panics_possible
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.plan import settings_verdict

GIB = 1 << 30
PREFER_CLOSEST = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "topologyManagerPolicy": "best-effort",
                  "topologyManagerPolicyOptions": {"prefer-closest-numa-nodes": "true"}}


def machine(ids):
    return Topology.from_facts({"nodes": [
        {"id": n, "cpus": [2 * i, 2 * i + 1], "memory_total_bytes": 4 * GIB,
         "distances": dict((str(p), 10 if p == n else 21) for p in ids)} for i, n in enumerate(ids)]})


def test_sparse_ids_with_prefer_closest_start_with_a_crash_warning():
    errors, warnings = settings_verdict(PREFER_CLOSEST, "1.32", machine([0, 2]))
    assert errors == []
    crash = [w for w in warnings if "panics (index out of range)" in w]
    assert len(crash) == 1 and "NUMA ids (0, 2)" in crash[0]


def test_no_crash_warning_where_the_kubelet_cannot_panic():
    for settings, ids in ((PREFER_CLOSEST, [0, 1]),                                          # dense ids
                          (dict(PREFER_CLOSEST, topologyManagerPolicy="single-numa-node"), [0, 2]),
                          (dict(PREFER_CLOSEST, topologyManagerPolicyOptions={}), [0, 2])):
        errors, warnings = settings_verdict(settings, "1.32", machine(ids))
        assert errors == [] and not [w for w in warnings if "panics" in w], (settings, ids)
        assert not panics_possible(machine(ids), settings)
    assert panics_possible(machine([0, 1, 3]), PREFER_CLOSEST)


def test_reservations_above_capacity_refuse():
    errors, _warnings = settings_verdict({"kubeReserved": {"memory": "4Gi"}, "systemReserved": {"memory": "4Gi"}},
                                         "1.32", machine([0, 1]))
    assert len(errors) == 1 and "invalid Node Allocatable configuration. Resource \"memory\" has a reservation of" in errors[0]


def test_recommend_drops_a_candidate_that_crashes_the_kubelet():
    from ansible_collections.numaguard.kubelet.plugins.module_utils._recommend.fill import evaluate

    resources = {"cpu": "1", "memory": "256Mi"}
    template = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "w"},
                "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": resources, "limits": resources}}]}}
    shapes = [{"name": "w", "replicas": 2, "template": template}]
    out = evaluate(machine([0, 2]), {"settings": PREFER_CLOSEST}, shapes, "1.32", 8 * GIB)
    assert "result" not in out and len(out["errors"]) == 1
    assert out["errors"][0].startswith("the kubelet crashes at pod default/w-1: panic: runtime error: index out of range [2]")
    dense = evaluate(machine([0, 1]), {"settings": PREFER_CLOSEST}, shapes, "1.32", 8 * GIB)
    assert "errors" not in dense and dense["result"]["admitted"] == 2
