# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: reserved_memory_parse
short_description: Parse --reserved-memory (any of its forms) into the KubeletConfiguration reservedMemory list
version_added: 0.1.0
description:
  - Accepts the three flag spellings the kubelet accepts - one flag with C(,)-separated types
    (V(0:memory=1Gi,hugepages-1Gi=2Gi)), the flag repeated (a list of strings), and C(;)-separated nodes
    (V(0:memory=1Gi;1:memory=2Gi)) - or the KubeletConfiguration C(reservedMemory) list, and returns the
    C(reservedMemory) list with canonical quantities.
  - Parses exactly as the kubelet - nothing is trimmed, so V(0:memory=1Gi; 1:memory=2Gi) is an error - and fails
    with the kubelet's own message.
options:
  _input:
    description: A flag string, a list of flag strings, or a list of C({numaNode, limits}) dicts.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Flag to KubeletConfiguration
  ansible.builtin.debug:
    msg: "{{ '0:memory=3072Mi;1:memory=2148Mi' | numaguard.kubelet.reserved_memory_parse }}"
    # [{'numaNode': 0, 'limits': {'memory': '3Gi'}}, {'numaNode': 1, 'limits': {'memory': '2148Mi'}}]
"""

RETURN = r"""
_value:
  description: The C(reservedMemory) list, entries in input order, quantities canonical.
  type: list
  elements: dict
"""


def reserved_memory_parse(value):
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.reserved import (
        parse_reserved_memory,
        reservations_to_config,
    )
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.filter_reservation import reservation_errors

    with reservation_errors("reserved_memory_parse"):
        return reservations_to_config(parse_reserved_memory(value, "reserved_memory"))


class FilterModule:
    def filters(self):
        return {"reserved_memory_parse": reserved_memory_parse}
