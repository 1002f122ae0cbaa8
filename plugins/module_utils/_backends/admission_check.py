# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Backend of ``numaguard.kubelet.admission_check`` (PRIVATE to this collection).

The module file holds the documentation and calls :func:`run`; the options are declared once,
in ``admission_check_options.py`` (:func:`argument_spec`, also read by the action plugin without
importing this backend), and documented once, in the module's DOCUMENTATION and doc fragments.

From the object called ``module`` only these are used: ``params``, ``warn``, ``fail_json``, ``exit_json``,
``get_bin_path``, ``run_command`` (``kubelet --version``).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import json
from typing import TYPE_CHECKING, Any, Dict

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.admission_check_options import argument_spec
from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.node_inputs import device_allocations, device_inventory, node_inputs
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission_inputs import (
    AdmissionInputError,
    InvalidPodInput,
    pods_from_documents,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.alignment import DRAObjects, pod_alignment
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.devicemanager_inputs import DeviceInventory
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.hugepages_truth import RUNTIME_FAILURE, Backing
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import InvalidPod, pod_requests
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.resource_fit import ResourceFit
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.kubelet_cost import pod_cost
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.running_pods import combine, listed_pods, resource_fit_for_node, state_pods
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption, probe_host_kubelet
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.admission_table import alignment_warnings, run_message
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.classes import hardware_class

if TYPE_CHECKING:  # looked for and judged only on a node with running pods (issue 12)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._host.resize import ResizeMatch


def module_kwargs() -> Dict[str, Any]:
    """Keyword arguments for ``AnsibleModule``: the spec and its constraints."""
    return dict(argument_spec=argument_spec(), supports_check_mode=True)


def run(module: Any) -> None:
    params = dict(module.params)
    params["host_kubelet_version"] = probe_host_kubelet(module, params.get("kubelet_version"), params.get("root"),
                                                        params.get("topology"))
    try:
        result = run_check(params)
    except InvalidPodInput as exc:
        # the pod's fault (the API server would refuse it), not the host's: check_pod.yml fails
        module.fail_json(msg=str(exc), changed=False, invalid_pod=True)
    except ValueError as exc:
        module.fail_json(msg=str(exc), changed=False)
    for warning in result.pop("kubelet_warnings", []) + list(result.get("alignment_warnings") or []):
        module.warn(warning)
    module.exit_json(changed=False, **result)


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


def _dra_objects(params):
    """The ResourceClaims and ResourceSlices of ``dra_objects`` and ``dra_file`` (read by the action plugin)."""
    documents = list(params.get("dra_objects") or [])
    for item in params.get("dra_file_content") or []:
        documents.extend(d for d in (item.get("manifests") or []) if d is not None)
    if params.get("dra_file") and not params.get("dra_file_content"):
        raise AdmissionInputError("dra_file is read on the controller by the action plugin of "
                                  "numaguard.kubelet.admission_check; pass the objects with 'dra_objects' instead")
    return DRAObjects(documents)


def _restore_states(config, mem_path, mem_text, cpu_path, cpu_text):
    """(memory, CPU) checkpoints restored as the kubelet restores them (None = no file). The
    checkpoint code is imported only when there is a file to read (issue 12: fresh-process cost)."""
    memory_checkpoint = cpu_checkpoint = None
    if mem_text is not None:
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.checkpoint import restore_memory_manager_state

        memory_checkpoint = restore_memory_manager_state(mem_text, config.get("memoryManagerPolicy") or "None", mem_path)
    if cpu_text is not None:
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.checkpoint import restore_cpu_manager_state

        cpu_checkpoint = restore_cpu_manager_state(cpu_text, config.get("cpuManagerPolicy") or "none", cpu_path)
    return memory_checkpoint, cpu_checkpoint


def _running_pods(params, kubelet, sources, cpu_checkpoint, memory_checkpoint, allocations):
    """The pods running on the node: the ``running_pods`` option combined with the state files."""
    listed, inactive = None, 0
    if params.get("running_pods") is not None:
        listed, inactive = listed_pods(params["running_pods"], feature_gates=kubelet.gates)
    state_read = [name for name in ("cpu_manager_state", "memory_manager_state", "device_allocations")
                  if not str(sources.get(name, "")).startswith(("absent", "ignored"))]
    running = combine(listed, state_pods(cpu_checkpoint, memory_checkpoint, allocations), inactive, state_read)
    sources["running_pods"] = "option" if listed is not None else "state files only"
    return running


def _check_pod(params, simulator, running, backing, node, dra, config, index, label, manifest):
    """One pod's result: a resize of a running pod judged as the kubelet judges a resize, else an
    admission (with its DRA alignment and whether the OS can back its hugepages)."""
    try:
        pod = simulator.pod_from_manifest(manifest, index)
    except InvalidPod as exc:
        raise InvalidPodInput("%s: %s" % (label, exc))
    except ValueError as exc:
        raise AdmissionInputError("%s: %s" % (label, exc))
    match = None
    if params.get("running_pods") is not None or running.pods:  # only a running pod can be resized
        from ansible_collections.numaguard.kubelet.plugins.module_utils._host.resize import find_resized

        match = find_resized(manifest, pod, params.get("running_pods"), running, simulator.feature_gates)
    if match is not None:
        result = _resize_result(simulator, pod, match, config)
        result.update(source=label, runtime=None, runtime_shortfalls=[])
        return result
    result = simulator.admit(pod)
    result["source"] = label
    result["alignment"] = alignment_warnings(pod_alignment(manifest, pod_requests(pod), result, node,
                                                           simulator.device_manager.inventory, dra))
    # hugepages truth: the state's counters admitted it; can the OS back its pages?
    shortfalls = backing.charge(simulator.memory_map()) if result["admitted"] else []
    result["runtime"] = RUNTIME_FAILURE if shortfalls else None
    result["runtime_shortfalls"] = shortfalls
    return result


def run_check(params):
    """Everything the module does, returning the result dict; raises ValueError subclasses."""
    if params.get("readmit") not in (None, False):
        # imported here: a plain check does not compile the re-admission code (issue 12)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.readmit import run_readmit

        return run_readmit(params)
    root = params.get("root") or "/"
    sources = {}
    pods = _collect_pods(params)
    dra = _dra_objects(params)
    node = node_inputs(params, root, sources)
    topology, capacity, hugepages, config, root_dir = (node["topology"], node["capacity"], node["hugepages"],
                                                       node["config"], node["root_dir"])
    (mem_path, mem_text), (cpu_path, cpu_text) = node["memory_manager_state"], node["cpu_manager_state"]
    memory_checkpoint, cpu_checkpoint = _restore_states(config, mem_path, mem_text, cpu_path, cpu_text)
    devices = device_inventory(params, root, root_dir, topology, sources)
    allocations = device_allocations(params, root, root_dir, sources)
    kubelet = KubeletAssumption.resolve(params.get("kubelet_version"), params.get("host_kubelet_version"),
                                        config.get("featureGates"))
    running = _running_pods(params, kubelet, sources, cpu_checkpoint, memory_checkpoint, allocations)
    fit = resource_fit_for_node(topology, config, running, DeviceInventory.from_spec(devices),
                                capacity, hugepages, params.get("node_allocatable"))
    sources["resource_fit"] = {
        "allocatable": "topology %s, kubelet configuration%s%s" % (
            "and MemTotal/hugepage pools under %s" % root if hugepages is not None else "(option)",
            ", devices (%s)" % ("option" if params.get("devices") else "host") if devices else "",
            ", node_allocatable (option)" if params.get("node_allocatable") else ""),
        "running_pods": running.sources or ["none"],
    }
    simulator = AdmissionSimulator(
        topology, config, cpu_checkpoint=cpu_checkpoint, memory_checkpoint=memory_checkpoint,
        devices=devices, device_allocations=allocations, cpu_state_path=cpu_path, memory_state_path=mem_path,
        merger=params.get("merge_method") or "fast", memory_capacity_bytes=capacity, resource_fit=fit,
        kubelet_version=kubelet)
    node = simulator.summary()
    node["hardware_class"] = hardware_class(topology.to_facts())["group"]
    results = []
    backing = Backing(topology, simulator.memory_map())
    for index, (label, manifest) in enumerate(pods):
        results.append(_check_pod(params, simulator, running, backing, node, dra, config, index, label, manifest))
    run = {"pods": results, "memory": simulator.memory_map(), "pinning": simulator.pinning(),
           "node": node, "sources": sources, "running_pods": running.to_dict(),
           "node_allocatable": simulator.resource_fit.summary(), "kubelet_warnings": list(simulator.kubelet.warnings),
           "alignment_warnings": [w for r in results for w in (r.get("alignment") or {}).get("warnings", [])]}
    run.update(simulator.kubelet.result())
    if params.get("return_state"):
        run["state_after"] = simulator.state_after(
            cpu_version=getattr(cpu_checkpoint, "version", None) if cpu_checkpoint is not None else None,
            memory_version=getattr(memory_checkpoint, "version", None) if memory_checkpoint is not None else None)
    run["msg"] = run_message(run)
    run["table"] = run["msg"].split("\n")
    return run


def _resize_result(simulator: Any, pod: Any, match: ResizeMatch, config: Dict[str, Any]) -> Dict[str, Any]:
    """The result of a pod that resizes a running one: judged by the kubelet's resize rules, never
    admitted as a new pod. The result has every field of an admission result (no containers, merges
    or NUMA nodes: the managers' handling of a resize is not simulated) plus ``resize``."""
    from ansible_collections.numaguard.kubelet.plugins.module_utils._host.resize import judge_resize

    resize = judge_resize(match, pod, simulator.kubelet, config.get("cpuManagerPolicy") or "none",
                          config.get("memoryManagerPolicy") or "None")
    requests = pod_requests(pod)
    fit: Dict[str, Any] = {"evaluated": False}
    admitted, verdict, reason, message, undecided = False, "rejected", resize["reason"] or "", resize["message"] or "", ""
    if resize["verdict"] == "cannot_check":
        verdict, reason, message, undecided = "cannot_check", "", "", resize["message"]
    elif resize["verdict"] == "unchanged":
        admitted, verdict = True, "admitted"
    elif resize["verdict"] == "feasible":
        current = simulator.resource_fit
        used = dict(current.used)
        for name, value in match.requests.items():
            used[name] = used.get(name, 0) - int(value)
        others = ResourceFit(current.allocatable, current.extended_known, used=used,
                             pod_count=max(current.pod_count - 1, 0))
        fit = dict(others.check(requests), evaluated=True)
        resize["checked"].append("resource fit of the new requests against node allocatable minus the node's "
                                 "other pods (the kubelet's predicate admit handler)")
        if not fit["fits"]:
            reason, message = fit["reason"], fit["message"]
        elif fit["unchecked"]:
            verdict = "cannot_check"
            undecided = "; ".join("%s: %s" % (u["resource"], u["why"]) for u in fit["unchecked"])
        else:
            admitted, verdict = True, "admitted"
            for name, value in requests.items():  # the node now holds the new requests
                used[name] = used.get(name, 0) + int(value)
            current.used = dict((name, value) for name, value in used.items() if value)
    return {
        "name": pod.name, "namespace": pod.namespace, "uid": pod.uid, "admitted": admitted, "verdict": verdict,
        "reason": reason, "message": message, "cannot_check": undecided, "resource_fit": fit,
        "qos_class": pod.qos_class,
        "topology_manager": {"policy": simulator.topology_manager.policy.name, "scope": simulator.topology_manager.name},
        "merges": [], "kubelet_cost": pod_cost([]), "containers": [], "failed_container": None,
        "failed_provider": None, "numa_nodes": [], "resize": resize,
    }
