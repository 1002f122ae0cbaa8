# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Pod model: API-server validation and defaulting, QoS class, effective requests and limits."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import (
    InvalidPod,
    Pod,
    pod_limits,
    pod_requests,
)

GI = 1 << 30


def manifest(containers=None, init=None, **spec):
    body = {"containers": containers if containers is not None else [{"name": "c"}]}
    if init is not None:
        body["initContainers"] = init
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "prod"}, "spec": body}


def c(name="c", requests=None, limits=None, **extra):
    resources = {}
    if requests is not None:
        resources["requests"] = requests
    if limits is not None:
        resources["limits"] = limits
    entry = {"name": name, "resources": resources}
    entry.update(extra)
    return entry


G = {"cpu": "2", "memory": "1Gi"}

QOS_CASES = [
    ("no resources", manifest(), "BestEffort"),
    ("limits only: requests default to limits", manifest([c(limits=G)]), "Guaranteed"),
    ("requests equal limits", manifest([c(requests=G, limits=G)]), "Guaranteed"),
    ("fractional cpu is still guaranteed", manifest([c(limits={"cpu": "500m", "memory": "1Gi"})]), "Guaranteed"),
    ("memory only", manifest([c(limits={"memory": "1Gi"})]), "Burstable"),
    ("requests below limits", manifest([c(requests={"cpu": "1", "memory": "1Gi"}, limits=G)]), "Burstable"),
    ("requests only", manifest([c(requests=G)]), "Burstable"),
    ("one guaranteed, one best-effort", manifest([c("a", limits=G), c("b")]), "Burstable"),
    ("init container without resources", manifest([c(limits=G)], init=[c("i")]), "Burstable"),
    ("guaranteed init and app", manifest([c(limits=G)], init=[c("i", limits=G)]), "Guaranteed"),
    ("extended resource does not matter", manifest([c(limits={"cpu": "1", "memory": "1Gi", "example.com/gpu": "1"})]),
     "Guaranteed"),
    ("zero limits are ignored", manifest([c(limits={"cpu": "0", "memory": "0"})]), "BestEffort"),
    ("status.qosClass wins", dict(manifest([c(limits=G)]), status={"qosClass": "BestEffort"}), "BestEffort"),
    ("pod-level resources decide", manifest([c()], resources={"limits": G}), "Guaranteed"),
    ("pod-level requests default to the containers'", manifest([c(requests={"cpu": "1"})], resources={"limits": G}),
     "Burstable"),
    ("an empty pod-level block decides too", manifest([c(limits=G)], resources={}), "BestEffort"),
    ("pod-level requests only", manifest([c()], resources={"requests": G}), "Burstable"),
    ("pod-level memory limit only", manifest([c()], resources={"limits": {"memory": "1Gi"}}), "Burstable"),
]


@pytest.mark.parametrize("description,body,expected", QOS_CASES, ids=[x[0] for x in QOS_CASES])
def test_qos_class(description, body, expected):
    assert Pod.from_manifest(body).qos_class == expected


def test_pod_level_resources_ignored_when_the_gate_is_off():
    pod = Pod.from_manifest(manifest([c(requests={"cpu": "1"})], resources={"limits": G}),
                            feature_gates={"PodLevelResources": False})
    assert pod.qos_class == "Burstable" and not pod.has_pod_level_resources


