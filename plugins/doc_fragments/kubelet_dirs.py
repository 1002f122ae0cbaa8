# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    """The O(kubelet_dirs) option of the modules that back up and restore kubelet files."""

    DOCUMENTATION = r"""
options:
  kubelet_dirs:
    description:
      - The kubelet directories - its root directory (C(--root-dir)) and the directories of its config
        file and drop-ins.
      - Only files inside them are backed up, restored or rolled back. A backup location reached through a
        symlink must also lie inside them.
    type: list
    elements: path
    default: [/etc/kubernetes, /var/lib/kubelet]
"""
