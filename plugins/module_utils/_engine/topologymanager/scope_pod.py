# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""Topology Manager scope ``pod`` (pkg/kubelet/cm/topologymanager/scope_pod.go)."""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.scope import (
    SCOPE_POD,
    TOPOLOGY_AFFINITY_ERROR,
    TOPOLOGY_AFFINITY_MESSAGE,
    Scope,
    provider_name,
)


class PodScope(Scope):
    """One merge for the whole pod, then allocation container by container."""

    name = SCOPE_POD

    def _admit(self, pod, result):
        containers = pod.all_containers()
        provider_hints = [(provider_name(p), p.get_pod_topology_hints(pod)) for p in self.providers]
        merged, admit = self._merge([c.name for c in containers], provider_hints, result)
        if not admit:
            return result.reject(TOPOLOGY_AFFINITY_ERROR, TOPOLOGY_AFFINITY_MESSAGE)
        for container in containers:
            self._store(pod, container, merged, result)
            if not self._allocate(pod, container, merged, result):
                return result
        return result
