# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: reserved_memory_check
short_description: Validate (or compute) reservedMemory for a topology on the controller, exactly as the kubelet will
version_added: 0.1.0
description:
  - The controller-side twin of M(numaguard.kubelet.reserved_memory) for CI and templating - same rules, same
    result keys (RV(numaguard.kubelet.reserved_memory#module:valid), RV(numaguard.kubelet.reserved_memory#module:errors),
    RV(numaguard.kubelet.reserved_memory#module:warnings), RV(numaguard.kubelet.reserved_memory#module:reserved_memory),
    RV(numaguard.kubelet.reserved_memory#module:flag), RV(numaguard.kubelet.reserved_memory#module:totals),
    RV(numaguard.kubelet.reserved_memory#module:nodes)). An invalid reservation is a result, not an error;
    check C(valid). Unusable input (a broken topology, a bad option value) raises unless
    O(errors=report).
  - The input is the host's C(numa_topology) facts (a saved M(numaguard.kubelet.numa_facts) result also works).
    With a null input only the equation is checked - the sum per memory type against kube-reserved +
    system-reserved + hard eviction - not NUMA ids, hugepage sizes or node capacity.
extends_documentation_fragment:
  - numaguard.kubelet.reservation
options:
  _input:
    description: A C(numa_topology) fact dict, a saved C(numa_facts) result, or null.
    type: raw
    required: true
  kubelet_config:
    description: A KubeletConfiguration dict to take unset settings from.
    type: dict
  memory_manager_state:
    description: Content of an existing C(memory_manager_state) to predict its acceptance.
    type: str
  errors:
    description:
      - V(strict) raises an error for unusable input (bad topology, bad option values).
      - V(report) returns C({valid - false, errors - [message], warnings - [], input_error - message}) instead, so one bad host
        does not stop a template that checks a whole fleet. The input may then also be a JSON string (the content
        of a saved topology file) or null with O(missing) naming what could not be read.
    type: str
    default: strict
    choices: [strict, report]
  missing:
    description: With O(errors=report) and a null input, the message to report (e.g. the file that could not be read).
    type: str
  kubelet_version:
    description:
      - Kubernetes release of the host's kubelet (for example V(1.31) or V(v1.31.4)); decides the kubelet's wording
        (e.g. the Node Allocatable capacity error changed in 1.29) and the feature-gate defaults.
      - The filter runs on the controller and cannot ask the host; when empty it assumes the newest released kubelet
        the collection knows and says so in C(warnings), as M(numaguard.kubelet.reserved_memory) does.
      - The gates are that release's defaults overridden by C(featureGates) of O(kubelet_config)
        (e.g. C(SystemReservedHugepages) lets kube/system-reserved hold hugepages).
    type: str
"""

EXAMPLES = r"""
- name: Fail CI when a host's reservation does not add up
  ansible.builtin.assert:
    that: check.valid
    fail_msg: "{{ check.errors | join('\n') }}"
  vars:
    check: >-
      {{ numa_topology | numaguard.kubelet.reserved_memory_check(
           kube_reserved='memory=4Gi', system_reserved='memory=1Gi',
           reserved_memory='0:memory=3Gi;1:memory=2148Mi', memory_manager_policy='Static') }}

- name: Just the equation, no topology
  ansible.builtin.debug:
    msg: "{{ (None | numaguard.kubelet.reserved_memory_check(kube_reserved='memory=4Gi', system_reserved='memory=1Gi',
             reserved_memory='0:memory=3Gi;1:memory=2Gi', memory_manager_policy='Static')).errors }}"
"""

RETURN = r"""
_value:
  description:
    - The dict M(numaguard.kubelet.reserved_memory) returns, with the same keys and meanings -
      RV(numaguard.kubelet.reserved_memory#module:valid), RV(numaguard.kubelet.reserved_memory#module:errors),
      RV(numaguard.kubelet.reserved_memory#module:warnings), RV(numaguard.kubelet.reserved_memory#module:findings),
      RV(numaguard.kubelet.reserved_memory#module:reserved_memory), RV(numaguard.kubelet.reserved_memory#module:flag),
      RV(numaguard.kubelet.reserved_memory#module:totals), RV(numaguard.kubelet.reserved_memory#module:nodes),
      RV(numaguard.kubelet.reserved_memory#module:memory_manager_policy),
      RV(numaguard.kubelet.reserved_memory#module:strategy), RV(numaguard.kubelet.reserved_memory#module:eviction_hard),
      RV(numaguard.kubelet.reserved_memory#module:state),
      RV(numaguard.kubelet.reserved_memory#module:memory_capacity_bytes),
      RV(numaguard.kubelet.reserved_memory#module:kubelet_version),
      RV(numaguard.kubelet.reserved_memory#module:kubelet_version_source) and
      RV(numaguard.kubelet.reserved_memory#module:feature_gates) (the version and gates assumed).
    - C(feature_gates_set) - the C(featureGates) entries of O(kubelet_config) that the gates were taken from.
    - C(kubelet_warnings) - the warnings of C(warnings) that are about the kubelet assumed (for example no
      O(kubelet_version) given), not about the settings; C(validate.yml) shows them once per run on its
      C(kubelet assumed) line instead of marking each host.
    - With O(errors=report) and unusable input, C({valid - false, errors - [message], warnings - [], input_error - message}).
  type: dict
"""

import json
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

_UNBOUNDED = 1 << 62


def _equation_only_topology(reserved_memory):
    """Nodes for every id the reservation names (node 0 at least), too big to ever be over capacity."""
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.reserved import parse_reserved_memory
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import ReservationSyntaxError
    from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import NumaNode, Topology

    try:
        ids = sorted(set(r.numa_node for r in parse_reserved_memory(reserved_memory)))
    except ReservationSyntaxError:
        ids = []
    ids = [i for i in ids if i >= 0] or [0]
    return Topology(nodes=tuple(NumaNode(id=i, cpus=(), memory_total_bytes=_UNBOUNDED, memory_free_bytes=0)
                                for i in ids))


def reserved_memory_check(topology, kube_reserved=None, system_reserved=None, eviction_hard=None,
                          merge_default_eviction_settings=None, reserved_memory=None, memory_manager_policy=None,
                          strategy=None, reserved_cpus=None, split_unit="1Mi", memory_capacity=None,
                          allocatable_ignore_eviction=False, kubelet_config=None, memory_manager_state=None,
                          errors="strict", missing=None, kubelet_version=None):
    if errors not in ("strict", "report"):
        raise AnsibleFilterError("numaguard.kubelet.reserved_memory_check: errors must be strict or report, got %r"
                                 % (errors,))
    if errors == "report":
        if topology is None or isinstance(topology, str):
            if topology is None or topology == "":
                message = missing or "no topology given"
                return {"valid": False, "errors": [message], "warnings": [], "input_error": message}
            try:
                topology = json.loads(topology)
            except ValueError as exc:
                message = "topology is not valid JSON: %s" % exc
                return {"valid": False, "errors": [message], "warnings": [], "input_error": message}
        try:
            return _check(topology, kube_reserved, system_reserved, eviction_hard, merge_default_eviction_settings,
                          reserved_memory, memory_manager_policy, strategy, reserved_cpus, split_unit,
                          memory_capacity, allocatable_ignore_eviction, kubelet_config, memory_manager_state,
                          kubelet_version)
        except AnsibleFilterError as exc:
            message = str(exc).replace("numaguard.kubelet.reserved_memory_check: ", "", 1)
            return {"valid": False, "errors": [message], "warnings": [], "input_error": message}
    return _check(topology, kube_reserved, system_reserved, eviction_hard, merge_default_eviction_settings,
                  reserved_memory, memory_manager_policy, strategy, reserved_cpus, split_unit, memory_capacity,
                  allocatable_ignore_eviction, kubelet_config, memory_manager_state, kubelet_version)


def _check(topology, kube_reserved, system_reserved, eviction_hard, merge_default_eviction_settings, reserved_memory,
           memory_manager_policy, strategy, reserved_cpus, split_unit, memory_capacity, allocatable_ignore_eviction,
           kubelet_config, memory_manager_state, kubelet_version):
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import ReservationSyntaxError
    from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import InvalidTopology
    from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption, VersionError
    from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import (
        ReservationError,
        evaluate,
    )

    equation_only = topology is None
    try:
        gates = kubelet_config.get("featureGates") if isinstance(kubelet_config, Mapping) else None
        # the module's resolution (no host to ask on the controller): the option, else the default with its warning
        kubelet = KubeletAssumption.resolve(kubelet_version, None, gates if isinstance(gates, Mapping) else None,
                                            unknown_because=UNKNOWN_ON_CONTROLLER)
        if equation_only:
            if memory_capacity is None:
                memory_capacity = _UNBOUNDED
            topology = _equation_only_topology(reserved_memory)
        result = evaluate(
            topology, kubelet_config=kubelet_config, strategy=strategy, split_unit=split_unit,
            memory_capacity_bytes=memory_capacity, allocatable_ignore_eviction=bool(allocatable_ignore_eviction),
            memory_manager_state=memory_manager_state,
            kube_reserved=kube_reserved, system_reserved=system_reserved, eviction_hard=eviction_hard,
            merge_default_eviction_settings=merge_default_eviction_settings, reserved_memory=reserved_memory,
            memory_manager_policy=memory_manager_policy, reserved_cpus=reserved_cpus, kubelet=kubelet)
    except (InvalidTopology, ReservationError, ReservationSyntaxError, VersionError, TypeError, ValueError) as exc:
        raise AnsibleFilterError("numaguard.kubelet.reserved_memory_check: %s" % exc) from exc
    output = result.to_dict()
    if equation_only:
        # The stand-in nodes are not real: drop what was said about them, and the start-up of a
        # machine that is not there (the start-up verdict needs a known topology)
        output["nodes"] = []
        output["equation_only"] = True
        output["kubelet_startup"] = None
        output["findings"] = [f for f in output["findings"]
                              if f["rule"] not in ("memory-only-node", "node-capacity", "kubelet-startup")]
        output["warnings"] = [f["text"] for f in output["findings"] if f["severity"] == "warning"]
        output["errors"] = [f["text"] for f in output["findings"] if f["severity"] == "error"]
        output["valid"] = not output["errors"]
    kubelet.report_in(output)
    # what was assumed about the kubelet, apart from what the settings themselves cause (a report
    # says it once per run on its "kubelet assumed" line instead of marking every host)
    output["kubelet_warnings"] = list(kubelet.warnings)
    output["feature_gates_set"] = dict(sorted(kubelet.configured_gates.items()))
    return output


#: the filter runs on the controller: it cannot run the host's kubelet --version
UNKNOWN_ON_CONTROLLER = "no kubelet_version given; set kubelet_numa_kubelet_version for the host"


class FilterModule:
    def filters(self):
        return {"reserved_memory_check": reserved_memory_check}
