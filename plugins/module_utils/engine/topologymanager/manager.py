# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""Building the Topology Manager from a KubeletConfiguration and a machine (spec 6.1).

Start-up checks happen in the kubelet's order and with its messages, so that a node whose
kubelet would not start is reported as such instead of getting admission answers:

1. policy ``none``: scope "none", nothing else is looked at (options, NUMA count);
2. policy options parsed (unknown option, bad bool/int, max-allowable-numa-nodes < 8);
3. NUMA info (with prefer-closest-numa-nodes every node needs distances);
4. more NUMA nodes than max-allowable-numa-nodes (default 8): refused;
5. unknown policy, then unknown scope.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

try:
    from typing import Any, Mapping, Optional, Sequence  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils.engine.topologymanager.numa_info import (
    NUMAInfo, TopologyManagerError)
from ansible_collections.numaguard.kubelet.plugins.module_utils.engine.topologymanager.policy import (
    POLICY_NONE, NonePolicy, create_policy)
from ansible_collections.numaguard.kubelet.plugins.module_utils.engine.topologymanager.policy_options import (
    PolicyOptions)
from ansible_collections.numaguard.kubelet.plugins.module_utils.engine.topologymanager.scope import (
    NoneScope, Scope, create_scope)

DEFAULT_POLICY = POLICY_NONE
DEFAULT_SCOPE = "container"


def new_topology_manager(topology, policy_name=DEFAULT_POLICY, scope_name=DEFAULT_SCOPE,
                         policy_options=None, providers=None, merger="fast"):
    # type: (Any, str, str, Optional[Mapping[str, Any]], Optional[Sequence[Any]], str) -> Scope
    """The Topology Manager (a scope holding policy, providers and stored hints) for ``topology``.

    ``topology`` is a ``topology.Topology`` (or anything with ``.nodes`` whose items have ``id``
    and ``distances``). Raises :class:`TopologyManagerError` with the kubelet's start-up message.
    """
    if policy_name is None or policy_name == "":
        policy_name = DEFAULT_POLICY
    if scope_name is None or scope_name == "":
        scope_name = DEFAULT_SCOPE
    if policy_name == POLICY_NONE:
        ids = [node.id for node in topology.nodes]
        return NoneScope(NonePolicy(NUMAInfo(ids) if ids else _EmptyInfo()), providers)
    options = PolicyOptions.parse(policy_options)
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


def topology_manager_from_config(topology, kubelet_config, providers=None, merger="fast"):
    # type: (Any, Mapping[str, Any], Optional[Sequence[Any]], str) -> Scope
    """Same, reading ``topologyManagerPolicy``, ``topologyManagerScope`` and
    ``topologyManagerPolicyOptions`` from a KubeletConfiguration dict (camelCase)."""
    config = kubelet_config or {}
    return new_topology_manager(
        topology,
        policy_name=config.get("topologyManagerPolicy") or DEFAULT_POLICY,
        scope_name=config.get("topologyManagerScope") or DEFAULT_SCOPE,
        policy_options=config.get("topologyManagerPolicyOptions") or None,
        providers=providers,
        merger=merger)


class _EmptyInfo(object):
    """NUMA info stand-in for policy none on a machine without NUMA nodes (nothing merges)."""

    nodes = ()
    default_mask = 0
