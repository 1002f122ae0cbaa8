# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kubelet's start-up, the one path every start-up verdict comes from (pkg/kubelet/cm/container_manager_linux.go).

The kubelet validates its NUMA configuration by building its managers. ``NewContainerManager``
builds, in this order and stopping at the first error:

1. the Topology Manager (``topologymanager.NewManager``: options, NUMA info, node count, policy, scope);
2. the device manager (never refuses here: no plugin is registered yet);
3. the CPU Manager (``cpumanager.NewManager``: policy, options, reserved CPUs; its state file);
4. the Memory Manager (``memorymanager.NewManager``: policy, reserved memory; its state file).

``containerManagerImpl.Start`` then starts the CPU and Memory Managers and checks the Node
Allocatable reservation against the node's capacity (``validateNodeAllocatable``,
pkg/kubelet/cm/node_container_manager_linux.go); an error there ends the kubelet too.

:func:`start_kubelet` builds the managers that way and raises with the first failing manager's
own message; :func:`startup_verdict` returns the same decision as data. A kubelet that starts may
still crash at an admission (a Go panic, e.g. prefer-closest-numa-nodes on sparse NUMA ids, see
``topologymanager/numa_info.py``): :class:`KubeletPanic` is raised by the admission itself and
:mod:`.admission` turns it into the verdict ``crashed``.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Dict, Mapping, Optional  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.cpu_manager import new_cpu_manager
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.devicemanager_inputs import (
    DeviceInventory,
    NoDeviceManager,
    has_devices,
    read_allocations,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.memory_manager import new_memory_manager
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.node_allocatable import (
    node_allocatable_capacity_message,
    node_capacity,
    reservation_from_config,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import KubeletPanic, NUMAInfo, TopologyManagerError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy import POLICY_SINGLE_NUMA_NODE
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_options import PREFER_CLOSEST_NUMA_NODES
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.topology_manager import topology_manager_from_config
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import InvalidCPUSet, parse_cpuset
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_parse_bool
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import CPU, MEMORY
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import (
    DEVICE_HINTS_FROM_DEVICE_NUMA_NODES,
    MANAGERS_SIDECAR_AWARE,
    KubeletAssumption,
    behaviour,
)

__all__ = ["KubeletCrashed", "KubeletPanic", "KubeletRefusesToStart", "KubeletManagers", "start_kubelet", "startup_verdict",
           "node_allocatable_refusal", "panics_possible", "STARTS", "REFUSES", "CRASHED"]

#: the start-up verdicts (``CRASHED`` is a pod's verdict: the kubelet started, then panicked at it)
STARTS = "starts"
REFUSES = "refuses"
CRASHED = "crashed"

#: the managers in the kubelet's construction order, then Start's Node Allocatable check
STARTUP_ORDER = ("topology", "device", "cpu", "memory", "node_allocatable")


class KubeletRefusesToStart(StateError):
    """The kubelet exits at start-up: ``manager`` (one of :data:`STARTUP_ORDER`) failed with
    ``kubelet_message`` (the kubelet's own text)."""

    def __init__(self, manager: str, kubelet_message: str, text: Optional[str] = None) -> None:
        super().__init__(text if text is not None else kubelet_message)
        self.manager = manager
        self.kubelet_message = kubelet_message


class KubeletCrashed(StateError):
    """A caller that cannot go on past a crashed kubelet (a candidate's fill): names the pod and the panic."""


def refusing_manager(error: BaseException) -> str:
    """The manager a start-up error came from (errors of the CPU and Memory Managers keep their
    own type; :func:`start_kubelet` marks them)."""
    return str(getattr(error, "manager", None) or getattr(error, "startup_manager", None) or "")


def node_allocatable_refusal(topology: Any, kubelet_config: Mapping[str, Any], memory_capacity_bytes: int,
                             feature_gates: Mapping[str, Any], version: Any) -> Optional[str]:
    """``validateNodeAllocatable``: the kubelet's message when kube-reserved + system-reserved +
    the hard eviction threshold exceed the node's capacity, else None. A reservation that does not
    parse is left to the configuration checks that report it (None here)."""
    reserved_cpus = kubelet_config.get("reservedSystemCPUs") or ""
    try:
        count = len(parse_cpuset(str(reserved_cpus))) if reserved_cpus else None
        names = [CPU, MEMORY] + sorted(set(name for node in topology.nodes for name in node.hugepages))
        reservation = reservation_from_config(kubelet_config, names, memory_capacity_bytes, count or None,
                                              feature_gates=feature_gates)
    except (InvalidCPUSet, ValueError):
        return None
    return node_allocatable_capacity_message(node_capacity(topology, memory_capacity_bytes, reservation),
                                             reservation, version)


class HintProvider:
    """A manager as the Topology Manager's hint provider, with the short name results use
    (device, cpu, memory); delegates everything else."""

    def __init__(self, name, provider):
        self.name = name
        self.provider = provider

    def get_topology_hints(self, pod, container):
        return self.provider.get_topology_hints(pod, container)

    def get_pod_topology_hints(self, pod):
        return self.provider.get_pod_topology_hints(pod)

    def allocate(self, pod, container, affinity):
        return self.provider.allocate(pod, container, affinity)

    def allocate_pod(self, pod, affinity):
        """``AllocatePod``; a provider without one does nothing (the device manager's returns nil)."""
        allocate_pod = getattr(self.provider, "allocate_pod", None)
        if allocate_pod is not None:
            allocate_pod(pod, affinity)

    def remove(self, pod_uid, container_name):
        return self.provider.remove(pod_uid, container_name)


class KubeletManagers:
    """What :func:`start_kubelet` built: the Topology Manager (a scope) with its hint providers
    added in the kubelet's order (device, CPU, memory), and those managers."""

    def __init__(self, topology_manager: Any, device_manager: Any, cpu_manager: Any, memory_manager: Any) -> None:
        self.topology_manager = topology_manager
        self.device_manager = device_manager
        self.cpu_manager = cpu_manager
        self.memory_manager = memory_manager
        #: ``AddHintProvider`` in NewContainerManager's order
        self.providers = [HintProvider("device", device_manager), HintProvider("cpu", cpu_manager),
                          HintProvider("memory", memory_manager)]
        for provider in self.providers:
            topology_manager.add_hint_provider(provider)


def _mark(error: BaseException, manager: str) -> BaseException:
    error.startup_manager = manager  # type: ignore[attr-defined]
    return error


def start_kubelet(topology: Any, kubelet_config: Mapping[str, Any], kubelet: KubeletAssumption,
                  cpu_checkpoint: Any = None, memory_checkpoint: Any = None, devices: Any = None,
                  device_allocations: Any = None, cpu_state_path: str = "/var/lib/kubelet/cpu_manager_state",
                  memory_state_path: str = "/var/lib/kubelet/memory_manager_state", merger: str = "fast",
                  memory_capacity_bytes: Optional[int] = None, proc_iomem: Optional[str] = None) -> KubeletManagers:
    """The managers as kubelet ``kubelet`` (a KubeletAssumption: release and effective gates)
    builds and starts them on ``topology`` with ``kubelet_config`` (the effective
    KubeletConfiguration) and the restored state files. Raises :class:`KubeletRefusesToStart`
    (Topology Manager, Node Allocatable) or the CPU/Memory Manager's own StateError (marked with
    the manager, :func:`refusing_manager`) where the kubelet exits."""
    config = kubelet_config
    version = kubelet.version
    gates = dict(kubelet.gates)
    try:
        topology_manager = topology_manager_from_config(topology, config, merger=merger, version=version)
    except TopologyManagerError as err:
        raise KubeletRefusesToStart("topology", str(err), "topology manager: %s" % err)
    node_ids = [node.id for node in topology.nodes]
    device_numa_nodes_only = behaviour(DEVICE_HINTS_FROM_DEVICE_NUMA_NODES, version)
    if has_devices(devices, device_allocations):
        # imported here: a run without device plugins does not compile the device manager (issue 12)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.devicemanager import DeviceManager
        device_manager: Any = DeviceManager(node_ids, DeviceInventory.from_spec(devices), read_allocations(device_allocations),
                                            device_numa_nodes_only=device_numa_nodes_only,
                                            sidecar_aware=behaviour(MANAGERS_SIDECAR_AWARE, version))
    else:
        device_manager = NoDeviceManager(node_ids, device_numa_nodes_only)
    try:
        cpu_manager = new_cpu_manager(topology, config, cpu_checkpoint, checkpoint_path=cpu_state_path,
                                      feature_gates=gates, version=version)
    except StateError as err:
        raise _mark(err, "cpu")
    try:
        memory_manager = new_memory_manager(topology, config, memory_checkpoint, state_file=memory_state_path,
                                            feature_gates=gates, memory_capacity_bytes=memory_capacity_bytes,
                                            proc_iomem=proc_iomem, version=version)
    except StateError as err:
        raise _mark(err, "memory")
    capacity = memory_capacity_bytes if memory_capacity_bytes is not None else topology.memory_total_bytes()
    message = node_allocatable_refusal(topology, config, capacity, gates, version)
    if message is not None:
        raise KubeletRefusesToStart("node_allocatable", message)
    return KubeletManagers(topology_manager, device_manager, cpu_manager, memory_manager)


def panics_possible(topology: Any, kubelet_config: Mapping[str, Any]) -> bool:
    """Whether a started kubelet can panic at an admission on this machine: prefer-closest-numa-nodes
    (not under single-numa-node, where the merge never averages distances) and some NUMA id past a
    node's distance list (sparse ids, numa_info.py). Which pod crashes it depends on the pods."""
    policy = kubelet_config.get("topologyManagerPolicy") or "none"
    options = kubelet_config.get("topologyManagerPolicyOptions") or {}
    try:
        if policy in ("none", POLICY_SINGLE_NUMA_NODE) or not go_parse_bool(str(options.get(PREFER_CLOSEST_NUMA_NODES, "false"))):
            return False
        return bool(NUMAInfo.from_topology(topology, True).short_lists)
    except (TopologyManagerError, ValueError):  # refused at start-up: no admission to panic at
        return False


def startup_verdict(topology: Any, kubelet_config: Mapping[str, Any], kubelet: KubeletAssumption,
                    **kwargs: Any) -> Dict[str, Any]:
    """:func:`start_kubelet`'s decision as data: ``verdict`` (:data:`STARTS` or :data:`REFUSES`),
    ``manager`` (the first failing one, "" when it starts), ``message`` (the kubelet's text)."""
    try:
        start_kubelet(topology, kubelet_config, kubelet, **kwargs)
    except StateError as err:
        return {"verdict": REFUSES, "manager": refusing_manager(err),
                "message": str(getattr(err, "kubelet_message", None) or err)}
    return {"verdict": STARTS, "manager": "", "message": ""}
