# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""24 to 64 NUMA nodes with hint sets that are not monotone: decided now (these merges ended as
``cannot_check`` before), and each decision checked against a smaller equivalent machine on
which the literal providers and the kubelet's permutation loop run.

The big machine is a random machine of 3-12 "live" NUMA nodes (the harness of
test_bignuma_implicit_vs_literal.py: memory-only nodes, two hugepage sizes, devices), renumbered
to follow ``total - n`` "full" nodes (24, 36 or 64 nodes in all): 2 CPUs, 1Gi and no devices
each, no more than any live node with CPUs has, and one Guaranteed pod of 2 CPUs and 1Gi
admitted on each of them first. The merged hint on the big machine is the one on the live nodes
alone (ids shifted), because a full node ``d`` is in no hint that can matter and changes no
list's shape:

* memory manager: ``d`` has a single-NUMA allocation, so no multi-node mask holds it
  (calculateHints), and ``{d}`` has no free memory: no memory hint holds ``d``. The preferred
  size (the fewest nodes whose *allocatable* memory holds the request) is unchanged: a mask
  with ``d`` has no more allocatable memory than one where a live node replaces ``d``;
* CPU manager (static): ``d`` has no free CPU, so for a mask ``m`` without ``d``, ``m`` is a
  hint iff ``m + d`` is, and ``{d}`` is none; the preferred size (the fewest nodes holding the
  request in *all* their CPUs) is unchanged for the same reason as memory;
* device manager: no device on ``d`` (kubelet 1.35: as for CPUs; 1.36: ``d`` is not walked, and
  the fallback hint spans every node on both machines, the device nodes being fewer on both).

So every permutation's merged mask on the big machine (the memory hint leaves ``d`` out) is the
merged mask of the corresponding live-machine permutation, with the same preferred flag, and
the narrowest count B is the same: the comparator (which looks only at the masks, B and the
distances between their nodes; the shift keeps the numeric order) picks the same hint. Verdicts,
reasons and merged hints are compared; where CPUs are taken is not covered (the static policy's
takeByTopology looks at CPUs per socket, which the full nodes change), so the comparison of a
machine ends after a pod placed on other nodes, and at a pod with a merge the argument does not
cover: one without
memory hints (nothing leaves the full nodes out), or one that may be the default mask (no
non-empty AND, or only "don't care"), which differs.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os
import random

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager import merge
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import bits_of
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, HugePages, NumaNode, Topology

_HERE = os.path.dirname(os.path.abspath(__file__))


def _sibling(name, alias):
    spec = importlib.util.spec_from_file_location(alias, os.path.join(_HERE, name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BIG = _sibling("test_bignuma_implicit_vs_literal.py", "bignuma_for_big_nonmonotone")
FALLBACK = _sibling("test_device_fallback_implicit.py", "fallback_for_big_nonmonotone")
GIB = 1 << 30


def with_full_nodes(live, total):
    """``total - n`` full nodes (ids 0..k-1: 2 CPUs, 1Gi, no devices) followed by ``live``'s
    nodes 0..n-1 as k..k+n-1; live CPUs keep their ids (CPU 0, reserved, stays on a live node)."""
    ids = [node.id for node in live.nodes]
    shift = total - len(ids)
    extra = list(range(shift))
    every = extra + [node + shift for node in ids]

    def distance(a, b):
        if a == b:
            return 10
        if a >= shift and b >= shift:
            return live.node(a - shift).distances[b - shift]
        return 30

    sizes = sorted(set(page.page_size_bytes for node in live.nodes for page in node.hugepages.values()))
    nodes, cpus = [], []
    next_cpu = max(cpu.id for cpu in live.cpus) + 1
    sockets = max(cpu.socket for cpu in live.cpus) + 1
    for index in extra:
        own = tuple(range(next_cpu, next_cpu + 2))
        next_cpu += 2
        pages = dict((page.resource_name, page) for page in (HugePages(size, 0, 0) for size in sizes))
        nodes.append(NumaNode(id=index, cpus=own, memory_total_bytes=GIB, memory_free_bytes=GIB, hugepages=pages,
                              distances=dict((peer, distance(index, peer)) for peer in every)))
        cpus.extend(CPU(id=c, node=index, core=c, socket=sockets + index, die=0, online=True, siblings=(c,),
                        cache_id=index) for c in own)
    for node in live.nodes:
        nodes.append(NumaNode(id=node.id + shift, cpus=node.cpus, memory_total_bytes=node.memory_total_bytes,
                              memory_free_bytes=node.memory_free_bytes, hugepages=node.hugepages,
                              distances=dict((peer, distance(node.id + shift, peer)) for peer in every)))
    cpus.extend(CPU(id=cpu.id, node=cpu.node + shift, core=cpu.core, socket=cpu.socket, die=cpu.die,
                    online=cpu.online, siblings=cpu.siblings, cache_id=cpu.cache_id + shift) for cpu in live.cpus)
    nodes.sort(key=lambda node: node.id)
    cpus.sort(key=lambda cpu: cpu.id)
    return Topology(nodes=tuple(nodes), cpus=tuple(cpus)), extra, shift


def shifted_devices(devices, shift):
    out = {}
    for resource, found in devices.items():
        out[resource] = dict((name, [n + shift for n in where] if isinstance(where, list) else where + shift)
                             for name, where in found.items())
    return out


def filler(name):
    resources = {"cpu": "2", "memory": "1Gi"}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"requests": resources, "limits": dict(resources)}}]}}


