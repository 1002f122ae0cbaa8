#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: admission_check
short_description: Decide on the host whether the kubelet would admit a pod, and onto which NUMA nodes
version_added: 0.1.0
description:
  - Runs the kubelet's allocate-resources admission (Topology Manager with its policy, scope and
    options, CPU Manager C(static), Memory Manager C(Static), device hints) on the target host,
    against the host's NUMA topology, its kubelet configuration and its C(cpu_manager_state) and
    C(memory_manager_state) files, and explains the answer.
  - Pods are evaluated in order as if created one after another (a what-if sequence); each sees
    the resources the earlier admitted pods took. A rejected pod releases what it got before the
    next one is evaluated, as the kubelet's garbage collection does.
  - Never changes anything on the host (C(changed=false) always). Nothing is written; the state
    after the sequence is only returned.
  - A rejected pod is a result (C(admitted=false) with the kubelet's C(reason) and C(message)), not
    a failure. The module fails only when it cannot answer (bad manifests, unreadable or corrupt
    state files (checksum mismatch, unknown policy, state the kubelet would refuse at start-up),
    configurations the kubelet would not start with, unsupported inputs).
  - After the Topology Manager admit handler the kubelet's resource-fit admission runs as on the
    node, checking the pod's requests against the node allocatable (cpu, memory, C(hugepages-*), extended
    resources of the device inventory, the pod count) minus what the node's running pods request,
    with the kubelet's reasons (C(OutOfcpu), C(OutOfmemory), C(OutOfhugepages-1Gi), C(OutOfpods), ...).
    The running pods are O(running_pods) when given, plus the Guaranteed pods whose exclusive CPUs,
    memory and devices the state files record. RV(sources) says which were used.
  - A pod needing a resource whose node capacity is not known here (C(ephemeral-storage), an extended
    resource without O(devices)) gets C(verdict=cannot_check), never C(admitted=true).
  - Node selectors, affinity, taints, host ports and critical-pod preemption are not simulated.
  - A pod that is already on the node (same C(metadata.uid) as a pod of O(running_pods) or of the state
    files, else, for a manifest without uid, the same namespace and name as a pod of O(running_pods)) is an
    in-place resize request, not a new pod. It is judged by the kubelet's resize rules of the assumed release
    (RV(pods[].resize)) - a Guaranteed pod's CPU under CPU Manager C(static) is C(Infeasible) unless
    C(InPlacePodVerticalScalingExclusiveCPUs) is on - and, when these let it through, by the resource fit
    against the node's other pods. The managers' re-allocation of a resize is not simulated.
author:
  - numaguard.kubelet contributors (@numaguard)
extends_documentation_fragment:
  - numaguard.kubelet.root
  - numaguard.kubelet.topology
