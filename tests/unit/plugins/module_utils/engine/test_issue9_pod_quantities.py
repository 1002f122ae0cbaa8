# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 9 audit: quantities in a pod's requests, limits and overhead are whitespace-trimmed as
the API decodes them (apimachinery ``Quantity.UnmarshalJSON`` calls ``strings.TrimSpace`` before
``ParseQuantity``), so a pod the kubelet accepts is not refused here; a bare quantity string
(flags, string maps) stays strict."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod, pod_limits, pod_requests
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import InvalidQuantity, parse_quantity

GI = 1 << 30


def manifest(requests, limits, overhead=None, pod_resources=None):
    spec = {"containers": [{"name": "c", "image": "x", "resources": {"requests": requests, "limits": limits}}]}
    if overhead is not None:
        spec["overhead"] = overhead
    if pod_resources is not None:
        spec["resources"] = pod_resources
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"}, "spec": spec}


@pytest.mark.parametrize("space", [" ", "\t", "\n", " \r\n"])
def test_requests_limits_and_overhead_are_trimmed(space):
    spaced = manifest({"cpu": space + "2", "memory": "1Gi" + space}, {"cpu": "2" + space, "memory": space + "1Gi" + space},
                      overhead={"cpu": space + "250m", "memory": "64Mi" + space})
    plain = manifest({"cpu": "2", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"},
                     overhead={"cpu": "250m", "memory": "64Mi"})
    a, b = Pod.from_manifest(spaced), Pod.from_manifest(plain)
    assert pod_requests(a) == pod_requests(b) == {"cpu": 2250, "memory": GI + (64 << 20)}
    assert pod_limits(a) == pod_limits(b)
    assert a.qos_class == b.qos_class == "Guaranteed"   # trimmed requests equal the limits


def test_pod_level_resources_are_trimmed_too():
    pod = Pod.from_manifest(manifest({"cpu": "1"}, {"cpu": "1"},
                                     pod_resources={"requests": {"cpu": " 2", "memory": "2Gi "},
                                                    "limits": {"cpu": " 2", "memory": "2Gi "}}))
    assert pod.qos_class == "Guaranteed"


def test_bare_quantities_stay_strict():
    with pytest.raises(InvalidQuantity):
        parse_quantity(" 2")
    with pytest.raises(InvalidQuantity):
        parse_quantity("1Gi ")
