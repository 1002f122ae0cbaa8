# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: reserved_memory_format
short_description: Format a reservedMemory list as one --reserved-memory flag value
version_added: 0.1.0
description:
  - Turns the KubeletConfiguration C(reservedMemory) list (or any form M(numaguard.kubelet.reserved_memory)
    accepts) into the single-flag C(;) form, e.g. V(0:memory=3Gi;1:memory=2148Mi), with canonical quantities and
    types sorted within a node.
options:
  _input:
    description: A list of C({numaNode, limits}) dicts, a flag string, or a list of flag strings.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: KubeletConfiguration list to a flag
  ansible.builtin.debug:
    msg: "--reserved-memory={{ reserved | numaguard.kubelet.reserved_memory_format }}"
  vars:
    reserved:
      - {numaNode: 0, limits: {memory: 3072Mi}}
      - {numaNode: 1, limits: {memory: 2148Mi}}
  # --reserved-memory=0:memory=3Gi;1:memory=2148Mi
"""

RETURN = r"""
_value:
  description: The flag value (empty string for an empty list).
  type: str
"""


def reserved_memory_format(value):
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.reserved import (
        format_reserved_memory_flag,
        parse_reserved_memory,
    )
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.filter_reservation import reservation_errors

    with reservation_errors("reserved_memory_format"):
        return format_reserved_memory_flag(parse_reserved_memory(value, "reserved_memory"))


class FilterModule:
    def filters(self):
        return {"reserved_memory_format": reserved_memory_format}
