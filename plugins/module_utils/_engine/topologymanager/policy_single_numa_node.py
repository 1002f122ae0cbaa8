# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Topology Manager policy ``single-numa-node`` (pkg/kubelet/cm/topologymanager/policy_single_numa_node.go)."""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy import POLICY_SINGLE_NUMA_NODE, Policy


class SingleNumaNodePolicy(Policy):
    """Only preferred single-node (or don't-care) hints take part; prefer-closest is ignored."""

    name = POLICY_SINGLE_NUMA_NODE

    def merge(self, providers_hints):
        # imported at the first merge: a run that only starts the kubelet (start-up verdicts) never compiles merge.py
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.merge import filter_providers_hints, filter_single_numa_hints

        lists = filter_single_numa_hints(filter_providers_hints(providers_hints))
        hint = self.merge_lists(lists, False)
        if hint.affinity is not None and hint.affinity.value == self.numa_info.default_mask:
            hint = TopologyHint(None, hint.preferred)
        return hint, hint.preferred
