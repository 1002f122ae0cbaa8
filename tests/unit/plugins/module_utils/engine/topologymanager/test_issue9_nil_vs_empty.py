# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 9 audit: where the kubelet tells a nil hint list from an empty one, and an empty NUMA
topology under a Topology Manager policy.

pkg/kubelet/cm/topologymanager/policy.go ``filterProvidersHints`` (no hints from a provider or a nil
list for a resource: one preferred don't-care hint; an empty list: one non-preferred don't-care
hint), policy_single_numa_node.go ``filterSingleNumaHints`` (keeps preferred nil and preferred
one-node hints, so the non-preferred don't-care hint of an empty list is dropped and the resource
has no permutation left), and ``HintMerger.Merge`` (no provider at all: one empty permutation, the
default affinity, preferred).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from tm_fakes import FakePod, FakeProvider, FakeTopology, h

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.merge import (
    filter_providers_hints,
    filter_single_numa_hints,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import TopologyManagerError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.topology_manager import (
    new_topology_manager,
    topology_manager_from_config,
)

TWO = FakeTopology([0, 1])


def test_single_numa_filter_keeps_the_nil_list_and_empties_the_empty_one():
    lists = filter_single_numa_hints(filter_providers_hints([{"nil": None, "empty": [], "wide": [h([0, 1], True)]}]))
    # sorted resource order: empty, nil, wide
    assert lists == [[], [h(None, True)], []]


@pytest.mark.parametrize("policy", ["best-effort", "restricted", "single-numa-node"])
@pytest.mark.parametrize("scope", ["container", "pod"])
def test_nil_hint_list_admits_and_empty_hint_list_is_not_preferred(policy, scope):
    nil = FakeProvider("cpumanager", {"a": {"cpu": None}}, pod_hints={"cpu": None})
    result = new_topology_manager(TWO, policy, scope, None, [nil]).admit(FakePod("nil", ["a"]))
    assert result.admitted, (policy, scope, result)

    empty = FakeProvider("cpumanager", {"a": {"cpu": []}}, pod_hints={"cpu": []})
    tm = new_topology_manager(TWO, policy, scope, None, [empty])
    result = tm.admit(FakePod("empty", ["a"]))
    if policy == "best-effort":
        assert result.admitted and tm.get_affinity("empty", "a") == h([0, 1], False)
    else:
        assert not result.admitted and result.reason == "TopologyAffinityError", (policy, scope, result)


@pytest.mark.parametrize("policy, affinity", [("best-effort", h([0, 1], True)), ("restricted", h([0, 1], True)),
                                              ("single-numa-node", h(None, True))])
@pytest.mark.parametrize("scope", ["container", "pod"])
def test_no_hint_providers_give_the_default_affinity_preferred(policy, affinity, scope):
    tm = new_topology_manager(TWO, policy, scope, None, [])
    result = tm.admit(FakePod("p", ["a"]))
    assert result.admitted and tm.get_affinity("p", "a") == affinity


class _Empty:
    nodes = ()


@pytest.mark.parametrize("policy", ["best-effort", "restricted", "single-numa-node"])
def test_empty_topology_starts_but_unknown_names_are_still_refused(policy):
    assert topology_manager_from_config(_Empty(), {"topologyManagerPolicy": policy}).policy.name == policy
    with pytest.raises(TopologyManagerError) as err:
        topology_manager_from_config(_Empty(), {"topologyManagerPolicy": policy, "topologyManagerScope": "node"})
    assert "topologyManagerScope" in str(err.value) and '"node"' in str(err.value)
    with pytest.raises(TopologyManagerError):
        topology_manager_from_config(_Empty(), {"topologyManagerPolicy": policy.upper()})
