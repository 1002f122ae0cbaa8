# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: k8s_quantity
short_description: Canonical Kubernetes string of a quantity
version_added: 0.1.0
description:
  - Returns the string Kubernetes itself prints for a quantity (C(Quantity.String())), for example
    C(1024Mi) becomes C(1Gi), C(1.5Gi) becomes C(1536Mi) and C(0.5) becomes C(500m).
  - An integer input is taken as base units (bytes) and formatted with O(format), BinarySI by default.
options:
  _input:
    description: A quantity string or an integer number of base units.
    type: raw
    required: true
  format:
    description:
      - Format to print in. By default a string keeps the format it was written in and an integer
        is printed as BinarySI.
    type: str
    choices: [BinarySI, DecimalSI, DecimalExponent]
"""

EXAMPLES = r"""
- name: Canonical reservation for kubelet flags
  ansible.builtin.debug:
    msg: "{{ 5473566720 | numaguard.kubelet.k8s_quantity }}"  # 5220Mi

- name: Normalise user input
  ansible.builtin.debug:
    msg: "{{ '1024Mi' | numaguard.kubelet.k8s_quantity }}"  # 1Gi
"""

RETURN = r"""
_value:
  description: The canonical quantity string.
  type: str
"""


def k8s_quantity(value, format=None):  # pylint: disable=redefined-builtin
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.filter_quantity import check_format, to_quantity, with_format

    if isinstance(value, int) and not isinstance(value, bool) and format is None:
        format = "BinarySI"
    quantity = to_quantity("k8s_quantity", value)
    if format is not None:
        quantity = with_format(quantity, check_format("k8s_quantity", format))
    return str(quantity)


class FilterModule:
    def filters(self):
        return {"k8s_quantity": k8s_quantity}
