# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Backend of ``admission_check`` with ``readmit`` (PRIVATE to this collection).

"If this node restarts now -- or after this change -- do all its pods come back?" The running
pods (``running_pods``, else rebuilt from the state files by ``_host/running_pods.py``) are
admitted again with the configuration given (current by default, or a proposed one through
``kubelet_config``/``kubelet_flags``), from the restored state files (kubelet restart) and from a
fresh state (reboot with the state refused, or a rollout's reset), by ``_engine/readmit.py``.
The boot-drift check and the hugepages truth of the memory manager's state come with it.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.node_inputs import device_allocations, device_inventory, node_inputs
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission_inputs import AdmissionInputError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.checkpointmanager import CheckpointError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.checkpoint import load_cpu_manager_state, restore_cpu_manager_state
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.boot_drift import boot_drift
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.checkpoint import load_memory_manager_state, restore_memory_manager_state
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.hugepages_truth import compare
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.machine_state import machine_state_from_plain, machine_state_to_plain
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.readmit import (
    DEFAULT_EXHAUSTIVE_UP_TO,
    DEFAULT_MAX_ORDERS,
    START_FRESH,
    START_RESTORED,
    STARTS,
    ReadmitInputError,
    readmit,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.kubelet_paths import under_root
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.running_pods import (
    INACTIVE_PHASES,
    RunningPodsError,
    _items,
    combine,
    listed_pods,
    state_pods,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import parse_cpuset
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import format_bytes
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption

_OPTION_KEYS = ("start", "reset", "max_orders", "exhaustive_up_to", "seed")
STATE_FILES = ("cpu_manager_state", "memory_manager_state")
#: requests a container gets when the state files do not record them (keeps the pod Guaranteed)
PLACEHOLDER_CPU = "100m"
PLACEHOLDER_MEMORY = "64Mi"


def readmit_options(value: Any) -> Dict[str, Any]:
    """``readmit: true`` or a dict with ``start`` (``restored``, ``fresh`` or a list of them;
    default both), ``reset`` (the state files a fresh start goes without; default both),
    ``max_orders``, ``exhaustive_up_to`` and ``seed``."""
    if value is True or (isinstance(value, str) and value.lower() in ("true", "yes", "on", "1")):
        value = {}
    if not isinstance(value, Mapping):
        raise AdmissionInputError("readmit must be true or a dict with keys %s, got %r" % (", ".join(_OPTION_KEYS), value))
    unknown = sorted(set(value) - set(_OPTION_KEYS))
    if unknown:
        raise AdmissionInputError("readmit: unknown key(s) %s (known: %s)" % (", ".join(unknown), ", ".join(_OPTION_KEYS)))
    starts = value.get("start") or [START_RESTORED, START_FRESH]
    if isinstance(starts, str):
        starts = [starts]
    if not isinstance(starts, list) or not starts or any(s not in STARTS for s in starts):
        raise AdmissionInputError("readmit.start must be restored, fresh or a list of them, got %r" % (value.get("start"),))
    options: Dict[str, Any] = {"start": list(dict.fromkeys(starts))}
    reset = value.get("reset")
    reset = list(STATE_FILES) if reset is None else [reset] if isinstance(reset, str) else reset
    if not isinstance(reset, list) or any(name not in STATE_FILES for name in reset):
        raise AdmissionInputError("readmit.reset must be a list of %s, got %r" % (" and ".join(STATE_FILES),
                                                                                  value.get("reset")))
    options["reset"] = [name for name in STATE_FILES if name in reset]
    for key, default in (("max_orders", DEFAULT_MAX_ORDERS), ("exhaustive_up_to", DEFAULT_EXHAUSTIVE_UP_TO),
                         ("seed", 0)):
        raw = value.get(key, default)
        try:
            options[key] = int(raw) if not isinstance(raw, bool) else None
        except (TypeError, ValueError):
            options[key] = None
        if options[key] is None:
            raise AdmissionInputError("readmit.%s must be an integer, got %r" % (key, raw))
    return options


# ---- running pods -------------------------------------------------------------------------

def _listed_manifests(value: Any) -> List[Tuple[str, Dict[str, Any]]]:
    """The listed pods that are active, in creation order when every one has a creation time
    (the kubelet sorts each batch of pods by creation time before admitting it)."""
    active = [(label, manifest) for label, manifest in _items(value, "running_pods")
              if not (isinstance(manifest.get("status"), dict) and manifest["status"].get("phase") in INACTIVE_PHASES)]
    stamps = [(manifest.get("metadata") or {}).get("creationTimestamp") for _label, manifest in active]
    if active and all(isinstance(stamp, str) and stamp for stamp in stamps):
        active = [item for _stamp, item in sorted(zip(stamps, active), key=lambda pair: str(pair[0]))]
    return active


def _state_manifest(pod: Any, warnings: List[str]) -> Dict[str, Any]:
    """A Guaranteed pod asking for what the state files say a rebuilt pod holds (one container
    per recorded container; a container whose CPUs all belong to another one is taken as an init
    container whose CPUs were reused)."""
    containers = sorted(pod.exclusive.items())
    cpus = dict((name, parse_cpuset(held["cpus"]) if held.get("cpus") else frozenset()) for name, held in containers)
    specs: List[Dict[str, Any]] = []
    inits: List[Dict[str, Any]] = []
    guessed: List[str] = []
    for name, held in containers:
        resources: Dict[str, str] = {}
        if cpus[name]:
            resources["cpu"] = str(len(cpus[name]))
        for kind, size in sorted((held.get("memory") or {}).items()):
            if size:
                resources[kind] = str(size)
        for resource, ids in sorted((held.get("devices") or {}).items()):
            resources[resource] = str(len(ids))
        for key, placeholder in (("cpu", PLACEHOLDER_CPU), ("memory", PLACEHOLDER_MEMORY)):
            if key not in resources:
                resources[key] = placeholder
                guessed.append("%s %s" % (name, key))
        container = {"name": name, "image": "rebuilt-from-state",
                     "resources": {"requests": dict(resources), "limits": dict(resources)}}
        reused = bool(cpus[name]) and any(
            other != name and (cpus[name] < cpus[other] or (cpus[name] == cpus[other] and name < other))
            for other in cpus)
        (inits if reused else specs).append(container)
    if guessed:
        warnings.append("pod %s: the state files do not record %s; assumed cpu %s / memory %s so the pod stays "
                        "Guaranteed (give running_pods for the real requests)"
                        % (pod.uid, ", ".join(guessed), PLACEHOLDER_CPU, PLACEHOLDER_MEMORY))
    spec: Dict[str, Any] = {"containers": specs or inits}
    if specs and inits:
        spec["initContainers"] = inits
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod.name or pod.uid, "namespace": pod.namespace or "unknown", "uid": pod.uid},
            "spec": spec}


def _parse_quietly(loader: Callable[[Any], Any], text: Optional[str], name: str, problems: List[str]) -> Any:
    if text is None:
        return None
    try:
        return loader(text)
    except CheckpointError as exc:
        problems.append("%s: %s" % (name, exc))
        return None


def running_manifests(params: Mapping[str, Any], config: Mapping[str, Any], mem_text: Optional[str],
                      cpu_text: Optional[str], allocations: Any, state_read: List[str]) -> Tuple[List[str], List[Dict[str, Any]], Dict[str, Any]]:
    """(labels, manifests in the recorded order, description) of the pods to re-admit."""
    problems: List[str] = []
    memory = _parse_quietly(load_memory_manager_state, mem_text, "memory_manager_state", problems)
    cpu = _parse_quietly(load_cpu_manager_state, cpu_text, "cpu_manager_state", problems)
    try:
        from_state = state_pods(cpu, memory, allocations)
        listed = None
        listed_items: List[Tuple[str, Dict[str, Any]]] = []
        inactive = 0
        if params.get("running_pods") is not None:
            listed, inactive = listed_pods(params["running_pods"], feature_gates=config.get("featureGates"))
            listed_items = _listed_manifests(params["running_pods"])
    except RunningPodsError as exc:
        raise AdmissionInputError(str(exc))
    if problems and listed is None:
        raise AdmissionInputError("cannot rebuild the running pods from the state files (%s); give running_pods"
                                  % "; ".join(problems))
    running = combine(listed, from_state, inactive, state_read)
    warnings = list(running.warnings) + ["state file not usable for the pods: %s" % p for p in problems]
    labels = [label for label, _manifest in listed_items]
    manifests = [manifest for _label, manifest in listed_items]
    listed_uids = set(p.uid for p in listed or [])
    for pod in running.pods:
        if pod.uid not in listed_uids:
            labels.append("state pod %s" % pod.uid)
            manifests.append(_state_manifest(pod, warnings))
    order = ("creation time" if listed_items and len(manifests) == len(listed_items) and all(
        (m.get("metadata") or {}).get("creationTimestamp") for m in manifests) else
        "as listed" if listed is not None else "by pod uid (the state files do not record the creation order)")
    description = {"source": "running_pods option" if listed is not None else "state files",
                   "sources": running.sources, "count": len(manifests), "recorded_order": order,
                   "warnings": warnings}
    return labels, manifests, description


# ---- the check ----------------------------------------------------------------------------

def _read_iomem(root: str, sources: Dict[str, Any]) -> Optional[str]:
    path = under_root(root, "/proc/iomem")
    try:
        with open(path) as handle:
            text = handle.read()
    except OSError:
        sources["proc_iomem"] = "not readable (%s)" % path
        return None
    sources["proc_iomem"] = path
    return text


def _builders(topology: Any, config: Mapping[str, Any], devices: Any, mem: Tuple[str, Optional[str]],
              cpu: Tuple[str, Optional[str]], allocations: Any, capacity: Optional[int],
              iomem: Optional[str], reset: List[str], kubelet: Any, merger: str) -> Dict[str, Callable[[], Any]]:
    """The node as the kubelet starts it: ``restored`` reads both state files (and refuses them
    as the kubelet would), ``fresh`` goes without the files in ``reset`` and restores the others."""
    def simulator(cpu_checkpoint: Any, memory_checkpoint: Any) -> Any:
        return AdmissionSimulator(topology, config, cpu_checkpoint=cpu_checkpoint, memory_checkpoint=memory_checkpoint,
                                  devices=devices, device_allocations=allocations, cpu_state_path=cpu[0],
                                  memory_state_path=mem[0], merger=merger,
                                  memory_capacity_bytes=capacity, proc_iomem=iomem, kubelet_version=kubelet)

    def restore(texts: Mapping[str, Optional[str]]) -> Callable[[], Any]:
        held: Dict[str, Any] = {}
        try:
            held["memory"] = restore_memory_manager_state(texts["memory_manager_state"],
                                                          config.get("memoryManagerPolicy") or "None", mem[0])
            held["cpu"] = restore_cpu_manager_state(texts["cpu_manager_state"],
                                                    config.get("cpuManagerPolicy") or "none", cpu[0])
        except StateError as exc:
            held["error"] = exc

        def build() -> Any:
            if "error" in held:
                raise held["error"]
            return simulator(held["cpu"], held["memory"])
        return build

    files = {"cpu_manager_state": cpu[1], "memory_manager_state": mem[1]}
    kept = dict((name, None if name in reset else text) for name, text in files.items())
    return {START_RESTORED: restore(files), START_FRESH: restore(kept)}


def _summary(result: Mapping[str, Any]) -> List[str]:
    lines = []
    for start in (START_RESTORED, START_FRESH):
        outcome = result["starts"].get(start)
        if outcome is None:
            continue
        what = "kubelet restart (state restored)" if start == START_RESTORED else "reboot or reset (fresh state)"
        search = outcome["search"]
        if not outcome["kubelet_starts"]:
            lines.append("%s: the kubelet does not start: %s" % (what, outcome["start_error"]))
            continue
        tried = "%d of %s orders%s" % (search["orders_tried"], search["orders_possible"] or "%d!" % search["pods"],
                                       " (every order)" if search["method"] == "exhaustive" else
                                       " (bounded search, bound %d)" % search["orders_bound"])
        if outcome["all_readmitted"]:
            lines.append("%s: all %d pod(s) come back in %s" % (what, search["pods"], tried))
        for rejected in outcome["rejected"]:
            lines.append("%s: %s can be rejected (%s: %s) in the order %s; rejected in %d of %s"
                         % (what, rejected["pod"], rejected["reason"], rejected["message"],
                            " -> ".join(rejected["order"]), rejected["rejected_in_orders"], tried))
    drift = result.get("boot_drift") or {}
    if drift.get("checked"):
        moved = ", ".join("node %d %s" % (row["numa_node"], row["difference_human"]) for row in drift["nodes"]
                          if row["type"] == "memory" and row["difference"])
        lines.append("boot drift: %s; the kubelet %s" % (
            moved or "no node moved",
            "starts" + (" (drift tolerated, state re-baselined)" if drift["how"] == "tolerated" else "")
            if drift["starts"] else "refuses to start: %s%s" % (drift["message"], " (%s)" % drift["detail"]
                                                                if drift.get("detail") else "")))
    for row in result.get("hugepages") or []:
        if row["diverged"]:
            lines.append("hugepages: %s" % row.get("note"))
    return lines


def run_readmit(params: Mapping[str, Any]) -> Dict[str, Any]:
    """The ``readmit`` answer for one host; raises ValueError subclasses for unusable inputs."""
    if params.get("pod") is not None or params.get("pod_file") or params.get("pod_file_content"):
        raise AdmissionInputError("readmit re-admits the node's running pods (running_pods, else the state files); "
                                  "pod and pod_file are new pods: check them without readmit")
    options = readmit_options(params.get("readmit"))
    root = params.get("root") or "/"
    sources: Dict[str, Any] = {}
    node = node_inputs(params, root, sources)
    topology, capacity, config = node["topology"], node["capacity"], node["config"]
    mem, cpu = node["memory_manager_state"], node["cpu_manager_state"]
    allocations = device_allocations(params, root, node["root_dir"], sources)
    iomem = _read_iomem(root, sources)
    state_read = [name for name in ("cpu_manager_state", "memory_manager_state", "device_allocations")
                  if not str(sources.get(name, "")).startswith(("absent", "ignored"))]
    labels, manifests, running = running_manifests(params, config, mem[1], cpu[1], allocations, state_read)
    kubelet = KubeletAssumption.resolve(params.get("kubelet_version"), params.get("host_kubelet_version"),
                                        config.get("featureGates"))
    devices = device_inventory(params, root, node["root_dir"], topology, sources)
    builders = _builders(topology, config, devices, mem, cpu, allocations, capacity, iomem, options["reset"], kubelet,
                         params.get("merge_method") or "fast")
    result: Dict[str, Any] = {"running_pods": running, "starts": {}, "sources": sources}
    for start in options["start"]:
        try:
            result["starts"][start] = readmit(builders[start], manifests, start=start,
                                              max_orders=options["max_orders"],
                                              exhaustive_up_to=options["exhaustive_up_to"], seed=options["seed"],
                                              labels=labels)
        except ReadmitInputError as exc:
            raise AdmissionInputError(str(exc))
    result["devices"] = ("device allocations kept in both starts: %s (the device checkpoint is not reset)"
                         % sources.get("device_allocations"))
    result["fresh_without"] = options["reset"]
    result["boot_drift"] = _boot_drift(topology, dict(config, featureGates=kubelet.gates), mem[1], iomem, capacity,
                                       kubelet.version)
    result["hugepages"] = _hugepages(topology, config, mem[1])
    result["all_readmitted"] = all(outcome["kubelet_starts"] and outcome["all_readmitted"]
                                   for outcome in result["starts"].values())
    result["summary"] = _summary(result)
    out = {"readmit": result, "sources": sources, "msg": "\n".join(result["summary"]),
           "table": list(result["summary"]), "kubelet_warnings": list(kubelet.warnings)}
    out.update(kubelet.result())
    return out


def _boot_drift(topology: Any, config: Mapping[str, Any], mem_text: Optional[str], iomem: Optional[str],
                capacity: Optional[int], version: Any = None) -> Dict[str, Any]:
    if mem_text is None:
        return {"checked": False, "reason": "no memory_manager_state: the kubelet starts fresh"}
    try:
        checkpoint = load_memory_manager_state(mem_text)
    except CheckpointError as exc:
        return {"checked": False, "reason": "memory_manager_state is not readable: %s" % exc}
    try:
        return boot_drift(topology, config, checkpoint, proc_iomem=iomem, memory_capacity_bytes=capacity,
                          version=version)
    except StateError as exc:
        return {"checked": False, "reason": "the kubelet does not start with this configuration: %s" % exc}


def _hugepages(topology: Any, config: Mapping[str, Any], mem_text: Optional[str]) -> List[Dict[str, Any]]:
    """State free vs OS free per node and size (from the state file; nothing without one)."""
    if mem_text is None or (config.get("memoryManagerPolicy") or "None") != "Static":
        return []
    try:
        checkpoint = load_memory_manager_state(mem_text)
        plain = machine_state_to_plain(machine_state_from_plain(checkpoint.machine_state))
    except (CheckpointError, StateError):
        return []
    memory_map = dict((node, value["memoryMap"]) for node, value in plain.items())
    rows = compare(memory_map, topology)
    for row in rows:
        for key in ("state_free", "os_free"):
            if row.get(key) is not None:
                row[key + "_human"] = format_bytes(row[key])
    return rows
