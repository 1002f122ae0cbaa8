# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Whole admissions whose non-preferred merge meets hint sets that are not monotone -- memory
NUMA groups and single-NUMA allocations in the memory manager's state, the 1.36 device fallback
hint -- equal the literal providers + the kubelet's permutation loop (the differential harness of
test_bignuma_implicit_vs_literal.py and test_device_fallback_implicit.py), for best-effort and
restricted, both scopes, prefer-closest-numa-nodes on and off, on random machines of 3-12 nodes.

The big-machine rules are forced (hint sets at every size, answered by their rules, the ranked
non-preferred search from one reachable node on), and each combination must actually take the
ranked search over a set that is not monotone -- the path that used to end as ``cannot_check``
beyond 20 reachable nodes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import os
import random

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager import hint_sets, hints, merge

_HERE = os.path.dirname(os.path.abspath(__file__))


def _sibling(name, alias):
    spec = importlib.util.spec_from_file_location(alias, os.path.join(_HERE, name))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BIG = _sibling("test_bignuma_implicit_vs_literal.py", "bignuma_for_nonmonotone")
FALLBACK = _sibling("test_device_fallback_implicit.py", "fallback_for_nonmonotone")
SEEDS = 6


@pytest.fixture
def rules_forced(monkeypatch):
    monkeypatch.setattr(hints, "IMPLICIT_FROM_NODES", [1])
    monkeypatch.setattr(hint_sets, "BRUTE_NODES", 0)
    monkeypatch.setattr(merge, "RANKED_FROM_NODES", [1])
    seen = []
    original = merge._ranked_non_preferred

    def counting(lists, *args, **kwargs):
        if any(getattr(h, "implicit", False) and not h.monotone() for h in lists):
            seen.append(True)
        return original(lists, *args, **kwargs)

    monkeypatch.setattr(merge, "_ranked_non_preferred", counting)
    return seen


@pytest.mark.parametrize("kind", ["groups", "fallback"])
@pytest.mark.parametrize("prefer_closest", [False, True])
@pytest.mark.parametrize("scope", ["container", "pod"])
@pytest.mark.parametrize("policy", ["best-effort", "restricted"])
def test_non_monotone_ranked_merge_equals_literal(policy, scope, prefer_closest, kind, rules_forced):
    version = "1.36" if kind == "fallback" else "1.35"
    checked = 0
    for seed in range(SEEDS * 10):
        if checked == SEEDS:
            break
        rnd = random.Random("%s/%s/%s/%s/%d" % (policy, scope, prefer_closest, kind, seed))
        topology, devices, ids = BIG.machine(rnd, prefer_closest)
        if len(ids) < 3:
            continue
        if kind == "fallback":
            devices = FALLBACK.devices_on_some_nodes(rnd, ids)
        cfg = BIG.config(rnd, ids, prefer_closest)
        cfg["topologyManagerPolicy"] = policy
        cfg["topologyManagerScope"] = scope
        try:
            implicit = AdmissionSimulator(topology, cfg, devices=devices, kubelet_version=version)
        except ValueError:
            continue  # a machine the kubelet would not start on (compared in the harness's own tests)
        visits = [0]
        if kind == "fallback":
            literal = FALLBACK.literal_136(topology, cfg, devices, visits)
        else:
            literal = BIG.literal_simulator(topology, cfg, devices, visits)
        BIG.assert_same_admissions(implicit, literal, BIG.manifests(rnd, 8, bool(devices["example.com/gpu"])))
        checked += 1
    assert checked == SEEDS
    assert rules_forced, "no merge took the ranked search over a set that is not monotone"
