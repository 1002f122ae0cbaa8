# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/apply.yml on the simulated fleet (three machine classes), with the stand-in kubelet.

Each host runs its own fake kubelet inside its namespaces (started over ssh), serving /healthz on
the host's own loopback address, reading /etc/kubernetes/kubelet-config.yaml plus the drop-ins of
/etc/kubernetes/kubelet.conf.d and refusing to start on a state-file policy mismatch, like a kubelet.

What is shown (the issue's acceptance list):
* check mode changes nothing on any host (sha256 of every file before == after);
* a first run changes, a second run reports nothing changed;
* a CPU Manager policy change moves cpu_manager_state into the backup and leaves
  memory_manager_state byte-identical; a Topology Manager change only restarts;
* a forced failed start restores config and state byte-identically, fails that host with the
  kubelet's complaint and stops the later batches.

The controller killed and the SSH connection cut at each step: test_apply_rollout_kill.py and
test_apply_rollout_cut.py (helpers shared through tests/fleet/apply_fleet.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fleet"))

from apply_fleet import (  # noqa: E402  (tests/fleet/apply_fleet.py: the shared rollout helpers)
    BIN,
    CPU_STATE,
    FAKE,
    MAIN_CONFIG,
    MEMORY_STATE,
    REPO,
    REQUIRES_FLEET,
    STATIC,
    adhoc,
    ansible_env,
    backup_dirs,
    fleet_ssh,
    flock_held,
    hashes,
    healthy,
    host_paths,
    module_fleet,
    pause_at,
    playbook,
    read,
    recap,
    release_pause,
    reset_fleet,
    start_playbook,
    wait_for,
)

pytestmark = REQUIRES_FLEET
fleet = module_fleet(["intel-2s", "vm-single", "amd-epyc-nps4"])


def test_check_mode_changes_nothing_on_any_host(fleet):
    reset_fleet(fleet)
    before = dict((h["name"], hashes(h)) for h in fleet["hosts"])
    proc = playbook(fleet, {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"}, "--check", "--diff")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    after = dict((h["name"], hashes(h)) for h in fleet["hosts"])
    assert after == before
    assert "+cpuManagerPolicy: static" in proc.stdout  # the diff shows the drop-in to come
    for host in fleet["hosts"]:
        assert "%s: would change" % host["name"] in proc.stdout


def test_first_run_changes_and_resets_only_the_cpu_state_second_run_changes_nothing(fleet):
    reset_fleet(fleet)
    settings = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0",
                "cpuManagerPolicyOptions": {"full-pcpus-only": True}}
    first = playbook(fleet, settings, kubelet_numa_batch_size=2)
    assert first.returncode == 0, first.stdout[-4000:] + first.stderr[-2000:]
    counts = recap(first.stdout)
    assert sorted(counts) == sorted(h["name"] for h in fleet["hosts"])
    assert all(c["changed"] > 0 and c["failed"] == 0 for c in counts.values()), counts
    for host in fleet["hosts"]:
        paths = host_paths(host)
        assert read(paths["config"]) == MAIN_CONFIG.encode()  # main config untouched (drop-in mode)
        assert b"cpuManagerPolicy: static" in read(paths["dropin"])
        assert read(paths["memory"]) == MEMORY_STATE.encode()  # the other state file is left alone
        backups = backup_dirs(paths)
        assert len(backups) == 1
        with open(os.path.join(paths["backups"], "journal.json")) as handle:
            journal = json.load(handle)
        assert journal["status"] == "done" and journal["backup_dir"].endswith("/" + backups[0])
        assert read(os.path.join(paths["backups"], "rollout.lock")) == b""  # released
        with open(os.path.join(paths["backups"], backups[0], "manifest.json")) as handle:
            manifest = json.load(handle)["files"]
        moved = [e for e in manifest if e["action"] == "move"]
        assert [os.path.basename(e["path"]) for e in moved] == ["cpu_manager_state"]
        assert read(os.path.join(paths["backups"], backups[0], moved[0]["stored"])) == CPU_STATE.encode()
        # the kubelet started fresh with the new policy
        assert json.loads(read(paths["cpu"]))["policyName"] == "static"
    second = playbook(fleet, settings, kubelet_numa_batch_size=2)
    assert second.returncode == 0, second.stdout[-3000:]
    assert all(c["changed"] == 0 for c in recap(second.stdout).values()), recap(second.stdout)
    assert "unchanged" in second.stdout


def test_memory_policy_change_moves_only_the_memory_state(fleet):
    reset_fleet(fleet)
    # kubeReserved memory 500Mi (main config) + default eviction 100Mi = 600Mi, all on node 0
    settings = {"memoryManagerPolicy": "Static", "reservedMemory": [{"numaNode": 0, "limits": {"memory": "600Mi"}}]}
    proc = playbook(fleet, settings, kubelet_numa_batch_size=3)
    assert proc.returncode == 0, proc.stdout[-4000:]
    for host in fleet["hosts"]:
        paths = host_paths(host)
        assert read(paths["cpu"]) == CPU_STATE.encode()
        assert json.loads(read(paths["memory"]))["policyName"] == "Static"
        (backup,) = backup_dirs(paths)
        with open(os.path.join(paths["backups"], backup, "manifest.json")) as handle:
            moved = [e for e in json.load(handle)["files"] if e["action"] == "move"]
        assert [os.path.basename(e["path"]) for e in moved] == ["memory_manager_state"]
        assert read(os.path.join(paths["backups"], backup, moved[0]["stored"])) == MEMORY_STATE.encode()
    # a reservation that does not add up is refused before anything changes
    before = dict((h["name"], hashes(h)) for h in fleet["hosts"])
    bad = {"memoryManagerPolicy": "Static", "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1Gi"}}]}
    proc = playbook(fleet, bad, kubelet_numa_batch_size=3)
    assert proc.returncode != 0
    assert "reservedMemory:" in proc.stdout
    assert dict((h["name"], hashes(h)) for h in fleet["hosts"]) == before


