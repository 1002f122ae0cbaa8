# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""Backend of ``numaguard.kubelet.admission_check`` (PRIVATE to this collection).

The module file holds the documentation and calls :func:`run`; the action plugin takes its
list of valid options from :func:`argument_spec`, so the options are declared once (and
documented once, in the module's DOCUMENTATION and doc fragments).

From the object called ``module`` only these are used: ``params``, ``warn``, ``fail_json``, ``exit_json``,
``get_bin_path``, ``run_command`` (``kubelet --version``).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import errno
import json
import os
from typing import Any, Dict

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator, format_table
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission_inputs import AdmissionInputError, pods_from_documents, state_input
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.checkpoint import restore_cpu_manager_state, restore_memory_manager_state
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.devicemanager import DeviceInventory, parse_device_checkpoint
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.hugepages_truth import RUNTIME_FAILURE, Backing
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.devices import host_device_inventory
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.kubelet_paths import locate_kubelet, under_root
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.running_pods import combine, listed_pods, resource_fit_for_node, state_pods
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import read_system_memory, read_topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._io import read_file_if_exists
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption, host_kubelet_version
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults, load_kubelet_config
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.flags import flags_to_config
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.classes import hardware_class

#: Options the action plugin fills in itself; a task may not pass them.
INTERNAL_OPTIONS = frozenset(("pod_file_content",))


def argument_spec() -> Dict[str, Dict[str, Any]]:
    """The module's argument spec (a fresh dict: callers may extend it)."""
    return dict(
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
        running_pods=dict(type="raw"),
        node_allocatable=dict(type="dict"),
        readmit=dict(type="raw"),
        return_state=dict(type="bool", default=False),
        merge_method=dict(type="str", default="fast", choices=["fast", "exhaustive"]),
        kubelet_version=dict(type="str"),
    )


def module_kwargs() -> Dict[str, Any]:
    """Keyword arguments for ``AnsibleModule``: the spec and its constraints."""
    return dict(argument_spec=argument_spec(), supports_check_mode=True)


def run(module: Any) -> None:
    params = dict(module.params)
    if not params.get("kubelet_version") and (params.get("root") or "/") == "/":
        params["host_kubelet_version"] = host_kubelet_version(module)
    try:
        result = run_check(params)
    except ValueError as exc:
        module.fail_json(msg=str(exc), changed=False)
    for warning in result.pop("kubelet_warnings", []):
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
        raw = read_file_if_exists(host_path)
    except OSError as exc:
        raise AdmissionInputError("%s: cannot read %s: %s" % (name, host_path, exc.strerror or exc))
    if raw is None:
        if kind == "default":  # the node has no such file yet: the kubelet starts fresh
            sources[name] = "absent (%s)" % path
            return path, None
        raise AdmissionInputError("%s: cannot read %s: %s" % (name, host_path, os.strerror(errno.ENOENT)))
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


def _device_inventory(params, root, root_dir, topology, sources):
    """The device plugins' devices: the option, else the kubelet's registered devices located
    through sysfs."""
    devices = params.get("devices")
    if devices is None:
        devices, sources["devices"] = host_device_inventory(root, root_dir, topology.node_ids())
    else:
        sources["devices"] = "option"
    return devices


def _device_allocations(params, root, root_dir, sources):
    """The devices running pods hold: the option, else the device manager's checkpoint."""
    allocations = params.get("device_allocations")
    if allocations is not None:
        sources["device_allocations"] = "option"
        return allocations
    dev_path = os.path.join(root_dir, "device-plugins", "kubelet_internal_checkpoint")
    host_dev = under_root(root, dev_path)
    if not os.path.isfile(host_dev):
        sources["device_allocations"] = "absent (%s)" % dev_path
        return None
    try:
        with open(host_dev, "rb") as handle:
            allocations = parse_device_checkpoint(handle.read().decode("utf-8", "replace"))["allocations"]
    except OSError as exc:
        raise AdmissionInputError("cannot read %s: %s" % (host_dev, exc.strerror or exc))
    sources["device_allocations"] = dev_path
    return allocations


def node_inputs(params, root, sources):
    """What the host shows: ``topology`` (with ``capacity`` = MemTotal and ``hugepages`` pool
    sizes when read from sysfs), the kubelet ``config`` and ``root_dir``, and the two state files
    as (path, text or None); ``sources`` records where each came from."""
    out = {}
    if params.get("topology") is not None:
        out["topology"] = Topology.from_facts(params["topology"])
        sources["topology"] = "option"
        out["capacity"] = out["hugepages"] = None
    else:
        out["topology"] = read_topology(root)
        sources["topology"] = "sysfs under %s" % root
        system = read_system_memory(root)
        out["capacity"] = system.get("memory_total_bytes")
        out["hugepages"] = dict((name, pool["page_size_bytes"] * pool["total_pages"])
                                for name, pool in (system.get("hugepages") or {}).items())
    need_host = params.get("kubelet_config") is None or params.get("memory_manager_state") is None \
        or params.get("cpu_manager_state") is None
    located = locate_kubelet(root) if need_host else {}
    out["config"], out["root_dir"] = _config(params, root, located, sources)
    sources["root_dir"] = out["root_dir"]
    for name in ("memory_manager_state", "cpu_manager_state"):
        out[name] = _read_state(root, params.get(name), os.path.join(out["root_dir"], name), name, sources)
    return out


def run_check(params):
    """Everything the module does, returning the result dict; raises ValueError subclasses."""
    if params.get("readmit") not in (None, False):
        from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.readmit import run_readmit
        return run_readmit(params)
    root = params.get("root") or "/"
    sources = {}
    pods = _collect_pods(params)
    node = node_inputs(params, root, sources)
    topology, capacity, hugepages, config, root_dir = (node["topology"], node["capacity"], node["hugepages"],
                                                       node["config"], node["root_dir"])
    (mem_path, mem_text), (cpu_path, cpu_text) = node["memory_manager_state"], node["cpu_manager_state"]
    memory_checkpoint = restore_memory_manager_state(mem_text, config.get("memoryManagerPolicy") or "None", mem_path)
    cpu_checkpoint = restore_cpu_manager_state(cpu_text, config.get("cpuManagerPolicy") or "none", cpu_path)
    devices = _device_inventory(params, root, root_dir, topology, sources)
    allocations = _device_allocations(params, root, root_dir, sources)
    kubelet = KubeletAssumption.resolve(params.get("kubelet_version"), params.get("host_kubelet_version"),
                                        config.get("featureGates"))
    listed, inactive = None, 0
    if params.get("running_pods") is not None:
        listed, inactive = listed_pods(params["running_pods"], feature_gates=kubelet.gates)
    state_read = [name for name in ("cpu_manager_state", "memory_manager_state", "device_allocations")
                  if not str(sources.get(name, "")).startswith(("absent", "ignored"))]
    running = combine(listed, state_pods(cpu_checkpoint, memory_checkpoint, allocations), inactive, state_read)
    sources["running_pods"] = "option" if listed is not None else "state files only"
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
        try:
            pod = simulator.pod_from_manifest(manifest, index)
        except ValueError as exc:
            raise AdmissionInputError("%s: %s" % (label, exc))
        result = simulator.admit(pod)
        result["source"] = label
        # hugepages truth: the state's counters admitted it; can the OS back its pages?
        shortfalls = backing.charge(simulator.memory_map()) if result["admitted"] else []
        result["runtime"] = RUNTIME_FAILURE if shortfalls else None
        result["runtime_shortfalls"] = shortfalls
        results.append(result)
    run = {"pods": results, "memory": simulator.memory_map(), "pinning": simulator.pinning(),
           "node": node, "sources": sources, "running_pods": running.to_dict(),
           "node_allocatable": simulator.resource_fit.summary(), "kubelet_warnings": list(simulator.kubelet.warnings)}
    run.update(simulator.kubelet.result())
    if params.get("return_state"):
        run["state_after"] = simulator.state_after(
            cpu_version=getattr(cpu_checkpoint, "version", None) if cpu_checkpoint is not None else None,
            memory_version=getattr(memory_checkpoint, "version", None) if memory_checkpoint is not None else None)
    run["msg"] = format_table(run) + "".join(
        "\n%s/%s: %s: %s" % (r["namespace"], r["name"], RUNTIME_FAILURE, "; ".join(r["runtime_shortfalls"]))
        for r in results if r["runtime"])
    run["table"] = run["msg"].split("\n")
    return run
