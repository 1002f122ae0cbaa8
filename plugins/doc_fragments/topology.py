# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    """The O(topology) option: a numa_facts result instead of reading sysfs."""

    DOCUMENTATION = r"""
options:
  topology:
    description:
      - A C(numa_topology) fact dict, as returned by M(numaguard.kubelet.numa_facts) in
        RV(numaguard.kubelet.numa_facts#module:ansible_facts.numa_topology), to use instead of reading the
        host's sysfs. This lets the module run against a topology captured on another host.
    type: dict
"""
