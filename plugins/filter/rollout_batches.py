# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: rollout_batches
short_description: The hosts a playbooks/apply.yml rollout targets, and its batches
version_added: 0.3.0
description:
  - The targeted hosts are the play's hosts that took part in the preflight (they registered C(kubelet_numa_status),
    also when they did not answer), in play order; the batches are those hosts cut as the batch play's C(serial)
    keyword cuts them (C(batch_size) hosts, or a percentage of the hosts rounded down, at least 1).
options:
  _input:
    description: C(hostvars).
    type: dict
    required: true
  hosts:
    description: The play's hosts, in order (C(ansible_play_hosts_all)).
    type: list
    elements: str
    required: true
  batch_size:
    description: Hosts per batch, or a percentage such as C(25%).
    type: raw
    default: 1
"""

EXAMPLES = r"""
- name: Where the rollout is
  ansible.builtin.debug:
    msg: "{{ (hostvars | numaguard.kubelet.rollout_batches(ansible_play_hosts_all, 2)).batches }}"
"""

RETURN = r"""
_value:
  description:
    - C(targets) (host names, in order), C(batches) (lists of host names, in order), C(batch_of) (host name to the index
      of its batch) and C(started) (when the first host's preflight decided, seconds since the epoch; now when none did).
  type: dict
"""

import time

from ansible.errors import AnsibleFilterError


def batch_hosts(size, count):
    """Hosts per batch for ``size`` (int or ``"N%"``) of ``count`` hosts, as ``serial`` counts them."""
    text = str(size).strip()
    try:
        number = int(text[:-1]) * count // 100 if text.endswith("%") else int(text)
    except ValueError:
        raise AnsibleFilterError("rollout_batches: batch_size %r is neither a number of hosts nor a percentage such as 25%%" % (size,))
    return max(number, 1)


def rollout_batches(hostvars, hosts, batch_size=1):
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.hostvars import host_names, host_variables

    names = host_names("rollout_batches", hostvars, hosts)
    targets = [h for h in names if host_variables("rollout_batches", hostvars, h).get("kubelet_numa_status") is not None]
    # the batch play's hosts are the targets (same pattern, without localhost), so serial cuts them
    per_batch = batch_hosts(batch_size, len(targets))
    batches = [targets[i:i + per_batch] for i in range(0, len(targets), per_batch)]
    decided = [host_variables("rollout_batches", hostvars, h).get("kubelet_numa_decided_at") for h in targets]
    decided = [float(t) for t in decided if isinstance(t, (int, float))]
    return {"targets": targets, "batches": batches, "batch_of": dict((h, i) for i, b in enumerate(batches) for h in b),
            "started": min(decided) if decided else time.time()}


class FilterModule:
    def filters(self):
        return {"rollout_batches": rollout_batches}
