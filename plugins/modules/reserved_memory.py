#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: reserved_memory
short_description: Compute and validate the kubelet's --reserved-memory exactly as the kubelet will
version_added: 0.1.0
description:
  - Checks that C(reservedMemory) adds up the way the kubelet's Memory Manager demands at start-up, for every
    memory type (C(memory) and each C(hugepages-<size>)) - the sum over NUMA nodes must equal kube-reserved +
    system-reserved + the C(memory.available) hard eviction threshold - and reports every other fatal start-up
    rule (unknown NUMA nodes, unsupported types, zero values, duplicates, empty reservation with C(Static),
    policy name casing), with the kubelet's own wording where it has one, the numbers, and a concrete fix.
  - Also checks what the kubelet does not - a node's reservation plus its hugepages must fit that node's memory
    (the kubelet subtracts unsigned and wraps around), reservations on memory-only nodes, hugepage sizes the
    host does not have, and the partial C(evictionHard) trap - and can predict whether an existing
    C(memory_manager_state) will be accepted with this configuration and topology.
  - Computes a reservation with a O(strategy) when none is given; computed reservations are byte-exact and fit
    the nodes by construction.
  - The topology comes from O(topology) (a whole saved M(numaguard.kubelet.numa_facts) result with
    C(ansible_facts) is accepted too), else from sysfs under O(root). O(root) applies only to the topology;
    the paths O(kubelet_config), O(kubelet_config_dir) and O(memory_manager_state) are read as given.
  - Never changes anything.
author:
  - numaguard.kubelet contributors (@numaguard)
extends_documentation_fragment:
  - numaguard.kubelet.root
  - numaguard.kubelet.topology
  - numaguard.kubelet.reservation
options:
  kubelet_config:
    description:
      - Path (on the target) of a KubeletConfiguration file to read C(kubeReserved), C(systemReserved),
        C(evictionHard), C(mergeDefaultEvictionSettings), C(reservedMemory), C(memoryManagerPolicy) and
        C(reservedSystemCPUs) from, merged with the drop-ins of O(kubelet_config_dir) the way the kubelet merges
        them. Explicit options win over the file.
    type: path
  kubelet_config_dir:
    description:
      - The kubelet's C(--config-dir) drop-in directory (C(*.conf) files) to merge over O(kubelet_config).
    type: path
  memory_manager_state:
    description:
      - An existing C(memory_manager_state) - a path on the target or the JSON content itself - to predict whether
        the kubelet will accept it at start-up with this configuration and topology (its C(validateState) rules -
        per-node totals, system reserved, hugepages, replayed assignments). A path that does not exist is
        reported as a warning (the kubelet starts with a fresh state).
    type: str
  kubelet_version:
    description:
      - Kubernetes release of the kubelet (V(1.35), V(v1.35.2), C(kubelet --version) output); decides the
        version-dependent rules (feature-gate defaults merged with C(featureGates) of O(kubelet_config)).
      - Default - what C(kubelet --version) prints on the host when O(root) is C(/) and O(topology) is not
        given; otherwise the newest released kubelet the collection knows, with a warning.
    type: str
  fail_on_invalid:
    description:
      - Fail the task, listing every error, when the reservation is invalid. With V(false) the task succeeds and
        reports RV(valid=false) with the errors.
    type: bool
    default: true
attributes:
  check_mode:
    support: full
    description: The module only reads; check mode returns the same result.
  diff_mode:
    support: none
    description: Nothing is changed.
notes:
  - Percentage thresholds are computed with the kubelet's 32-bit float arithmetic, bit for bit (5% of 10Gi is
    536870920 bytes, not 536870912).
  - See C(docs/reserved-memory.md) in the collection for the rules, the strategies and where this module is
    stricter than the kubelet.
seealso:
  - module: numaguard.kubelet.numa_facts
  - name: Kubernetes Memory Manager - reserved memory flag
    description: The formula and the upstream 5220Mi example.
    link: https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/
"""

EXAMPLES = r"""
---
- name: Validate the upstream worked example (kube 4Gi + system 1Gi + 100Mi = 5220Mi)
  numaguard.kubelet.reserved_memory:
    kube_reserved: memory=4Gi
    system_reserved: memory=1Gi
    reserved_memory: "0:memory=3Gi;1:memory=2148Mi"
    memory_manager_policy: Static

- name: Compute a reservation spread over the NUMA nodes and use it
  numaguard.kubelet.reserved_memory:
    kube_reserved: {cpu: 500m, memory: 2Gi}
    system_reserved: {memory: 1Gi}
    eviction_hard: memory.available<500Mi
    strategy: spread
  register: plan

- name: Show the flag
  ansible.builtin.debug:
    msg: "--reserved-memory={{ plan.flag }}"

- name: Check the node's current kubelet configuration and state file without failing
  numaguard.kubelet.reserved_memory:
    kubelet_config: /var/lib/kubelet/config.yaml
    kubelet_config_dir: /etc/kubernetes/kubelet.conf.d
    memory_manager_state: /var/lib/kubelet/memory_manager_state
    fail_on_invalid: false
  register: check

- name: Validate offline against a captured topology (CI)
  numaguard.kubelet.reserved_memory:
    topology: "{{ lookup('ansible.builtin.file', 'topologies/worker-a.json') | from_json }}"
    kube_reserved: memory=4Gi
    system_reserved: memory=1Gi
    reserved_memory:
      - numaNode: 0
        limits: {memory: 3Gi}
      - numaNode: 1
        limits: {memory: 2148Mi}
    memory_manager_policy: Static
  delegate_to: localhost
"""

RETURN = r"""
valid:
  description: Whether the kubelet will start with this reservation (and state file, when given).
  returned: always
  type: bool
  sample: false
