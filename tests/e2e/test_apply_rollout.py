# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/apply.yml on the simulated fleet, with the stand-in kubelet (tests/fleet/fake_kubelet.py).

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
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "fleet"))

import fleet as fleetlib  # noqa: E402  (tests/fleet/fleet.py)

FAKE = os.path.join(REPO, "tests", "fleet", "fake_kubelet.py")
PLAYBOOK = os.path.join(REPO, "playbooks", "apply.yml")
BIN = os.path.dirname(sys.executable)
TOPOLOGIES = ["intel-2s", "vm-single", "amd-epyc-nps4"]

MAIN_CONFIG = (
    "apiVersion: kubelet.config.k8s.io/v1beta1\n"
    "kind: KubeletConfiguration\n"
    "# unmanaged keys that must survive\n"
    "clusterDomain: cluster.local\n"
    "cpuManagerPolicy: none\n"
    "kubeReserved:\n"
    "  cpu: 500m\n"
    "  memory: 500Mi\n"
)
CPU_STATE = '{"policyName":"none","defaultCpuSet":"","checksum":1353318690}'
MEMORY_STATE = '{"policyName":"None","machineState":{},"checksum":4236770233}'

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not os.access("/usr/sbin/sshd", os.X_OK),
                                reason="the simulated fleet needs root and openssh-server (scripts/bootstrap)")


