# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: k8s_quantity_bytes
short_description: Kubernetes quantity to an integer in base units
version_added: 0.1.0
description:
  - Parses a Kubernetes resource quantity exactly as the API server does and returns its value in
    base units (bytes for memory, cores for cpu), rounded away from zero like the kubelet's
    C(Quantity.Value()).
  - Rejects what Kubernetes rejects (C(1K), C(1_000), C(NaN), empty strings) with a message naming
    the bad value.
options:
  _input:
    description: A quantity string such as C(1Gi), C(5220Mi), C(1.5G) or C(1e3), or an integer.
    type: raw
    required: true
seealso:
  - plugin: numaguard.kubelet.k8s_quantity
    plugin_type: filter
"""

EXAMPLES = r"""
- name: Bytes of a reservation
  ansible.builtin.debug:
    msg: "{{ '5220Mi' | numaguard.kubelet.k8s_quantity_bytes }}"  # 5473566720

- name: Compare two quantities numerically
  ansible.builtin.assert:
    that: "'1Gi' | numaguard.kubelet.k8s_quantity_bytes == '1024Mi' | numaguard.kubelet.k8s_quantity_bytes"
"""

RETURN = r"""
_value:
  description: The value in base units, rounded away from zero.
  type: int
"""


def k8s_quantity_bytes(value):
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.filter_quantity import to_quantity

    return to_quantity("k8s_quantity_bytes", value).value()


class FilterModule:
    def filters(self):
        return {"k8s_quantity_bytes": k8s_quantity_bytes}
