# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``topologyManagerPolicyOptions`` parsing with the kubelet's error texts (pkg/kubelet/cm/topologymanager/policy_options.go).

Which options exist and which maturity gate they need depends on the kubelet release
(prefer-closest-numa-nodes GA in 1.32, max-allowable-numa-nodes GA in 1.35): the table is
_k8s/versions.py (``CheckPolicyOptionAvailable`` of each release). Values are parsed with Go's ``strconv.ParseBool`` / ``strconv.Atoi`` rules and their error
texts, because those texts end up in the kubelet's start-up error.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Mapping, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import TopologyManagerError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_atoi, go_parse_bool, go_quote, option_text
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import (
    MAX_ALLOWABLE_NUMA_NODES,
    NEWEST_RELEASED,
    PREFER_CLOSEST_NUMA_NODES,
    option_availability_error,
)

__all__ = ["DEFAULT_MAX_ALLOWABLE_NUMA_NODES", "INTEGER_OPTIONS", "MAX_ALLOWABLE_NUMA_NODES", "PREFER_CLOSEST_NUMA_NODES",
           "PolicyOptions"]

DEFAULT_MAX_ALLOWABLE_NUMA_NODES = 8
#: the options whose value is a Go integer (the others are Go booleans)
INTEGER_OPTIONS = frozenset((MAX_ALLOWABLE_NUMA_NODES,))


class PolicyOptions:
    """Parsed Topology Manager policy options."""

    def __init__(self,
                 prefer_closest_numa: bool = False,
                 max_allowable_numa_nodes: int = DEFAULT_MAX_ALLOWABLE_NUMA_NODES) -> None:
        self.prefer_closest_numa = prefer_closest_numa
        self.max_allowable_numa_nodes = max_allowable_numa_nodes

    @classmethod
    def parse(cls, options: Optional[Mapping[str, Any]], feature_gates: Optional[Mapping[str, Any]] = None,
              version: Tuple[int, ...] = NEWEST_RELEASED) -> PolicyOptions:
        """Parse the ``topologyManagerPolicyOptions`` map (values are strings in the kubelet) as
        kubelet ``version`` with the configured ``feature_gates`` does."""
        opts = cls()
        if not options:
            return opts
        if not isinstance(options, dict):
            raise TopologyManagerError(
                "topologyManagerPolicyOptions must be a map of option name to string, got %r" % (options,))
        for name in sorted(options):
            value = option_text(options[name])
            problem = option_availability_error("topology", name, version, feature_gates)
            if problem is not None:
                raise TopologyManagerError(problem)
            if name not in INTEGER_OPTIONS:
                try:
                    opts.prefer_closest_numa = go_parse_bool(value)
                except ValueError as err:
                    raise TopologyManagerError("bad value for option %s: %s" % (go_quote(name), err))
            else:
                try:
                    number = go_atoi(value)
                except ValueError as err:
                    raise TopologyManagerError(
                        "unable to convert policy option to integer %s: %s" % (go_quote(name), err))
                if number < DEFAULT_MAX_ALLOWABLE_NUMA_NODES:
                    raise TopologyManagerError(
                        "the minimum value of %s should not be less than %d"
                        % (go_quote(name), DEFAULT_MAX_ALLOWABLE_NUMA_NODES))
                opts.max_allowable_numa_nodes = number
        return opts
