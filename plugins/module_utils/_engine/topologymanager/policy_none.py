# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Topology Manager policy ``none`` (pkg/kubelet/cm/topologymanager/policy_none.go)."""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy import POLICY_NONE, Policy


class NonePolicy(Policy):
    """No alignment: never merges, always admits."""

    name = POLICY_NONE

    def merge(self, providers_hints):
        # policy_none.go Merge: the empty hint TopologyHint{} (nil, not preferred), always admitted
        return TopologyHint(None, False), True
