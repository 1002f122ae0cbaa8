# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the playbooks/apply.yml e2e tests share: a fleet with the stand-in kubelet
(tests/fleet/fake_kubelet.py) on every host, and the helpers to run, interrupt and inspect a rollout.

test_apply_rollout.py runs the rollout's behaviour on three machine classes; the fault scenarios
(test_apply_rollout_kill.py, test_apply_rollout_cut.py: the controller SIGKILLed, the SSH
connection cut, at each journal step) run on one host per step (plus, for the cut, one bystander
in a later batch), all interrupted in one run and converged by one rerun; each file has a fleet of
its own (pytest-xdist runs files side by side).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import urllib.request
from typing import Any, Dict, Iterator, List

import fake_kubelet  # tests/fleet/fake_kubelet.py (tests/fleet is on sys.path)
import fleet as fleetlib  # tests/fleet/fleet.py (tests/fleet is on sys.path)
import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FAKE = os.path.join(REPO, "tests", "fleet", "fake_kubelet.py")
PLAYBOOK = os.path.join(REPO, "playbooks", "apply.yml")
BIN = os.path.dirname(sys.executable)

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

#: The test files' ``pytestmark``: skipped where the simulated fleet cannot run.
REQUIRES_FLEET = pytest.mark.skipif(os.geteuid() != 0 or not os.access("/usr/sbin/sshd", os.X_OK),
                                    reason="the simulated fleet needs root and openssh-server (scripts/bootstrap)")


def ansible_env():
    env = dict(os.environ)
    env.update({"ANSIBLE_PIPELINING": "1", "ANSIBLE_HOST_KEY_CHECKING": "False", "ANSIBLE_FORKS": "10",
                "ANSIBLE_NOCOLOR": "1", "ANSIBLE_RETRY_FILES_ENABLED": "0", "PATH": BIN + os.pathsep + env.get("PATH", "")})
    return env


@contextlib.contextmanager
def apply_fleet(topologies: List[str]) -> Iterator[Dict[str, Any]]:
    """A fleet of ``topologies`` with the rollout variables for the stand-in kubelet; torn down after."""
    fleet_dir = tempfile.mkdtemp(prefix="ng-apply-fleet-")
    state = fleetlib.up(fleet_dir, topologies=topologies, base_port="auto", quiet=True)
    extra = os.path.join(fleet_dir, "apply-vars.yml")
    fake = "/usr/bin/python3 %s" % FAKE
    variables = dict(fake_kubelet.role_variables(), kubelet_numa_health_retries=4)
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


def module_fleet(topologies: List[str]) -> Any:
    """A module-scoped ``fleet`` fixture: ``fleet = module_fleet([...])`` in a test file."""
    @pytest.fixture(scope="module", name="fleet")
    def _fleet() -> Iterator[Dict[str, Any]]:
        with apply_fleet(topologies) as info:
            yield info
    return _fleet