def _ansible_env():
    env = dict(os.environ)
    env.update({"ANSIBLE_PIPELINING": "1", "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_FORKS": "10",
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_RETRY_FILES_ENABLED": "0", "PATH": BIN + os.pathsep + env.get("PATH", "")})
    return env


@pytest.fixture(scope="module")
def fleet():
    fleet_dir = tempfile.mkdtemp(prefix="ng-apply-fleet-")
    state = fleetlib.up(fleet_dir, topologies=TOPOLOGIES, base_port="auto", quiet=True)
    extra = os.path.join(fleet_dir, "apply-vars.yml")
    fake = "/usr/bin/python3 %s" % FAKE
    variables = {
        "kubelet_numa_kubelet_config": "/etc/kubernetes/kubelet-config.yaml",
        "kubelet_numa_kubelet_config_dir": "/etc/kubernetes/kubelet.conf.d",
        "kubelet_numa_kubelet_version": "1.31",
        "kubelet_numa_health_url": "http://{{ fleet_loopback }}:10248/healthz",
        "kubelet_numa_health_retries": 4,
        "kubelet_numa_health_delay": 1,
        "kubelet_numa_service_start_cmd": fake + " start --healthz {{ fleet_loopback }}:10248",
        "kubelet_numa_service_stop_cmd": fake + " stop",
        "kubelet_numa_service_restart_cmd": fake + " restart --healthz {{ fleet_loopback }}:10248",
        "kubelet_numa_service_status_cmd": fake + " status",
        "kubelet_numa_service_logs_cmd": fake + " logs",
    }
    with open(extra, "w") as handle:
        json.dump(variables, handle)
    # play order = inventory order: groups sorted by name, hosts in fleet order within a group
    groups = sorted(set(h["group"] for h in state["hosts"]))
    ordered = [h for g in groups for h in state["hosts"] if h["group"] == g]
    info = {"state": state, "dir": fleet_dir, "inventory": state["inventory"], "vars": extra, "hosts": ordered}
    try:
        yield info
    finally:
        try:
            adhoc(info, "all", "%s stop" % fake)
        finally:
            fleetlib.down(fleet_dir, quiet=True)
            shutil.rmtree(fleet_dir, ignore_errors=True)


def adhoc(fleet, pattern, command):
    proc = subprocess.run([os.path.join(BIN, "ansible"), pattern, "-i", fleet["inventory"], "-m", "ansible.builtin.command",
                           "-a", command], env=_ansible_env(), capture_output=True, text=True, timeout=300, check=False)
    return proc


def playbook(fleet, settings, *extra_args, **variables):
    args = [os.path.join(BIN, "ansible-playbook"), "-i", fleet["inventory"], PLAYBOOK, "-e", "@" + fleet["vars"],
            "-e", json.dumps(dict({"kubelet_numa_settings": settings}, **variables))] + list(extra_args)
    proc = subprocess.run(args, env=_ansible_env(), capture_output=True, text=True, timeout=600, check=False)
    return proc


def recap(output):
    """host -> {ok, changed, failed, ...} from the PLAY RECAP."""
    result = {}
    for line in output.splitlines():
        match = re.match(r"^(\S+)\s+:\s+(.*)$", line)
        if match and "changed=" in match.group(2) and match.group(1) != "localhost":  # localhost: the summary play
            result[match.group(1)] = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", match.group(2)))
    return result


def host_paths(host):
    root = host["root"]
    return {
        "config": os.path.join(root, "etc", "kubernetes", "kubelet-config.yaml"),
        "dropin_dir": os.path.join(root, "etc", "kubernetes", "kubelet.conf.d"),
        "dropin": os.path.join(root, "etc", "kubernetes", "kubelet.conf.d", "50-numaguard-numa.conf"),
        "cpu": os.path.join(root, "var", "lib", "kubelet", "cpu_manager_state"),
        "memory": os.path.join(root, "var", "lib", "kubelet", "memory_manager_state"),
        "backups": os.path.join(root, "var", "lib", "kubelet", "numaguard-backups"),
        "run": os.path.join(root, "var", "lib", "kubelet", "fake-kubelet"),
    }


def hashes(host):
    """sha256 of every file below the host's /etc/kubernetes and /var/lib/kubelet, except the
    fake kubelet's own run files (pid, log)."""
    result = {}
    for top in (os.path.join(host["root"], "etc", "kubernetes"), os.path.join(host["root"], "var", "lib", "kubelet")):
        for directory, dirs, files in os.walk(top):
            dirs[:] = [d for d in dirs if d != "fake-kubelet"]
            for name in files:
                path = os.path.join(directory, name)
                with open(path, "rb") as handle:
                    result[os.path.relpath(path, host["root"])] = hashlib.sha256(handle.read()).hexdigest()
    return result


def reset_fleet(fleet):
    """Every host back to: main config + empty drop-in dir + 'none' state files + kubelet running.

    The fake kubelet reads its files only when it starts, so the files are rewritten first and
    the kubelet restarted once (one ansible run for the whole fleet)."""
    for host in fleet["hosts"]:
        paths = host_paths(host)
        for sub in (os.path.join(host["root"], "etc", "kubernetes"), os.path.join(host["root"], "var", "lib", "kubelet")):
            for name in os.listdir(sub):
                full = os.path.join(sub, name)
                if name == "fake-kubelet":
                    continue
                shutil.rmtree(full) if os.path.isdir(full) and not os.path.islink(full) else os.unlink(full)
        os.makedirs(paths["dropin_dir"])
        marker = os.path.join(paths["run"], "fail-next-start")
        if os.path.exists(marker):
            os.unlink(marker)
        for key, text in (("config", MAIN_CONFIG), ("cpu", CPU_STATE), ("memory", MEMORY_STATE)):
            with open(paths[key], "w") as handle:
                handle.write(text)
    script = ("/usr/bin/python3 {fake} restart --healthz {{{{ fleet_loopback }}}}:10248 && "
              "for i in $(seq 50); do /usr/bin/python3 -c \"import urllib.request as u; "
              "u.urlopen('http://{{{{ fleet_loopback }}}}:10248/healthz', timeout=2)\" 2>/dev/null && exit 0; sleep 0.1; done; "
              "/usr/bin/python3 {fake} logs; exit 1").format(fake=FAKE)
    proc = subprocess.run([os.path.join(BIN, "ansible"), "all", "-i", fleet["inventory"], "-m", "ansible.builtin.shell",
                           "-a", script], env=_ansible_env(), capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def backup_dirs(paths):
    """The backup directories of a host (the journal and lock file sit next to them)."""
    return [d for d in os.listdir(paths["backups"]) if os.path.isdir(os.path.join(paths["backups"], d))]


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


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
    health = adhoc(fleet, first["name"], "/usr/bin/python3 -c \"import urllib.request as u; "
                                         "u.urlopen('http://{{ fleet_loopback }}:10248/healthz', timeout=5)\"")
    assert health.returncode == 0, health.stdout


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

STATIC = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"}
#: Where the rollout module pauses (test hook kubelet_numa_test_pause_dir): the host's own run dir.
PAUSE_DIR = "/var/lib/kubelet/fake-kubelet/pause"


def start_playbook(fleet, settings, *extra_args, **variables):
    """ansible-playbook in its own process group (so the whole controller side can be SIGKILLed)."""
    args = [os.path.join(BIN, "ansible-playbook"), "-i", fleet["inventory"], PLAYBOOK, "-e", "@" + fleet["vars"],
            "-e", json.dumps(dict({"kubelet_numa_settings": settings, "kubelet_numa_test_pause_dir": PAUSE_DIR}, **variables))]
    return subprocess.Popen(args + list(extra_args), env=_ansible_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)


def pause_at(host, step):
    """Make the rollout module pause on ``host`` right after journalling ``step``."""
    pause = os.path.join(host_paths(host)["run"], "pause")
    shutil.rmtree(pause, ignore_errors=True)
    os.makedirs(pause)
    open(os.path.join(pause, "pause-" + step), "w").close()
    return pause


def wait_for(path, proc, timeout=240):
    for _attempt in range(int(timeout * 10)):
        if os.path.exists(path):
            return
        if proc.poll() is not None:
            raise AssertionError("playbook ended before %s appeared:\n%s" % (path, proc.stdout.read()[-4000:]))
        time.sleep(0.1)
    raise AssertionError("%s did not appear within %ss" % (path, timeout))


def kill_controller(proc):
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def release_pause(pause, step):
    """Let an orphaned module go on (it only exits: its controller is gone) and stop pausing."""
    open(os.path.join(pause, "continue-" + step), "w").close()
    os.unlink(os.path.join(pause, "pause-" + step))


def healthy(fleet, host):
    return adhoc(fleet, host["name"], "/usr/bin/python3 -c \"import urllib.request as u; "
                                      "u.urlopen('http://{{ fleet_loopback }}:10248/healthz', timeout=5)\"").returncode == 0


def journal_of(host):
    with open(os.path.join(host_paths(host)["backups"], "journal.json")) as handle:
        return json.load(handle)


@pytest.mark.parametrize("step", ["stopped", "backed_up", "written", "started", "rolling_back"])
def test_controller_killed_at_each_step_then_rerun_converges(fleet, step):
    """SIGKILL of ansible-playbook after stop / state move / config write / during the health
    wait / during a rollback; the next run finishes or undoes the change from its own backup,
    says which, and ends with a healthy kubelet on the complete new configuration."""
    reset_fleet(fleet)
    host = fleet["hosts"][0]
    paths = host_paths(host)
    pause = pause_at(host, step)
    if step == "rolling_back":  # the new configuration fails to start, so the role rolls back
        open(os.path.join(paths["run"], "fail-next-start"), "w").close()
    proc = start_playbook(fleet, STATIC, "--limit", host["name"])
    wait_for(os.path.join(pause, "reached-" + step), proc)
    kill_controller(proc)
    release_pause(pause, step)
    interrupted = journal_of(host)
    assert interrupted["status"] == "in progress" and interrupted["step"] == step
    rerun = playbook(fleet, STATIC, "--limit", host["name"])
    assert rerun.returncode == 0, rerun.stdout[-5000:]
    action = "completed" if step in ("written", "started") else "rolled back"
    assert "interrupted change %s %s" % (interrupted["change_id"], action) in rerun.stdout, \
        rerun.stdout[rerun.stdout.find("Per-host summary"):][:3000] + rerun.stdout[-3000:]
    assert "took over the stale lock" in rerun.stdout + rerun.stderr  # the dead run's lock, from this controller
    # the interrupted change's own backup holds the originals, byte for byte (none was made before the move)
    backup_dir = os.path.join(host["root"], interrupted["backup_dir"].lstrip("/"))
    if step == "stopped":
        assert not os.path.exists(backup_dir)
    else:
        with open(os.path.join(backup_dir, "manifest.json")) as handle:
            moved = [e for e in json.load(handle)["files"] if e["action"] == "move"]
        assert read(os.path.join(backup_dir, moved[0]["stored"])) == CPU_STATE.encode()
    # the end state: complete new configuration, fresh state of the new policy, healthy
    assert b"cpuManagerPolicy: static" in read(paths["dropin"])
    assert json.loads(read(paths["cpu"]))["policyName"] == "static"
    assert read(paths["memory"]) == MEMORY_STATE.encode()
    assert healthy(fleet, host)
    assert journal_of(host)["status"] == "done"


def cut_ssh(host):
    """Cut every SSH connection of ``host``: SIGKILL the host's per-connection sshd processes
    (descendants of its listening sshd, the namespace's init), never the listener itself nor the
    processes the sessions started (the module, the kubelet, the lock holder live on, orphaned)."""
    init = host["init_pid"]
    parents, names = {}, {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as handle:
                    stat = handle.read()
            except OSError:
                continue
            names[int(entry)] = stat[stat.index("(") + 1:stat.rindex(")")]
            parents[int(entry)] = int(stat.rsplit(")", 1)[1].split()[1])

    def below_init(pid):
        while pid in parents and pid > 1:
            pid = parents[pid]
            if pid == init:
                return True
        return False

    victims = [pid for pid in parents if pid != init and names.get(pid) == "sshd" and below_init(pid)]
    for pid in victims:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return victims


@pytest.mark.parametrize("step", ["stopped", "backed_up", "written", "started", "rolling_back"])
def test_ssh_cut_at_each_step_summary_runs_and_the_next_run_converges_every_host(fleet, step):
    """The SSH connection of the first batch's only host cut while its change is at ``step``: the
    run goes on (whole batch unreachable), stops the later batches and still prints the summary;
    the next run finishes or undoes the change from the journal, says which, and every host ends
    healthy on the complete new configuration."""
    reset_fleet(fleet)
    host = fleet["hosts"][0]
    paths = host_paths(host)
    pause = pause_at(host, step)
    if step == "rolling_back":
        open(os.path.join(paths["run"], "fail-next-start"), "w").close()
    proc = start_playbook(fleet, STATIC, kubelet_numa_batch_size=1)
    wait_for(os.path.join(pause, "reached-" + step), proc)
    assert cut_ssh(host), "no sshd session process found for %s" % host["name"]
    try:
        out, _err = proc.communicate(timeout=600)
    finally:
        release_pause(pause, step)  # the orphaned module only exits: its connection is gone
    assert proc.returncode != 0
    assert "UNREACHABLE!" in out, out[-4000:]
    summary = out[out.find("Per-host summary"):]
    assert "%s: unreachable - lost during its change in batch 1" % host["name"] in summary, out[-5000:]
    for other in fleet["hosts"][1:]:
        assert "%s: untouched" % other["name"] in summary
        assert not os.path.exists(host_paths(other)["dropin"])
    interrupted = journal_of(host)
    assert interrupted["status"] == "in progress" and interrupted["step"] == step
    rerun = playbook(fleet, STATIC, kubelet_numa_batch_size=1)
    assert rerun.returncode == 0, rerun.stdout[-5000:]
    action = "completed" if step in ("written", "started") else "rolled back"
    assert "interrupted change %s %s" % (interrupted["change_id"], action) in rerun.stdout, rerun.stdout[-5000:]
    for each in fleet["hosts"]:
        each_paths = host_paths(each)
        assert b"cpuManagerPolicy: static" in read(each_paths["dropin"])
        assert json.loads(read(each_paths["cpu"]))["policyName"] == "static"
        assert read(each_paths["memory"]) == MEMORY_STATE.encode()
        assert healthy(fleet, each), each["name"]
        assert journal_of(each)["status"] == "done"
    if step != "stopped":  # the interrupted change's own backup holds the original state, byte for byte
        backup_dir = os.path.join(host["root"], interrupted["backup_dir"].lstrip("/"))
        with open(os.path.join(backup_dir, "manifest.json")) as handle:
            moved = [e for e in json.load(handle)["files"] if e["action"] == "move"]
        assert read(os.path.join(backup_dir, moved[0]["stored"])) == CPU_STATE.encode()


def test_kubelet_stopped_by_hand_is_not_converged_and_is_brought_back(fleet):
    reset_fleet(fleet)
    host = fleet["hosts"][1]
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
    reset_fleet(fleet)
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


def flock_held(path):
    """Whether some process holds the flock of ``path`` (tried from outside the host's namespaces)."""
    with open(path, "rb") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
    return False


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
    reset_fleet(fleet)
    host = fleet["hosts"][0]
    backups = "/var/lib/kubelet/numaguard-backups"
    mount = fleetlib_ssh(fleet, host, "mkdir -p %s && mount -t tmpfs -o size=64k tmpfs %s && "
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
        listing = fleetlib_ssh(fleet, host, "ls -a %s" % backups).stdout.split()
        assert sorted(listing) == [".", "..", "fill", "journal.json", "rollout.lock"] or \
            sorted(listing) == [".", "..", "fill", "rollout.lock"], listing  # no .partial-*, no backup dir
        assert not os.path.exists(host_paths(host)["dropin"])
        assert read(host_paths(host)["cpu"]) == CPU_STATE.encode()
    finally:
        fleetlib_ssh(fleet, host, "umount %s" % backups)


def test_symlinked_backup_dir_and_crafted_manifest_are_refused(fleet):
    reset_fleet(fleet)
    host = fleet["hosts"][0]
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
    reset_fleet(fleet)
    host = fleet["hosts"][0]
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
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", fleet["inventory"], str(play)], env=_ansible_env(),
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


def fleetlib_ssh(fleet, host, command):
    argv = fleetlib.ssh_base_args(fleet["state"], host["port"]) + [command]
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False)


def test_alias_bomb_pod_file_fails_fast(fleet, tmp_path):
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
        "%s: &%s [%s]\n" % (chr(98 + i), chr(98 + i), ",".join(["*" + chr(97 + i)] * 9)) for i in range(8)))
    started = time.time()
    proc = subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", fleet["inventory"],
                           os.path.join(REPO, "playbooks", "check_pod.yml"), "-e", "pod_file=%s" % bomb,
                           "--limit", fleet["hosts"][0]["name"]],
                          env=_ansible_env(), capture_output=True, text=True, timeout=120, check=False)
    elapsed = time.time() - started
    assert "expands to more than 200000 nodes (aliases included); refusing it" in proc.stdout, proc.stdout[-3000:]
    # the whole playbook (ansible start-up included) ends quickly; the parse itself is bounded by the unit test
    assert elapsed < 60, elapsed