options:
  pod:
    description:
      - A Pod manifest (dict) or a list of them, evaluated in order.
      - Besides C(kind=Pod), C(List)/C(PodList) items and the pod template of Deployment,
        ReplicaSet, StatefulSet, DaemonSet, Job, CronJob and ReplicationController are accepted
        (one pod per template).
      - Pods without C(metadata.uid) get a deterministic uid derived from namespace and name; a
        repeated pod in the sequence gets a distinct one, so it counts as a new pod.
      - Evaluated after the manifests of O(pod_file).
      - A pod that is already running on the node is a resize request (see the notes above).
    type: raw
  pod_file:
    description:
      - Path(s) of YAML or JSON manifest files B(on the controller); multi-document files are allowed.
      - Read by the action plugin, which passes their content to the module.
      - A file is refused, naming it, beyond 4 MiB, 100000 YAML nodes, 200000 nodes with aliases expanded, or 64
        levels of nesting, or when it is not UTF-8 YAML (a NUL byte included).
    type: list
    elements: path
  pod_file_content:
    description:
      - Internal, set by the action plugin from O(pod_file); do not set it yourself.
      - A list of C({source, manifests}) items.
    type: list
    elements: dict
  kubelet_config:
    description:
      - The KubeletConfiguration, either the path of the config file (relative to O(root)) or the
        configuration itself as a dict (camelCase field names).
      - Default is what the running kubelet uses (its C(--config) and C(--config-dir)), else the
        default locations; no file at all means a kubelet configured by flags only.
      - Fields left unset get the kubelet's defaults (for example C(evictionHard) C(memory.available<100Mi)).
    type: raw
  kubelet_config_dir:
    description:
      - The kubelet's drop-in directory (C(--config-dir)) merged over O(kubelet_config) when that is a path.
      - Default is the running kubelet's, else the default location.
    type: path
  kubelet_flags:
    description:
      - "NUMA-related kubelet command-line flags, for kubelets configured (partly) by flags, for example
        C({'--cpu-manager-policy': 'static', '--reserved-memory': ['0:memory=1Gi', '1:memory=1Gi']})."
      - Keys with or without leading dashes; C(--root-dir), C(--config) and C(--config-dir) locate files.
      - Flags override the configuration file, as on the kubelet. Default are the running kubelet's flags.
    type: dict
  memory_manager_state:
    description:
      - The C(memory_manager_state) file to start from, either its JSON content or its path (relative
        to O(root)).
      - Default is the file in the kubelet root dir; an absent file means a fresh node. The empty
        string ignores the node's file (a fresh node).
    type: str
  cpu_manager_state:
    description:
      - The C(cpu_manager_state) file, as O(memory_manager_state).
    type: str
  devices:
    description:
      - Device inventory of the device plugins, keyed by extended resource name (for example
        C(nvidia.com/gpu)), each a mapping of device id to its NUMA node, a list of NUMA nodes,
        C(null) (no topology) or a dict with keys C(numa) and C(healthy); or a list of dicts with keys
        C(id), C(numa) and C(healthy).
      - The kubelet learns this from device plugins, which cannot be asked here.
      - Default is the host's inventory, as M(numaguard.kubelet.numa_facts) reports it in C(device_plugins) - the
        devices registered in the kubelet's C(device-plugins/kubelet_internal_checkpoint), with the NUMA node of
        those whose id is a PCI address or an NVIDIA GPU UUID; others count as devices without topology.
        RV(sources) says which inventory was used (C(devices) key).
    type: dict
  device_allocations:
    description:
      - Devices already held by running pods, a mapping of pod uid to container name to resource name to
        a list of device ids.
      - Default is what the kubelet's C(device-plugins/kubelet_internal_checkpoint) in its root dir
        records, or nothing when that file is absent.
    type: dict
  running_pods:
    description:
      - The node's running pods, for the resource fit. Pod manifests (a dict or a list), a C(v1) C(PodList)
        or C(List), or the result of M(kubernetes.core.k8s_info) (its C(resources) are used).
      - Pods in phase C(Succeeded) or C(Failed) are left out. Pods the state files show holding exclusive
        CPUs, memory or devices but missing here are still counted (and named in a warning).
      - Default is the pods rebuilt from the state files only (Guaranteed pods' exclusive allocations); other
        pods and the pod count are then unknown, which the result says.
      - A checked pod that matches one of these pods is a resize of it; a listed pod's
        C(status.containerStatuses[].allocatedResources), where present, is taken as what the kubelet allocated.
    type: raw
  node_allocatable:
    description:
      - "Allocatable values to use instead of the computed ones, as in the node object's C(status.allocatable)
        (for example C({ephemeral-storage: 95Gi, example.com/fpga: 2})). Needed for C(ephemeral-storage),
        which is otherwise not checked."
    type: dict
  readmit:
    description:
      - Answer "if this node restarts now, or after this change, do all its pods come back?" instead of
        checking new pods (O(pod) and O(pod_file) must then be absent). The running pods (O(running_pods),
        else rebuilt from the state files) are admitted again with the configuration given (the current
        one, or a proposed one through O(kubelet_config)/O(kubelet_flags)), in the recorded order and in the
        orders most likely to fail; see RV(readmit).
      - C(true), or a dict with C(start) (C(restored) = kubelet restart with the state files, C(fresh) =
        reboot with the state refused or a reset; a list for both, the default), C(reset) (the state files a
        fresh start goes without, default both C(cpu_manager_state) and C(memory_manager_state); the others
        are restored), C(max_orders) (bound of
        the search beyond C(exhaustive_up_to) pods, default 100, at most 10000), C(exhaustive_up_to) (every order up to
        this many pods, default 7, at most 8) and C(seed) (of the random orders, default 0).
    type: raw
  return_state:
    description:
      - Also return, in RV(state_after), the C(cpu_manager_state) and C(memory_manager_state) files the
        kubelet would have written after the sequence, in the version of the files read (newest format
        for a fresh node). Nothing is written to the host.
    type: bool
    default: false
  merge_method:
    description:
      - C(fast) computes the Topology Manager's merge exactly without enumerating permutations;
        C(exhaustive) enumerates every permutation like the kubelet (only feasible for small machines,
        useful to cross-check).
    type: str
    choices: [fast, exhaustive]
    default: fast
  kubelet_version:
    description:
      - Kubernetes release of the kubelet to decide as (V(1.36), V(v1.36.1), C(kubelet --version) output).
        It decides option maturity, feature-gate defaults (merged with the configuration's C(featureGates))
        and the behaviour switches of C(docs/kubelet-versions.md), such as device-manager hints from 1.36.
      - Default - what C(kubelet --version) prints on the host when O(root) is C(/) and O(topology) is not
        given; otherwise (snapshots) the newest released kubelet the collection knows, with a warning
        (C(docs/kubelet-versions.md)).
    type: str
  dra_objects:
    description:
      - ResourceClaim and ResourceSlice objects (or C(List)s of them), as C(kubectl get -o yaml) prints them, for
        pods with C(spec.resourceClaims) (Dynamic Resource Allocation).
      - A claim's allocated devices (C(status.allocation.devices.results)) get their NUMA node from the device's
        attribute C(resource.kubernetes.io/numaNode), else the driver's own C(<driver>/numaNode) (also C(numa),
        C(numaNodeID)), in the ResourceSlice that publishes the device (or on the result itself). RV(pods[].alignment)
        compares it with the NUMA nodes of the pod's exclusive CPUs and memory and warns, naming both, on a mismatch
        (the Topology Manager never sees DRA devices).
      - A claim made from a template is found through the pod's C(status.resourceClaimStatuses).
    type: list
    elements: raw
  dra_file:
    description:
      - Path(s) of YAML or JSON files B(on the controller) with the objects of O(dra_objects); read by the action plugin.
    type: list
    elements: path
  dra_file_content:
    description:
      - Internal, set by the action plugin from O(dra_file); do not set it yourself.
    type: list
    elements: dict
attributes:
  check_mode:
    support: full
    description: The module only reads; check mode gives the same answer.
  diff_mode:
    support: none
    description: Nothing is changed.
notes:
  - The answer is the kubelet's for the configuration and state read now; pods created by others
    in the meantime change it.
  - See C(docs/admission.md) in the collection for details and where the simulation stops.
seealso:
  - module: numaguard.kubelet.numa_facts
  - name: Kubernetes Topology Manager
    description: How the kubelet aligns CPUs, memory and devices on NUMA nodes.
    link: https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/
"""

EXAMPLES = r"""
---
- name: Would this node admit the pod?
  numaguard.kubelet.admission_check:
    pod_file: files/db-pod.yaml
  register: check

- name: Show the answer
  ansible.builtin.debug:
    msg: "{{ check.msg }}"

- name: Two pods one after the other, with a kubelet config given inline
  numaguard.kubelet.admission_check:
    pod:
      - "{{ lookup('file', 'pod-a.yaml') | from_yaml }}"
      - "{{ lookup('file', 'pod-b.yaml') | from_yaml }}"
    kubelet_config:
      topologyManagerPolicy: single-numa-node
      cpuManagerPolicy: static
      memoryManagerPolicy: Static
      kubeReserved: {cpu: "1", memory: 1Gi}
      reservedMemory:
        - {numaNode: 0, limits: {memory: 1124Mi}}
    memory_manager_state: ""

- name: Ad hoc
  ansible.builtin.command: ansible worker-1 -m numaguard.kubelet.admission_check -a pod_file=pod.yaml
  delegate_to: localhost
  changed_when: false
"""

RETURN = r"""
invalid_pod:
  description:
    - True when the module failed because a manifest is not a valid pod (the API server would refuse it); C(msg) then has
      Kubernetes' validation message. Absent when the failure is the host's (it cannot be checked).
  returned: failure, for an invalid pod
  type: bool
  sample: true
pods:
  description: One result per pod, in evaluation order.
  returned: success
  type: list
  elements: dict
  contains:
    name:
      description: Pod name.
      type: str
      returned: always
    namespace:
      description: Pod namespace.
      type: str
      returned: always
    uid:
      description: Pod uid used for the state (C(metadata.uid) or derived).
      type: str
      returned: always
    admitted:
      description: Whether the kubelet admits the pod (Topology Manager and resource fit); false when the
        fit could not be checked.
      type: bool
      returned: always
    verdict:
      description: C(admitted), C(rejected) (with the kubelet's reason), C(cannot_check) (see cannot_check) or
        C(crashed) (the kubelet panics while admitting this pod, or crashed at an earlier pod of the sequence; see crash).
      type: str
      returned: always
    crash:
      description: >-
        When the verdict is C(crashed), C(pod) (namespace/name of the pod the kubelet panicked at) and
        C(panic) (the Go runtime error, e.g. C(runtime error: index out of range [2] with length 2):
        prefer-closest-numa-nodes on sparse NUMA ids); null otherwise.
      type: dict
      returned: always
    cannot_check:
      description: Why the fit could not be decided (resources whose node capacity is unknown); empty otherwise.
      type: str
      returned: always
    resource_fit:
      description: The resource fit, when the Topology Manager admitted the pod (C(evaluated)), with C(requested),
        C(insufficient) (resource, requested, used, capacity), C(unchecked), C(dropped) (extended resources the
        node lacks, ignored like the kubelet does) and C(note).
      type: dict
      returned: always
    reason:
      description: The kubelet's rejection reason (C(TopologyAffinityError), C(UnexpectedAdmissionError),
        C(SMTAlignmentError), ...); empty when admitted.
      type: str
      returned: always
      sample: TopologyAffinityError
    message:
      description: The kubelet's message (what follows "Pod was rejected:" in the pod status); empty when admitted.
      type: str
      returned: always
      sample: Resources cannot be allocated with Topology locality
    qos_class:
      description: QoS class, computed as the kubelet does.
      type: str
      returned: always
      sample: Guaranteed
    topology_manager:
      description: Policy and effective scope (C(none) for policy none).
      type: dict
      returned: always
    merges:
      description:
        - The Topology Manager merges, one per container (container scope) or one per pod (pod scope),
          each with C(containers), C(hints) (per provider C(device)/C(cpu)/C(memory), per resource a list
          of C({numa_affinity, preferred}), null for "no preference", an empty list for "cannot satisfy"),
          C(merged_hint) and C(admit).
      type: list
      elements: dict
      returned: always
    containers:
      description:
        - Per container (init containers first) the stored C(affinity), C(numa_affinity), whether allocation
          was attempted, C(memory_blocks) (C(type), C(size) in bytes, C(numa_affinity)), C(cpus) (exclusive
          CPUs in cpuset syntax), C(cpu_numa_nodes), C(devices) (resource to device ids) and
          C(device_numa_nodes).
        - For a rejected pod these show what it held at rejection time; it was released afterwards.
      type: list
      elements: dict
      returned: always
    numa_nodes:
      description: NUMA nodes holding the pod's exclusive CPUs, memory blocks and devices.
      type: list
      elements: int
      returned: always
      sample: [0, 1]
    alignment:
      description:
        - What the kubelet's managers align for this pod and what they do not (see C(docs/admission.md)).
          C(aligned) lists C({resource, by, numa_nodes}) for resources placed by a manager that gives the Topology
          Manager hints; C(not_aligned) lists C({resource, why}) - every C(spec.resourceClaims) entry (C(claim <name>),
          the Topology Manager has no hint provider for DRA), extended resources whose device plugin reports no
          topology or that no device plugin registered, CPUs and memory from shared pools, everything under
          C(topologyManagerPolicy=none).
        - C(claims) per pod claim - C(name), C(resource_claim), C(template), C(containers), C(devices) (C(driver),
          C(pool), C(device), C(numa_node), C(attribute)), C(status) (C(aligned), C(mismatch) or C(unknown)) and
          C(note); C(warnings) has one line per device whose NUMA node differs from the pod's exclusive CPUs or memory.
      type: dict
      returned: when the pod is admitted as a new pod (not for a resize)
    failed_container:
      description: Container whose merge or allocation rejected the pod (null for a pod-scope merge).
      type: str
      returned: always
    failed_provider:
      description: Provider whose allocation failed (C(device), C(cpu), C(memory)), null otherwise.
      type: str
      returned: always
    resize:
      description:
        - Only for a pod that resizes a running pod (the pod is then not admitted as a new pod; its C(containers),
          C(merges) and C(numa_nodes) are empty). C(of) (the running pod - C(uid), C(namespace), C(name),
          C(matched_by) C(uid) or C(namespace/name), C(sources)), C(verdict), C(reason) and C(message) (the
          kubelet's, e.g. C(Infeasible) and C(Resize is infeasible for Guaranteed Pods alongside CPU Manager policy
          "static")), C(metric_reason) (the kubelet's C(pod_infeasible_resizes_total) label), C(changed) (C(cpu),
          C(memory), C(any) - true, false or null when the state files do not show it), C(kubelet_version),
          C(gates) (C(InPlacePodVerticalScaling), C(InPlacePodVerticalScalingExclusiveCPUs),
          C(InPlacePodVerticalScalingExclusiveMemory) as assumed), C(checked) (the rules applied) and
          C(not_simulated).
        - C(verdict) is C(infeasible), C(not_resized) (the kubelet resizes no pod - C(InPlacePodVerticalScaling)
          off), C(unchanged) (the requests are the allocated ones), C(cannot_check) (the state files do not show
          what decides) or C(feasible) (the resize rules let it through; the pod's C(verdict), C(reason) and
          C(resource_fit) then say whether the new requests fit beside the node's other pods).
      type: dict
      returned: for a resize of a running pod
    runtime:
      description:
        - C(admitted, then fails at runtime) when the pod is admitted on the strength of the memory manager's
          hugepage counters but the OS has fewer free pages (C(free_hugepages) in sysfs) on the NUMA node it
          got; null otherwise. C(runtime_shortfalls) says per node and size how much is missing.
      type: str
      returned: always
memory:
  description:
    - The memory manager's map per NUMA node (string keys) after the sequence, per memory type (C(memory),
      C(hugepages-2Mi), ...) C(total), C(systemReserved), C(allocatable), C(reserved), C(free) in bytes,
      as in the kubelet's state file. Empty with memory manager policy C(None).
  returned: success
  type: dict
  sample: {"0": {"memory": {"total": 134987354112, "systemReserved": 3221225472, "allocatable": 131766128640,
           "reserved": 131766128640, "free": 0}}}
