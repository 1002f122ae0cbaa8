# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a node shows to ``admission_check`` and its ``readmit`` option (PRIVATE to this collection).

Both backends read the same inputs (topology, kubelet configuration, state files, devices); the
readers live here, below both, so that ``admission_check`` -> ``readmit`` is the only edge
between them.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import errno
import os

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission_inputs import AdmissionInputError, state_input
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.devicemanager_inputs import parse_device_checkpoint
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.devices import host_device_inventory
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.kubelet_paths import locate_kubelet, under_root
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import read_system_memory, read_topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._io import read_file_if_exists
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults, load_kubelet_config
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.flags import flags_to_config


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
        # the one schema of the managed fields, as for files and flags (imported here: only a run
        # given a configuration pays for it)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.fields import field_type_errors

        problems = field_type_errors(raw)
        if problems:
            raise AdmissionInputError("kubelet_config: %s" % "; ".join(problems))
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


def device_inventory(params, root, root_dir, topology, sources):
    """The device plugins' devices: the option, else the kubelet's registered devices located
    through sysfs."""
    devices = params.get("devices")
    if devices is None:
        devices, sources["devices"] = host_device_inventory(root, root_dir, topology.node_ids())
    else:
        sources["devices"] = "option"
    return devices


def device_allocations(params, root, root_dir, sources):
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
