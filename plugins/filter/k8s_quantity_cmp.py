# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: k8s_quantity_cmp
short_description: Compare two Kubernetes quantities exactly
version_added: 0.1.0
description:
  - Returns -1, 0 or 1 as the input is smaller than, equal to or larger than O(other), compared
    exactly (no float rounding), like C(Quantity.Cmp).
options:
  _input:
    description: A quantity string or an integer.
    type: raw
    required: true
  other:
    description: The quantity to compare with.
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: Fail when a reservation is larger than a node's memory
  ansible.builtin.assert:
    that: "'2148Mi' | numaguard.kubelet.k8s_quantity_cmp('64Gi') < 0"
"""

RETURN = r"""
_value:
  description: -1, 0 or 1.
  type: int
"""


def k8s_quantity_cmp(value, other):
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.filter_quantity import to_quantity

    return to_quantity("k8s_quantity_cmp", value).cmp(to_quantity("k8s_quantity_cmp", other, "other"))


class FilterModule:
    def filters(self):
        return {"k8s_quantity_cmp": k8s_quantity_cmp}
