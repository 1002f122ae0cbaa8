# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What-if admission: run pods through the kubelet's allocate-resources admit handler.

Why: the kubelet decides NUMA placement in its Topology Manager admit handler (pkg/kubelet/cm/container_manager_linux.go, pkg/kubelet/lifecycle) from
the machine, its configuration and the state files. :class:`AdmissionSimulator` builds the same
managers the kubelet builds at start-up (Topology Manager, then the hint providers in the
kubelet's order: device, CPU, memory), fails where the kubelet would not start, and then admits
pods one after another as the kubelet does for pods created in that order:

* each pod goes through the scope (none / container / pod) -> provider hints -> merge ->
  allocation, with the kubelet's reason and message on rejection (pkg/kubelet/cm/topologymanager/scope.go, pkg/kubelet/cm/admission/errors.go);
* a rejected pod becomes Failed, so its partial allocations are garbage-collected before the
  next pod is admitted (pkg/kubelet/cm/topologymanager/scope.go: no rollback during admission, release at the next GC);
* admitted pods keep their resources for the rest of the sequence.

After the Topology Manager admit handler comes the kubelet's resource-fit admission
(:mod:`..._engine.resource_fit`: OutOfcpu, OutOfmemory, OutOfhugepages-1Gi, OutOfpods, ...),
against the node allocatable and the requests of the node's running pods (listed, or rebuilt
from the state files). A pod whose fit cannot be decided (a resource whose node capacity is
unknown) gets the verdict ``cannot_check`` and is not counted as admitted.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import dataclasses

try:
    from typing import Any, Dict, List, Mapping, Optional, Sequence  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.pod import Pod, pod_requests
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.resource_fit import ResourceFit, node_allocatable, restartable_init_refusal
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.startup import CRASHED, KubeletRefusesToStart, start_kubelet
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.hints import TopologyHint
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.kubelet_cost import pod_cost
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.scope import SCOPE_POD, AdmitResult
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.scope_pod import uses_pod_resources
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import format_cpuset
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import (
    INIT_CONTAINER_RESTART_POLICY_FIELD,
    KubeletAssumption,
    VersionError,
    behaviour,
)

#: the kubelet would not start with this machine / configuration / state (``startup.py``)
AdmissionSetupError = KubeletRefusesToStart


def _hint_numa(hint: Optional[TopologyHint]) -> Optional[List[int]]:
    if hint is None or hint.affinity is None:
        return None
    return list(hint.affinity.bits())


def _assumption(kubelet_version: Any, configured_gates: Any) -> KubeletAssumption:
    """The kubelet release the simulation follows: a KubeletAssumption, a version text or tuple,
    or None (the newest released kubelet)."""
    if isinstance(kubelet_version, KubeletAssumption):
        return kubelet_version.with_gates(configured_gates)
    if isinstance(kubelet_version, tuple):
        return KubeletAssumption(kubelet_version, "option", configured_gates)
    try:
        return KubeletAssumption.resolve(kubelet_version, None, configured_gates)
    except VersionError as err:
        raise KubeletRefusesToStart("version", str(err))