def adhoc(fleet, pattern, command):
    """Run a shell ``command`` on ``pattern`` ("all" or one host name) over plain ssh, hosts side by side.

    Set-up and inspection only (restart or stop the stand-in kubelet, read its log): a plain ssh login
    costs the controller ~0.05 s where an ``ansible`` ad hoc run cost ~2.5 s CPU, and the tests
    run dozens of them. ``{{ fleet_loopback }}`` is replaced by the host's own loopback address,
    as the inventory variable would be. Returns one CompletedProcess: the worst return code,
    and every host's output under a ``<host> | rc=<n> >>`` line like ``ansible``'s."""
    hosts = [h for h in fleet["hosts"] if pattern in ("all", h["name"])]
    assert hosts, "no fleet host matches %r" % pattern
    procs = [(host, subprocess.Popen(fleetlib.ssh_base_args(fleet["state"], host["port"])
                                     + [command.replace("{{ fleet_loopback }}", host["loopback"])],
                                     stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
             for host in hosts]
    codes, out = [], []
    for host, proc in procs:
        try:
            text = proc.communicate(timeout=300)[0]
        except subprocess.TimeoutExpired:
            proc.kill()
            text = proc.communicate()[0]
        codes.append(proc.returncode)
        out.append("%s | rc=%d >>\n%s" % (host["name"], proc.returncode, text))
    return subprocess.CompletedProcess(["ssh", pattern, command], max(codes), "".join(out), "")


def playbook(fleet, settings, *extra_args, **variables):
    args = [os.path.join(BIN, "ansible-playbook"), "-i", fleet["inventory"], PLAYBOOK, "-e", "@" + fleet["vars"],
            "-e", json.dumps(dict({"kubelet_numa_settings": settings}, **variables))] + list(extra_args)
    proc = subprocess.run(args, env=ansible_env(), capture_output=True, text=True, timeout=600, check=False)
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


def _kubelet_dirs(host):
    return (os.path.join(host["root"], "etc", "kubernetes"), os.path.join(host["root"], "var", "lib", "kubelet"))


def _reset_picture(host):
    """What reset_fleet leaves on a host, as seen from outside: every entry below /etc/kubernetes
    and /var/lib/kubelet (the stand-in's run directory: only its fail-next-start marker) with its
    type, mode, owner and content; and the stand-in kubelet's pid file and the length of its log."""
    picture = {}
    for top in _kubelet_dirs(host):
        for directory, dirs, files in os.walk(top):
            for name in sorted(dirs + files):
                full = os.path.join(directory, name)
                rel = os.path.relpath(full, host["root"])
                if directory == top and name == "fake-kubelet":
                    continue
                info = os.lstat(full)
                content = read(full) if stat.S_ISREG(info.st_mode) else None
                picture[rel] = (info.st_mode, info.st_uid, info.st_gid, content)
    run = host_paths(host)["run"]
    picture["marker"] = os.path.lexists(os.path.join(run, "fail-next-start"))
    pid_file, log = os.path.join(run, "kubelet.pid"), os.path.join(run, "kubelet.log")
    picture["kubelet.pid"] = read(pid_file) if os.path.isfile(pid_file) else None
    picture["kubelet.log"] = os.path.getsize(log) if os.path.isfile(log) else None  # grows at every stop and start
    return picture


def reset_fleet(fleet, *names):
    """Every host (or the hosts ``names``: a test that runs on those only) back to: main config +
    empty drop-in dir + 'none' state files + kubelet running.

    The fake kubelet reads its files only when it starts, so the files are rewritten first and
    the kubelet restarted once (one ssh login per host, side by side). A host that a test left
    alone is not touched again: its files, modes and owners are what the last reset left (the
    same picture) and the kubelet that reset started is still running (same pid file, the process
    alive in the host's PID namespace), so it runs with the reset configuration already; a
    restart would cost ~0.8 s CPU for nothing."""
    pictures = fleet.setdefault("reset_pictures", {})
    hosts = [host for host in fleet["hosts"] if not names or host["name"] in names]
    assert len(hosts) == len(names or hosts), "no fleet hosts %s" % (set(names) - set(h["name"] for h in hosts))
    stale = [host for host in hosts if not _still_reset(host, pictures.get(host["name"]))]
    for host in stale:
        paths = host_paths(host)
        for sub in _kubelet_dirs(host):
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
    if not stale:
        return
    proc = adhoc(dict(fleet, hosts=stale), "all", "/usr/bin/python3 %s restart --healthz {{ fleet_loopback }}:10248" % FAKE)
    assert proc.returncode == 0, proc.stdout
    for host in stale:
        deadline = time.time() + 10
        while not healthy(fleet, host):
            assert time.time() < deadline, adhoc(fleet, host["name"], "/usr/bin/python3 %s logs" % FAKE).stdout
            time.sleep(0.05)
        pictures[host["name"]] = _reset_picture(host)


def _still_reset(host, picture):
    """Whether ``host`` is as the last reset left it (``picture``), its kubelet the one it started."""
    if picture is None or _reset_picture(host) != picture or picture["kubelet.pid"] is None:
        return False
    return find_on_host(host, int(picture["kubelet.pid"]), b"fake_kubelet.py") is not None


def backup_dirs(paths):
    """The backup directories of a host (the journal and lock file sit next to them)."""
    return [d for d in os.listdir(paths["backups"]) if os.path.isdir(os.path.join(paths["backups"], d))]


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


STATIC = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0"}
#: Where the rollout module pauses (test hook kubelet_numa_test_pause_dir): the host's own run dir.
PAUSE_DIR = "/var/lib/kubelet/fake-kubelet/pause"


def start_playbook(fleet, settings, *extra_args, **variables):
    """ansible-playbook in its own process group (so the whole controller side can be SIGKILLed)."""
    args = [os.path.join(BIN, "ansible-playbook"), "-i", fleet["inventory"], PLAYBOOK, "-e", "@" + fleet["vars"],
            "-e", json.dumps(dict({"kubelet_numa_settings": settings, "kubelet_numa_test_pause_dir": PAUSE_DIR}, **variables))]
    return subprocess.Popen(args + list(extra_args), env=ansible_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
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


def kubelet_endpoint(host, path, timeout=5):
    """GET ``path`` (/healthz, /configz) of ``host``'s stand-in kubelet, from this process: every
    fleet host shares this network namespace, the kubelet listening on the host's own loopback
    address (tests/fleet/fleet.py loopback_for_port), so it answers here as on the host, without
    an ssh login and a Python started on the host (~0.6 s CPU a probe). Raises OSError when it does not answer."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never an http_proxy of the environment
    with opener.open("http://%s:10248%s" % (host["loopback"], path), timeout=timeout) as response:
        return response.read()


def healthy(_fleet, host):
    """Whether ``host``'s kubelet answers /healthz."""
    try:
        kubelet_endpoint(host, "/healthz")
    except OSError:
        return False
    return True


def journal_of(host):
    with open(os.path.join(host_paths(host)["backups"], "journal.json")) as handle:
        return json.load(handle)


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


def kill_on_host(host, ns_pid):
    """SIGKILL the process ``ns_pid`` (its pid inside the host's PID namespace, as the rollout module
    writes it into ``reached-<step>``): the module dies mid-change as in a crash or an OOM kill."""
    pid = find_on_host(host, ns_pid)
    if pid is None:
        return False
    os.kill(pid, signal.SIGKILL)
    return True


def find_on_host(host, ns_pid, command=None):
    """The outside pid of the process whose pid inside ``host``'s PID namespace is ``ns_pid`` (and
    whose command line holds ``command``, when given), or None."""
    init = host["init_pid"]
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/status" % entry) as handle:
                nspid = [line.split()[1:] for line in handle if line.startswith("NSpid:")]
            if command is not None:
                with open("/proc/%s/cmdline" % entry, "rb") as handle:
                    if command not in handle.read():
                        continue
        except OSError:
            continue
        if nspid and len(nspid[0]) > 1 and nspid[0][-1] == str(ns_pid) and _below(int(entry), init):
            return int(entry)
    return None


def _below(pid, ancestor):
    while pid > 1:
        try:
            with open("/proc/%d/stat" % pid) as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
        if pid == ancestor:
            return True
    return False


def wait_final(host, timeout=180):
    """The host's journal once its change is no longer in progress (an orphaned transaction goes on)."""
    deadline = time.time() + timeout
    while True:
        journal = journal_of(host)
        if journal.get("status") != "in progress" or time.time() > deadline:
            return journal
        time.sleep(0.2)


def flock_held(path):
    """Whether some process holds the flock of ``path`` (tried from outside the host's namespaces)."""
    with open(path, "rb") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
    return False


def fleet_ssh(fleet, host, command):
    argv = fleetlib.ssh_base_args(fleet["state"], host["port"]) + [command]
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120, check=False)
