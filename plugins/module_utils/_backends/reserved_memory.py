# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Backend of ``numaguard.kubelet.reserved_memory`` (PRIVATE to this collection).

Computes or validates ``reservedMemory`` against the host (or a given topology) with the
kubelet's rules; the logic lives in ``_reservation/``.

From the object called ``module`` only these are used: ``params``, ``warn``, ``fail_json``, ``exit_json``.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Dict

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import ReservationSyntaxError
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import (
    SysfsError,
    read_system_memory,
    read_topology,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import InvalidTopology
from ansible_collections.numaguard.kubelet.plugins.module_utils._io import read_file_if_exists
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption, VersionError, probe_host_kubelet
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import (
    KubeletConfigError,
    load_kubelet_config,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import (
    ReservationError,
    evaluate,
    topology_from_any,
)


def _state_text(value):
    """Return (content, file name, warning) for the memory_manager_state option."""
    if value is None:
        return None, None, None
    if value.lstrip().startswith("{"):
        return value, None, None
    raw = read_file_if_exists(value)
    if raw is None:
        return None, value, ("memory_manager_state %s does not exist: the kubelet will start with a fresh state"
                             % value)
    try:
        return raw.decode("utf-8"), value, None
    except UnicodeDecodeError as exc:
        raise ReservationError("memory_manager_state %s is not UTF-8 text (byte %d)" % (value, exc.start))


def argument_spec() -> Dict[str, Dict[str, Any]]:
    """The module's options (a fresh dict)."""
    return dict(
        root=dict(type="path", default="/"),
        topology=dict(type="dict"),
        kube_reserved=dict(type="raw"),
        system_reserved=dict(type="raw"),
        eviction_hard=dict(type="raw"),
        merge_default_eviction_settings=dict(type="bool"),
        reserved_memory=dict(type="raw"),
        kubelet_config=dict(type="path"),
        kubelet_config_dir=dict(type="path"),
        memory_manager_policy=dict(type="str"),
        strategy=dict(type="str", choices=["node0", "spread", "proportional", "reserved_cpus", "explicit"]),
        reserved_cpus=dict(type="str"),
        split_unit=dict(type="raw", default="1Mi"),
        memory_capacity=dict(type="raw"),
        allocatable_ignore_eviction=dict(type="bool", default=False),
        memory_manager_state=dict(type="str"),
        fail_on_invalid=dict(type="bool", default=True),
        kubelet_version=dict(type="str"),
    )


def module_kwargs() -> Dict[str, Any]:
    """Keyword arguments for ``AnsibleModule``: the spec and its constraints."""
    return dict(argument_spec=argument_spec(), supports_check_mode=True)


def run(module: Any) -> None:
    p = module.params
    try:
        if p["topology"] is not None:
            topology, capacity = topology_from_any(p["topology"])
        else:
            topology = read_topology(p["root"])
            capacity = read_system_memory(p["root"])["memory_total_bytes"]
        config = None
        if p["kubelet_config"] or p["kubelet_config_dir"]:
            config = load_kubelet_config(p["kubelet_config"], p["kubelet_config_dir"])
        kubelet = KubeletAssumption.resolve(p["kubelet_version"], probe_host_kubelet(module, p["kubelet_version"], p["root"], p["topology"]),
                                            (config or {}).get("featureGates"))
        state, state_file, state_warning = _state_text(p["memory_manager_state"])
        if p["memory_capacity"] is not None:
            capacity = p["memory_capacity"]
        result = evaluate(
            topology, kubelet_config=config, strategy=p["strategy"], split_unit=p["split_unit"],
            memory_capacity_bytes=capacity, allocatable_ignore_eviction=p["allocatable_ignore_eviction"],
            memory_manager_state=state, state_file=state_file,
            kube_reserved=p["kube_reserved"], system_reserved=p["system_reserved"], eviction_hard=p["eviction_hard"],
            reserved_memory=p["reserved_memory"], memory_manager_policy=p["memory_manager_policy"],
            merge_default_eviction_settings=p["merge_default_eviction_settings"], reserved_cpus=p["reserved_cpus"],
            kubelet=kubelet,
        )
    except (OSError, InvalidTopology, SysfsError, KubeletConfigError, ReservationError, ReservationSyntaxError, VersionError) as exc:
        module.fail_json(msg=str(exc))
    output = result.to_dict()
    kubelet.report_in(output)
    if state_warning:
        output["warnings"].append("[state-file] " + state_warning)
        output["findings"].append({"rule": "state-file", "severity": "warning", "message": state_warning, "fix": "",
                                   "kubelet_message": None, "fatal": False, "text": "[state-file] " + state_warning})
    # Ansible keeps module warnings in the registered result's ``warnings`` and shows them.
    for warning in output.pop("warnings"):
        module.warn(warning)
    output["topology_fingerprint"] = topology.fingerprint()
    if not result.valid and p["fail_on_invalid"]:
        module.fail_json(msg="reservedMemory is invalid (%d error(s)): %s" % (len(output["errors"]), " | ".join(output["errors"])),
                         **output)
    module.exit_json(changed=False, **output)
