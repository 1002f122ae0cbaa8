# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: eviction_hard_parse
short_description: Parse --eviction-hard into the KubeletConfiguration evictionHard map, with the kubelet's rules
version_added: 0.1.0
description:
  - Parses V(memory.available<500Mi,nodefs.available<10%) (or a list of such flags, or a dict) as the kubelet does
    (pairs split on C(,) and the first C(<), trimmed) and checks every threshold the way the kubelet does at
    start-up (known signal, percentage between 0 and 100, quantity positive).
  - With O(merge_defaults=true) the kubelet's default signals missing from the input are added, as
    C(mergeDefaultEvictionSettings) does; otherwise the result holds only the given signals - which is what the
    kubelet runs with (the other defaults are dropped).
options:
  _input:
    description: A flag string, a list of flag strings, a dict, or null (the kubelet defaults).
    type: raw
    required: true
  merge_defaults:
    description: Add the missing default signals (C(mergeDefaultEvictionSettings)).
    type: bool
    default: false
"""

EXAMPLES = r"""
- name: What the kubelet runs with
  ansible.builtin.debug:
    msg: "{{ 'memory.available<500Mi' | numaguard.kubelet.eviction_hard_parse }}"  # {'memory.available': '500Mi'}

- name: With mergeDefaultEvictionSettings
  ansible.builtin.debug:
    msg: "{{ 'memory.available<500Mi' | numaguard.kubelet.eviction_hard_parse(merge_defaults=true) }}"
"""

RETURN = r"""
_value:
  description: Signal to threshold string, the effective evictionHard.
  type: dict
"""


def eviction_hard_parse(value, merge_defaults=False):
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.eviction import effective_eviction_hard
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.filter_reservation import reservation_errors

    with reservation_errors("eviction_hard_parse"):
        return dict(effective_eviction_hard(value, bool(merge_defaults), "eviction_hard").effective)


class FilterModule:
    def filters(self):
        return {"eviction_hard_parse": eviction_hard_parse}
