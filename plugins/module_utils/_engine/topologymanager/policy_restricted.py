# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Topology Manager policy ``restricted`` (pkg/kubelet/cm/topologymanager/policy_restricted.go)."""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy import POLICY_RESTRICTED, Policy


class RestrictedPolicy(Policy):
    """Merge like best-effort; admit only a preferred result."""

    name = POLICY_RESTRICTED

    #: the pod is rejected whatever the best non-preferred hint is: its search stops sooner
    non_preferred_budget = 0.25

    def merge(self, providers_hints):
        # imported at the first merge: a run that only starts the kubelet (start-up verdicts) never compiles merge.py
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.merge import NoPreferredMerge, filter_providers_hints

        lists = filter_providers_hints(providers_hints)
        self.non_preferred_seconds = self.non_preferred_budget
        try:
            hint = self.merge_lists(lists, self.options.prefer_closest_numa)
        except NoPreferredMerge as err:
            # the decision is certain: restricted admits only a preferred merged hint
            self.last_note = "%s; the pod is rejected whatever that hint is" % err
            return TopologyHint(None, False), False
        return hint, hint.preferred
