# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: validate_hosts
short_description: The kubelet start-up verdict of every host's kubelet_numa_settings, on the controller (validate.yml)
version_added: 0.2.0
description:
  - For each host of O(hosts), takes its topology (C(numa_topology_file), else C(numa_topology), else what
    C(validate.yml) gathered) and its C(kubelet_numa_settings), and gives the verdict the rollout's preflight
    (M(numaguard.kubelet.kubelet_config), the C(numaguard.kubelet.kubelet_numa) role) gives for them - the same
    code, for policies, policy options against the kubelet release and the NUMA node count, reserved CPUs, reserved
    memory - together with the reserved-memory report of P(numaguard.kubelet.reserved_memory_check#filter).
  - The host's kubelet is taken to have no configuration of its own (kubelet defaults plus these settings).
  - A host without C(kubelet_numa_settings) is not configured (invalid), never valid.
  - Host variables read - C(kubelet_numa_settings), C(kubelet_numa_kubelet_version), C(validate_strategy),
    C(validate_split_unit), C(validate_memory_manager_state), C(numa_topology_file), C(numa_topology),
    C(inventory_dir), C(_ng_gather_error).
options:
  _input:
    description: C(hostvars).
    type: dict
    required: true
  hosts:
    description: The hosts to judge, in order.
    type: list
    elements: str
    required: true
  default_dir:
    description: Where a relative C(numa_topology_file) is looked up after the current directory when the host has
      no C(inventory_dir).
    type: path
"""

EXAMPLES = r"""
- name: Judge every host
  ansible.builtin.set_fact:
    checked: "{{ hostvars | numaguard.kubelet.validate_hosts(ansible_play_hosts_all, playbook_dir) }}"
"""

RETURN = r"""
_value:
  description: C(results) (host -> the P(numaguard.kubelet.reserved_memory_check#filter) result, its C(valid),
    C(errors) and C(warnings) including the start-up verdict's) and C(classes) (host -> its hardware class, for hosts
    whose topology was read).
  type: dict
"""

from ansible.errors import AnsibleFilterError


def validate_hosts(hostvars, hosts, default_dir=None):
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.hostvars import host_names, host_variables
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.validate_hosts import judge_hosts

    names = host_names("validate_hosts", hostvars, hosts)
    try:
        return judge_hosts(dict((h, host_variables("validate_hosts", hostvars, h)) for h in names), names, default_dir)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("validate_hosts: %s" % exc) from exc


class FilterModule:
    def filters(self):
        return {"validate_hosts": validate_hosts}
