#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)

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
  - Only the Topology Manager admit handler is simulated; the kubelet's later resource-fit check
    (C(OutOfcpu), C(OutOfmemory), node selectors, taints) is not.
author:
  - numaguard.kubelet contributors (@numaguard)
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
    type: raw
  pod_file:
    description:
      - Path(s) of YAML or JSON manifest files B(on the controller); multi-document files are allowed.
      - Read by the action plugin, which passes their content to the module.
    type: list
    elements: path
  pod_file_content:
    description:
      - Internal, set by the action plugin from O(pod_file); do not set it yourself.
      - A list of C({source, manifests}) items.
    type: list
    elements: dict
  root:
    description:
      - Root of the host filesystem to read (sysfs, C(/proc), kubelet files), as in
        M(numaguard.kubelet.numa_facts). C(/) reads the live host.
    type: path
    default: /
  topology:
    description:
      - A C(numa_topology) fact dict (as returned by M(numaguard.kubelet.numa_facts)) to use instead
        of reading sysfs.
    type: dict
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
      - Default is no device plugin.
    type: dict
  device_allocations:
    description:
      - Devices already held by running pods, a mapping of pod uid to container name to resource name to
        a list of device ids.
      - Default is what the kubelet's C(device-plugins/kubelet_internal_checkpoint) in its root dir
        records, or nothing when that file is absent.
    type: dict
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
      description: Whether the kubelet's allocate-resources admit handler admits the pod.
      type: bool
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
    failed_container:
      description: Container whose merge or allocation rejected the pod (null for a pod-scope merge).
      type: str
      returned: always
    failed_provider:
      description: Provider whose allocation failed (C(device), C(cpu), C(memory)), null otherwise.
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
    sequence, NUMA node ids).
  returned: success
  type: dict
sources:
  description: Where the topology, configuration and state came from (paths or C(option)/C(absent)).
  returned: success
  type: dict
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
msg:
  description: A table of the pods and the reasons of rejections, for ad hoc use.
  returned: always
  type: str
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import (
    AdmissionSimulator, format_table)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission_inputs import (
    AdmissionInputError, flags_to_config, pods_from_documents, state_input)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.devicemanager import (
    parse_device_checkpoint)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.checkpoint import (
    restore_cpu_manager_state, restore_memory_manager_state)
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.kubelet_paths import (
    locate_kubelet, under_root)
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import (
    kubelet_defaults, load_kubelet_config)
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import (
    read_system_memory, read_topology)
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology


class _Failure(Exception):
    """A problem already phrased for the user."""


def _collect_pods(params):
    pods = []
    for item in params.get("pod_file_content") or []:
        source = str(item.get("source", "pod_file"))
        manifests = item.get("manifests")
        if not isinstance(manifests, list):
            raise AdmissionInputError("%s: pod_file_content.manifests must be a list" % source)
        pods.extend(pods_from_documents(manifests, source))
    if params.get("pod_file") and not params.get("pod_file_content"):
        raise AdmissionInputError("pod_file is read on the controller by the action plugin of "
                                  "numaguard.kubelet.admission_check; pass the manifests with 'pod' instead")
    pod = params.get("pod")
    if pod is not None:
        if isinstance(pod, str):
            try:
                pod = json.loads(pod)
            except ValueError:
                raise AdmissionInputError("pod must be a manifest (dict) or a list of them, got a string "
                                          "that is not JSON; use pod_file for YAML files")
        documents = pod if isinstance(pod, list) else [pod]
        pods.extend(pods_from_documents(documents, "pod" if not isinstance(pod, list) else "pod[]"))
    if not pods:
        raise AdmissionInputError("no pod to check: give pod or pod_file")
    return pods


def _read_state(root, option_value, default_path, name, sources):
    kind, value = state_input(option_value)
    if kind == "fresh":
        sources[name] = "ignored (fresh node)"
        return default_path, None
    if kind == "content":
        sources[name] = "option"
        return default_path, value
    path = value if kind == "path" else default_path
    host_path = under_root(root, path)
    try:
        with open(host_path, "rb") as handle:
            raw = handle.read()
    except (IOError, OSError) as exc:
        if kind == "default" and not os.path.exists(host_path):
            sources[name] = "absent (%s)" % path
            return path, None
        raise AdmissionInputError("%s: cannot read %s: %s" % (name, host_path, exc.strerror or exc))
    sources[name] = path
    try:
        return path, raw.decode("utf-8")
    except UnicodeDecodeError:
        raise AdmissionInputError("%s: %s is not UTF-8 text" % (name, host_path))


