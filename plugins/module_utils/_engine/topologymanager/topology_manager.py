# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Building the Topology Manager from a KubeletConfiguration and a machine (pkg/kubelet/cm/topologymanager/topology_manager.go NewManager).

Start-up checks happen in the kubelet's order and with its messages, so that a node whose
kubelet would not start is reported as such instead of getting admission answers:

1. policy ``none``: scope "none", nothing else is looked at (options, NUMA count);
2. policy options parsed (unknown option, bad bool/int, max-allowable-numa-nodes < 8);
3. NUMA info (with prefer-closest-numa-nodes every node needs distances);
4. more NUMA nodes than max-allowable-numa-nodes (default 8): refused;
5. unknown policy, then unknown scope.

Before all that, :func:`topology_manager_from_config` applies the KubeletConfiguration
validation of the policy and scope names (the kubelet refuses an invalid configuration before
building any manager, with "invalid configuration: ..." messages).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Mapping, Optional, Sequence, Tuple, cast  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import NUMAInfo, TopologyManagerError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy import (
    POLICIES,
    POLICY_BEST_EFFORT,
    POLICY_NONE,
    POLICY_RESTRICTED,
    POLICY_SINGLE_NUMA_NODE,
    Policy,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_none import NonePolicy
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_options import PolicyOptions
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.scope import SCOPE_CONTAINER, SCOPE_POD, SCOPES, Scope
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.scope_none import NoneScope
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_quote
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import NEWEST_RELEASED


def _policy_class(name: str) -> Any:
    """The class of policy ``name`` (None if unknown), imported here: a run imports only the
    policy and the scope it configures (issue 12: fresh-process cost). Plain import statements,
    not importlib: Ansible ships the module_utils its static imports name."""
    if name == POLICY_NONE:
        return NonePolicy
    if name == POLICY_BEST_EFFORT:
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_best_effort import BestEffortPolicy
        return BestEffortPolicy
    if name == POLICY_RESTRICTED:
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_restricted import RestrictedPolicy
        return RestrictedPolicy
    if name == POLICY_SINGLE_NUMA_NODE:
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_single_numa_node import SingleNumaNodePolicy
        return SingleNumaNodePolicy
    return None


def create_policy(name: str,
                  numa_info: NUMAInfo,
                  options: Optional[PolicyOptions] = None,
                  merger: str = "fast") -> Policy:
    """The policy called ``name``; the kubelet's ``unknown policy: "<name>"`` otherwise."""
    cls = _policy_class(name)
    if cls is None:
        raise TopologyManagerError('unknown policy: "%s"' % (name,))
    return cast(Policy, cls(numa_info, options, merger))


def create_scope(scope_name: str,
                 policy: Policy,
                 providers: Optional[Sequence[Any]] = None) -> Scope:
    """Scope for a policy: policy none always gets the none scope (the scope name is unused)."""
    if policy.name == POLICY_NONE:
        return NoneScope(policy, providers)
    if scope_name == SCOPE_CONTAINER:
        # imported here: only the configured scope is compiled (as in _policy_class)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.scope_container import ContainerScope
        return ContainerScope(policy, providers)
    if scope_name == SCOPE_POD:
        # imported here: as above
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.scope_pod import PodScope
        return PodScope(policy, providers)
    raise TopologyManagerError('unknown scope: "%s"' % (scope_name,))


DEFAULT_POLICY = POLICY_NONE
DEFAULT_SCOPE = SCOPE_CONTAINER


def new_topology_manager(topology: Any, policy_name: str = DEFAULT_POLICY, scope_name: str = DEFAULT_SCOPE,
                         policy_options: Optional[Mapping[str, Any]] = None, providers: Optional[Sequence[Any]] = None, merger: str = "fast",
                         feature_gates: Optional[Mapping[str, Any]] = None, version: Tuple[int, ...] = NEWEST_RELEASED) -> Scope:
    """The Topology Manager (a scope holding policy, providers and stored hints) for ``topology``,
    as kubelet ``version`` with the configured ``feature_gates`` builds it.

    ``topology`` is a ``topology.Topology`` (or anything with ``.nodes`` whose items have ``id``
    and ``distances``). Raises :class:`TopologyManagerError` with the kubelet's start-up message.
    """
    if policy_name is None or policy_name == "":
        policy_name = DEFAULT_POLICY
    if scope_name is None or scope_name == "":
        scope_name = DEFAULT_SCOPE
    if policy_name == POLICY_NONE:
        ids = [node.id for node in topology.nodes]
        return NoneScope(NonePolicy(cast(NUMAInfo, NUMAInfo(ids) if ids else _EmptyInfo())), providers)
    options = PolicyOptions.parse(policy_options, feature_gates, version)
    try:
        numa_info = NUMAInfo.from_topology(topology, options.prefer_closest_numa)
    except TopologyManagerError as err:
        text = str(err)
        if not text.startswith("cannot discover NUMA topology") and "prefer-closest" not in text:
            text = "cannot discover NUMA topology: %s" % text
        raise TopologyManagerError(text)
    if len(numa_info.nodes) > options.max_allowable_numa_nodes:
        raise TopologyManagerError("unsupported on machines with more than %d NUMA Nodes"
                                   % options.max_allowable_numa_nodes)
    policy = create_policy(policy_name, numa_info, options, merger)
    return create_scope(scope_name, policy, providers)


def validate_config(kubelet_config: Mapping[str, Any]) -> None:
    """The KubeletConfiguration validation of the two enum fields, which runs before any manager
    is built (so an unknown scope is refused even with policy none), with the kubelet's text."""
    config = kubelet_config or {}
    policy = config.get("topologyManagerPolicy") or DEFAULT_POLICY
    scope = config.get("topologyManagerScope") or DEFAULT_SCOPE
    if policy not in POLICIES:
        raise TopologyManagerError(
            "invalid configuration: topologyManagerPolicy (--topology-manager-policy) %s must be one of: [%s]"
            % (go_quote(str(policy)), " ".join(go_quote(p) for p in POLICIES)))
    if scope not in SCOPES:
        raise TopologyManagerError(
            "invalid configuration: topologyManagerScope (--topology-manager-scope) %s must be one of: %s, or %s"
            % (go_quote(str(scope)), go_quote(SCOPES[0]), go_quote(SCOPES[1])))


def topology_manager_from_config(topology: Any,
                                 kubelet_config: Mapping[str, Any],
                                 providers: Optional[Sequence[Any]] = None,
                                 merger: str = "fast",
                                 version: Tuple[int, ...] = NEWEST_RELEASED) -> Scope:
    """Same, reading ``topologyManagerPolicy``, ``topologyManagerScope`` and
    ``topologyManagerPolicyOptions`` from a KubeletConfiguration dict (camelCase), after the
    kubelet's configuration validation of the policy and scope names (:func:`validate_config`)."""
    config = kubelet_config or {}
    validate_config(config)
    return new_topology_manager(
        topology,
        policy_name=config.get("topologyManagerPolicy") or DEFAULT_POLICY,
        scope_name=config.get("topologyManagerScope") or DEFAULT_SCOPE,
        policy_options=config.get("topologyManagerPolicyOptions") or None,
        providers=providers,
        merger=merger,
        feature_gates=config.get("featureGates") or None,
        version=version)


class _EmptyInfo:
    """NUMA info stand-in for policy none on a machine without NUMA nodes (nothing merges)."""

    nodes = ()
    default_mask = 0
