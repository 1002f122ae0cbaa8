# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""kubelet >= 1.36 device hints on implicit hint sets equal the literal per-mask loop.

Since kubernetes/kubernetes#138244 (CHANGELOG-1.36.md, v1.36.0) the device manager walks the
masks of the NUMA nodes hosting the resource's devices only and, when that is fewer nodes than
the machine has and some hint was found, appends one non-preferred hint spanning every node
(pkg/kubelet/cm/devicemanager/topology_hints.go). On 13 or more device nodes our device manager
describes the hints (``hint_sets.FallbackHintSet``); here hint sets are forced on at every size
and whole admissions are compared with a simulator that lists the device hints literally, merges
with the kubelet's permutation loop where it is small enough, and has literal CPU and memory
providers (the machinery of test_bignuma_implicit_vs_literal.py, at kubelet 1.36).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os
import random

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.devicemanager import DeviceManager
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.devicemanager_inputs import DeviceInventory
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager import hint_sets, hints
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import HintList

_HERE = os.path.dirname(os.path.abspath(__file__))


def _sibling(name):
    spec = importlib.util.spec_from_file_location("bignuma_for_fallback", os.path.join(_HERE, name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BIG = _sibling("test_bignuma_implicit_vs_literal.py")


def literal_136(topology, cfg, devices, visits):
    """The literal simulator of test_bignuma_implicit_vs_literal.py, as kubelet 1.36: the device
    manager keeps its 1.36 hint generation (device nodes + fallback) over literal mask loops."""
    sim = BIG.literal_simulator(topology, cfg, devices, visits)
    fresh = AdmissionSimulator(topology, cfg, devices=devices, kubelet_version="1.36")
    dm = fresh.device_manager
    dm._all_masks_hints = lambda r, a, u, q: HintList(dm.generate_hints_literal(r, a, u, q),
                                                      (1 << len(dm.numa_node_ids)) - 1)
    # swap the 1.35 device manager of the literal simulator for this one, everywhere it is used
    old = sim.device_manager
    sim.device_manager = dm
    for provider in sim.providers:
        if getattr(provider, "provider", None) is old:
            provider.provider = dm
    for provider in sim.topology_manager.providers:
        if getattr(provider, "provider", None) is old:
            provider.provider = dm
    return sim


def devices_on_some_nodes(rnd, ids):
    """Devices on a strict subset of the nodes (where the fallback hint appears)."""
    hosts = rnd.sample(ids, rnd.randint(1, len(ids) - 1))
    out = {}
    for index in range(rnd.randint(1, 6)):
        where = rnd.choice([[n] for n in hosts] + [rnd.sample(hosts, min(2, len(hosts)))])
        out["gpu%d" % index] = where if len(where) > 1 else where[0]
    return {"example.com/gpu": out}


#: hint sets at every size, small sets walked ("walk") or the big-machine rules forced ("rules")
implicit_everywhere = BIG.implicit_everywhere


@pytest.mark.parametrize("seed", range(60))
def test_fallback_hint_implicit_equals_literal(seed, implicit_everywhere):
    rnd = random.Random(1000 + seed)
    prefer_closest = rnd.random() < 0.3
    topology, devices, ids = BIG.machine(rnd, prefer_closest)
    if len(ids) > 1:
        devices = devices_on_some_nodes(rnd, ids)  # one node: no fallback, compared all the same
    cfg = BIG.config(rnd, ids, prefer_closest)
    visits = [0]
    try:
        implicit = AdmissionSimulator(topology, cfg, devices=devices, kubelet_version="1.36")
    except ValueError as err:
        with pytest.raises(ValueError) as literal_err:
            AdmissionSimulator(topology, cfg, devices=devices, kubelet_version="1.36")
        assert str(literal_err.value) == str(err)
        return
    literal = literal_136(topology, cfg, devices, visits)
    BIG.assert_same_admissions(implicit, literal, BIG.manifests(rnd, 6, True))


def test_fallback_hint_set_answers(monkeypatch):
    """The set itself: listed masks, counts, walked masks and projections as the literal list."""
    monkeypatch.setattr(hints, "IMPLICIT_FROM_NODES", [1])
    inventory = DeviceInventory.from_spec({"example.com/gpu": {"g0": 1, "g1": 3, "g2": [3, 5]}})
    ids = list(range(7))
    for brute in (12, 0):
        monkeypatch.setattr(hint_sets, "BRUTE_NODES", brute)
        dm = DeviceManager(ids, inventory, None, device_numa_nodes_only=True)
        available = set(["g0", "g1", "g2"])
        got = dm.topology_hints("example.com/gpu", available, set(), 2)
        assert isinstance(got, hint_sets.FallbackHintSet)
        monkeypatch.setattr(hints, "IMPLICIT_FROM_NODES", [13])
        want = dm.topology_hints("example.com/gpu", available, set(), 2)
        monkeypatch.setattr(hints, "IMPLICIT_FROM_NODES", [1])
        assert isinstance(want, HintList)
        listed = [(h.affinity.value, 2 if h.preferred else 1) for h in want]
        assert listed[-1] == ((1 << 7) - 1, 1)
        assert got.count() == len(want)
        assert got.masks_iterated() == want.kubelet_masks == (1 << 3) - 1
        assert got.preferred_count() == sum(1 for h in want if h.preferred)
        assert got.min_size() == min(h.affinity.count() for h in want)
        assert [m for m in range(1, 1 << 7) if got.member(m)] == sorted(m for m, _f in listed)
        assert sorted(got.members()) == sorted(listed)
        for part in range(1 << 7):
            for within in (127, 0b1111000, 0b0101010):
                if part & ~within:
                    continue
                assert got.projects(part, within) == any(m & within == part for m, _f in listed)
