# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Device manager: declared inventory, hints, allocation, reuse, checkpoint reading."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.devicemanager import DeviceAllocationError, DeviceManager
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.devicemanager_inputs import (
    DeviceInventory,
    InvalidDeviceInventory,
    natural_key,
    parse_device_checkpoint,
    read_allocations,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint, hint_map_to_dict

GPU = "nvidia.com/gpu"


def pod(gpus=1, init=None, sidecar=None, name="p"):
    def ctr(cname, count, **extra):
        entry = {"name": cname, "resources": {"limits": {"cpu": "1", "memory": "1Gi", GPU: str(count)}}}
        entry.update(extra)
        return entry
    spec = {"containers": [ctr("c", gpus)]}
    inits = []
    if init is not None:
        inits.append(ctr("i", init))
    if sidecar is not None:
        inits.append(ctr("s", sidecar, restartPolicy="Always"))
    if inits:
        spec["initContainers"] = inits
    return Pod.from_manifest({"metadata": {"name": name, "uid": name + "-uid"}, "spec": spec})


def manager(devices, nodes=(0, 1), allocations=None):
    return DeviceManager(nodes, DeviceInventory.from_spec(devices), read_allocations(allocations))


def h(*nodes, preferred=True):
    return {"numa_affinity": list(nodes), "preferred": preferred}


def hints(m, p, name="c"):
    return hint_map_to_dict(m.get_topology_hints(p, p.container(name)))


@pytest.mark.parametrize("devices,request_count,expected", [
    ({GPU: {"gpu0": 0}}, 1, [h(0), h(0, 1, preferred=False)]),                       # pkg/kubelet/cm/devicemanager/topology_hints.go
    ({GPU: {"gpu0": 0, "gpu1": 1}}, 1, [h(0), h(1), h(0, 1, preferred=False)]),
    ({GPU: {"gpu0": 0, "gpu1": 1}}, 2, [h(0, 1)]),
    ({GPU: {"gpu0": [0, 1]}}, 1, [h(0), h(1), h(0, 1, preferred=False)]),            # a device on two nodes
    ({GPU: {"gpu0": 0, "gpu1": {"numa": 0, "healthy": False}, "gpu2": 1}}, 2,      # preferred is theoretical
     [h(0, 1, preferred=False)]),
    ({GPU: {"gpu0": 0, "gpu1": None}}, 2, []),  # no-topology devices never count toward a mask
    ({GPU: {"gpu0": 0}}, 2, []),
    ({GPU: {"gpu0": None, "gpu1": None}}, 1, None),                                  # no topology: don't care
    ({GPU: {"gpu0": 0, "gpu1": 1}}, 0, [h(0), h(1), h(0, 1, preferred=False)]),      # a zero limit
])
def test_container_hints(devices, request_count, expected):
    m = manager(devices)
    assert hints(m, pod(request_count)) == {GPU: expected}


def test_unregistered_resources_are_ignored_and_sparse_ids_kept():
    m = manager({GPU: {"gpu0": 33}}, nodes=(0, 33))
    p = Pod.from_manifest({"metadata": {"name": "x"}, "spec": {"containers": [
        {"name": "c", "resources": {"limits": {"example.com/fpga": "1", GPU: "1"}}}]}})
    assert hints(m, p) == {GPU: [h(33), h(0, 33, preferred=False)]}


def test_regenerated_and_mismatched_hints_for_allocated_devices():
    allocations = {"p-uid": {"c": {GPU: ["gpu1"]}}}
    m = manager({GPU: {"gpu0": 0, "gpu1": 1}}, allocations=allocations)
    assert hints(m, pod(1)) == {GPU: [h(1), h(0, 1, preferred=False)]}
    assert hints(m, pod(2)) == {GPU: []}


def test_pod_hints_use_pod_limits_and_ignore_reuse():
    m = manager({GPU: {"gpu0": 0, "gpu1": 0, "gpu2": 1, "gpu3": 1}})
    # sidecar 1 + app 2 = 3 > init 2
    p = pod(2, init=2, sidecar=1)
    assert m.pod_request(p) == {GPU: 3}
    assert hint_map_to_dict(m.get_pod_topology_hints(p)) == {GPU: [h(0, 1)]}


def test_allocation_prefers_aligned_devices_then_spills():
    m = manager({GPU: {"gpu0": 0, "gpu1": 1, "gpu2": 1, "gpu10": 1, "gpu3": None}})
    assert m.allocate(pod(2), "c", TopologyHint(BitMask(1), True)) == {GPU: ["gpu1", "gpu2"]}
    second = pod(3, name="q")
    assert m.allocate(second, "c", TopologyHint(BitMask(1), False)) == {GPU: ["gpu10", "gpu0", "gpu3"]}
    assert m.state()["free"] == {GPU: []}


def test_allocation_without_hint_takes_natural_order():
    m = manager({GPU: {"gpu10": 0, "gpu2": 1, "gpu9": 0}})
    assert m.allocate(pod(2), "c", None) == {GPU: ["gpu2", "gpu9"]}
    assert sorted(["gpu10", "gpu9", "gpu2"], key=natural_key) == ["gpu2", "gpu9", "gpu10"]


def test_init_devices_are_reused_by_app_and_sidecars_keep_theirs():
    m = manager({GPU: {"gpu0": 0, "gpu1": 1, "gpu2": 1}})
    p = pod(1, init=1, sidecar=1)
    m.allocate(p, "i", TopologyHint(BitMask(1), True))
    assert m.container_devices(p.uid, "i", GPU) == ["gpu1"]
    # the app's hints must include the node of the reusable init device
    assert hints(m, p, "c") == {GPU: [h(1), h(0, 1, preferred=False)]}
    m.allocate(p, "s", TopologyHint(BitMask(1), True))
    assert m.container_devices(p.uid, "s", GPU) == ["gpu1"]       # takes the reusable device
    m.allocate(p, "c", TopologyHint(BitMask(1), True))
    assert m.container_devices(p.uid, "c", GPU) == ["gpu2"]       # the sidecar kept gpu1
    assert m.devices_to_reuse[p.uid][GPU] == set()


@pytest.mark.parametrize("devices,allocations,request_count,message", [
    ({GPU: {"gpu0": 0}}, {"other": {"x": {GPU: ["gpu0"]}}}, 1,
     "requested number of devices unavailable for nvidia.com/gpu. Requested: 1, Available: 0"),
    ({GPU: {"gpu0": {"numa": 0, "healthy": False}}}, None, 1,
     "no healthy devices present; cannot allocate unhealthy devices nvidia.com/gpu"),
    ({}, {"other": {"x": {GPU: ["gpu0"]}}}, 1, "cannot allocate unregistered device nvidia.com/gpu"),
    ({GPU: {"gpu0": 0, "gpu1": 0}}, {"p-uid": {"c": {GPU: ["gpu0"]}}}, 2,
     'pod "p-uid" container "c" changed request for resource "nvidia.com/gpu" from 1 to 2'),
    ({GPU: {"gpu0": {"numa": 0, "healthy": False}, "gpu1": 0}}, {"p-uid": {"c": {GPU: ["gpu0"]}}}, 1,
     "previously allocated devices are no longer healthy; cannot allocate unhealthy devices nvidia.com/gpu"),
])
def test_allocation_errors(devices, allocations, request_count, message):
    m = manager(devices, allocations=allocations)
    with pytest.raises(DeviceAllocationError) as info:
        m.allocate(pod(request_count), "c", TopologyHint(BitMask(0), True))
    assert info.value.reason == "UnexpectedAdmissionError"
    assert info.value.message == "Allocate failed due to %s, which is unexpected" % message


def test_release_and_garbage_collection():
    m = manager({GPU: {"gpu0": 0, "gpu1": 1}})
    m.allocate(pod(1), "c", TopologyHint(BitMask(0), True))
    m.allocate(pod(1, name="q"), "c", TopologyHint(BitMask(1), True))
    m.remove("p-uid", "c")
    assert m.state()["free"] == {GPU: ["gpu0"]}
    m.remove_stale_state(["p-uid"])
    assert m.state() == {"allocations": {}, "free": {GPU: ["gpu0", "gpu1"]}}


@pytest.mark.parametrize("spec,message", [
    ([], "devices must be a mapping of resource name to devices, got list"),
    ({"gpu": {"a": 0}}, "devices: resource name 'gpu' must be a fully-qualified extended resource name such "
                        "as nvidia.com/gpu"),
    ({GPU: {"a": "x"}}, "devices[nvidia.com/gpu][a]: NUMA node must be an integer, got 'x'"),
    ({GPU: {"a": 64}}, "devices[nvidia.com/gpu][a]: NUMA node 64 out of range 0-63"),
    ({GPU: {"a": {"numa": 0, "healthy": "yes"}}}, "devices[nvidia.com/gpu][a].healthy must be true or false, got 'yes'"),
    ({GPU: {"a": {"node": 0}}}, "devices[nvidia.com/gpu][a]: unknown key(s) node (expected numa, healthy)"),
    ({GPU: [{"id": "a"}, {"id": "a"}]}, "devices[nvidia.com/gpu]: device 'a' is listed twice"),
    ({GPU: [{"numa": 0}]}, "devices[nvidia.com/gpu][0]: each device needs an id"),
    ({GPU: 3}, "devices[nvidia.com/gpu] must be a mapping of device id to NUMA node(s) or a list of devices, got 3"),
])
def test_inventory_errors(spec, message):
    with pytest.raises(InvalidDeviceInventory) as info:
        DeviceInventory.from_spec(spec)
    assert str(info.value) == message


def test_inventory_list_form_and_summary():
    inv = DeviceInventory.from_spec({GPU: [{"id": "gpu1", "numa": "0,1"}, {"id": 2, "numa": None, "healthy": False}]})
    assert inv.to_dict() == {GPU: {"2": {"numa": [], "healthy": False}, "gpu1": {"numa": [0, 1], "healthy": True}}}


def test_device_checkpoint_reader():
    text = json.dumps({"Data": {"PodDeviceEntries": [
        {"PodUID": "u1", "ContainerName": "c", "ResourceName": GPU, "DeviceIDs": {"0": ["gpu0"], "1": ["gpu1"]},
         "AllocResp": "e30="},
        {"PodUID": "u2", "ContainerName": "c", "ResourceName": GPU, "DeviceIDs": ["gpu2"], "AllocResp": ""}],
        "RegisteredDevices": {GPU: ["gpu0", "gpu1", "gpu2"]}}, "Checksum": 1})
    assert parse_device_checkpoint(text) == {
        "allocations": {"u1": {"c": {GPU: ["gpu0", "gpu1"]}}, "u2": {"c": {GPU: ["gpu2"]}}},
        "registered": {GPU: ["gpu0", "gpu1", "gpu2"]}}
    with pytest.raises(StateError) as info:
        parse_device_checkpoint("{}")
    assert str(info.value) == "kubelet_internal_checkpoint has no Data object"


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.sampled_from(["g%d" % i for i in range(8)]),
                       st.tuples(st.sampled_from([None, 0, 1, 2]), st.booleans()), min_size=1),
       st.lists(st.tuples(st.integers(0, 3), st.sampled_from([None, 0, 1, 2])), min_size=1, max_size=6))