ERRORS = [
    ([], "pod manifest must be a mapping (a Pod object), got list"),
    ({"kind": "Deployment"}, 'kind: Unsupported value: "Deployment": only "Pod" manifests can be checked '
                             "(for workloads, pass their pod template as a Pod)"),
    ({"apiVersion": "apps/v1", "kind": "Pod"}, 'apiVersion: Unsupported value: "apps/v1": a Pod is "v1"'),
    ({"kind": "Pod", "spec": {}}, "metadata: Required value"),
    ({"metadata": {"name": "Web"}, "spec": {"containers": [{"name": "c"}]}},
     'metadata.name: Invalid value: "Web": a lowercase RFC 1123 subdomain must consist of lower case '
     "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
     "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"),
    ({"metadata": {"name": "w", "namespace": "a.b"}, "spec": {"containers": [{"name": "c"}]}},
     'metadata.namespace: Invalid value: "a.b": must be a lowercase RFC 1123 label'),
    ({"metadata": {"name": "w"}, "spec": {"containers": []}},
     "spec.containers: Required value: a pod needs at least one container"),
    (manifest([c("a"), c("a")]), 'spec.containers[1].name: Duplicate value: "a" (already used by spec.containers[0])'),
    (manifest([c("a")], init=[c("a")]),
     'spec.containers[0].name: Duplicate value: "a" (already used by spec.initContainers[0])'),
    (manifest([{"resources": {}}]), "spec.containers[0].name: Required value"),
    (manifest([c(limits={"cpu": "two"})]),
     'spec.containers[0].resources.limits[cpu]: Invalid value: "two": quantities must match the regular expression '
     "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' "
     "(quantity 'two' has an unknown suffix 'two' (expected one of Ki, Mi, Gi, Ti, Pi, Ei, n, u, m, k, "
     "M, G, T, P, E or an exponent such as e3; suffixes are case-sensitive))"),
    (manifest([c(limits={"cpu": True})]),
     "spec.containers[0].resources.limits[cpu]: Invalid value: True: must be a quantity (string or number)"),
    (manifest([c(requests={"cpu": "-1"})]),
     'spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0'),
    (manifest([c(requests={"cpu": "3"}, limits={"cpu": "2"})]),
     'spec.containers[0].resources.requests[cpu]: Invalid value: "3": must be less than or equal to cpu '
     "limit of 2"),
    (manifest([c(requests={"gpu": "1"})]),
     'spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource for '
     "containers (cpu, memory, ephemeral-storage, hugepages-<size>) or a fully-qualified extended resource name"),
    (manifest([c(requests={"example.com/gpu": "1"})]),
     "spec.containers[0].resources.limits[example.com/gpu]: Required value: Limit must be set for non "
     "overcommitable resources"),
    (manifest([c(requests={"example.com/gpu": "1"}, limits={"example.com/gpu": "2"})]),
     'spec.containers[0].resources.requests[example.com/gpu]: Invalid value: "1": must be equal to '
     "example.com/gpu limit of 2"),
    (manifest([c(limits={"example.com/gpu": "500m"})]),
     'spec.containers[0].resources.limits[example.com/gpu]: Invalid value: "500m": must be an integer'),
    (manifest([c(limits={"hugepages-2Mi": "4Mi"})]),
     "spec.containers[0].resources: Forbidden: HugePages require cpu or memory"),
    (manifest([c(limits={"hugepages-2Mx": "4Mi", "memory": "1Gi"})]),
     'spec.containers[0].resources.limits[hugepages-2Mx]: Invalid value: "hugepages-2Mx": must be '
     "hugepages-<page size> with a valid, positive page size quantity"),
    (manifest([c()], init=[c("i", restartPolicy="OnFailure")]),
     'spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": supported values: "Always"'),
    (manifest([c(restartPolicy="Always")]),
     'spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers (got "Always")'),
    (manifest([c()], resources={"limits": {"example.com/gpu": "1"}}),
     'spec.resources.limits[example.com/gpu]: Unsupported value: "example.com/gpu": supported values: '
     '"cpu", "memory", "hugepages-<size>"'),
    (manifest([c(requests={"cpu": "3"})], resources={"requests": {"cpu": "2"}}),
     'spec.resources.requests[cpu]: Invalid value: "2": must be greater than or equal to aggregate '
     "container requests of 3"),
    (manifest([c(limits={"cpu": "3", "memory": "1Gi"})], resources={"limits": {"cpu": "2"}}),
     'spec.resources.requests[cpu]: Invalid value: "3": must be less than or equal to cpu limit of 2'),
    (manifest([c(limits={"cpu": "3", "memory": "1Gi"})], resources={"requests": {"cpu": "3"}, "limits": {"cpu": "4"}},
              initContainers=[c("i", limits={"cpu": "5", "memory": "1Gi"})]),
     'spec.resources.requests[cpu]: Invalid value: "3": must be greater than or equal to aggregate container '
     "requests of 5"),
    (manifest([c(requests={"cpu": "1"}, limits={"cpu": "5"})], resources={"requests": {"cpu": "3"}, "limits": {"cpu": "4"}}),
     'spec.resources.limits[cpu]: Invalid value: "4": must be greater than or equal to container c limit of 5'),
    (dict(manifest(), status={"qosClass": "Gold"}),
     'status.qosClass: Unsupported value: "Gold": supported values: "Guaranteed", "Burstable", "BestEffort"'),
]


@pytest.mark.parametrize("body,message", ERRORS, ids=[case[-1][:60] for case in ERRORS])
def test_invalid_manifests(body, message):
    with pytest.raises(InvalidPod) as info:
        Pod.from_manifest(body)
    assert str(info.value) == message


