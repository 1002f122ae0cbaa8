# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Topology Manager scope ``pod`` (pkg/kubelet/cm/topologymanager/scope_pod.go).

``Admit`` takes one of two paths: ``admitUsingPodResources`` for a pod with ``spec.resources``
when the kubelet's PodLevelResourceManagers gate is on (KEP-5526: one merge of the pod-budget
hints, then ``AllocatePod`` on every provider), else ``admitUsingContainerResources`` (one merge,
then ``Allocate`` container by container).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import AdmissionError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.scope import (
    SCOPE_POD,
    TOPOLOGY_AFFINITY_ERROR,
    TOPOLOGY_AFFINITY_MESSAGE,
    AdmitResult,
    Scope,
    provider_name,
    rejection_from_error,
)

#: ``admitUsingPodResources`` when the merge does not admit: reason TopologyAffinityError; the
#: kubelet shows the text with the "Pod Scope " prefix of its pod-level affinity error
#: (kubernetes/website content/en/docs/tutorials/cluster-management/use-pod-level-resource-managers.md).
POD_LEVEL_AFFINITY_MESSAGE = "Pod Scope pod with pod-level resources failed admission under pod-scope topology manager"


def uses_pod_resources(pod):
    """``podScope.Admit``'s switch: PodLevelResourceManagers on (the pod carries the kubelet's
    gates) and ``spec.resources`` set."""
    gates = getattr(pod, "feature_gates", None) or {}
    return bool(getattr(pod, "has_pod_level_resources", False) and gates.get("PodLevelResourceManagers", False))


class PodScope(Scope):
    """One merge for the whole pod, then allocation container by container (or, for a pod-level
    pod with the gate on, one ``AllocatePod`` per provider)."""

    name = SCOPE_POD

    def admit(self, pod):
        with AdmitResult(self.name) as result:  # a search out of bounds or a panic ends it (AdmitResult.__exit__)
            return self._admit(pod, result)
        return result

    def _admit(self, pod, result):
        """``Admit``'s two paths (see the module docstring)."""
        containers = pod.all_containers()
        provider_hints = [(provider_name(p), p.get_pod_topology_hints(pod)) for p in self.providers]
        merged, admit = self._merge([c.name for c in containers], provider_hints, result)
        if uses_pod_resources(pod):
            return self._allocate_pod_resources(pod, containers, merged, admit, result)
        if not admit:
            return result.reject(TOPOLOGY_AFFINITY_ERROR, TOPOLOGY_AFFINITY_MESSAGE)
        for container in containers:
            self._store(pod, container, merged, result)
            if not self._allocate(pod, container, merged, result):
                return result
        return result

    def _allocate_pod_resources(self, pod, containers, merged, admit, result):
        """``admitUsingPodResources``: the merged hint stored for every container, then
        ``AllocatePod`` on every provider in order (a provider without one does nothing, like
        the device manager's); the first error rejects the pod."""
        if not admit:
            return result.reject(TOPOLOGY_AFFINITY_ERROR, POD_LEVEL_AFFINITY_MESSAGE)
        for container in containers:
            self._store(pod, container, merged, result)
            result.allocated.append(container.name)
        for provider in self.providers:
            allocate_pod = getattr(provider, "allocate_pod", None)
            if allocate_pod is None:
                continue
            try:
                allocate_pod(pod, merged)
            except AdmissionError as err:
                reason, message = rejection_from_error(err)
                return result.reject(reason, message, None, provider_name(provider))
        return result
