# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: reserved_resources_format
short_description: Format a kubeReserved / systemReserved map as a --kube-reserved / --system-reserved flag value
version_added: 0.1.0
description:
  - Validates the map with the kubelet's rules (see M(numaguard.kubelet.reserved_memory)) and writes
    V(cpu=500m,memory=1Gi), keys sorted, quantities canonical.
options:
  _input:
    description: A dict (or a flag string or a list of them).
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: KubeletConfiguration map to a flag
  ansible.builtin.debug:
    msg: "--kube-reserved={{ {'memory': '4096Mi', 'cpu': '0.5'} | numaguard.kubelet.reserved_resources_format }}"
  # --kube-reserved=cpu=500m,memory=4Gi
"""

RETURN = r"""
_value:
  description: The flag value.
  type: str
"""


def reserved_resources_format(value):
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import format_resource_map
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.filter_reservation import reservation_errors

    with reservation_errors("reserved_resources_format"):
        return format_resource_map(value)


class FilterModule:
    def filters(self):
        return {"reserved_resources_format": reserved_resources_format}
