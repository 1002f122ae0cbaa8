# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Scope used with policy ``none``: allocate only (pkg/kubelet/cm/topologymanager/scope_none.go)."""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import ZERO_HINT
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.scope import SCOPE_NONE, AdmitResult, Scope


class NoneScope(Scope):
    """Policy none: allocate only, every provider chooses for itself."""

    name = SCOPE_NONE

    def admit(self, pod):
        with AdmitResult(self.name) as result:  # an allocation search out of bounds ends it (AdmitResult.__exit__)
            for container in pod.all_containers():
                if not self._allocate(pod, container, ZERO_HINT, result):
                    break
        return result
