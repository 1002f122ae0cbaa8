# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Topology Manager policy ``best-effort`` (pkg/kubelet/cm/topologymanager/policy_best_effort.go)."""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy import POLICY_BEST_EFFORT, Policy


class BestEffortPolicy(Policy):
    """Merge and keep the best hint, admitting whatever it is."""

    name = POLICY_BEST_EFFORT

    def merge(self, providers_hints):
        # imported at the first merge: a run that only starts the kubelet (start-up verdicts) never compiles merge.py
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.merge import filter_providers_hints

        lists = filter_providers_hints(providers_hints)
        hint = self.merge_lists(lists, self.options.prefer_closest_numa)
        return hint, True