class AdmissionSimulator:
    """The node's admission machinery, built from topology, configuration and state.

    ``topology``: a ``topology.Topology``; ``kubelet_config``: the effective KubeletConfiguration
    dict; ``cpu_checkpoint`` / ``memory_checkpoint``: restored checkpoints (None = fresh node);
    ``devices``: the device inventory for the device manager (None = no device plugins) and
    ``device_allocations`` the devices held by running pods (pod uid -> container -> resource ->
    ids), see :mod:`.devicemanager`;
    ``cpu_state_path`` / ``memory_state_path``: file names used in the kubelet's messages;
    ``memory_capacity_bytes``: the node's memory capacity (/proc/meminfo MemTotal) for
    percentage eviction thresholds and node allocatable (default: the sum of the NUMA nodes);
    ``proc_iomem``: the host's ``/proc/iomem`` for the memory manager's
    ``memory-drift-tolerance: auto`` bound;
    ``resource_fit``: the node's :class:`ResourceFit` (default: node allocatable from topology,
    configuration and device inventory, with no running pod; callers that know the node's pods,
    see ``_host/running_pods.py``, pass their own).
    ``kubelet_version``: the release to decide as (a ``_k8s.versions.KubeletAssumption``, a
    version text, or None for the newest released kubelet); its gate defaults merge with the
    configuration's ``featureGates``.
    Raises :class:`AdmissionSetupError` (a StateError) where the kubelet would refuse to start.
    """

    def __init__(self, topology, kubelet_config, cpu_checkpoint=None, memory_checkpoint=None, devices=None,
                 device_allocations=None,
                 cpu_state_path="/var/lib/kubelet/cpu_manager_state",
                 memory_state_path="/var/lib/kubelet/memory_manager_state", merger="fast",
                 memory_capacity_bytes=None, proc_iomem=None, resource_fit=None, kubelet_version=None):
        self.topology = topology
        self.config = dict(kubelet_config or {})
        self.kubelet = _assumption(kubelet_version, self.config.get("featureGates"))
        #: the gates of that release merged with the configured ones (what the kubelet decides with)
        self.feature_gates = dict(self.kubelet.gates)
        managers = start_kubelet(topology, self.config, self.kubelet, cpu_checkpoint, memory_checkpoint, devices,
                                 device_allocations, cpu_state_path, memory_state_path, merger, memory_capacity_bytes,
                                 proc_iomem)
        self.topology_manager = managers.topology_manager
        self.device_manager = managers.device_manager
        self.cpu_manager = managers.cpu_manager
        self.memory_manager = managers.memory_manager
        #: the pod the kubelet panicked at (None: it runs) and the crash; no later pod is admitted
        self.crashed_at: Optional[Pod] = None
        self.crash: Dict[str, str] = {}
        self.providers = managers.providers
        self._used_uids: set = set()
        if resource_fit is None:
            inventory = self.device_manager.inventory
            extended = dict((r, len(inventory.healthy.get(r, ()))) for r in inventory.resources()) \
                if inventory.resources() else None
            resource_fit = ResourceFit(node_allocatable(topology, self.config, memory_capacity_bytes,
                                                        extended_capacity=extended),
                                       extended_known=extended is not None)
        self.resource_fit = resource_fit

    # ---- pods ----------------------------------------------------------------------------
    def pod_from_manifest(self, manifest: Mapping[str, Any], index: int = 0) -> Pod:
        """Validate a manifest; pods without ``metadata.uid`` that collide in the sequence get
        a distinct uid (``<uid>-<n>``) so that they are new pods, not re-admissions."""
        pod = Pod.from_manifest(manifest, feature_gates=self.feature_gates)
        if not behaviour(INIT_CONTAINER_RESTART_POLICY_FIELD, self.kubelet.version) and pod.init_containers:
            # the release's API types have no init-container restartPolicy: decoded away
            pod = dataclasses.replace(pod, init_containers=tuple(
                dataclasses.replace(c, restartable=False) for c in pod.init_containers))
        explicit = isinstance(manifest, dict) and isinstance(manifest.get("metadata"), dict) \
            and bool(manifest["metadata"].get("uid"))
        if not explicit and pod.uid in self._used_uids:
            number = 2
            while "%s-%d" % (pod.uid, number) in self._used_uids:
                number += 1
            pod = dataclasses.replace(pod, uid="%s-%d" % (pod.uid, number))
        self._used_uids.add(pod.uid)
        return pod

    def admit(self, pod: Pod) -> Dict[str, Any]:
        """Admit one pod; returns its result dict. Rejected pods are garbage-collected.

        The Topology Manager decides first; only a pod it admits reaches the resource fit, as in
        the kubelet's chain of admit handlers.
        """
        if self.crashed_at is not None:  # the kubelet is gone (and crashes again at that pod when restarted)
            outcome = AdmitResult(self.topology_manager.name)
            outcome.admitted, outcome.panic = False, self.crash["panic"]
        else:
            outcome = self.topology_manager.admit(pod)  # the pod scope takes the pod-level path itself
        admitted, reason, message = outcome.admitted, outcome.reason, outcome.message
        verdict = "admitted" if admitted else "rejected"
        fit: Dict[str, Any] = {"evaluated": False}
        requests = pod_requests(pod)
        undecided = getattr(outcome, "cannot_check", "")  # a search out of bounds (big machines)
        crash: Optional[Dict[str, str]] = None
        if outcome.panic:
            if self.crashed_at is None:
                self.crashed_at = pod
                self.crash = {"pod": "%s/%s" % (pod.namespace, pod.name), "panic": outcome.panic}
            crash = dict(self.crash)
            verdict, message = CRASHED, "panic: %s" % outcome.panic
        elif undecided:
            verdict = "cannot_check"
        elif admitted:
            refusal = restartable_init_refusal(pod, self.kubelet.version, self.feature_gates)
            if refusal is not None:  # the predicate handler's first check, before the fit
                admitted, reason, message, verdict = False, refusal["reason"], refusal["message"], "rejected"
            else:
                fit = dict(self.resource_fit.check(requests), evaluated=True)
        if admitted and fit["evaluated"]:
            if not fit["fits"]:
                admitted, reason, message, verdict = False, fit["reason"], fit["message"], "rejected"
            elif fit["unchecked"]:
                admitted, verdict = False, "cannot_check"
        result: Dict[str, Any] = {
            "name": pod.name,
            "namespace": pod.namespace,
            "uid": pod.uid,
            "admitted": admitted,
            "verdict": verdict,
            "reason": reason,
            "message": message,
            "cannot_check": undecided or ("; ".join("%s: %s" % (u["resource"], u["why"]) for u in fit.get("unchecked", [])
                                                    ) if verdict == "cannot_check" else ""),
            "resource_fit": fit,
            "qos_class": pod.qos_class,
            "topology_manager": {
                "policy": self.topology_manager.policy.name,
                "scope": self.topology_manager.name,
            },
            "merges": [decision.to_dict() for decision in outcome.decisions],
            "kubelet_cost": pod_cost([decision.kubelet_cost for decision in outcome.decisions]),
            "containers": self._container_results(pod, outcome),
            "failed_container": outcome.failed_container,
            "failed_provider": outcome.failed_provider,
            #: the kubelet's crash: the pod it panicked at and the panic (None: no crash)
            "crash": crash,
        }
        if pod.has_pod_level_resources:
            result["pod_level_resources"] = self._pod_level_result(pod)
        numa: set = set()
        for container in result["containers"]:
            for block in container["memory_blocks"]:
                numa.update(block["numa_affinity"])
            for cpu in container["cpu_numa_nodes"]:
                numa.add(cpu)
            for ids in container.get("device_numa_nodes", {}).values():
                numa.update(ids)
        result["numa_nodes"] = sorted(numa)
        if admitted:
            self.resource_fit.add(requests)
        else:
            self._garbage_collect(pod)
            result["released"] = True
        return result

    # ---- pod-level resources (KEP-5526) ---------------------------------------------------
    def uses_pod_level_path(self, pod: Pod) -> bool:
        """The pod goes through the pod-level hint and allocation path: pod scope (policy not
        none), PodLevelResourceManagers on and ``spec.resources`` set (scope_pod.go ``Admit``).
        Container scope keeps the per-container path; there the CPU and memory managers give
        exclusive resources only to containers whose requests equal their limits."""
        return self.topology_manager.name == SCOPE_POD and uses_pod_resources(pod)

    def _pod_level_result(self, pod: Pod) -> Dict[str, Any]:
        """What the pod-level path decided: whether it ran, the pod budget's CPUs and blocks."""
        pod_cpus = getattr(self.cpu_manager, "pod_cpus", lambda uid: None)(pod.uid)
        pod_blocks = getattr(self.memory_manager, "pod_blocks", lambda uid: None)(pod.uid) or []
        return {
            "managed": bool(self.feature_gates.get("PodLevelResourceManagers", False)),
            "pod_scope_path": self.uses_pod_level_path(pod),
            "cpus": format_cpuset(pod_cpus) if pod_cpus else "",
            "memory_blocks": [{"type": b.type, "size": b.size, "numa_affinity": list(b.numa_affinity)}
                              for b in pod_blocks],
        }

    def _container_results(self, pod: Pod, outcome: Any) -> List[Dict[str, Any]]:
        results = []
        for container in pod.all_containers():
            affinity = outcome.affinities.get(container.name)
            attempted = container.name in outcome.allocated
            entry: Dict[str, Any] = {
                "name": container.name,
                "init": container.is_init,
                "restartable": container.restartable,
                "affinity": None if affinity is None else affinity.to_dict(),
                "numa_affinity": _hint_numa(affinity),
                "allocation_attempted": attempted,
                "memory_blocks": [],
                "cpus": "",
                "cpu_numa_nodes": [],
                "devices": {},
            }
            blocks = self.memory_manager.blocks(pod.uid, container.name) or []
            entry["memory_blocks"] = [
                {"type": b.type, "size": b.size, "numa_affinity": list(b.numa_affinity)} for b in blocks]
            cpus = self.cpu_manager.assigned_cpus(pod.uid, container.name)
            if cpus:
                entry["cpus"] = format_cpuset(cpus)
                nodes = set()
                for cpu_id in cpus:
                    details = getattr(self.cpu_manager.cpu_topology, "details", {})
                    info = details.get(cpu_id)
                    node = getattr(info, "numa_node", None) if info is not None else None
                    if node is None:
                        node = _cpu_node(self.topology, cpu_id)
                    if node is not None:
                        nodes.add(node)
                entry["cpu_numa_nodes"] = sorted(nodes)
            devices: Dict[str, List[str]] = {}
            device_nodes: Dict[str, List[int]] = {}
            for resource in self.device_manager.inventory.resources():
                ids = self.device_manager.container_devices(pod.uid, container.name, resource)
                if ids:
                    devices[resource] = ids
                    nodes = set()
                    for device_id in ids:
                        nodes.update(self.device_manager.inventory.devices[resource].get(device_id, ()))
                    device_nodes[resource] = sorted(nodes)
            entry["devices"] = devices
            entry["device_numa_nodes"] = device_nodes
            results.append(entry)
        return results

    def _garbage_collect(self, pod: Pod) -> None:
        """Release what a rejected (Failed) pod got before the next admission (pkg/kubelet/cm/topologymanager/scope.go)."""
        for container in pod.all_containers():
            for provider in self.providers:
                provider.remove(pod.uid, container.name)
            self.topology_manager.remove_container(pod.uid, container.name)

    # ---- node views ----------------------------------------------------------------------
    def memory_map(self) -> Dict[str, Dict[str, Dict[str, int]]]:
        """Per NUMA node (str keys), per memory type: the state file's memory table."""
        plain = self.memory_manager.memory_map() or {}
        return dict(("%d" % node, tables) for node, tables in sorted(plain.items()))

    def machine_state(self) -> Dict[str, Any]:
        state = self.memory_manager.machine_state() or {}
        return dict(("%d" % node, value.to_plain()) for node, value in sorted(state.items()))

    def pinning(self) -> Dict[str, int]:
        counters: Dict[str, int] = {}
        mem = getattr(self.memory_manager, "counters", None)
        counters["memory_manager_pinning_requests_total"] = mem.requests if mem is not None else 0
        counters["memory_manager_pinning_errors_total"] = mem.errors if mem is not None else 0
        counters["cpu_manager_pinning_requests_total"] = getattr(self.cpu_manager, "pinning_requests", 0)
        counters["cpu_manager_pinning_errors_total"] = getattr(self.cpu_manager, "pinning_errors", 0)
        return counters

    def summary(self) -> Dict[str, Any]:
        cpu = self.cpu_manager.summary() if hasattr(self.cpu_manager, "summary") else {}
        return {
            "topology_manager_policy": self.topology_manager.policy.name,
            "topology_manager_scope": self.topology_manager.name,
            "cpu_manager_policy": cpu.get("policy"),
            "memory_manager_policy": getattr(self.memory_manager, "policy_name", None),
            "reserved_cpus": cpu.get("reserved_cpus"),
            "default_cpu_set": cpu.get("default_cpu_set"),
            "numa_nodes": [node.id for node in self.topology.nodes],
        }

    def state_after(self,
                    cpu_version: Optional[int] = None,
                    memory_version: Optional[int] = None) -> Dict[str, str]:
        """The ``cpu_manager_state`` and ``memory_manager_state`` files the kubelet would have
        written after the admissions so far (versions default to the newest format)."""
        # imported here: an admission that writes no state file does not compile the formats (40 KB)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager import checkpoint as _cpu_cp
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager import checkpoint as _mem_cp

        mem_cp = _mem_cp.checkpoint_from_state(self.memory_manager.state())
        cpu = self.cpu_manager.state()
        cpu_cp = _cpu_cp.CPUManagerCheckpoint(policy_name=cpu["policy_name"], default_cpu_set=cpu["default_cpu_set"],
                                              entries=cpu["entries"], pod_entries=dict(cpu.get("pod_entries") or {}))
        return {
            "memory_manager_state": _mem_cp.dump_memory_manager_state(
                mem_cp, memory_version or _mem_cp.LATEST_MEMORY_VERSION),
            "cpu_manager_state": _cpu_cp.dump_cpu_manager_state(cpu_cp, cpu_version or _cpu_cp.LATEST_CPU_VERSION),
        }

    def run(self, manifests: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
        """Admit ``manifests`` in order; returns ``pods``, ``memory``, ``pinning``, ``node``."""
        pods = [self.pod_from_manifest(manifest, index) for index, manifest in enumerate(manifests)]
        results = [self.admit(pod) for pod in pods]
        return {
            "pods": results,
            "memory": self.memory_map(),
            "pinning": self.pinning(),
            "node": self.summary(),
        }


def _cpu_node(topology: Any, cpu_id: int) -> Optional[int]:
    for node in topology.nodes:
        if cpu_id in node.cpus:
            return node.id
    return None
