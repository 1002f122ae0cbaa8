# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: k8s_quantity_sum
short_description: Exact sum of Kubernetes quantities
version_added: 0.1.0
description:
  - Adds a list of quantities exactly and returns the canonical Kubernetes string of the total. The
    format of the first non-zero item wins, as in C(Quantity.Add).
options:
  _input:
    description: A list of quantity strings or integers.
    type: list
    elements: raw
    required: true
"""

EXAMPLES = r"""
- name: kube-reserved + system-reserved + hard eviction threshold
  ansible.builtin.debug:
    msg: "{{ ['4Gi', '1Gi', '100Mi'] | numaguard.kubelet.k8s_quantity_sum }}"  # 5220Mi
"""

RETURN = r"""
_value:
  description: The canonical string of the total (C(0) for an empty list).
  type: str
"""

from ansible.errors import AnsibleFilterError


def k8s_quantity_sum(values):
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import parse_quantity
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.filter_quantity import to_quantity

    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise AnsibleFilterError("numaguard.kubelet.k8s_quantity_sum: input must be a list, got %r" % (values,))
    total = parse_quantity("0")
    for index, value in enumerate(values):
        total = total + to_quantity("k8s_quantity_sum", value, "item %d" % index)
    return str(total)


class FilterModule:
    def filters(self):
        return {"k8s_quantity_sum": k8s_quantity_sum}
