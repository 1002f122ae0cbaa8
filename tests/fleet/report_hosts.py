# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Synthetic fleet-scale inputs of the report model (issue 25): N hosts of the bundled classes for
``discover_report``, ``validate_report`` and ``check_pod_report``, without N hosts.

Each class is read once, for real: its bundled tree (``topologies.cached_tree``) through the
``numa_facts`` gatherer, ``reserved_memory_check`` with the class's settings from
``playbooks/examples/classes/group_vars``, and ``admission_check`` with the sample ``db`` pod. The
hosts of a class then share those answers, with what differs per live host made to differ (MemFree,
free hugepages, the kubelet's pid), and a few exceptions put in on purpose: hosts whose 1Gi pages were
not allocated at boot (another class, flagged by discover), invalid reservations, unreachable hosts,
and a second validate warning on two thirds of one class.
Used by tests/unit/plugins/plugin_utils/test_report_at_scale.py and benchmarks/report_page_weight.py.
"""

from __future__ import annotations

import copy
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

import yaml

from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_check import reserved_memory_check
from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.admission_check import run_check
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.facts import gather
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.classes import hardware_class
from ansible_collections.numaguard.kubelet.tests.fleet import topologies
from ansible_collections.numaguard.kubelet.tests.fleet.playbook_runs import REPO, pod_manifest

#: six bundled classes and their share of the fleet (sums to 1000 per mille)
SIX_CLASSES: Tuple[Tuple[str, int], ...] = (("intel-2s", 300), ("amd-epyc-nps4", 250), ("cxl-memory", 175),
                                            ("gpu-sriov", 125), ("vm-single", 100), ("sparse-ids", 50))
GROUP_VARS = os.path.join(REPO, "playbooks", "examples", "classes", "group_vars")
CACHE = os.path.join(REPO, "tests", "output", ".cache", "topologies")
#: 1Gi pages per node of the intel-2s hosts whose pages were not allocated at boot
NO_1G = {1048576: 0}


class Fleet:
    """Host names, their bundled topology, and the per-class answers read once."""

    def __init__(self, count: int = 400, classes: Sequence[Tuple[str, int]] = SIX_CLASSES) -> None:
        self.hosts: List[str] = []
        self.topology: Dict[str, str] = {}
        total = sum(share for _name, share in classes)
        for index, (name, share) in enumerate(classes):
            n = count * share // total if index < len(classes) - 1 else count - len(self.hosts)
            for i in range(n):
                host = "%s-%03d" % (name, i + 1)
                self.hosts.append(host)
                self.topology[host] = name
        self._facts: Dict[Tuple[str, bool], Dict[str, Any]] = {}
        self._roots: Dict[Tuple[str, bool], str] = {}
        #: hosts with unallocated 1Gi pages (another shape), invalid settings, no answer
        intel = [h for h in self.hosts if self.topology[h] == "intel-2s"]
        self.no_1g = intel[-2:]
        self.invalid = intel[3:6]
        amd = [h for h in self.hosts if self.topology[h] == "amd-epyc-nps4"]
        #: two thirds of the EPYC hosts set evictionHard without merging the defaults: a warning of their own
        self.eviction_warned = amd[:len(amd) * 2 // 3]
        self.unreachable = [self.hosts[-1], self.hosts[len(self.hosts) // 2]]

    def _root(self, name: str, no_1g: bool = False) -> str:
        key = (name, no_1g)
        if key not in self._roots:
            # a cache folder of its own per variant: cached_tree keeps one tree per topology name in a folder
            cache = os.path.join(CACHE, "no-1g") if no_1g else CACHE
            self._roots[key] = topologies.cached_tree(name, cache, hostname="h01", hugepages=NO_1G if no_1g else None)
        return self._roots[key]

    def class_facts(self, name: str, no_1g: bool = False) -> Dict[str, Any]:
        key = (name, no_1g)
        if key not in self._facts:
            self._facts[key] = gather(self._root(name, no_1g))
        return self._facts[key]

    def facts(self, host: str) -> Dict[str, Any]:
        """The host's numa_topology: its class's, with live numbers (MemFree, free pages, pid) of its own."""
        facts = copy.deepcopy(self.class_facts(self.topology[host], host in self.no_1g))
        seed = sum(ord(c) * (i + 1) for i, c in enumerate(host))
        for node in facts["nodes"]:
            node["memory_free_bytes"] = max(node["memory_free_bytes"] - (seed % 97) * (1 << 24), 0)
            for pool in (node.get("hugepages") or {}).values():
                pool["free_pages"] = max(pool["total_pages"] - seed % 5, 0)
        if isinstance(facts.get("kubelet"), dict):
            facts["kubelet"] = dict(facts["kubelet"], running=True, pid=1000 + seed % 30000)
        return facts

    def settings(self, host: str) -> Dict[str, Any]:
        facts = self.class_facts(self.topology[host], host in self.no_1g)
        path = os.path.join(GROUP_VARS, "%s.yml" % hardware_class(facts)["group"])
        if not os.path.isfile(path):  # a shape of no bundled class: the intel-2s class settings
            path = os.path.join(GROUP_VARS, "%s.yml" % hardware_class(self.class_facts(self.topology[host]))["group"])
        with open(path) as handle:
            settings = yaml.safe_load(handle)["kubelet_numa_settings"]
        if host in self.invalid:  # reservedMemory no longer sums to the reservations
            settings = dict(settings, kubeReserved=dict(settings.get("kubeReserved") or {}, memory="3Gi"))
        if host in self.eviction_warned:
            settings = dict(settings, evictionHard={"memory.available": "100Mi", "nodefs.available": "10%"},
                            mergeDefaultEvictionSettings=False)
        return settings

    def groups_of(self) -> Dict[str, List[str]]:
        return dict((h, [self.topology[h].replace("-", "_")]) for h in self.hosts)

    # -- the three reports' inputs ---------------------------------------------------------------
    def discover_inputs(self) -> Tuple[Dict[str, Any], Dict[str, List[str]], List[str], Dict[str, str]]:
        topologies_of: Dict[str, Any] = {}
        failed: Dict[str, str] = {}
        for host in self.hosts:
            if host in self.unreachable:
                topologies_of[host] = None
                failed[host] = "unreachable: Failed to connect to the host via ssh: Connection timed out"
            else:
                topologies_of[host] = self.facts(host)
        return topologies_of, self.groups_of(), list(self.hosts), failed

    def validate_inputs(
            self, kubelet_version: Optional[str] = None) -> Tuple[Dict[str, Any], Dict[str, Any], Dict[str, List[str]], List[str]]:
        results: Dict[str, Any] = {}
        topologies_of: Dict[str, Any] = {}
        answers: Dict[Any, Dict[str, Any]] = {}
        for host in self.hosts:
            if host in self.unreachable:
                why = "unreachable: Failed to connect to the host via ssh: Connection timed out"
                results[host] = {"valid": False, "errors": ["could not check %s: %s" % (host, why)], "warnings": [],
                                 "input_error": why}
                continue
            key = (self.topology[host], host in self.no_1g, host in self.invalid, host in self.eviction_warned)
            if key not in answers:
                answers[key] = reserved_memory_check(self.class_facts(self.topology[host], host in self.no_1g),
                                                     kubelet_config=self.settings(host), errors="report",
                                                     kubelet_version=kubelet_version)
            results[host] = copy.deepcopy(answers[key])
            topologies_of[host] = self.facts(host)
        return results, topologies_of, self.groups_of(), list(self.hosts)

    def check_pod_inputs(self, pod: str = "db") -> Tuple[Dict[str, Any], Dict[str, Any], Dict[str, List[str]],
                                                         List[str], List[str]]:
        document = yaml.safe_load(pod_manifest(pod))
        answers: Dict[Any, Dict[str, Any]] = {}
        results: Dict[str, Any] = {}
        topologies_of: Dict[str, Any] = {}
        for host in self.hosts:
            if host in self.unreachable:
                results[host] = {"unreachable": True, "changed": False,
                                 "msg": "Failed to connect to the host via ssh: Connection timed out"}
                continue
            key = (self.topology[host], host in self.no_1g)
            if key not in answers:
                answers[key] = run_check({"root": self._root(*key), "pod": [document], "merge_method": "fast",
                                          "return_state": False})
            results[host] = copy.deepcopy(answers[key])
            topologies_of[host] = self.facts(host)
        active = [h for h in self.hosts if h not in self.unreachable]
        return results, topologies_of, self.groups_of(), list(self.hosts), active
