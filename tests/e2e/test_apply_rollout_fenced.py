# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 22's fault scenarios on the simulated fleet: a controller SIGSTOPped past a short lease
while a second run applies other settings, the lock's clock moved past the lease mid-change, and
a healthy kubelet on the intended configuration whose state files it would refuse (no /configz).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fleet"))

from apply_fleet import (  # noqa: E402  (tests/fleet/apply_fleet.py: the shared rollout helpers)
    CPU_STATE,
    FAKE,
    REQUIRES_FLEET,
    STATIC,
    adhoc,
    healthy,
    host_paths,
    journal_of,
    kubelet_endpoint,
    module_fleet,
    pause_at,
    playbook,
    read,
    release_pause,
    reset_fleet,
    start_playbook,
    wait_for,
)

pytestmark = REQUIRES_FLEET
# every scenario runs --limit to one host: vm-single, the first host (by group name) of the former
# intel-2s + vm-single fleet, whose second host no test used
fleet = module_fleet(["vm-single"])
LEASE = 60  # the shortest lease the module accepts


def configz(_fleet, host):
    return json.loads(kubelet_endpoint(host, "/configz"))["kubeletconfig"]


def test_controller_stopped_past_the_lease_while_another_run_applies_is_fenced(fleet):
    """Run A is SIGSTOPped after its preflight, past the lease; run B applies other settings; A
    resumes: it is fenced and changes nothing, so the host runs B's configuration on disk and in
    the kubelet, a restart succeeds, and the journal says B's change is done."""
    reset_fleet(fleet)
    host = fleet["hosts"][0]
    paths = host_paths(host)
    pause = pause_at(host, "status")
    first = start_playbook(fleet, STATIC, "--limit", host["name"], kubelet_numa_lock_lease=LEASE)
    wait_for(os.path.join(pause, "reached-status"), first)
    os.killpg(first.pid, signal.SIGSTOP)
    stopped = time.time()
    try:
        release_pause(pause, "status")
        other = dict(STATIC, reservedSystemCPUs="1")
        second = playbook(fleet, other, "--limit", host["name"], kubelet_numa_lock_lease=LEASE)
        assert second.returncode == 0, second.stdout[-4000:]
        done = journal_of(host)
        assert done["status"] == "done"
        time.sleep(max(0.0, LEASE + 2 - (time.time() - stopped)))  # A stays stopped past the lease
    finally:
        os.killpg(first.pid, signal.SIGCONT)
    out, _err = first.communicate(timeout=600)
    assert first.returncode != 0, out[-4000:]
    assert "fenced: change %s (done" % done["change_id"] in out and "this run changed nothing" in out, out[-4000:]
    assert "%s: failed - fenced" % host["name"] in out[out.find("Per-host summary"):], out[-4000:]
    # one run's configuration on disk and in the running kubelet, and the journal tells the truth
    assert b'reservedSystemCPUs: "1"' in read(paths["dropin"])
    running = configz(fleet, host)
    assert running["reservedSystemCPUs"] == "1" and running["cpuManagerPolicy"] == "static"
    assert journal_of(host) == done
    restart = adhoc(fleet, host["name"], "/usr/bin/python3 %s restart --healthz {{ fleet_loopback }}:10248" % FAKE)
    assert restart.returncode == 0, restart.stdout
    time.sleep(1)
    assert healthy(fleet, host)


def test_lock_clock_moved_past_the_lease_mid_change_never_leaves_the_kubelet_stopped(fleet):
    """While the kubelet is stopped mid-change, the lock file's times jump hours back (a host clock
    moved past the lease): the transaction's lease is its own monotonic clock, so the change goes
    on, the kubelet runs again, nothing had to be restored and the summary says applied."""
    reset_fleet(fleet)
    host = fleet["hosts"][0]
    paths = host_paths(host)
    pause = pause_at(host, "stopped")
    proc = start_playbook(fleet, STATIC, "--limit", host["name"], kubelet_numa_lock_lease=LEASE)
    wait_for(os.path.join(pause, "reached-stopped"), proc)
    lock = os.path.join(paths["backups"], "rollout.lock")
    past = time.time() - 4 * 3600
    os.utime(lock, (past, past))
    os.utime(os.path.join(paths["backups"], "journal.json"), (past, past))
    release_pause(pause, "stopped")
    out, _err = proc.communicate(timeout=600)
    assert proc.returncode == 0, out[-4000:]
    assert "%s: changed - applied" % host["name"] in out, out[-4000:]
    summary = out[out.find("Per-host summary"):out.find("TASK [Fail the run")]
    assert "lost the lock" not in out and "rolled back" not in summary and "fenced" not in summary, summary[:2000]
    assert healthy(fleet, host)
    assert json.loads(read(paths["cpu"]))["policyName"] == "static"
    assert journal_of(host)["status"] == "done" and read(lock) == b""


def test_state_files_the_kubelet_would_refuse_are_not_unchanged_without_configz(fleet):
    """Configuration as intended, kubelet healthy, /configz not reachable, but cpu_manager_state of
    another policy (the kubelet would refuse it at its next start): refused with the reason, never
    'unchanged'; with kubelet_numa_repair_state the state is repaired."""
    reset_fleet(fleet)
    host = fleet["hosts"][0]
    paths = host_paths(host)
    no_configz = {"kubelet_numa_configz_url": ""}
    assert playbook(fleet, STATIC, "--limit", host["name"], **no_configz).returncode == 0
    with open(paths["cpu"], "w") as handle:  # e.g. restored by hand from an old backup
        handle.write(CPU_STATE)
    assert healthy(fleet, host)
    proc = playbook(fleet, STATIC, "--limit", host["name"], **no_configz)
    assert proc.returncode != 0, proc.stdout[-3000:]
    summary = proc.stdout[proc.stdout.find("Per-host summary"):]
    assert "%s: unchanged" % host["name"] not in proc.stdout
    assert "%s: failed - preflight failed, nothing changed: kubelet_numa: %s is NOT converged" % (host["name"], host["name"]) \
        in summary, summary[:3000]
    assert "differs from the cpu_manager_state checkpoint policy 'none'" in summary
    assert read(paths["cpu"]) == CPU_STATE.encode()
    repaired = playbook(fleet, STATIC, "--limit", host["name"], kubelet_numa_repair_state=True, **no_configz)
    assert repaired.returncode == 0, repaired.stdout[-3000:]
    assert "%s: state repaired" % host["name"] in repaired.stdout
    assert json.loads(read(paths["cpu"]))["policyName"] == "static" and healthy(fleet, host)
