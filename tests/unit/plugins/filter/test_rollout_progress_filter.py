# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""rollout_progress: apply.yml's line before each batch (batch k of n, hosts done, time left)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.numaguard.kubelet.plugins.filter.rollout_progress import rollout_progress

BATCHES = [["h01", "h02"], ["h03", "h04"], ["h05"]]


def test_first_batch_has_no_estimate():
    assert rollout_progress(BATCHES, 0, 1000.0, 1000.0) == "batch 1 of 3 (h01, h02): 0 of 5 host(s) done, first batch"


def test_time_left_from_the_time_per_batch():
    # two batches took 140 s: 70 s a batch, one left
    assert rollout_progress(BATCHES, 2, 1000.0, 1140.0) == \
        "batch 3 of 3 (h05): 4 of 5 host(s) done, 2m 20s so far, about 1m 10s left"
    assert rollout_progress(BATCHES, 1, 0, 5400) == "batch 2 of 3 (h03, h04): 2 of 5 host(s) done, 1h 30m so far, about 3h 00m left"


def test_a_big_batch_names_12_hosts():
    batch = ["n%03d" % i for i in range(40)]
    line = rollout_progress([batch], 0, 0, 0)
    assert line.startswith("batch 1 of 1 (n000, n001,") and "n011 +28 more): 0 of 40 host(s) done" in line


@pytest.mark.parametrize("args, words", [
    (("x", 0, 0, 0), "list of batches"),
    ((BATCHES, 3, 0, 0), "index 3 is not a batch"),
    ((BATCHES, "a", 0, 0), "must be numbers"),
])
def test_bad_input(args, words):
    with pytest.raises(AnsibleFilterError, match=words):
        rollout_progress(*args)
