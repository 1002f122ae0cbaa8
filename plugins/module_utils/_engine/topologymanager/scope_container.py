# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Topology Manager scope ``container`` (pkg/kubelet/cm/topologymanager/scope_container.go)."""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.scope import (
    SCOPE_CONTAINER,
    TOPOLOGY_AFFINITY_ERROR,
    TOPOLOGY_AFFINITY_MESSAGE,
    AdmitResult,
    Scope,
    provider_name,
)


class ContainerScope(Scope):
    """One merge per container, after the earlier containers are allocated."""

    name = SCOPE_CONTAINER

    def admit(self, pod):
        with AdmitResult(self.name) as result:  # a search out of bounds or a panic ends it (AdmitResult.__exit__)
            for container in pod.all_containers():
                provider_hints = [(provider_name(p), p.get_topology_hints(pod, container)) for p in self.providers]
                merged, admit = self._merge([container.name], provider_hints, result)
                if not admit:
                    return result.reject(TOPOLOGY_AFFINITY_ERROR, TOPOLOGY_AFFINITY_MESSAGE, container.name)
                self._store(pod, container, merged, result)
                if not self._allocate(pod, container, merged, result):
                    break
        return result