pinning:
  description: Counters as the kubelet's metrics would count this sequence
    (C(memory_manager_pinning_requests_total), C(memory_manager_pinning_errors_total),
    C(cpu_manager_pinning_requests_total), C(cpu_manager_pinning_errors_total)).
  returned: success
  type: dict
node:
  description: The node's managers as configured (policies, scope, reserved CPUs, default CPU set before the
    sequence, NUMA node ids) and its C(hardware_class) (see P(numaguard.kubelet.numa_hardware_class#filter)).
  returned: success
  type: dict
sources:
  description: Where the topology, configuration, state and running pods came from (paths or
    C(option)/C(absent)); C(resource_fit) names what the fit used.
  returned: success
  type: dict
node_allocatable:
  description: The node allocatable the resource fit used (cpu in millicores, bytes, counts), what the running
    pods request (C(used)) and their number (C(pods)).
  returned: success
  type: dict
running_pods:
  description: The node's running pods as seen (C(count), C(requested), C(sources), C(warnings), C(pods)).
  returned: success
  type: dict
readmit:
  description:
    - With O(readmit) - C(running_pods) (C(source) C(running_pods option) or C(state files), C(count),
      C(recorded_order), C(warnings)); C(starts) per start (C(restored), C(fresh)) with C(kubelet_starts),
      C(start_error), C(all_readmitted), C(recorded_order) (C(order), C(rejected)), C(rejected) (per pod that
      some tried order rejects - C(pod), C(reason), C(message), C(order), C(position), C(found_by),
      C(rejected_in_orders)) and C(search) (C(method) exhaustive or bounded, C(orders_possible),
      C(orders_tried), C(orders_bound), C(admissions), C(strategies), C(seconds)).
    - C(boot_drift) - per NUMA node and memory type the state file's total, the machine's total now and the
      C(difference); C(tolerance) (the C(memory-drift-tolerance) bound in effect), C(starts), C(how)
      (C(exact), C(tolerated), C(refused)), C(message), C(detail), C(starts_without_tolerance).
    - C(hugepages) - per NUMA node and hugepage size the state's C(state_free), the OS's C(os_free_pages) and
      C(os_free), C(difference) and C(diverged). C(all_readmitted), C(summary) (lines).
  returned: when O(readmit) is set
  type: dict
alignment_warnings:
  description: Every pod's C(alignment.warnings) (a DRA device on another NUMA node than the pod's CPUs or memory),
    also shown as task warnings.
  returned: success (not with O(readmit))
  type: list
  elements: str
table:
  description: RV(msg) as a list of lines (reads as text on the default callback).
  returned: success
  type: list
  elements: str
state_after:
  description: The state files' content after the sequence (see O(return_state)).
  returned: when O(return_state=true)
  type: dict
  contains:
    cpu_manager_state:
      description: File content.
      type: str
      returned: always
    memory_manager_state:
      description: File content.
      type: str
      returned: always
kubelet_version:
  description: The kubelet release the decisions followed (as given or as C(kubelet --version) printed it).
  returned: success
  type: str
  sample: v1.36.1
kubelet_version_source:
  description: Where the version came from, V(option), V(host) (C(kubelet --version)) or V(default).
  returned: success
  type: str
  sample: host
feature_gates:
  description: The NUMA-relevant feature gates the decisions assumed (release defaults merged with C(featureGates)).
  returned: success
  type: dict
  sample: {"PodLevelResources": true, "PodLevelResourceManagers": false}
msg:
  description: A table of the pods and the reasons of rejections, for ad hoc use.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.numaguard.kubelet.plugins.module_utils._zip_compile import compile_each_module_once


def main():
    compile_each_module_once()  # first: the backend's imports then compile once (see _zip_compile.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.admission_check import module_kwargs, run

    run(AnsibleModule(**module_kwargs()))


if __name__ == "__main__":
    main()
