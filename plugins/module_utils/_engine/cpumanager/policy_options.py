# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``cpuManagerPolicyOptions`` of the static policy: parsing, feature-gate maturity, compatibility.

The kubelet refuses to start on a bad option, so every failure here is a :class:`StateError`
carrying the kubelet's text (pkg/kubelet/cm/cpumanager/policy_options.go). Option values use Go's ``strconv.ParseBool`` syntax;
YAML booleans arrive as Python ``bool`` and are accepted as the strings the kubelet would read.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from dataclasses import dataclass

try:
    from typing import Any, Dict, Mapping, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_parse_bool, go_quote, option_text
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import (
    CPU_INCOMPATIBLE_OPTIONS,
    NEWEST_RELEASED,
    option_availability_error,
)

FULL_PCPUS_ONLY = "full-pcpus-only"
DISTRIBUTE_CPUS_ACROSS_NUMA = "distribute-cpus-across-numa"
ALIGN_BY_SOCKET = "align-by-socket"
DISTRIBUTE_CPUS_ACROSS_CORES = "distribute-cpus-across-cores"
STRICT_CPU_RESERVATION = "strict-cpu-reservation"
PREFER_ALIGN_BY_UNCORE_CACHE = "prefer-align-cpus-by-uncorecache"


def parse_bool(name: str, value: Any) -> bool:
    """``strconv.ParseBool`` with the kubelet's error wrapping."""
    try:
        return go_parse_bool(option_text(value))
    except ValueError as err:
        raise StateError("bad value for option %s: %s" % (go_quote(name), err))


@dataclass(frozen=True)
class StaticPolicyOptions:
    """The parsed options; every flag defaults to off, as in the kubelet."""

    full_physical_cpus_only: bool = False
    distribute_cpus_across_numa: bool = False
    align_by_socket: bool = False
    distribute_cpus_across_cores: bool = False
    strict_cpu_reservation: bool = False
    prefer_align_by_uncore_cache: bool = False

    @classmethod
    def parse(cls,
              options: Optional[Mapping[str, Any]],
              feature_gates: Optional[Mapping[str, bool]] = None,
              version: Tuple[int, ...] = NEWEST_RELEASED) -> StaticPolicyOptions:
        """``NewStaticPolicyOptions`` of kubelet ``version``: unknown options, options whose
        maturity gate is off in that release (``feature_gates`` = the configured featureGates)
        and bad booleans are errors."""
        values: Dict[str, bool] = {}
        for name in sorted(options or {}):
            problem = option_availability_error("cpu", name, version, feature_gates)
            if problem is not None:
                raise StateError(problem)
            values[name] = parse_bool(name, (options or {})[name])
        parsed = cls(
            full_physical_cpus_only=values.get(FULL_PCPUS_ONLY, False),
            distribute_cpus_across_numa=values.get(DISTRIBUTE_CPUS_ACROSS_NUMA, False),
            align_by_socket=values.get(ALIGN_BY_SOCKET, False),
            distribute_cpus_across_cores=values.get(DISTRIBUTE_CPUS_ACROSS_CORES, False),
            strict_cpu_reservation=values.get(STRICT_CPU_RESERVATION, False),
            prefer_align_by_uncore_cache=values.get(PREFER_ALIGN_BY_UNCORE_CACHE, False),
        )
        enabled = parsed.enabled()
        for first, second in CPU_INCOMPATIBLE_OPTIONS:
            if first in enabled and second in enabled:
                raise StateError("static policy options %s and %s can not be used at the same time"
                                 % (first, second))
        return parsed

    def enabled(self) -> Dict[str, bool]:
        """Option name -> True for every enabled option."""
        flags = {
            FULL_PCPUS_ONLY: self.full_physical_cpus_only,
            DISTRIBUTE_CPUS_ACROSS_NUMA: self.distribute_cpus_across_numa,
            ALIGN_BY_SOCKET: self.align_by_socket,
            DISTRIBUTE_CPUS_ACROSS_CORES: self.distribute_cpus_across_cores,
            STRICT_CPU_RESERVATION: self.strict_cpu_reservation,
            PREFER_ALIGN_BY_UNCORE_CACHE: self.prefer_align_by_uncore_cache,
        }
        return dict((k, v) for k, v in flags.items() if v)

    def validate(self, cpu_topology: Any, topology_manager_policy: str) -> None:
        """``ValidateStaticPolicyOptions``: options that the machine or the TM policy rule out."""
        if self.align_by_socket:
            if topology_manager_policy == "single-numa-node":
                raise StateError("Topolgy manager %s policy is incompatible with CPUManager %s "
                                 "policy option" % (topology_manager_policy, ALIGN_BY_SOCKET))
            if cpu_topology.num_sockets > cpu_topology.num_numa_nodes:
                raise StateError("Align by socket is not compatible with hardware where number of "
                                 "sockets are more than number of NUMA")
