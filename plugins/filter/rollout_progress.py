# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: rollout_progress
short_description: One line of rollout progress before a batch of playbooks/apply.yml starts
version_added: 0.2.0
description:
  - Says which batch starts (k of n), its hosts (at most 12 named, then C(+N more)), how many of the targeted hosts the
    batches before it covered, the time since the first batch and, from the time per batch so far, about how long the
    rest will take.
options:
  _input:
    description: The batches, a list of lists of host names, in order.
    type: list
    elements: list
    required: true
  index:
    description: The index (from 0) of the batch about to start.
    type: int
    required: true
  started:
    description: When the first batch started, in seconds since the epoch.
    type: float
    required: true
  now:
    description: Now, in seconds since the epoch.
    type: float
    required: true
"""

EXAMPLES = r"""
- name: Batch progress
  ansible.builtin.debug:
    msg: "{{ batches | numaguard.kubelet.rollout_progress(index, started, now(utc=true).timestamp()) }}"
"""

RETURN = r"""
_value:
  description: "The line, for example C(batch 3 of 10 (h05, h06): 4 of 20 host(s) done, 1m 10s so far, about 5m 50s left)."
  type: str
"""

from ansible.errors import AnsibleFilterError

#: Host names shown before "+N more".
MAX_NAMES = 12


def _duration(seconds):
    seconds = int(round(max(seconds, 0)))
    if seconds < 60:
        return "%ds" % seconds
    if seconds < 3600:
        return "%dm %02ds" % divmod(seconds, 60)
    hours, rest = divmod(seconds, 3600)
    return "%dh %02dm" % (hours, rest // 60)


def rollout_progress(batches, index, started, now):
    if isinstance(batches, str) or not isinstance(batches, (list, tuple)) or not all(
            isinstance(b, (list, tuple)) for b in batches):
        raise AnsibleFilterError("rollout_progress: input must be a list of batches (lists of host names), got %r"
                                 % (batches,))
    try:
        index, started, now = int(index), float(started), float(now)
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("rollout_progress: index, started and now must be numbers: %s" % exc)
    if not 0 <= index < len(batches):
        raise AnsibleFilterError("rollout_progress: index %d is not a batch (there are %d)" % (index, len(batches)))
    batch = [str(h) for h in batches[index]]
    names = ", ".join(batch[:MAX_NAMES]) + (" +%d more" % (len(batch) - MAX_NAMES) if len(batch) > MAX_NAMES else "")
    total = sum(len(b) for b in batches)
    done = sum(len(b) for b in batches[:index])
    elapsed = now - started
    line = "batch %d of %d (%s): %d of %d host(s) done" % (index + 1, len(batches), names, done, total)
    if index == 0:
        return line + ", first batch"
    left = elapsed / index * (len(batches) - index)
    return line + ", %s so far, about %s left" % (_duration(elapsed), _duration(left))


class FilterModule:
    def filters(self):
        return {"rollout_progress": rollout_progress}
