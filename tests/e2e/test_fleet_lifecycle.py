# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The simulated fleet itself: bring-up, isolation of each host, teardown, refusals."""

from __future__ import annotations

import os
import socket

# tests/e2e/conftest.py loads tests/fleet/fleet.py under this name (test dirs are not packages).
import numaguard_fleet_tool as fleet_tool  # pylint: disable=import-error
import pytest

pytestmark = pytest.mark.skipif(fleet_tool.unavailable() is not None, reason=str(fleet_tool.unavailable()))


def _real_machine_view():
    """What the real machine shows at the paths the fleet mounts over (must never change)."""
    view = {}
    for path in ("/sys/devices/system/node", "/sys/devices/system/cpu", "/sys/kernel/mm/hugepages",
                 "/var/lib/kubelet", "/etc/kubernetes"):
        view[path] = sorted(os.listdir(path)) if os.path.isdir(path) else None
    with open("/proc/meminfo") as handle:
        view["MemTotal"] = handle.readline()
    with open("/proc/sys/kernel/hostname") as handle:
        view["hostname"] = handle.read()
    return view


def test_up_isolates_hosts_and_down_leaves_nothing(tmp_path):
    before = _real_machine_view()
    fleet_dir = str(tmp_path / "f")
    state = fleet_tool.up(fleet_dir, topologies=["vm-single", "intel-2s"], base_port="auto", quiet=True)
    hosts = state["hosts"]
    try:
        assert [(h["name"], h["topology"], h["group"]) for h in hosts] == [
            ("h01", "vm-single", "vm_single"), ("h02", "intel-2s", "intel_2s")]
        assert len(set(h["loopback"] for h in hosts)) == 2
        with open(state["inventory"]) as handle:
            inventory = handle.read()
        for host in hosts:
            assert "ansible_port: %d" % host["port"] in inventory
            assert 'fleet_loopback: "%s"' % host["loopback"] in inventory
        seen = {}
        for host in hosts:
            out = fleet_tool._run(fleet_tool.ssh_base_args(state, host["port"]) + [
                "hostname; ls /sys/devices/system/node | grep -c '^node'; grep MemTotal /proc/meminfo; "
                "cat /proc/1/comm; ps -e -o comm= | sort -u | tr '\\n' ' '; "
                "echo %s > /etc/kubernetes/marker" % host["name"]])
            assert out.returncode == 0, out.stderr
            seen[host["name"]] = out.stdout.splitlines()
        assert seen["h01"][:2] == ["h01", "1"]
        assert seen["h02"][:2] == ["h02", "2"]
        for name in ("h01", "h02"):
            # Own PID namespace: init is the host's sshd and only its processes are visible.
            assert seen[name][3] == "sshd"
            assert set(seen[name][4].split()) <= {"sshd", "bash", "sh", "ps", "sort", "tr"}, seen[name][4]
        # Writes land in the host's own tree only.
        for host in hosts:
            with open(os.path.join(host["root"], "etc", "kubernetes", "marker")) as handle:
                assert handle.read() == host["name"] + "\n"
        assert not os.path.exists("/etc/kubernetes/marker")
        # restore puts the bring-up contents back in place.
        assert fleet_tool.restore(fleet_dir, ["h01"]) == ["h01"]
        assert not os.path.exists(os.path.join(hosts[0]["root"], "etc", "kubernetes", "marker"))
        assert os.path.exists(os.path.join(hosts[1]["root"], "etc", "kubernetes", "marker"))
        # A second fleet in the same directory, or on ports in use, is refused.
        with pytest.raises(fleet_tool.FleetError, match="a fleet is already running in .*; run `fleet down"):
            fleet_tool.up(fleet_dir, topologies=["vm-single"], quiet=True)
        with pytest.raises(fleet_tool.FleetError, match="port %d already in use" % hosts[0]["port"]):
            fleet_tool.up(str(tmp_path / "g"), topologies=["vm-single"], base_port=str(hosts[0]["port"]),
                          quiet=True)
        failed = fleet_tool.load_state(str(tmp_path / "g"))
        assert failed["trees"] and not os.path.exists(failed["trees"])  # a failed up frees its trees
    finally:
        stopped = fleet_tool.down(fleet_dir, quiet=True)
    assert stopped == 2
    for host in hosts:
        for pid_key, start_key in (("pid", "start"), ("init_pid", "init_start")):
            assert host.get(pid_key), "%s was not recorded for %s" % (pid_key, host["name"])
            assert not fleet_tool.is_ours(host[pid_key], host[start_key])
        assert not fleet_tool.port_listening(host["port"])
        assert not os.path.exists(host["root"])
    assert not os.path.exists(fleet_dir)
    assert not os.path.exists(state["trees"] or fleet_dir)
    assert _real_machine_view() == before
    with open("/proc/self/mountinfo") as handle:
        mounts = handle.read()
    assert fleet_dir not in mounts and (state["trees"] or fleet_dir) not in mounts  # nothing leaked out
    # down is idempotent.
    assert fleet_tool.down(fleet_dir, quiet=True) == 0


