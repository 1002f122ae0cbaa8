# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: reserved_resources_parse
short_description: Parse --kube-reserved / --system-reserved into the KubeletConfiguration map
version_added: 0.1.0
description:
  - Parses V(cpu=500m,memory=1Gi) (or a list of such flags, or a dict) the way the kubelet does - pairs split on
    C(,) and the first C(=), keys and values trimmed - and applies its rules - only C(cpu), C(memory),
    C(ephemeral-storage) and C(pid), quantities valid and not negative. Returns the map with canonical quantities.
options:
  _input:
    description: A flag string, a list of flag strings, or a dict.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Flag to KubeletConfiguration kubeReserved
  ansible.builtin.debug:
    msg: "{{ 'cpu=500m, memory=4096Mi' | numaguard.kubelet.reserved_resources_parse }}"  # {'cpu': '500m', 'memory': '4Gi'}
"""

RETURN = r"""
_value:
  description: Resource name to canonical quantity string.
  type: dict
"""


def reserved_resources_parse(value):
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import parse_resource_map
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.filter_reservation import reservation_errors

    with reservation_errors("reserved_resources_parse"):
        parsed = parse_resource_map(value, "reserved resources")
    return dict((key, str(parsed[key])) for key in sorted(parsed))


class FilterModule:
    def filters(self):
        return {"reserved_resources_parse": reserved_resources_parse}