def test_identity_defaults_and_units():
    pod = Pod.from_manifest(manifest([c(limits={"cpu": 1.5, "memory": "1Gi", "hugepages-1Gi": "2Gi",
                                                "example.com/gpu": 2})]))
    assert (pod.name, pod.namespace, pod.key) == ("web", "prod", "prod/web")
    assert pod.uid == Pod.from_manifest(manifest()).uid  # deterministic from namespace/name
    assert pod.containers[0].requests == {"cpu": 1500, "memory": GI, "hugepages-1Gi": 2 * GI, "example.com/gpu": 2}
    assert pod.containers[0].to_dict()["requests"]["cpu"] == "1500m"
    explicit = Pod.from_manifest(dict(manifest(), metadata={"name": "w", "uid": "1234"}))
    assert explicit.uid == "1234" and explicit.namespace == "default"


def test_generate_name_gives_a_stable_name():
    pod = Pod.from_manifest({"metadata": {"generateName": "job-"}, "spec": {"containers": [{"name": "c"}]}})
    assert pod.name.startswith("job-") and len(pod.name) == 9


def test_effective_requests_with_init_sidecars_and_overhead():
    body = manifest(
        [c("a", limits={"cpu": "1", "memory": "1Gi"}), c("b", limits={"cpu": "1", "memory": "2Gi"})],
        init=[c("i1", limits={"cpu": "4", "memory": "1Gi"}),
              c("s1", limits={"cpu": "1", "memory": "1Gi"}, restartPolicy="Always"),
              c("i2", limits={"cpu": "3", "memory": "4Gi", "example.com/gpu": "1"})],
        overhead={"cpu": "250m", "memory": "64Mi"})
    pod = Pod.from_manifest(body)
    # cpu: max(apps 2 + sidecar 1 = 3, i1 4, i2 3 + sidecar 1 = 4) + overhead
    assert pod_requests(pod) == {"cpu": 4250, "memory": 5 * GI + 64 * (1 << 20), "example.com/gpu": 1}
    assert pod_requests(pod, exclude_overhead=True) == {"cpu": 4000, "memory": 5 * GI, "example.com/gpu": 1}
    assert pod_limits(pod, exclude_overhead=True)["example.com/gpu"] == 1
    assert [x.name for x in pod.all_containers()] == ["i1", "s1", "i2", "a", "b"]
    assert pod.container("s1").is_sidecar and pod.container("i2").is_regular_init


def test_pod_level_resources_override_and_default():
    pod = Pod.from_manifest(manifest([c(requests={"cpu": "1"}), c("d", requests={"cpu": "500m"})],
                                     resources={"limits": {"cpu": "4", "memory": "2Gi"}}))
    # requests default to the containers' aggregate (cpu) or to the limits (memory)
    assert pod.pod_level_requests == {"cpu": 1500, "memory": 2 * GI}
    assert pod_requests(pod) == {"cpu": 1500, "memory": 2 * GI}
    assert pod.qos_class == "Burstable"


def _container_class(cpu_req, cpu_lim, mem_req, mem_lim):
    """Spec 2.1's per-container formulation."""
    if not any((cpu_req, cpu_lim, mem_req, mem_lim)):
        return "BestEffort"
    if cpu_req != cpu_lim or mem_req != mem_lim:
        return "Burstable"
    if cpu_req and mem_req:
        return "Guaranteed"
    if not cpu_req and not mem_req:
        return "BestEffort"
    return "Burstable"


RESOURCE = st.tuples(st.sampled_from([0, 1, 2]), st.sampled_from([0, 1, 2]), st.booleans())


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(RESOURCE, RESOURCE), min_size=1, max_size=4))
def test_qos_matches_the_per_container_formulation(containers):
    entries, classes = [], []
    for index, ((cpu_req, cpu_extra, cpu_set), (mem_req, mem_extra, mem_set)) in enumerate(containers):
        requests, limits = {}, {}
        cpu_lim, mem_lim = cpu_req + cpu_extra, mem_req + mem_extra
        if cpu_set:
            requests["cpu"], limits["cpu"] = str(cpu_req), str(cpu_lim)
        if mem_set:
            requests["memory"], limits["memory"] = "%dGi" % mem_req, "%dGi" % mem_lim
        # zero limits behave as "not set" for QoS
        classes.append(_container_class(cpu_req if cpu_set else 0, cpu_lim if cpu_set else 0,
                                        mem_req if mem_set else 0, mem_lim if mem_set else 0))
        entries.append(c("c%d" % index, requests=requests, limits=limits))
    if all(x == "Guaranteed" for x in classes):
        expected = "Guaranteed"
    elif all(x == "BestEffort" for x in classes):
        expected = "BestEffort"
    else:
        expected = "Burstable"
    assert Pod.from_manifest(manifest(entries)).qos_class == expected