def test_refuses_a_port_taken_by_something_else(tmp_path):
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    port = sock.getsockname()[1]
    try:
        with pytest.raises(fleet_tool.FleetError) as err:
            fleet_tool.up(str(tmp_path / "f"), topologies=["vm-single"], base_port=str(port), quiet=True)
    finally:
        sock.close()
    assert str(err.value) == (
        "port %d already in use on 127.0.0.1 (is another fleet running? `fleet status`/`fleet down`, "
        "or pick another --base-port)" % port)
    # Nothing was left running; the failed fleet's directory only holds logs.
    state = fleet_tool.load_state(str(tmp_path / "f"))
    assert state is None or not any(fleet_tool.is_ours(h.get("pid"), h.get("start")) for h in state["hosts"])
    fleet_tool.down(str(tmp_path / "f"), quiet=True)


@pytest.mark.parametrize("spec, message", [
    ("nosuch", "unknown topology 'nosuch' in --topologies (known: "),
    ("intel-2s:2Mi", "bad host spec 'intel-2s:2Mi' in --topologies: expected NAME[:SIZE=COUNT...][@GROUP]"),
    ("intel-2s@bad-group", "bad host spec 'intel-2s@bad-group' in --topologies"),
])
def test_bad_host_specs(spec, message):
    with pytest.raises(fleet_tool.FleetError) as err:
        fleet_tool.plan_hosts(None, [spec], fleet_tool.list_topologies())
    assert str(err.value).startswith(message)


def test_plan_cycles_specs_and_names_hosts():
    plan = fleet_tool.plan_hosts(5, ["vm-single", "intel-2s:1Gi=0:2Mi=8@pool"], ["vm-single", "intel-2s"])
    assert [(h["name"], h["topology"], h["hugepages"], h["group"]) for h in plan] == [
        ("h01", "vm-single", [], "vm_single"),
        ("h02", "intel-2s", ["1Gi=0", "2Mi=8"], "pool"),
        ("h03", "vm-single", [], "vm_single"),
        ("h04", "intel-2s", ["1Gi=0", "2Mi=8"], "pool"),
        ("h05", "vm-single", [], "vm_single"),
    ]
    assert [h["name"] for h in fleet_tool.plan_hosts(100, ["vm-single"], ["vm-single"])][-2:] == ["h099", "h100"]


def test_bundled_fleet_has_every_topology_and_an_odd_intel_host():
    names = fleet_tool.list_topologies()
    specs = fleet_tool.bundled_fleet(names)
    assert specs[:len(names)] == names
    plan = fleet_tool.plan_hosts(None, specs, names)
    intel = [h for h in plan if h["group"] == "intel_2s"]
    assert [h["hugepages"] for h in intel] == [[], [], ["1Gi=0"]]
    assert len(plan) == len(names) + 2  # every bundled topology once, plus the two intel-2s extras


def test_loopback_addresses_are_unique_per_port():
    addresses = set(fleet_tool.loopback_for_port(p) for p in range(1024, 65536))
    assert len(addresses) == 65536 - 1024
    assert fleet_tool.loopback_for_port(2201) == "127.1.8.153"
