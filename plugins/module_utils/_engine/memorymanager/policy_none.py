# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The memory manager's ``None`` policy (pkg/kubelet/cm/memorymanager/policy_none.go) and the
pinning counters both policies keep.

A module of its own so that a run under ``memoryManagerPolicy: None`` does not compile the Static
policy (issue 12: every module run compiles what it imports, AnsiballZ keeps no bytecode).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Dict

#: the Memory Manager's policy names (the one home; KubeletConfiguration ``memoryManagerPolicy``; BestEffort is Windows-only)
POLICY_NONE = "None"
POLICY_STATIC = "Static"
POLICY_BEST_EFFORT = "BestEffort"
POLICIES = (POLICY_NONE, POLICY_STATIC)


class PinningCounters:
    """``memory_manager_pinning_requests_total`` / ``memory_manager_pinning_errors_total``."""

    __slots__ = ("requests", "errors")

    def __init__(self, requests: int = 0, errors: int = 0) -> None:
        self.requests = requests
        self.errors = errors

    def to_dict(self) -> Dict[str, int]:
        return {"memory_manager_pinning_requests_total": self.requests,
                "memory_manager_pinning_errors_total": self.errors}


class MemoryManagerNone:
    """The ``None`` policy: no hints, no allocation, an empty machine state."""

    policy_name = "None"
    name = "memory"

    def __init__(self):
        self.counters = PinningCounters()

    def get_topology_hints(self, pod, container):
        return None

    def get_pod_topology_hints(self, pod):
        return None

    def allocate(self, pod, container, affinity):
        return None

    def remove(self, pod_uid, container_name):
        return None

    def remove_pod(self, pod_uid):
        return None

    def remove_stale_state(self, active):
        return None

    def blocks(self, pod_uid, container_name):
        return None

    def machine_state(self):
        return {}

    def assignments(self):
        return {}

    def memory_map(self):
        return {}

    def state(self) -> Dict[str, Any]:
        return {"policy_name": self.policy_name, "machine_state": {}, "entries": {}, "pod_entries": {}}

    def checkpoint(self):
        # imported here: only a run that writes a state file compiles its format (20 KB)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.checkpoint import (
            checkpoint_from_state,
        )

        return checkpoint_from_state(self.state())