def _config(params, root, located, sources):
    raw = params.get("kubelet_config")
    flags = params.get("kubelet_flags")
    if flags is None:
        flags = located.get("flags") or {} if raw is None else {}
    flags_config, path_flags = flags_to_config(flags)
    if isinstance(raw, dict):
        config = dict(raw)
        sources["kubelet_config"] = "option"
    elif raw is not None and not isinstance(raw, str):
        raise AdmissionInputError("kubelet_config must be a path or a dict, got %s" % type(raw).__name__)
    else:
        path = raw or path_flags.get("config") or located.get("config")
        config_dir = params.get("kubelet_config_dir") or path_flags.get("config-dir") or located.get("config_dir")
        host_path = under_root(root, path) if path else None
        host_dir = under_root(root, config_dir) if config_dir else None
        if raw and not os.path.isfile(host_path):
            raise AdmissionInputError("kubelet_config: %s does not exist" % host_path)
        if host_path and not os.path.isfile(host_path):
            host_path = None
        if host_dir and not os.path.isdir(host_dir):
            if params.get("kubelet_config_dir"):
                raise AdmissionInputError("kubelet_config_dir: %s is not a directory" % host_dir)
            host_dir = None
        config = load_kubelet_config(host_path, host_dir)
        sources["kubelet_config"] = path if host_path else "none (flags and defaults only)"
        sources["kubelet_config_dir"] = config_dir if host_dir else None
    config.update(flags_config)
    for key, value in kubelet_defaults().items():
        if config.get(key) is None:
            config[key] = value
    root_dir = path_flags.get("root-dir") or located.get("root_dir") or "/var/lib/kubelet"
    return config, root_dir


def run_check(params):
    """Everything the module does, returning the result dict; raises ValueError subclasses."""
    root = params.get("root") or "/"
    sources = {}
    pods = _collect_pods(params)
    if params.get("topology") is not None:
        topology = Topology.from_facts(params["topology"])
        sources["topology"] = "option"
        capacity = None
    else:
        topology = read_topology(root)
        sources["topology"] = "sysfs under %s" % root
        capacity = read_system_memory(root).get("memory_total_bytes")
    need_host = params.get("kubelet_config") is None or params.get("memory_manager_state") is None \
        or params.get("cpu_manager_state") is None
    located = locate_kubelet(root) if need_host else {}
    config, root_dir = _config(params, root, located, sources)
    sources["root_dir"] = root_dir
    mem_path, mem_text = _read_state(root, params.get("memory_manager_state"),
                                     os.path.join(root_dir, "memory_manager_state"), "memory_manager_state", sources)
    cpu_path, cpu_text = _read_state(root, params.get("cpu_manager_state"),
                                     os.path.join(root_dir, "cpu_manager_state"), "cpu_manager_state", sources)
    memory_checkpoint = restore_memory_manager_state(mem_text, config.get("memoryManagerPolicy") or "None", mem_path)
    cpu_checkpoint = restore_cpu_manager_state(cpu_text, config.get("cpuManagerPolicy") or "none", cpu_path)
    allocations = params.get("device_allocations")
    if allocations is None:
        dev_path = os.path.join(root_dir, "device-plugins", "kubelet_internal_checkpoint")
        host_dev = under_root(root, dev_path)
        if os.path.isfile(host_dev):
            try:
                with open(host_dev, "rb") as handle:
                    allocations = parse_device_checkpoint(handle.read().decode("utf-8", "replace"))["allocations"]
            except (IOError, OSError) as exc:
                raise AdmissionInputError("cannot read %s: %s" % (host_dev, exc.strerror or exc))
            sources["device_allocations"] = dev_path
        else:
            sources["device_allocations"] = "absent (%s)" % dev_path
    else:
        sources["device_allocations"] = "option"
    simulator = AdmissionSimulator(
        topology, config, cpu_checkpoint=cpu_checkpoint, memory_checkpoint=memory_checkpoint,
        devices=params.get("devices"), device_allocations=allocations, cpu_state_path=cpu_path, memory_state_path=mem_path,
        merger=params.get("merge_method") or "fast", memory_capacity_bytes=capacity)
    node = simulator.summary()
    results = []
    for index, (label, manifest) in enumerate(pods):
        try:
            pod = simulator.pod_from_manifest(manifest, index)
        except ValueError as exc:
            raise AdmissionInputError("%s: %s" % (label, exc))
        result = simulator.admit(pod)
        result["source"] = label
        results.append(result)
    run = {"pods": results, "memory": simulator.memory_map(), "pinning": simulator.pinning(),
           "node": node, "sources": sources}
    if params.get("return_state"):
        run["state_after"] = simulator.state_after(
            cpu_version=getattr(cpu_checkpoint, "version", None) if cpu_checkpoint is not None else None,
            memory_version=getattr(memory_checkpoint, "version", None) if memory_checkpoint is not None else None)
    run["msg"] = format_table(run)
    return run


def main():
    module = AnsibleModule(
        argument_spec=dict(
            pod=dict(type="raw"),
            pod_file=dict(type="list", elements="path"),
            pod_file_content=dict(type="list", elements="dict"),
            root=dict(type="path", default="/"),
            topology=dict(type="dict"),
            kubelet_config=dict(type="raw"),
            kubelet_config_dir=dict(type="path"),
            kubelet_flags=dict(type="dict"),
            memory_manager_state=dict(type="str"),
            cpu_manager_state=dict(type="str"),
            devices=dict(type="dict"),
            device_allocations=dict(type="dict"),
            return_state=dict(type="bool", default=False),
            merge_method=dict(type="str", default="fast", choices=["fast", "exhaustive"]),
        ),
        supports_check_mode=True,
    )
    try:
        result = run_check(module.params)
    except ValueError as exc:
        module.fail_json(msg=str(exc), changed=False)
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
