# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Builders shared by the memory manager tests (topologies, pods, configs)."""

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import HugePages, NumaNode, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import Quantity

GI = 1024 ** 3
MI = 1024 ** 2


def topology(*nodes):
    """``topology((0, 8 * GI), (1, 8 * GI, {2 * MI: 512}))``: (id, memory bytes[, {page size: pages}])."""
    built = []
    for spec in nodes:
        node_id, memory = spec[0], spec[1]
        pools = spec[2] if len(spec) > 2 else {}
        hugepages = {}
        for size, pages in pools.items():
            pool = HugePages(page_size_bytes=size, total_pages=pages, free_pages=pages)
            hugepages[pool.resource_name] = pool
        built.append(NumaNode(id=node_id, cpus=(), memory_total_bytes=memory, memory_free_bytes=memory,
                              hugepages=hugepages))
    return Topology(nodes=tuple(built))


def pod(containers, init=(), name="p", uid=None, qos=None, cpu="1"):
    """Guaranteed-by-default pod: ``containers``/``init`` are (name, {resource: quantity}[, restartable])."""

    def container(spec):
        limits = {"cpu": cpu}
        limits.update(spec[1])
        out = {"name": spec[0], "resources": {"limits": limits}}
        if len(spec) > 2 and spec[2]:
            out["restartPolicy"] = "Always"
        return out

    manifest = {"metadata": {"name": name, "namespace": "default", "uid": uid or ("uid-" + name)},
                "spec": {"containers": [container(c) for c in containers],
                         "initContainers": [container(c) for c in init]}}
    if qos is not None:
        manifest["status"] = {"qosClass": qos}
    return Pod.from_manifest(manifest)


def hint(ids, preferred):
    return TopologyHint(None if ids is None else BitMask.from_ids(ids), preferred)


def hints_plain(hint_map):
    """{resource: [(ids, preferred), ...]} or None."""
    if hint_map is None:
        return None
    return dict((name, None if hints is None else [(list(h.affinity.bits()), h.preferred) for h in hints])
                for name, hints in hint_map.items())


def reservation(**values):
    """Node Allocatable reservation override: reservation(memory="1Gi") -> {"memory": Quantity}."""
    return dict((name.replace("_", "-"), Quantity.parse(value)) for name, value in values.items())


def static_config(reserved):
    """``memoryManagerPolicy: Static`` with ``reservedMemory`` from {node: {type: quantity}}."""
    return {"memoryManagerPolicy": "Static",
            "reservedMemory": [{"numaNode": node, "limits": dict(limits)} for node, limits in sorted(reserved.items())]}