def shape(result, shift=0):
    def back(nodes):
        return None if nodes is None else [node - shift for node in nodes]

    merged = [(m["merged_hint"] and dict(m["merged_hint"], numa_affinity=back(m["merged_hint"]["numa_affinity"])),
               m["admit"]) for m in result["merges"]]
    return result["verdict"], result.get("reason"), back(result["numa_nodes"]), merged


@pytest.fixture
def wide_searches(monkeypatch):
    """Counts merges that take the ranked search over more than 20 reachable nodes with a set
    that is not monotone (the path that ended as cannot_check before)."""
    seen = []
    original = merge._ranked_non_preferred

    def counting(lists, within, *args, **kwargs):
        if len(bits_of(within)) > 20 and any(getattr(h, "implicit", False) and not h.monotone() for h in lists):
            seen.append(True)
        return original(lists, within, *args, **kwargs)

    monkeypatch.setattr(merge, "_ranked_non_preferred", counting)
    return seen


@pytest.mark.parametrize("total", [24, 36, 64])
@pytest.mark.parametrize("kind", ["groups", "fallback"])
@pytest.mark.parametrize("policy", ["best-effort", "restricted"])
def test_big_machine_decides_like_its_live_nodes(total, kind, policy, wide_searches):
    version = "1.36" if kind == "fallback" else "1.35"
    compared = 0
    for seed in range(40):
        if compared >= 2 and wide_searches:
            break
        rnd = random.Random("big/%d/%s/%s/%d" % (total, kind, policy, seed))
        prefer_closest = rnd.random() < 0.4
        scope = rnd.choice(["container", "pod"])
        live, devices, ids = BIG.machine(rnd, True)  # dense ids 0..n-1: the full nodes follow
        if len(ids) < 3:
            continue
        if kind == "fallback":
            devices = FALLBACK.devices_on_some_nodes(rnd, ids)
        cfg = BIG.config(rnd, ids, prefer_closest)
        cfg["topologyManagerPolicy"] = policy
        cfg["topologyManagerScope"] = scope
        big_topology, extra, shift = with_full_nodes(live, total)
        big_cfg = dict(cfg, reservedMemory=[{"numaNode": ids[0] + shift, "limits": {"memory": "1124Mi"}}])
        try:
            AdmissionSimulator(live, cfg, devices=devices, kubelet_version=version)
        except ValueError:
            continue
        big = AdmissionSimulator(big_topology, big_cfg, devices=shifted_devices(devices, shift), kubelet_version=version)
        for index, node in enumerate(extra):
            placed = big.admit(big.pod_from_manifest(filler("full%d" % index)))
            assert placed["numa_nodes"] == [node], placed
        visits = [0]
        if kind == "fallback":
            literal = FALLBACK.literal_136(live, cfg, devices, visits)
        else:
            literal = BIG.literal_simulator(live, cfg, devices, visits)
        for manifest in BIG.manifests(rnd, 8, bool(devices["example.com/gpu"])):
            try:
                want = literal.admit(literal.pod_from_manifest(manifest))
            except ValueError:
                break  # an error the small machine raises: compare no further
            got = big.admit(big.pod_from_manifest(manifest))
            assert got["verdict"] != "cannot_check", got["cannot_check"]
            if any(m["merged_hint"] and m["merged_hint"]["numa_affinity"] == ids for m in want["merges"]):
                break  # possibly the default mask (nothing merged, or only "don't care"): it differs
            if not all(m["hints"].get("memory") for m in want["merges"]):
                break  # no memory hint to leave the full nodes out: the argument does not hold
            got_shape, want_shape = shape(got, shift), shape(want)
            assert (got_shape[0], got_shape[1], got_shape[3]) == (want_shape[0], want_shape[1], want_shape[3]), \
                (got_shape, want_shape, manifest)
            compared += 1
            if got_shape[2] != want_shape[2]:
                break  # the CPUs taken differ (CPUs per socket changed): the states part from here
    assert compared >= 2
    assert wide_searches, "no merge searched more than 20 nodes with a set that is not monotone"
