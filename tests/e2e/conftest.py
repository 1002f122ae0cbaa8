# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared fixtures for end-to-end tests that run real playbooks against the simulated fleet.

``fleet`` (session scope) is one host per bundled topology plus an intel-2s host without 1Gi
hugepages (so the intel_2s group is not uniform), brought up once for the whole pytest session
on free ports and torn down at the end. Tests that change a host's /var/lib/kubelet or
/etc/kubernetes should call ``fleet.restore(host)`` when done (or use ``fleet_restored``).

Helpers on the fixture (see :class:`Fleet`)::

    fleet.hosts                      # list of host dicts: name, port, topology, hugepages, group, loopback, root
    fleet.host("h01"); fleet.hosts_of("intel-2s")
    fleet.playbook("playbooks/discover.yml", "-e", "x=1", limit="h01")   # CompletedProcess, text output
                                                     # (also inventory=, env=, timeout=)
    fleet.module("h01", "numaguard.kubelet.numa_facts", {"root": "/"})   # parsed result dict per host
    fleet.ssh("h01", "cat /etc/kubernetes/kubelet.conf")                 # CompletedProcess
    fleet.restore("h01")                                                  # reset kubelet/kubernetes dirs
    fleet.env                                                             # environment for ansible commands
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Any, Dict, List, Optional, Sequence

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.dirname(sys.executable)


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


fleet_tool = _load("numaguard_fleet_tool", os.path.join(REPO, "tests", "fleet", "fleet.py"))
topologies = _load("numaguard_fleet_topologies", os.path.join(REPO, "tests", "fleet", "topologies.py"))
playbook_runs = _load("numaguard_playbook_runs", os.path.join(REPO, "tests", "fleet", "playbook_runs.py"))

#: The odd host added to the e2e fleet: same hardware as intel-2s, 1Gi pools never allocated.
ODD_HOST = "intel-2s:1Gi=0"


def ansible_env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """Environment for ansible commands against the fleet: live collection, pipelining, forks 10."""
    return playbook_runs.ansible_env(extra, BIN)


class Fleet:
    """A running fleet plus helpers to run ansible against it."""

    def __init__(self, state: Dict[str, Any]) -> None:
        self.state = state
        self.dir: str = state["dir"]
        self.inventory: str = state["inventory"]
        self.hosts: List[Dict[str, Any]] = state["hosts"]
        self.env = ansible_env()

    @property
    def names(self) -> List[str]:
        return [h["name"] for h in self.hosts]

    def host(self, name: str) -> Dict[str, Any]:
        for host in self.hosts:
            if host["name"] == name:
                return host
        raise KeyError("no fleet host %r (hosts: %s)" % (name, ", ".join(self.names)))

    def hosts_of(self,
                 topology: str,
                 hugepages: Optional[Sequence[str]] = None) -> List[Dict[str, Any]]:
        """Hosts of a topology; by default only those without hugepage overrides."""
        wanted = list(hugepages or [])
        return [h for h in self.hosts if h["topology"] == topology and list(h.get("hugepages") or []) == wanted]

    def expected(self, name: str) -> Dict[str, Any]:
        """What numa_facts must report on host ``name`` (tests/fleet/topologies.py's expectation)."""
        host = self.host(name)
        pages = dict(topologies.parse_hugepage_override(p) for p in host.get("hugepages") or [])
        return topologies.expected(host["topology"], host["name"], pages)

    def playbook(self, playbook: str, *args: str, **kwargs: Any) -> subprocess.CompletedProcess:
        """Run ``ansible-playbook -i INVENTORY playbook args``; output (stdout+stderr) as text."""
        limit = kwargs.pop("limit", None)
        inventory = kwargs.pop("inventory", None) or self.inventory
        env = ansible_env(kwargs.pop("env", None))
        timeout = kwargs.pop("timeout", 300)
        cwd = kwargs.pop("cwd", None) or REPO
        if kwargs:
            raise TypeError("unexpected arguments %s" % ", ".join(kwargs))
        path = playbook if os.path.isabs(playbook) else os.path.join(REPO, playbook)
        argv = [os.path.join(BIN, "ansible-playbook"), "-i", inventory, path] + list(args)
        if limit:
            argv += ["--limit", limit]
        return subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=timeout, check=False)

    def module(self,
               pattern: str,
               module: str,
               args: Optional[Dict[str, Any]] = None,
               check: bool = False,
               timeout: int = 300) -> Dict[str, Dict[str, Any]]:
        """Run one module ad hoc on ``pattern``; returns host -> result dict (from ``--tree``)."""
        tree = tempfile.mkdtemp(prefix="fleet-adhoc-")
        try:
            argv = [os.path.join(BIN, "ansible"), "-i", self.inventory, pattern, "-m", module, "--tree", tree]
            if args:
                argv += ["-a", json.dumps(args)]
            if check:
                argv.append("--check")
            proc = subprocess.run(argv, cwd=REPO, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, timeout=timeout, check=False)
            results: Dict[str, Dict[str, Any]] = {}
            for name in os.listdir(tree):
                with open(os.path.join(tree, name)) as handle:
                    results[name] = json.load(handle)
        finally:
            shutil.rmtree(tree, ignore_errors=True)
        if not results:
            raise AssertionError("ansible %s -m %s returned no results (exit %d):\n%s"
                                 % (pattern, module, proc.returncode, proc.stdout[-3000:]))
        return results

    def ssh(self, name: str, command: str, timeout: int = 60) -> subprocess.CompletedProcess:
        """Run a shell command on a fleet host over ssh (stdout and stderr separately)."""
        host = self.host(name)
        argv = fleet_tool.ssh_base_args(self.state, host["port"]) + [command]
        return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, check=False)

    def restore(self, *names: str) -> List[str]:
        """Reset hosts' /var/lib/kubelet and /etc/kubernetes to their bring-up contents (all by default)."""
        return fleet_tool.restore(self.dir, names or None)


def e2e_fleet_specs() -> List[str]:
    return fleet_tool.list_topologies() + [ODD_HOST]


@pytest.fixture(scope="session")
def fleet(tmp_path_factory):
    """The session's fleet: one host per bundled topology plus the odd intel-2s host."""
    reason = fleet_tool.unavailable()
    if reason:
        pytest.skip(reason)
    fleet_dir = str(tmp_path_factory.mktemp("fleet"))
    state = fleet_tool.up(fleet_dir, topologies=e2e_fleet_specs(), base_port="auto", quiet=True)
    try:
        yield Fleet(state)
    finally:
        fleet_tool.down(fleet_dir, quiet=True)


@pytest.fixture
def fleet_restored(fleet):
    """The session fleet, with every host's kubelet/kubernetes directories reset after the test."""
    yield fleet
    fleet.restore()
