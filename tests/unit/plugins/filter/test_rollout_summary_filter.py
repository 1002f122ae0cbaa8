# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""rollout_summary: every targeted host classified, a host lost during its change included."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.filter.rollout_summary import rollout_summary


def test_every_outcome_and_a_host_lost_during_its_change():
    hostvars = {
        "never": {},
        "bad": {"kubelet_numa_preflight": "failed", "kubelet_numa_preflight_error": "invalid"},
        "done": {"kubelet_numa_preflight": "ok", "kubelet_numa_batch_started": 1,
                 "kubelet_numa_summary": {"result": "applied", "backup_dir": "/b/1"}},
        "lost": {"kubelet_numa_preflight": "ok", "kubelet_numa_batch_started": 2},
        "later": {"kubelet_numa_preflight": "ok"},
        "undone": {"kubelet_numa_preflight": "ok", "kubelet_numa_batch_started": 1, "kubelet_numa_failed": True,
                   "kubelet_numa_failure": "did not come back", "kubelet_numa_summary": {"result": "rolled back"}},
    }
    report = rollout_summary(hostvars, list(hostvars))
    states = dict((row["host"], row["state"]) for row in report["hosts"])
    assert states == {"never": "unreachable", "bad": "failed", "done": "changed", "lost": "unreachable",
                      "later": "untouched", "undone": "rolled back"}
    assert "lost: unreachable - lost during its change in batch 2" in report["lines"][3]
    assert report["bad"] == ["never", "bad", "lost", "undone"]
    # a host lost during its change stops the later batches, like a failed change
    assert report["failed_changes"] == ["lost", "undone"]


def test_a_host_whose_transaction_became_unreachable_is_lost_in_its_batch():
    hostvars = {"h1": {"kubelet_numa_preflight": "ok", "kubelet_numa_change": {"unreachable": True, "msg": "cut"}},
                "h2": {"kubelet_numa_preflight": "ok"}}
    report = rollout_summary(hostvars, ["h1", "h2"], {"h1": 0, "h2": 1})
    assert report["lines"][0].startswith("h1: unreachable - lost during its change in batch 1 (connection cut or host down)")
    assert report["lines"][1] == "h2: untouched - the rollout stopped before this host's batch"
    assert report["failed_changes"] == ["h1"]
