# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared argument handling for the quantity filters: turn parse errors into AnsibleFilterError."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import FORMATS, InvalidQuantity, Quantity, parse_quantity


def to_quantity(filter_name, value, what="input"):
    """Parse ``value`` or raise AnsibleFilterError naming the filter and the bad value."""
    if isinstance(value, float) and value != int(value):
        raise AnsibleFilterError("numaguard.kubelet.%s: %s %r is a float; write quantities as strings"
                                 " (e.g. '1.5Gi') so no precision is lost" % (filter_name, what, value))
    try:
        return parse_quantity(int(value) if isinstance(value, float) else value)
    except InvalidQuantity as exc:
        raise AnsibleFilterError("numaguard.kubelet.%s: %s: %s" % (filter_name, what, exc)) from exc


def check_format(filter_name, fmt):
    if fmt not in FORMATS:
        raise AnsibleFilterError("numaguard.kubelet.%s: format %r is not one of %s"
                                 % (filter_name, fmt, ", ".join(FORMATS)))
    return fmt


def with_format(quantity, fmt):
    """The same exact value in another format."""
    num, den = quantity.as_fraction()
    exponent = 0
    while den > 1:
        den //= 10
        exponent -= 1
    return Quantity(num, exponent, fmt)