errors:
  description: Every fatal problem, each as C([rule] message Fix - fix) with the values involved.
  returned: always
  type: list
  elements: str
  sample:
    - '[reserved-memory-sum] the total amount "5Gi" of type "memory" is not equal to the value "5220Mi" determined
      by Node Allocatable feature (...) Fix: add 100Mi (...), e.g. --reserved-memory 0:memory=3172Mi;1:memory=2Gi'
warnings:
  description: Problems that do not stop the kubelet (or not yet, e.g. under policy None), same format.
  returned: when there are any
  type: list
  elements: str
findings:
  description: Errors and warnings as dicts.
  returned: always
  type: list
  elements: dict
  contains:
    rule:
      description: Rule id (C(reserved-memory-sum), C(reserved-memory-hugepages), C(reserved-memory-numa-node), C(node-capacity), ...).
      type: str
    severity:
      description: C(error) or C(warning).
      type: str
    message:
      description: What is wrong, with the numbers.
      type: str
    fix:
      description: How to fix it.
      type: str
    kubelet_message:
      description: The kubelet's own error text for this case, when it has one.
      type: str
    fatal:
      description: Whether the kubelet itself refuses to start because of this.
      type: bool
    text:
      description: The formatted line used in RV(errors)/RV(warnings).
      type: str
reserved_memory:
  description: The reservation (given or computed) as the KubeletConfiguration C(reservedMemory) list, canonical quantities.
  returned: always
  type: list
  elements: dict
  sample: [{numaNode: 0, limits: {memory: 3Gi}}, {numaNode: 1, limits: {memory: 2148Mi}}]
flag:
  description: The same reservation as one C(--reserved-memory) value (C(;) between nodes).
  returned: always
  type: str
  sample: 0:memory=3Gi;1:memory=2148Mi
totals:
  description: Per memory type, both sides of the kubelet's equation.
  returned: always
  type: dict
  sample:
    memory:
      reserved: 5220Mi
      reserved_bytes: 5473566720
      node_allocatable: 5220Mi
      node_allocatable_bytes: 5473566720
      per_node: {"0": 3Gi, "1": 2148Mi}
      balanced: true
      difference_bytes: 0
      equation: "memory: reservedMemory 3Gi (node 0) + 2148Mi (node 1) = 5220Mi; Node Allocatable system-reserved 1Gi
        + kube-reserved 4Gi + hard eviction memory.available<100Mi 100Mi = 5220Mi: balanced"
nodes:
  description: Per NUMA node, the reservation and the memory left for Guaranteed pods (total - reserved - hugepages).
  returned: always
  type: list
  elements: dict
  sample:
    - {id: 0, cpus: 0-7, memory_only: false, memory_total_bytes: 17179869184, hugepages_bytes: 0,
       reserved: {memory: 3Gi}, reserved_memory_bytes: 3221225472, guaranteed_memory_bytes: 13958643712,
       guaranteed_memory: 13Gi}
memory_manager_policy:
  description: The policy the reservation was checked for.
  returned: always
  type: str
  sample: Static
strategy:
  description: The strategy used, or null when the reservation was given.
  returned: always
  type: str
  sample: spread
eviction_hard:
  description: The effective hard eviction thresholds (C(effective)), where they came from (C(source) - default,
    configured, merged) and the default signals the configuration drops (C(dropped_defaults)).
  returned: when the eviction settings parse
  type: dict
state:
  description: The C(memory_manager_state) prediction - C(accepted), C(file), C(version), C(policy), C(differences).
  returned: when O(memory_manager_state) is given
  type: dict
memory_capacity_bytes:
  description: The node memory capacity used for percentage thresholds.
  returned: always
  type: int
kubelet_startup:
  description:
    - The kubelet's own start-up decision on this reservation (the engine's one start-up path, C(_engine/startup.py)),
      with the Topology, CPU and Memory Managers built in the kubelet's order, then C(validateNodeAllocatable).
      A refusal that none of the findings already states is an error of rule C(kubelet-startup).
    - Null when the kubelet does not get that far (an input it cannot parse, a configuration its validation refuses)
      or when O(allocatable_ignore_eviction) is set (not modelled by the start-up path).
  returned: always
  type: dict
  contains:
    verdict:
      description: C(starts) or C(refuses).
      type: str
    manager:
      description: The first manager that refuses (C(topology), C(cpu), C(memory), C(node_allocatable)); empty when it starts.
      type: str
    message:
      description: The kubelet's message; empty when it starts.
      type: str
  sample:
    verdict: refuses
    manager: memory
    message: the reserved memory configuration references a NUMA node 9 that does not exist on this machine
topology_fingerprint:
  description: Fingerprint of the topology checked against.
  returned: always
  type: str
kubelet_version:
  description: The kubelet release the checks assumed (as given or as C(kubelet --version) printed it).
  returned: success and on validation failure
  type: str
  sample: v1.35.2
kubelet_version_source:
  description: Where the version came from, V(option), V(host) (C(kubelet --version)) or V(default).
  returned: success and on validation failure
  type: str
  sample: default
feature_gates:
  description: The NUMA-relevant feature gates the checks assumed (release defaults merged with C(featureGates)).
  returned: success and on validation failure
  type: dict
  sample: {"SystemReservedHugepages": false}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.numaguard.kubelet.plugins.module_utils._zip_compile import compile_each_module_once


def main():
    compile_each_module_once()  # first: the backend's imports then compile once (see _zip_compile.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.reserved_memory import module_kwargs, run

    run(AnsibleModule(**module_kwargs()))


if __name__ == "__main__":
    main()
