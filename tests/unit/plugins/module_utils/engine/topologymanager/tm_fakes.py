# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Small fakes shared by the Topology Manager tests (not a test module)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import AdmissionError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.bitmask import BitMask
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint


def h(ids, preferred):
    """Hint from a list of NUMA ids (None = no affinity)."""
    return TopologyHint(None if ids is None else BitMask.from_ids(ids), preferred)


class FakeNode:
    def __init__(self, node_id, distances=None):
        self.id = node_id
        self.distances = distances or {}


class FakeTopology:
    def __init__(self, ids, distances=None):
        self.nodes = tuple(FakeNode(i, (distances or {}).get(i)) for i in ids)


class FakeContainer:
    def __init__(self, name, is_init=False):
        self.name = name
        self.is_init = is_init


class FakePod:
    def __init__(self, uid, containers, init_containers=()):
        self.uid = uid
        self.name = uid
        self.containers = tuple(FakeContainer(c) for c in containers)
        self.init_containers = tuple(FakeContainer(c, True) for c in init_containers)

    def all_containers(self):
        return self.init_containers + self.containers


class FakeProvider:
    """Answers canned hints per container (and per pod), records allocate calls, can fail."""

    def __init__(self, name, container_hints=None, pod_hints=None, fail_on=None, error=None):
        self.name = name
        self.container_hints = container_hints or {}
        self.pod_hints = pod_hints
        self.fail_on = fail_on
        self.error = error or AdmissionError("UnexpectedAdmissionError", "%s failed" % name)
        self.calls = []

    def get_topology_hints(self, pod, container):
        self.calls.append(("hints", container.name))
        return self.container_hints.get(container.name)

    def get_pod_topology_hints(self, pod):
        self.calls.append(("pod_hints", pod.uid))
        return self.pod_hints

    def allocate(self, pod, container, affinity):
        self.calls.append(("allocate", container.name, affinity))
        if container.name == self.fail_on:
            raise self.error

    def remove(self, pod_uid, container_name):
        self.calls.append(("remove", container_name))
