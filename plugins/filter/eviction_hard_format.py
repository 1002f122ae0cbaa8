# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: eviction_hard_format
short_description: Format an evictionHard map as an --eviction-hard flag value
version_added: 0.1.0
description:
  - Checks every threshold with the kubelet's rules and writes V(memory.available<100Mi,nodefs.available<10%),
    signals sorted.
options:
  _input:
    description: A dict of signal to threshold (or a flag string or a list of them).
    type: raw
    required: true
"""

EXAMPLES = r"""
- name: evictionHard map to a flag
  ansible.builtin.debug:
    msg: "--eviction-hard={{ {'memory.available': '500Mi', 'nodefs.available': '10%'} | numaguard.kubelet.eviction_hard_format }}"
  # --eviction-hard=memory.available<500Mi,nodefs.available<10%
"""

RETURN = r"""
_value:
  description: The flag value.
  type: str
"""

from ansible.errors import AnsibleFilterError


def eviction_hard_format(value):
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.eviction import effective_eviction_hard
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import format_eviction_map
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.filter_reservation import reservation_errors

    if value is None:
        raise AnsibleFilterError("numaguard.kubelet.eviction_hard_format: input must be a dict or a flag string, got None")
    with reservation_errors("eviction_hard_format"):
        return format_eviction_map(effective_eviction_hard(value, False, "eviction_hard").effective)


class FilterModule:
    def filters(self):
        return {"eviction_hard_format": eviction_hard_format}
