# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 9 audit: each CPU / Topology Manager option maturity boundary as the kubelet's start-up
decision (``CheckPolicyOptionAvailable`` in pkg/kubelet/cm/cpumanager/policy_options.go and
cm/topologymanager/policy_options.go), one release before and at the boundary, with the gate that
the boundary makes irrelevant switched off (alpha -> beta: default gates; beta -> GA: the beta gate
off)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import option_availability_error

LABEL = {"cpu": "CPU", "topology": "Topology"}
BETA_OFF = {"cpu": {"CPUManagerPolicyBetaOptions": False}, "topology": {"TopologyManagerPolicyBetaOptions": False}}


def expected(manager, option, kind):
    if kind == "ok":
        return None
    if kind == "unknown":
        return 'unknown %s Manager Policy option: "%s"' % (LABEL[manager], option)
    return '%s Manager Policy %s-level Options not enabled, but option "%s" provided' % (LABEL[manager], kind, option)


# manager, option, boundary minor, gates, before, at
BOUNDARIES = [
    ("cpu", "full-pcpus-only", 33, "beta-off", "Beta", "ok"),                      # GA 1.33
    ("cpu", "distribute-cpus-across-numa", 33, None, "Alpha", "ok"),              # beta (on) 1.33
    ("cpu", "strict-cpu-reservation", 32, None, "unknown", "Alpha"),              # alpha 1.32
    ("cpu", "strict-cpu-reservation", 33, None, "Alpha", "ok"),                   # beta 1.33
    ("cpu", "strict-cpu-reservation", 35, "beta-off", "Beta", "ok"),              # GA 1.35
    ("cpu", "prefer-align-cpus-by-uncorecache", 32, None, "unknown", "Alpha"),    # alpha 1.32
    ("cpu", "prefer-align-cpus-by-uncorecache", 34, None, "Alpha", "ok"),         # beta 1.34
    ("cpu", "prefer-align-cpus-by-uncorecache", 36, "beta-off", "Beta", "ok"),    # GA 1.36
    ("cpu", "distribute-cpus-across-cores", 31, None, "unknown", "Alpha"),        # alpha 1.31, still alpha
    ("topology", "prefer-closest-numa-nodes", 28, None, "Alpha", "ok"),           # beta (on) 1.28
    ("topology", "prefer-closest-numa-nodes", 32, "beta-off", "Beta", "ok"),      # GA 1.32
    ("topology", "max-allowable-numa-nodes", 31, None, "unknown", "ok"),          # beta (on) 1.31
    ("topology", "max-allowable-numa-nodes", 35, "beta-off", "Beta", "ok"),       # GA 1.35
]


@pytest.mark.parametrize("manager, option, boundary, gates, before, at", BOUNDARIES)
def test_option_is_decided_by_its_stage_in_that_release(manager, option, boundary, gates, before, at):
    configured = BETA_OFF[manager] if gates == "beta-off" else None
    assert option_availability_error(manager, option, (1, boundary - 1), configured) == expected(manager, option, before)
    assert option_availability_error(manager, option, (1, boundary), configured) == expected(manager, option, at)


@pytest.mark.parametrize("option", ["align-by-socket", "distribute-cpus-across-cores"])
@pytest.mark.parametrize("minor", [31, 35, 37, 38])
def test_alpha_options_need_the_alpha_gate_in_every_release(option, minor):
    assert option_availability_error("cpu", option, (1, minor)) == expected("cpu", option, "Alpha")
    assert option_availability_error("cpu", option, (1, minor), {"CPUManagerPolicyAlphaOptions": True}) is None
