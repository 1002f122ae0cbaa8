# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: numa_hardware_class
short_description: The hardware class (inventory group name) of a NUMA topology
version_added: 0.2.0
description:
  - Returns the readable class of a C(numa_topology) fact dict, such as C(numa_2n_96c_2m_1g_3fa2c1d0)
    (NUMA nodes, CPUs, hugepage sizes that have pages, the first 8 hex digits of the topology fingerprint), a valid
    inventory group name. Identical machines get the same class.
  - Accepts the fact dict, a M(numaguard.kubelet.numa_facts) result (C(ansible_facts.numa_topology)) or its JSON text
    (a file written by C(ansible -m numaguard.kubelet.numa_facts --tree DIR)).
options:
  _input:
    description: The topology.
    type: raw
    required: true
  part:
    description: C(group) (name and short fingerprint), C(name) (without the fingerprint) or C(fingerprint).
    type: str
    default: group
    choices: [group, name, fingerprint]
"""

EXAMPLES = r"""
- name: Group hosts by hardware class
  ansible.builtin.group_by:
    key: "{{ numa_topology | numaguard.kubelet.numa_hardware_class }}"
"""

RETURN = r"""
_value:
  description: The class.
  type: str
  sample: numa_2n_96c_2m_1g_3fa2c1d0
"""

import json
from collections.abc import Mapping

from ansible.errors import AnsibleFilterError


def numa_hardware_class(topology, part="group"):
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._report.classes import HardwareClassError, hardware_class

    if isinstance(topology, str):
        try:
            topology = json.loads(topology)
        except ValueError as exc:
            raise AnsibleFilterError("numa_hardware_class: input is not a topology dict nor JSON: %s" % exc)
    if isinstance(topology, Mapping) and isinstance(topology.get("ansible_facts"), Mapping):
        topology = topology["ansible_facts"].get("numa_topology")
    if part not in ("group", "name", "fingerprint"):
        raise AnsibleFilterError("numa_hardware_class: part must be group, name or fingerprint, got %r" % (part,))
    try:
        return hardware_class(topology)[part]
    except HardwareClassError as exc:
        raise AnsibleFilterError("numa_hardware_class: %s" % exc)


class FilterModule:
    def filters(self):
        return {"numa_hardware_class": numa_hardware_class}
