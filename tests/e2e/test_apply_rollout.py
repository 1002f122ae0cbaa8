# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
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

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

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
        if match and "changed=" in match.group(2):
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
        backups = os.listdir(paths["backups"])
        assert len(backups) == 1
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
        (backup,) = os.listdir(paths["backups"])
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
    assert counts[first["name"]]["failed"] == 1 and counts[first["name"]]["rescued"] == 1
    for host in later:  # later batches never ran
        assert host["name"] not in counts or counts[host["name"]]["ok"] == 0, counts
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
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "set kubelet_numa_repair_state: true to move them aside" in proc.stdout
    assert dict((h["name"], hashes(h)) for h in fleet["hosts"]) == before
    proc = playbook(fleet, settings, kubelet_numa_batch_size=3, kubelet_numa_repair_state=True)
    assert proc.returncode == 0, proc.stdout[-3000:]
    for host in fleet["hosts"]:
        paths = host_paths(host)
        assert read(paths["dropin"]) == dropin.encode()
        assert json.loads(read(paths["cpu"]))["policyName"] == "static"
        assert read(paths["memory"]) == MEMORY_STATE.encode()
        assert "%s: state repaired" % host["name"] in proc.stdout