def test_topology_policy_change_only_restarts(fleet):
    reset_fleet(fleet)
    before = dict((h["name"], (read(host_paths(h)["cpu"]), read(host_paths(h)["memory"]))) for h in fleet["hosts"])
    proc = playbook(fleet, {"topologyManagerPolicy": "best-effort"}, kubelet_numa_batch_size=3,
                    kubelet_numa_drain=True, kubelet_numa_drain_on_every_change=True,
                    kubelet_numa_kubectl="/nonexistent/kubectl")
    assert proc.returncode == 0, proc.stdout[-4000:]
    for host in fleet["hosts"]:
        assert "skipping cordon and drain of node %s" % host["name"] in proc.stdout
    for host in fleet["hosts"]:
        paths = host_paths(host)
        assert (read(paths["cpu"]), read(paths["memory"])) == before[host["name"]]
        with open(os.path.join(paths["run"], "kubelet.log")) as handle:
            assert "topologyManagerPolicy=best-effort" in handle.read()
    assert "config changes, state files stay (restart only)" in proc.stdout


def test_forced_failed_start_restores_everything_and_stops_later_batches(fleet):
    reset_fleet(fleet)
    first, later = fleet["hosts"][0], fleet["hosts"][1:]
    before = dict((h["name"], hashes(h)) for h in fleet["hosts"])
    with open(os.path.join(host_paths(first)["run"], "fail-next-start"), "w") as handle:
        handle.write("fail\n")
    proc = playbook(fleet, {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"}, kubelet_numa_batch_size=1)
    assert proc.returncode != 0
    counts = recap(proc.stdout)
    assert counts[first["name"]]["rescued"] >= 1
    assert "%s: rolled back" % first["name"] in proc.stdout  # the summary play ran after the failure
    for host in later:  # later batches never ran
        assert "%s: untouched" % host["name"] in proc.stdout
        assert hashes(host) == before[host["name"]]
    # config and state restored byte for byte (the backup directory is the only new thing)
    now = hashes(first)
    restored = dict((k, v) for k, v in now.items() if "numaguard-backups" not in k)
    assert restored == before[first["name"]]
    assert "forced start failure" in proc.stdout  # the kubelet's complaint is in the failure
    assert "started the kubelet again: healthy" in proc.stdout
    assert healthy(fleet, first)


def test_invalid_settings_fail_in_preflight_without_touching_any_host(fleet):
    reset_fleet(fleet)
    before = dict((h["name"], hashes(h)) for h in fleet["hosts"])
    proc = playbook(fleet, {"cpuManagerPolicy": "Static", "reservedSystemCPUs": "0-4095"}, kubelet_numa_batch_size=3)
    assert proc.returncode != 0
    assert "names are case-sensitive, use 'static'" in proc.stdout
    assert dict((h["name"], hashes(h)) for h in fleet["hosts"]) == before


def test_repair_state_when_config_is_already_right(fleet):
    reset_fleet(fleet)
    dropin = ("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
              "cpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n")
    for host in fleet["hosts"]:  # a half-done manual change: config says static, checkpoint says none
        with open(host_paths(host)["dropin"], "w") as handle:
            handle.write(dropin)
    settings = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"}
    before = dict((h["name"], hashes(h)) for h in fleet["hosts"])
    proc = playbook(fleet, settings, kubelet_numa_batch_size=3)
    # the running kubelet still has the old policy (/configz), so the host is not converged, and a
    # restart would fail on the state files: refused without touching anything
    assert proc.returncode != 0, proc.stdout[-3000:]
    assert "set kubelet_numa_repair_state: true to move them aside" in proc.stdout
    assert "cpuManagerPolicy is 'none' in the running kubelet, 'static' intended" in proc.stdout
    assert dict((h["name"], hashes(h)) for h in fleet["hosts"]) == before
    proc = playbook(fleet, settings, kubelet_numa_batch_size=3, kubelet_numa_repair_state=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    for host in fleet["hosts"]:
        paths = host_paths(host)
        assert read(paths["dropin"]) == dropin.encode()
        assert json.loads(read(paths["cpu"]))["policyName"] == "static"
        assert read(paths["memory"]) == MEMORY_STATE.encode()
        assert "%s: state repaired" % host["name"] in proc.stdout


# ------------------------------------------------------------------------------------------------
# Interruptions, locks, converged-means-healthy, fleet-wide preflight, backup safety (issue 8)
# ------------------------------------------------------------------------------------------------


def test_kubelet_stopped_by_hand_is_not_converged_and_is_brought_back(fleet):
    host = fleet["hosts"][1]
    reset_fleet(fleet, host["name"])  # the only host it runs on
    assert playbook(fleet, STATIC, "--limit", host["name"]).returncode == 0
    assert adhoc(fleet, host["name"], "/usr/bin/python3 %s stop" % FAKE).returncode == 0
    check = playbook(fleet, STATIC, "--limit", host["name"], "--check")
    assert "would bring the kubelet back (the kubelet service is not active" in check.stdout, check.stdout[-3000:]
    proc = playbook(fleet, STATIC, "--limit", host["name"])
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert recap(proc.stdout)[host["name"]]["changed"] > 0
    assert "%s: changed - kubelet brought back (the kubelet service is not active" % host["name"] in proc.stdout
    assert healthy(fleet, host)


def test_two_concurrent_runs_one_fails_on_the_lock(fleet):
    reset_fleet(fleet)  # every host: the refused run targets them all
    host = fleet["hosts"][0]
    pause = pause_at(host, "stopped")
    first = start_playbook(fleet, STATIC, "--limit", host["name"])
    wait_for(os.path.join(pause, "reached-stopped"), first)
    lock_file = os.path.join(host_paths(host)["backups"], "rollout.lock")
    assert flock_held(lock_file)  # a real flock, held on the host between the module processes
    record = json.loads(read(lock_file))
    assert record["pid"] == first.pid and record["holder_pid"] and record["lease"] == 1800
    second = playbook(fleet, {"cpuManagerPolicy": "static", "reservedSystemCPUs": "1"})
    assert second.returncode != 0
    assert "flock held on the host by pid %s" % record["holder_pid"] in second.stdout or \
        "started %s" % record["started"] in second.stdout
    assert "%s is locked by another rollout: pid %d on controller" % (host["name"], first.pid) in second.stdout, second.stdout[-4000:]
    assert "kubelet_numa_break_lock=" in second.stdout
    for other in fleet["hosts"][1:]:  # nothing changed anywhere by the refused run
        assert not os.path.exists(host_paths(other)["dropin"])
    release_pause(pause, "stopped")
    out, _err = first.communicate(timeout=600)
    assert first.returncode == 0, out[-4000:]
    assert "%s: changed - applied" % host["name"] in out, out[out.find("Per-host summary"):][:3000]
    assert b'reservedSystemCPUs: "0"' in read(host_paths(host)["dropin"])  # the successful run's configuration
    assert not flock_held(lock_file) and read(lock_file) == b""  # released with the change


def test_bad_host_in_the_last_batch_changes_no_host(fleet):
    reset_fleet(fleet)
    bad = fleet["hosts"][-1]
    with open(os.path.join(host_paths(bad)["dropin_dir"], "99-site.conf"), "w") as handle:
        handle.write("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: none\n")
    before = dict((h["name"], hashes(h)) for h in fleet["hosts"])
    proc = playbook(fleet, STATIC, kubelet_numa_batch_size=1)
    assert proc.returncode != 0
    assert dict((h["name"], hashes(h)) for h in fleet["hosts"]) == before
    assert "kubelet_numa rollout failed on %s:" % bad["name"] in proc.stdout
    assert "%s: failed - preflight failed, nothing changed" % bad["name"] in proc.stdout
    assert "cpuManagerPolicy is overridden by" in proc.stdout
    for host in fleet["hosts"][:-1]:
        assert "%s: untouched" % host["name"] in proc.stdout
    # independent batches: the good hosts go ahead, the bad one is left out
    proc = playbook(fleet, STATIC, kubelet_numa_batch_size=1, kubelet_numa_independent_batches=True)
    assert proc.returncode != 0
    for host in fleet["hosts"][:-1]:
        assert "%s: changed - applied" % host["name"] in proc.stdout
    assert hashes(bad) == before[bad["name"]]


def test_full_backup_filesystem_never_stops_the_kubelet(fleet):
    host = fleet["hosts"][0]
    reset_fleet(fleet, host["name"])  # the only host it runs on
    backups = "/var/lib/kubelet/numaguard-backups"
    mount = fleet_ssh(fleet, host, "mkdir -p %s && mount -t tmpfs -o size=64k tmpfs %s && "
                                   "dd if=/dev/zero of=%s/fill bs=4k count=12 2>/dev/null; df -k %s | tail -1"
                      % (backups, backups, backups, backups))
    assert mount.returncode == 0, mount.stderr
    try:
        pid_before = read(os.path.join(host_paths(host)["run"], "kubelet.pid"))
        proc = playbook(fleet, STATIC, "--limit", host["name"])
        assert proc.returncode != 0
        assert "not enough free space in %s" % backups in proc.stdout, proc.stdout[-4000:]
        assert "nothing was changed" in proc.stdout
        assert read(os.path.join(host_paths(host)["run"], "kubelet.pid")) == pid_before  # never stopped
        listing = fleet_ssh(fleet, host, "ls -a %s" % backups).stdout.split()
        assert sorted(listing) == [".", "..", "fill", "journal.json", "rollout.lock"] or \
            sorted(listing) == [".", "..", "fill", "rollout.lock"], listing  # no .partial-*, no backup dir
        assert not os.path.exists(host_paths(host)["dropin"])
        assert read(host_paths(host)["cpu"]) == CPU_STATE.encode()
    finally:
        fleet_ssh(fleet, host, "umount %s" % backups)


def test_symlinked_backup_dir_and_crafted_manifest_are_refused(fleet):
    host = fleet["hosts"][0]
    reset_fleet(fleet, host["name"])  # the only host it runs on
    outside = tempfile.mkdtemp(prefix="ng-outside-")
    try:
        os.symlink(outside, host_paths(host)["backups"])
        proc = playbook(fleet, STATIC, "--limit", host["name"])
        assert proc.returncode != 0
        assert "backup root (a symlink or below one) /var/lib/kubelet/numaguard-backups is not inside the kubelet " \
               "directories" in proc.stdout, proc.stdout[-4000:]
        assert os.listdir(outside) == []
        assert not os.path.exists(host_paths(host)["dropin"])
        os.unlink(host_paths(host)["backups"])
        # an interrupted change whose backup manifest was tampered with: refused, nothing written
        evil = os.path.join(outside, "evil")
        change = "20260101T000000Z-tampered"
        backup_dir = os.path.join(host_paths(host)["backups"], change)
        os.makedirs(os.path.join(backup_dir, "files"))
        with open(os.path.join(backup_dir, "files", "000-x"), "w") as handle:
            handle.write("x")
        with open(os.path.join(backup_dir, "manifest.json"), "w") as handle:
            json.dump({"version": 1, "files": [
                {"path": evil, "existed": True, "stored": "files/000-x", "sha256": hashlib.sha256(b"x").hexdigest(), "mode": 0o777},
                {"path": "/var/lib/kubelet/cpu_manager_state", "existed": True, "stored": "../../../../etc/passwd",
                 "sha256": "0" * 64}]}, handle)
        with open(os.path.join(host_paths(host)["backups"], "journal.json"), "w") as handle:
            json.dump({"version": 1, "change_id": change, "status": "in progress", "step": "backed_up",
                       "backup_dir": "/var/lib/kubelet/numaguard-backups/" + change}, handle)
        proc = playbook(fleet, STATIC, "--limit", host["name"])
        assert proc.returncode != 0
        assert "is not usable, nothing was restored" in proc.stdout, proc.stdout[-4000:]
        assert "files[0].path %s is not inside the kubelet directories" % evil in proc.stdout
        assert not os.path.exists(evil)
        assert read(host_paths(host)["cpu"]) == CPU_STATE.encode()
    finally:
        if os.path.islink(host_paths(host)["backups"]):
            os.unlink(host_paths(host)["backups"])
        shutil.rmtree(outside, ignore_errors=True)


WRITING_MODULES_PLAY = """
- hosts: {host}
  gather_facts: false
  vars:
    kdirs: [/etc/kubernetes, /var/lib/kubelet]
    backups: /var/lib/kubelet/numaguard-backups
    static: {{cpuManagerPolicy: static, reservedSystemCPUs: "0"}}
  tasks:
    - name: A good backup of the main config
      numaguard.kubelet.kubelet_backup: {{operation: backup, backup_root: "{{{{ backups }}}}", name: 20260101T000000Z-e2e-corrupt,
                                         copy: [/etc/kubernetes/kubelet-config.yaml], kubelet_dirs: "{{{{ kdirs }}}}"}}
      register: made
    - name: The live file changes, the stored copy is corrupted
      ansible.builtin.shell: >-
        echo "# changed after the backup" >> /etc/kubernetes/kubelet-config.yaml &&
        for f in {{{{ made.backup_dir }}}}/files/*; do echo corrupt > "$f"; done
    - name: Restore a corrupt backup
      numaguard.kubelet.kubelet_backup: {{operation: restore, backup_dir: "{{{{ made.backup_dir }}}}", kubelet_dirs: "{{{{ kdirs }}}}"}}
      register: corrupt
      ignore_errors: true
    - name: Restore a malformed manifest
      numaguard.kubelet.kubelet_backup: {{operation: restore, backup_dir: "{{{{ backups }}}}/e2e-malformed", kubelet_dirs: "{{{{ kdirs }}}}"}}
      register: malformed
      ignore_errors: true
    - name: Restore a deeply nested manifest
      numaguard.kubelet.kubelet_backup: {{operation: restore, backup_dir: "{{{{ backups }}}}/e2e-deep", kubelet_dirs: "{{{{ kdirs }}}}"}}
      register: deep
      ignore_errors: true
    - name: A NUL byte in a path
      numaguard.kubelet.kubelet_backup: {{operation: restore, backup_dir: "/var/lib/kubelet/x\\0y", kubelet_dirs: "{{{{ kdirs }}}}"}}
      register: nul
      ignore_errors: true
    - name: An explicitly empty drop-in directory
      numaguard.kubelet.kubelet_config: {{settings: "{{{{ static }}}}", config_dir: "", validate_host: false}}
      register: empty
      ignore_errors: true
    - name: A deeply nested drop-in file
      numaguard.kubelet.kubelet_config: {{settings: "{{{{ static }}}}", config: /etc/kubernetes/kubelet-config.yaml,
                                         config_dir: /etc/kubernetes/kubelet.conf.d, validate_host: false}}
      register: deepconf
      ignore_errors: true
    - name: Hand the results to the test
      ansible.builtin.copy:
        content: "{{{{ dict(corrupt=corrupt, malformed=malformed, deep=deep, nul=nul, empty=empty, deepconf=deepconf) | to_json }}}}"
        dest: "{out}"
        mode: "0600"
      delegate_to: localhost
"""


def test_writing_modules_refuse_bad_input_on_a_fleet_host_without_traceback(fleet, tmp_path):
    """Malformed and deeply nested manifests, a deeply nested drop-in, a NUL byte and an empty
    location given to kubelet_backup / kubelet_config on a fleet host: clear failures naming the
    problem, never a traceback; a corrupt backup never replaces the live file."""
    host = fleet["hosts"][0]
    reset_fleet(fleet, host["name"])  # the only host it runs on
    paths = host_paths(host)
    for name, text in (("e2e-malformed", json.dumps({"version": 1, "files": [{"path": 5, "existed": "yes"}]})),
                       ("e2e-deep", "[" * 100000 + "]" * 100000)):
        os.makedirs(os.path.join(paths["backups"], name))
        with open(os.path.join(paths["backups"], name, "manifest.json"), "w") as handle:
            handle.write(text)
    with open(os.path.join(paths["dropin_dir"], "10-deep.conf"), "w") as handle:
        handle.write("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nx: " + "[" * 50000 + "]" * 50000 + "\n")
    play, out = tmp_path / "play.yml", tmp_path / "results.json"
    play.write_text(WRITING_MODULES_PLAY.format(host=host["name"], out=out))
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", fleet["inventory"], str(play)], env=ansible_env(),
                          capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stdout[-4000:]
    results = json.loads(out.read_text())
    expected = {
        "corrupt": "does not match its sha256",
        "malformed": "is not usable, nothing was restored",
        "deep": "nests deeper than",
        "nul": "backup_dir: '/var/lib/kubelet/x\\x00y' contains a NUL byte",
        "empty": "config_dir: '' is empty",
        "deepconf": "10-deep.conf nests deeper than 64 levels; refusing it",
    }
    for key, message in expected.items():
        result = results[key]
        assert result.get("failed") is True, (key, result)
        assert message in result["msg"], (key, result["msg"])
        assert "Traceback" not in json.dumps(result) and "MODULE FAILURE" not in result["msg"], (key, result)
    # the corrupt copy never replaced the live file, nothing was written from the bad inputs
    assert read(paths["config"]) == MAIN_CONFIG.encode() + b"# changed after the backup\n"
    assert sorted(os.listdir(paths["dropin_dir"])) == ["10-deep.conf"]
    assert not [n for n in os.listdir(os.path.dirname(paths["config"])) if "numaguard-restore" in n]


def test_alias_bomb_pod_file_fails_fast(fleet, tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        "%s: &%s [%s]\n" % (chr(98 + i), chr(98 + i), ",".join(["*" + chr(97 + i)] * 9)) for i in range(8)))
    started = time.time()
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", fleet["inventory"],
                           os.path.join(REPO, "playbooks", "check_pod.yml"), "-e", "pod_file=%s" % bomb,
                           "--limit", fleet["hosts"][0]["name"]],
                          env=ansible_env(), capture_output=True, text=True, timeout=120, check=False)
    elapsed = time.time() - started
    assert "expands to more than 200000 nodes (aliases included); refusing it" in proc.stdout, proc.stdout[-3000:]
    # the whole playbook (ansible start-up included) ends quickly; the parse itself is bounded by the unit test
    assert elapsed < 60, elapsed
