# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Topology Manager scopes and the allocate-resources admit loop (pkg/kubelet/cm/topologymanager/
scope.go; rejections as pkg/kubelet/cm/admission/errors.go reports them).

* ``none`` (policy none, whatever the configured scope): per container, init then app, call
  every provider's ``allocate`` with the zero hint; first error rejects.
* ``container``: per container, hints are asked *after* the earlier containers of the pod are
  allocated, merged, the result stored, then allocated on the providers in order (device, CPU,
  memory). A merge that does not admit rejects the pod with ``TopologyAffinityError``; earlier
  containers keep what they got (no rollback, the caller's garbage collection releases it).
* ``pod``: one merge of the pod-level hints, the same hint stored for every container, then
  allocation container by container.

Rejections are results (:class:`AdmitResult`), not exceptions; provider bugs and bad state
still raise. A question this simulator will not answer in bounds (``SearchBoundExceeded``: a
hint set, a merge or an allocation search on a big machine) ends the pod's admission with
``cannot_check`` set to what could not be decided, never a MemoryError.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Dict, List, Optional, Sequence, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import UNEXPECTED_ADMISSION_ERROR, AdmissionError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import (
    ZERO_HINT,
    SearchBoundExceeded,
    TopologyHint,
    shown_hint_map,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.kubelet_cost import merge_cost
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import KubeletPanic
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy import Policy

SCOPE_CONTAINER = "container"
SCOPE_POD = "pod"
SCOPE_NONE = "none"
SCOPES = (SCOPE_CONTAINER, SCOPE_POD)

TOPOLOGY_AFFINITY_ERROR = "TopologyAffinityError"
TOPOLOGY_AFFINITY_MESSAGE = "Resources cannot be allocated with Topology locality"


def provider_name(provider: Any) -> str:
    """A provider's display name: its ``name`` attribute, else its class name."""
    return str(getattr(provider, "name", None) or type(provider).__name__)


def rejection_from_error(error: AdmissionError) -> Tuple[str, str]:
    """(reason, message) as the kubelet records them for an allocation error (pkg/kubelet/cm/admission/errors.go).

    A typed error keeps its reason and text. An untyped one gets reason
    ``UnexpectedAdmissionError`` and the "Allocate failed due to ..., which is unexpected"
    wrapping; providers may raise either the raw text or the already wrapped message.
    """
    reason = getattr(error, "reason", None) or UNEXPECTED_ADMISSION_ERROR
    message = getattr(error, "message", None)
    if message is None:
        message = str(error)
    if reason == UNEXPECTED_ADMISSION_ERROR and not message.startswith("Allocate failed due to "):
        message = "Allocate failed due to %s, which is unexpected" % message
    return reason, message


class Decision:
    """One merge of the Topology Manager: which containers it was for, inputs and outcome."""

    def __init__(self,
                 containers: List[str],
                 provider_hints: List[Tuple[str, Any]],
                 merged: Optional[TopologyHint],
                 admit: bool,
                 policy: Optional[Policy] = None) -> None:
        """``merged`` None: the merge was out of bounds (the decision's note says why)."""
        self.containers = containers
        self.provider_hints = provider_hints
        self.merged = merged
        self.admit = admit
        lists = policy.last_lists if policy is not None else []
        permutations: Optional[int] = 0
        if lists:  # imported here: lists come from a merge (loaded then); the none policy never compiles it
            from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.merge import (
                merge_permutations,
            )

            permutations = merge_permutations(lists)
        #: what the kubelet's own providers and merge loop would go through for this merge
        self.kubelet_cost = merge_cost(provider_hints, permutations)
        self.note = policy.last_note if policy is not None else None

    def to_dict(self) -> Dict[str, Any]:
        out = {
            "containers": list(self.containers),
            "hints": dict((name, shown_hint_map(hints)) for name, hints in self.provider_hints),
            "merged_hint": None if self.merged is None else self.merged.to_dict(),
            "admit": self.admit,
            "kubelet_cost": self.kubelet_cost,
        }
        if self.note:
            out["note"] = self.note
        return out


class AdmitResult:
    """The admit handler's answer for one pod plus the trace that explains it."""

    def __init__(self, scope: str) -> None:
        self.scope = scope
        self.admitted = True
        self.reason = ""
        self.message = ""
        self.decisions: List[Decision] = []
        #: container name -> affinity stored for it (only containers that got one)
        self.affinities: Dict[str, TopologyHint] = {}
        #: containers whose allocation was attempted, in order (the last may have failed)
        self.allocated: List[str] = []
        self.failed_container: Optional[str] = None
        self.failed_provider: Optional[str] = None
        #: what could not be decided in bounds ("" = the result is exact)
        self.cannot_check = ""
        #: the Go panic the kubelet dies of while admitting the pod ("" = none)
        self.panic = ""

    def reject(self,
               reason: str,
               message: str,
               container: Optional[str] = None,
               provider: Optional[str] = None) -> AdmitResult:
        self.admitted = False
        self.reason = reason
        self.message = message
        self.failed_container = container
        self.failed_provider = provider
        return self

    def __enter__(self) -> AdmitResult:
        return self

    def __exit__(self, kind: Any, error: Any, _traceback: Any) -> bool:
        """A scope's admit loop runs in ``with AdmitResult(...)``: a search out of bounds ends it
        undecided (``cannot_check``), the kubelet's panic ends it with ``panic``; any other error
        goes on."""
        if isinstance(error, KubeletPanic):
            self.admitted, self.panic = False, str(error)
            return True
        if isinstance(error, SearchBoundExceeded):
            self.admitted, self.cannot_check = False, "topology manager: %s" % error
            return True
        return False


class Scope:
    """Common machinery: providers in order, the policy, and the stored affinities."""

    name = ""

    def __init__(self, policy: Policy, providers: Optional[Sequence[Any]] = None) -> None:
        self.policy = policy
        self.providers = list(providers or [])
        #: pod uid -> container name -> stored hint (the kubelet's podTopologyHints)
        self.pod_topology_hints: Dict[str, Dict[str, TopologyHint]] = {}

    def add_hint_provider(self, provider: Any) -> None:
        self.providers.append(provider)

    def get_affinity(self, pod_uid: str, container_name: str) -> TopologyHint:
        """Stored hint, or the zero hint {nil, false} when there is none."""
        return self.pod_topology_hints.get(pod_uid, {}).get(container_name, ZERO_HINT)

    def remove_container(self, pod_uid: str, container_name: str) -> None:
        hints = self.pod_topology_hints.get(pod_uid)
        if hints is not None:
            hints.pop(container_name, None)
            if not hints:
                del self.pod_topology_hints[pod_uid]

    def _store(self, pod: Any, container: Any, hint: TopologyHint, result: AdmitResult) -> None:
        self.pod_topology_hints.setdefault(pod.uid, {})[container.name] = hint
        result.affinities[container.name] = hint

    def _allocate(self, pod: Any, container: Any, hint: TopologyHint, result: AdmitResult) -> bool:
        """Allocate on every provider in order; record a rejection on the first error."""
        result.allocated.append(container.name)
        for provider in self.providers:
            try:
                provider.allocate(pod, container, hint)
            except AdmissionError as err:
                reason, message = rejection_from_error(err)
                result.reject(reason, message, container.name, provider_name(provider))
                return False
        return True

    def admit(self, pod: Any) -> AdmitResult:
        """The scope's admit loop, in each scope's own file (its ``Admit``): the loop calls this
        class's helpers, which never call back into the scope's file. A search out of bounds or a
        panic ends it (``with AdmitResult(...)``, :meth:`AdmitResult.__exit__`)."""
        raise NotImplementedError

    def _merge(self, containers: List[str], provider_hints: List[Tuple[str, Any]],
               result: AdmitResult) -> Tuple[TopologyHint, bool]:
        """The policy's merge, recorded as a :class:`Decision` (also when it is out of bounds)."""
        try:
            merged, admit = self.policy.merge([hints for _name, hints in provider_hints])
        except (SearchBoundExceeded, KubeletPanic) as err:
            decision = Decision(containers, provider_hints, None, False, self.policy)
            decision.note = str(err)
            result.decisions.append(decision)
            raise
        result.decisions.append(Decision(containers, provider_hints, merged, admit, self.policy))
        return merged, admit
