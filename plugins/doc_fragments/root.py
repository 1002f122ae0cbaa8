# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    """The O(root) option of the modules that read a host's sysfs."""

    DOCUMENTATION = r"""
options:
  root:
    description:
      - Root of the host filesystem to read. V(/) reads the live host.
      - Point it at a captured snapshot or at a host filesystem mounted elsewhere; the NUMA topology is
        then read from C(<root>/sys/devices/system/node), C(<root>/sys/devices/system/cpu),
        C(<root>/sys/kernel/mm/hugepages) and C(<root>/proc/meminfo).
    type: path
    default: /
"""