def test_allocations_are_disjoint_healthy_and_exact(devices, requests):
    spec = {GPU: dict((d, {"numa": n, "healthy": ok}) for d, (n, ok) in devices.items())}
    m = manager(spec, nodes=(0, 1, 2))
    held = set()
    for index, (count, node) in enumerate(requests):
        p = pod(count, name="p%d" % index)
        hint = TopologyHint(None if node is None else BitMask(node), True)
        try:
            result = m.allocate(p, "c", hint)
        except DeviceAllocationError:
            continue
        got = set(result.get(GPU, []))
        assert len(got) == count
        assert not got & held
        assert all(devices[d][1] for d in got)
        held |= got


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.sampled_from(["g%d" % i for i in range(8)]),
                       st.sampled_from([None, 0, 1, 4, 6, 9, [0, 4], [1, 9], [4, 6, 9]]), min_size=1),
       st.sets(st.sampled_from(["g%d" % i for i in range(8)])), st.sets(st.sampled_from(["g%d" % i for i in range(8)]),
                                                                        max_size=2),
       st.integers(0, 6))
def test_fast_hints_equal_the_literal_per_mask_loop(devices, available, reusable, request):
    m = manager({GPU: devices}, nodes=(0, 1, 4, 6))
    available = set(d for d in available if d in devices)
    reusable = set(d for d in reusable if d in devices)
    assert m.generate_hints(GPU, available, reusable, request) == \
        m.generate_hints_literal(GPU, available, reusable, request)
