# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``numa_topology`` fact dict of a host (or snapshot): one function, shared by the
``numa_facts`` module and the capture round-trip tests, so both compute exactly the same thing."""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import os
from typing import Any, Dict, List, Optional

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.devices import device_facts
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.kubelet_paths import kubelet_facts
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import read_system_memory, read_topology


def gather(root: str = "/") -> Dict[str, Any]:
    """Topology, system memory, kubelet files, PCI devices and device-plugin inventory.

    ``warnings`` lists every fallback discovery took (host paths, so a snapshot read back with
    ``root=`` gives the same list). Raises SysfsError / KubeletPathsError / DeviceError.
    """
    warnings: List[str] = []
    topology = read_topology(root, warnings)
    facts = topology.to_facts()
    facts["system"] = read_system_memory(root, warnings, topology)
    facts["kubelet"] = kubelet_facts(root)
    facts.update(device_facts(root, facts["kubelet"]["root_dir"], topology.node_ids(), warnings))
    facts["warnings"] = warnings
    return facts


def warning_prefix(root: str, nodename: Optional[str] = None) -> str:
    """Whose sysfs a warning is about: Ansible prints a module's warnings without the host, so a
    fleet's fallback warnings would not say which machine they come from (issue 26). The live host
    is named by its node name (``uname -n``), a snapshot by its root directory."""
    if os.path.normpath(root or "/").strip("/"):
        return "snapshot %s" % root
    return "host %s" % (nodename if nodename is not None else os.uname().nodename)
