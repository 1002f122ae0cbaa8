# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A simulated fleet of NUMA hosts on one machine: one OpenSSH server per host, each in its own
mount, UTS and PID namespace, seeing its own fake sysfs, /proc/meminfo, /var/lib/kubelet and
/etc/kubernetes.

Why this design (measured in ../shared/docs/tooling.md section 4): a real sshd per host exercises
the real connection path (ssh, pipelining, AnsiballZ, module_utils shipping, absolute paths such
as /sys/devices/system/node) while costing about 1.4 MB per idle host and under two seconds to
bring ten hosts up. No container engine is needed.

Each host ``hNN`` lives in ``DIR/hNN/``::

    root/            fake host tree written by tests/fleet/topologies.py (sys/, proc/meminfo, var/, etc/);
                     a symlink into a tmpfs directory (see trees_base())
    pristine/        copy of root/var/lib/kubelet and root/etc/kubernetes taken at bring-up (see restore)
    sshd_config, ssh_host_ed25519_key, sshd.log, console.log, sshd.pid

and ``DIR`` holds the client key, ``authorized_keys``, ``inventory.yml`` and ``fleet.json`` (the
PIDs this tool started, with their kernel start times so that teardown never signals a recycled
PID).

Commands (run as root; ``scripts/fleet`` is the same with the project's Python)::

    python3 tests/fleet/fleet.py up [--hosts N] [--topologies a,b,name@group] [--dir DIR] [--base-port P|auto]
    python3 tests/fleet/fleet.py down [--dir DIR] [--keep]
    python3 tests/fleet/fleet.py status [--dir DIR] [--ssh] [--json]
    python3 tests/fleet/fleet.py restore [--dir DIR] [HOST...]
    python3 tests/fleet/fleet.py list-topologies

It is also importable (``up()``, ``down()``, ``status()``, ``restore()``) for the e2e fixtures.
"""
from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DEFAULT_DIR = os.path.join(REPO, ".fleet")
STATE_FILE = "fleet.json"
STATE_VERSION = 1
SSHD = "/usr/sbin/sshd"
LOCK_FILE = "/run/numaguard-fleet.lock"

#: Fake paths bind-mounted over the real ones, in mount order. ``/proc/meminfo`` comes after
#: ``--mount-proc`` (unshare mounts the namespace's own /proc before running our script).
SYS_MOUNTS = ("sys/devices/system/node", "sys/devices/system/cpu", "sys/kernel/mm/hugepages",
              "sys/bus/pci/devices")
ETC_MOUNTS = ("var/lib/kubelet", "etc/kubernetes")
#: Mount points that may be missing on a fresh machine and are created (empty) when missing.
CREATABLE_MOUNTPOINTS = ("/var/lib/kubelet", "/etc/kubernetes", "/run/sshd")

#: The bundled example fleet: every bundled topology once, then a second 2-socket Intel host
#: identical to the first and a third one whose 1Gi hugepages were never allocated (the classic
#: "hugepagesz=1G hugepages=N missing from this host's kernel command line" mistake), so that
#: playbooks/discover.yml's "differs from the rest of its group" flag has something to show.
BUNDLED_FLEET_EXTRAS = ("intel-2s", "intel-2s:1Gi=0")

#: A host spec: topology name, optional hugepage overrides (pages per node) and optional group.
HOST_SPEC = re.compile(r"^(?P<topology>[A-Za-z0-9][A-Za-z0-9._-]*)"
                       r"(?P<pages>(?::[0-9]+(?:Ki|Mi|Gi|kB)?=[0-9]+)*)"
                       r"(?:@(?P<group>[A-Za-z_][A-Za-z0-9_]*))?$")


#: Where the host trees go: tmpfs, because a big host tree has ~12000 small files and deleting
#: them from this project's ext4 (mounted with ``discard``) took 52 s for the bundled fleet.
TREES_PARENT = os.environ.get("NUMAGUARD_FLEET_TREES") or "/dev/shm"
TREES_PREFIX = "numaguard-fleet-"


class FleetError(Exception):
    """A fleet operation that cannot proceed; the message says what and how to fix it."""


# -- small helpers ---------------------------------------------------------------------------

def _log(quiet: bool, message: str) -> None:
    if not quiet:
        print(message, flush=True)


def group_name(name: str) -> str:
    """Inventory group for a topology/class name: Ansible wants [A-Za-z0-9_], not starting with a digit."""
    group = re.sub(r"[^A-Za-z0-9_]", "_", name)
    if not group or group[0].isdigit():
        group = "topo_" + group
    return group


def loopback_for_port(port: int) -> str:
    """A loopback address unique to the host that owns ssh port ``port``.

    All fleet hosts share one network namespace, so a per-host service (a stand-in kubelet's
    healthz on :10248) needs its own address. Deriving it from the port (which is unique
    machine-wide while the fleet runs) keeps two fleets on one machine from colliding.
    """
    return "127.1.%d.%d" % (port >> 8, port & 0xFF)


def proc_start_time(pid: int) -> Optional[Tuple[str, int]]:
    """(state, start time in clock ticks) of ``pid`` from /proc, or None when it does not exist."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            stat = handle.read()
    except OSError:
        return None
    # comm may contain spaces and parentheses: split after the last ')'.
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[0], int(fields[19])


def is_ours(pid: Optional[int], start: Optional[int]) -> bool:
    """True when ``pid`` still is the process we started (same start time) and not a zombie."""
    if not pid:
        return False
    info = proc_start_time(pid)
    return info is not None and info[1] == start and info[0] not in ("Z", "X")


def port_in_use(port: int) -> bool:
    """Whether 127.0.0.1:port cannot be bound the way sshd binds it (SO_REUSEADDR)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
    except OSError:
        return True
    finally:
        sock.close()
    return False


def port_listening(port: int, timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def machine_lock() -> Iterator[None]:
    """Serialise port selection and start-up between fleets brought up at the same time."""
    handle = open(LOCK_FILE, "a")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
        handle.close()


def _run(argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), check=False, capture_output=True, text=True, **kwargs)


def _tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, errors="replace") as handle:
            return "".join(handle.readlines()[-lines:]).rstrip()
    except OSError:
        return "(no %s)" % os.path.basename(path)


def ssh_base_args(state: Dict[str, Any], port: int, batch: bool = True) -> List[str]:
    args = ["ssh", "-i", state["client_key"], "-p", str(port),
            "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
            "-o", "IdentitiesOnly=yes", "-o", "PreferredAuthentications=publickey",
            "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=5", "-o", "ControlMaster=no",
            "-o", "ControlPath=none"]
    if batch:
        args += ["-o", "BatchMode=yes"]
    return args + ["root@127.0.0.1"]


# -- topologies ------------------------------------------------------------------------------

def topologies_script() -> str:
    """The fake-host writer: tests/fleet/topologies.py (override with NUMAGUARD_FLEET_TOPOLOGIES)."""
    return os.environ.get("NUMAGUARD_FLEET_TOPOLOGIES") or os.path.join(HERE, "topologies.py")


def list_topologies() -> List[str]:
    script = topologies_script()
    if not os.path.exists(script):
        raise FleetError("fake-host writer %s does not exist" % script)
    proc = _run([sys.executable, script, "--list"])
    if proc.returncode != 0:
        raise FleetError("%s --list failed (exit %d): %s" % (script, proc.returncode, proc.stderr.strip()))
    names = []
    for line in proc.stdout.splitlines():
        # Accept "name", "name  description" and "name: description" listings.
        word = line.strip().split(None, 1)[0].rstrip(":") if line.strip() else ""
        if word and not word.startswith("#"):
            names.append(word)
    if not names:
        raise FleetError("%s --list printed no topology names" % script)
    return names


def bundled_fleet(names: Sequence[str]) -> List[str]:
    """The bundled example fleet's host specs (see BUNDLED_FLEET_EXTRAS)."""
    return list(names) + [extra for extra in BUNDLED_FLEET_EXTRAS if extra.split(":", maxsplit=1)[0] in names]


def describe_hosts(hosts: Sequence[Mapping[str, Any]], known: Sequence[str]) -> List[str]:
    """What the demo says about a fleet (and docs/fleet.md about the bundled one, checked by
    tests/unit/fleet/test_fleet_docs.py): its hosts and topologies, and each group holding a host whose
    hugepage pools were changed (the odd one out discover.yml flags). From the hosts themselves
    (``plan_hosts`` or the state of a running fleet), never written by hand."""
    if not hosts:
        return ["no hosts"]
    used = sorted(set(h["topology"] for h in hosts))
    lines = ["%d hosts (%s-%s) on %d of the %d bundled topologies: %s"
             % (len(hosts), hosts[0]["name"], hosts[-1]["name"], len(used), len(known), ", ".join(used))]
    groups: Dict[str, List[Mapping[str, Any]]] = {}
    for host in hosts:
        groups.setdefault(host["group"], []).append(host)
    for group in sorted(groups):
        members = groups[group]
        odd = [h for h in members if h.get("hugepages")]
        if not odd or len(members) < 2:
            continue
        shown = ", ".join(h["name"] for h in members[:MAX_DESCRIBED])
        if len(members) > MAX_DESCRIBED:
            shown += " (+%d more)" % (len(members) - MAX_DESCRIBED)
        line = "group %s: %d hosts (%s)" % (group, len(members), shown)
        for host in odd[:MAX_DESCRIBED]:
            pages = list(host["hugepages"])
            never = all(p.split("=", 1)[1] == "0" for p in pages)
            line += "; %s is %s with %s pages per node%s" % (
                host["name"], host["topology"], ", ".join(pages),
                " (those hugepages never allocated: the odd one out)" if never else " (the odd one out)")
        lines.append(line)
    return lines


#: Hosts named per group line of :func:`describe_hosts`.
MAX_DESCRIBED = 6


def parse_host_spec(spec: str, known: Sequence[str]) -> Dict[str, Any]:
    """``NAME[:SIZE=COUNT...][@GROUP]`` -> topology, hugepage overrides and inventory group.

    ``intel-2s:1Gi=0`` is an intel-2s host whose 1Gi pools are empty; it lands in the intel_2s
    group like its siblings unless ``@GROUP`` says otherwise.
    """
    match = HOST_SPEC.match(spec.strip())
    if not match:
        raise FleetError("bad host spec %r in --topologies: expected NAME[:SIZE=COUNT...][@GROUP] "
                         "such as intel-2s, intel-2s:1Gi=0 or vm-single@intel_2s" % spec)
    topo = match.group("topology")
    if topo not in known:
        raise FleetError("unknown topology %r in --topologies (known: %s)" % (topo, ", ".join(known)))
    pages = [p for p in match.group("pages").split(":") if p]
    return {"topology": topo, "hugepages": pages, "group": match.group("group") or group_name(topo)}


def plan_hosts(count: Optional[int],
               specs: Sequence[str],
               known: Sequence[str]) -> List[Dict[str, Any]]:
    """Host name, topology and group for each host: ``count`` hosts cycling through ``specs``."""
    if not specs:
        raise FleetError("no topologies to place on hosts")
    parsed = [parse_host_spec(spec, known) for spec in specs]
    total = len(parsed) if count is None else count
    if total < 1:
        raise FleetError("--hosts must be at least 1, got %d" % total)
    width = max(2, len(str(total)))
    hosts = []
    for index in range(total):
        host = dict(parsed[index % len(parsed)])
        host["name"] = "h%0*d" % (width, index + 1)
        hosts.append(host)
    return hosts


# -- ports -----------------------------------------------------------------------------------

def choose_ports(base_port: str, count: int) -> List[int]:
    """``count`` consecutive ports from ``base_port``; ``auto`` finds a free block from 20000."""
    if str(base_port) == "auto":
        start = 20000
        while start + count < 60000:
            block = list(range(start, start + count))
            busy = [p for p in block if port_in_use(p)]
            if not busy:
                return block
            start = busy[-1] + 1
        raise FleetError("no block of %d free ports between 20000 and 60000" % count)
    try:
        base = int(base_port)
    except ValueError:
        raise FleetError("--base-port must be a port number or 'auto', got %r" % (base_port,))
    if base < 1024 or base + count - 1 > 65535:
        raise FleetError("--base-port %d with %d hosts leaves 1024-65535" % (base, count))
    ports = list(range(base, base + count))
    busy = [p for p in ports if port_in_use(p)]
    if busy:
        raise FleetError("port%s %s already in use on 127.0.0.1 (is another fleet running? "
                         "`fleet status`/`fleet down`, or pick another --base-port)"
                         % ("s" if len(busy) > 1 else "", ", ".join(str(p) for p in busy)))
    return ports


# -- state -----------------------------------------------------------------------------------

def load_state(fleet_dir: str) -> Optional[Dict[str, Any]]:
    path = os.path.join(fleet_dir, STATE_FILE)
    try:
        with open(path) as handle:
            state = json.load(handle)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise FleetError("cannot read %s: %s" % (path, exc))
    except ValueError as exc:
        raise FleetError("%s is not valid JSON (%s); remove it after checking no fleet runs" % (path, exc))
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION or "hosts" not in state:
        raise FleetError("%s is not a fleet state file of version %d" % (path, STATE_VERSION))
    return state


def save_state(state: Dict[str, Any]) -> None:
    path = os.path.join(state["dir"], STATE_FILE)
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(state, handle, indent=1, sort_keys=True)
        handle.write("\n")
    os.replace(tmp, path)


def _write_atomic(path: str, text: str, mode: int = 0o644) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        handle.write(text)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


# -- host preparation ------------------------------------------------------------------------

def _sshd_config(state: Dict[str, Any], host: Dict[str, Any]) -> str:
    hdir = host["path"]
    return "\n".join([
        "# sshd for fleet host %s (generated by tests/fleet/fleet.py)" % host["name"],
        "ListenAddress 127.0.0.1",
        "Port %d" % host["port"],
        "HostKey %s" % os.path.join(hdir, "ssh_host_ed25519_key"),
        "PidFile %s" % os.path.join(hdir, "sshd.pid"),
        "AuthorizedKeysFile %s" % os.path.join(state["dir"], "authorized_keys"),
        "PermitRootLogin prohibit-password",
        "PubkeyAuthentication yes",
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "StrictModes no",
        "UseDNS no",
        "PrintMotd no",
        "PrintLastLog no",
        "X11Forwarding no",
        "AllowTcpForwarding no",
        "MaxStartups 200:30:400",
        "MaxSessions 100",
        "LogLevel INFO",
        "Subsystem sftp internal-sftp",
    ] + _bytecode_cache_env(state) + [""])


def _bytecode_cache_env(state: Dict[str, Any]) -> List[str]:
    """sshd lines that give the host's Pythons the test fleets' bytecode cache (see
    bytecode_cache/usercustomize.py, copied into the cache directory by _bytecode_cache_dir), or
    none when the fleet was brought up without one."""
    cache = state.get("bytecode_cache")
    if not cache:
        return []
    return ["SetEnv PYTHONPATH=%s NUMAGUARD_FLEET_PYC=%s" % (os.path.join(cache, "site"), cache)]


def _mount_plan(host_root: str) -> List[Tuple[str, str]]:
    """(source, target) bind mounts that give a host its own view; parents stand in for absences.

    A path the fake tree lacks (a kernel without NUMA has no /sys/devices/system/node) cannot be
    hidden by a mount on the path itself, and sysfs will not let us create a missing mount point,
    so in either case the fake tree's parent directory is mounted over the real parent instead.
    """
    plan: List[Tuple[str, str]] = []
    for rel in SYS_MOUNTS:
        src = os.path.join(host_root, rel)
        dst = "/" + rel
        if os.path.isdir(src) and os.path.isdir(dst):
            plan.append((src, dst))
            continue
        parent = os.path.dirname(rel)
        os.makedirs(os.path.join(host_root, parent), exist_ok=True)
        entry = (os.path.join(host_root, parent), "/" + parent)
        if entry not in plan:
            plan.append(entry)
    # Parents first (shortest target), children mounted on top; drop children covered by a parent.
    plan.sort(key=lambda item: item[1].count("/"))
    parents = [dst for _src, dst in plan]
    plan = [(src, dst) for src, dst in plan
            if not any(dst != p and dst.startswith(p + "/") for p in parents)]
    meminfo = os.path.join(host_root, "proc", "meminfo")
    if os.path.isfile(meminfo):
        plan.append((meminfo, "/proc/meminfo"))
    driver = os.path.join(host_root, "proc", "driver")  # fake /proc/driver/nvidia (GPU hosts)
    if os.path.isdir(driver) and os.path.isdir("/proc/driver"):
        plan.append((driver, "/proc/driver"))
    for rel in ETC_MOUNTS:
        src = os.path.join(host_root, rel)
        os.makedirs(src, exist_ok=True)
        plan.append((src, "/" + rel))
    return plan


def _prepare_host(host: Dict[str, Any]) -> None:
    """Write one host's fake tree and host key (runs in a thread per host)."""
    hdir = host["path"]
    root = host["root"]
    for path in (hdir, root):
        if os.path.lexists(path):
            shutil.rmtree(path)
    os.makedirs(hdir)
    os.makedirs(root)
    if os.path.realpath(root) != os.path.join(hdir, "root"):
        os.symlink(root, os.path.join(hdir, "root"))
    script = topologies_script()
    argv = [sys.executable, script, "--topology", host["topology"], "--root", root, "--hostname", host["name"]]
    for override in host.get("hugepages", ()):
        argv += ["--hugepages", override]
    proc = _run(argv)
    if proc.returncode != 0:
        raise FleetError("writing topology %r for %s failed (exit %d): %s"
                         % (host["topology"], host["name"], proc.returncode,
                            (proc.stderr or proc.stdout).strip()))
    key = os.path.join(hdir, "ssh_host_ed25519_key")
    proc = _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", host["name"], "-f", key])
    if proc.returncode != 0:
        raise FleetError("ssh-keygen for %s failed: %s" % (host["name"], proc.stderr.strip()))
    host["mounts"] = _mount_plan(root)
    pristine = host["pristine"]
    for rel in ETC_MOUNTS:
        shutil.copytree(os.path.join(root, rel), os.path.join(pristine, rel), symlinks=True)


def _start_script(host: Dict[str, Any]) -> str:
    lines = ["set -e", "hostname %s" % host["name"]]
    for src, dst in host["mounts"]:
        lines.append("mount --bind %s %s" % (_shquote(src), _shquote(dst)))
    lines.append("exec %s -D -f %s -E %s" % (SSHD, _shquote(os.path.join(host["path"], "sshd_config")),
                                             _shquote(os.path.join(host["path"], "sshd.log"))))
    return "\n".join(lines)


def _shquote(text: str) -> str:
    return "'" + text.replace("'", "'\"'\"'") + "'"


def _start_host(host: Dict[str, Any]) -> None:
    """Start the host's namespaces and sshd; records unshare's PID and start time."""
    console = open(os.path.join(host["path"], "console.log"), "w")
    try:
        proc = subprocess.Popen(
            ["unshare", "--mount", "--uts", "--pid", "--fork", "--kill-child", "--mount-proc",
             "--propagation", "private", "/bin/sh", "-c", _start_script(host)],
            stdin=subprocess.DEVNULL, stdout=console, stderr=subprocess.STDOUT,
            start_new_session=True, close_fds=True)
    finally:
        console.close()
    host["pid"] = proc.pid
    info = proc_start_time(proc.pid)
    host["start"] = info[1] if info else None
    # The Popen object is dropped on purpose: the fleet outlives this process. Stop Python from
    # warning about it, and from ever reaping (waiting for) it behind teardown's back.
    proc.returncode = 0


def _namespace_init(host: Dict[str, Any]) -> None:
    """Record the PID (outside view) of the namespace's init, i.e. the host's sshd."""
    pid = host.get("pid")
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as handle:
            children = handle.read().split()
    except (OSError, TypeError):
        children = []
    if children:
        host["init_pid"] = int(children[0])
        info = proc_start_time(host["init_pid"])
        host["init_start"] = info[1] if info else None


def _wait_ready(state: Dict[str, Any], host: Dict[str, Any], deadline: float) -> Optional[str]:
    """Poll until a key-based ssh login answers with the host's own hostname; None when ready."""
    last = "sshd never listened on port %d" % host["port"]
    while time.time() < deadline:
        if not is_ours(host.get("pid"), host.get("start")):
            return "its namespace exited early"
        if not port_listening(host["port"]):
            time.sleep(0.05)
            continue
        proc = _run(ssh_base_args(state, host["port"]) + ["hostname"], stdin=subprocess.DEVNULL)
        if proc.returncode == 0:
            seen = proc.stdout.strip()
            if seen == host["name"]:
                return None
            return "ssh to port %d reached host %r, not %s (a stale fleet?)" % (host["port"], seen, host["name"])
        last = "ssh login failed (exit %d): %s" % (proc.returncode, proc.stderr.strip())
        time.sleep(0.1)
    return last


# -- inventory -------------------------------------------------------------------------------

def _yaml_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(str(value))


def render_inventory(state: Dict[str, Any]) -> str:
    """The YAML inventory: global connection vars, one group per topology class, host vars."""
    common = " ".join([
        "-o StrictHostKeyChecking=no", "-o UserKnownHostsFile=/dev/null", "-o LogLevel=ERROR",
        "-o IdentitiesOnly=yes", "-o PreferredAuthentications=publickey",
        "-o ControlPath=%s/%%C" % state["cp_dir"],
    ])
    out = ["---",
           "# Generated by tests/fleet/fleet.py for the fleet in %s; `fleet down` removes it." % state["dir"],
           "all:",
           "  vars:",
           "    ansible_user: root",
           "    ansible_ssh_private_key_file: %s" % _yaml_str(state["client_key"]),
           "    ansible_ssh_common_args: %s" % _yaml_str(common),
           # ansible's default ssh_args minus -C: compressing loopback traffic (and AnsiballZ
           # payloads that are zip-deflated already) only costs CPU, which is what the fleet lacks.
           "    ansible_ssh_args: \"-o ControlMaster=auto -o ControlPersist=60s\"",
           "    ansible_python_interpreter: /usr/bin/python3",
           "    ansible_pipelining: true",
           "    fleet_dir: %s" % _yaml_str(state["dir"]),
           "  children:"]
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for host in state["hosts"]:
        groups.setdefault(host["group"], []).append(host)
    for group in sorted(groups):
        out.append("    %s:" % group)
        out.append("      hosts:")
        for host in groups[group]:
            out.append("        %s:" % host["name"])
            for key, value in (("ansible_host", "127.0.0.1"), ("ansible_port", host["port"]),
                               ("fleet_topology", host["topology"]),
                               ("fleet_hugepages", ",".join(host.get("hugepages", ()))),
                               ("fleet_loopback", host["loopback"]),
                               ("fleet_root", host["root"])):
                out.append("          %s: %s" % (key, _yaml_str(value)))
    return "\n".join(out) + "\n"


# -- commands --------------------------------------------------------------------------------

def unavailable() -> Optional[str]:
    """Why a fleet cannot run on this machine, or None when it can."""
    if os.geteuid() != 0:
        return "the fleet needs root (mount namespaces, bind mounts over /sys); run as root"
    for tool in ("unshare", "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return "%s not found; run `bash scripts/bootstrap`" % tool
    if not os.access(SSHD, os.X_OK):
        return "%s not found; run `bash scripts/bootstrap` (installs openssh-server)" % SSHD
    return None


def _require_root() -> None:
    reason = unavailable()
    if reason:
        raise FleetError(reason)


def _ensure_mountpoints() -> List[str]:
    created = []
    for path in CREATABLE_MOUNTPOINTS:
        if not os.path.isdir(path):
            os.makedirs(path, mode=0o755, exist_ok=True)  # another fleet may be starting too
            created.append(path)
    return created


def _bytecode_cache_dir() -> Optional[str]:
    """The directory named by NUMAGUARD_FLEET_BYTECODE_CACHE, created; None when it is unset.

    Only the test suite sets it: its hosts then keep the bytecode of the module payloads they
    compile (bytecode_cache/usercustomize.py). Fleets for benchmarks and the demo compile every
    run, as real hosts do."""
    cache = os.environ.get("NUMAGUARD_FLEET_BYTECODE_CACHE")
    if not cache:
        return None
    cache = os.path.abspath(cache)
    if any(ch.isspace() or ch == '"' for ch in cache):
        raise FleetError("bytecode cache: %r holds a space or a quote, which sshd's SetEnv cannot carry" % cache)
    os.makedirs(cache, mode=0o700, exist_ok=True)
    _install_usercustomize(cache)
    return cache


def _install_usercustomize(cache: str) -> None:
    """Copy bytecode_cache/usercustomize.py into ``<cache>/site``, the directory the hosts'
    PYTHONPATH names: a host's Python writes that file's own bytecode next to it, and that must
    not be the checkout. Replaced whole (fleets of parallel test workers share the cache)."""
    site = os.path.join(cache, "site")
    os.makedirs(site, mode=0o700, exist_ok=True)
    partial = os.path.join(site, "usercustomize.py.%d.tmp" % os.getpid())
    shutil.copyfile(os.path.join(HERE, "bytecode_cache", "usercustomize.py"), partial)
    os.replace(partial, os.path.join(site, "usercustomize.py"))


def _trees_base() -> Optional[str]:
    """A fresh tmpfs directory for the host trees, or None (trees then live in DIR)."""
    if not (os.path.isdir(TREES_PARENT) and os.access(TREES_PARENT, os.W_OK)):
        return None
    import tempfile
    return tempfile.mkdtemp(prefix=TREES_PREFIX, dir=TREES_PARENT)


def _cp_dir(fleet_dir: str) -> Tuple[str, bool]:
    """ControlPath directory; a short one under /tmp when DIR is too long for a unix socket path."""
    candidate = os.path.join(fleet_dir, "cp")
    # sun_path holds 107 bytes; %C expands to 40 hex digits plus ssh's temporary suffix (~17).
    if len(candidate) + 1 + 40 + 17 < 107:
        os.makedirs(candidate, exist_ok=True)
        return candidate, False
    import tempfile
    return tempfile.mkdtemp(prefix="ngfcp-"), True


def _bring_up(state: Dict[str, Any], base_port: str, timeout: float) -> float:
    """Keys, host trees, ports, namespaces and readiness; returns when the trees were ready."""
    fleet_dir = state["dir"]
    plan = state["hosts"]
    state["created_mountpoints"] = _ensure_mountpoints()
    state["cp_dir"], state["cp_dir_is_tmp"] = _cp_dir(fleet_dir)
    key = state["client_key"]
    for path in (key, key + ".pub"):
        if os.path.exists(path):
            os.unlink(path)
    proc = _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "numaguard-fleet", "-f", key])
    if proc.returncode != 0:
        raise FleetError("ssh-keygen failed: %s" % proc.stderr.strip())
    with open(key + ".pub") as handle:
        _write_atomic(os.path.join(fleet_dir, "authorized_keys"), handle.read(), 0o600)
    workers = min(16, max(2, len(plan)))
    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        list(pool.map(_prepare_host, plan))
    prepared = time.time()
    with machine_lock():
        ports = choose_ports(base_port, len(plan))
        for item, port in zip(plan, ports):
            item["port"] = port
            item["loopback"] = loopback_for_port(port)
            _write_atomic(os.path.join(item["path"], "sshd_config"), _sshd_config(state, item), 0o600)
        for item in plan:
            _start_host(item)
        save_state(state)
        deadline = time.time() + timeout
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            problems = list(pool.map(lambda h: _wait_ready(state, h, deadline), plan))
    failed = [(h, p) for h, p in zip(plan, problems) if p]
    if failed:
        details = "\n".join("  %s (port %d): %s\n    console: %s\n    sshd.log: %s" % (
            h["name"], h["port"], p, _tail(os.path.join(h["path"], "console.log"), 3).replace("\n", " | "),
            _tail(os.path.join(h["path"], "sshd.log"), 3).replace("\n", " | ")) for h, p in failed)
        raise FleetError("%d of %d hosts did not come up (logs kept in %s):\n%s"
                         % (len(failed), len(plan), fleet_dir, details))
    return prepared


def up(fleet_dir: str = DEFAULT_DIR,
       hosts: Optional[int] = None,
       topologies: Optional[Sequence[str]] = None,
       base_port: str = "2201",
       timeout: float = 60.0,
       quiet: bool = False) -> Dict[str, Any]:
    """Bring a fleet up and return its state (also saved in DIR/fleet.json).

    ``topologies`` None means the bundled example fleet when ``hosts`` is None, else ``hosts``
    hosts cycling through every bundled topology.
    """
    began = time.time()
    _require_root()
    fleet_dir = os.path.abspath(fleet_dir)
    existing = load_state(fleet_dir) if os.path.isdir(fleet_dir) else None
    if existing is not None:
        alive = [h["name"] for h in existing["hosts"] if is_ours(h.get("pid"), h.get("start"))]
        if alive:
            raise FleetError("a fleet is already running in %s (%d hosts up); run `fleet down --dir %s` first"
                             % (fleet_dir, len(alive), fleet_dir))
        _log(quiet, "fleet: removing the remains of a stopped fleet in %s" % fleet_dir)
        _cleanup_files(existing)
    known = list_topologies()
    if topologies:
        specs = list(topologies)
    elif hosts is None:
        specs = bundled_fleet(known)
    else:
        specs = known
    plan = plan_hosts(hosts, specs, known)
    os.makedirs(fleet_dir, exist_ok=True)
    state: Dict[str, Any] = {
        "version": STATE_VERSION, "dir": fleet_dir, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "client_key": os.path.join(fleet_dir, "id_ed25519"), "cp_dir": None, "cp_dir_is_tmp": False,
        "inventory": os.path.join(fleet_dir, "inventory.yml"), "created_mountpoints": [],
        "hosts": plan,
    }
    state["trees"] = _trees_base()
    state["bytecode_cache"] = _bytecode_cache_dir()
    for item in plan:
        item["path"] = os.path.join(fleet_dir, item["name"])
        trees = state["trees"] or item["path"]
        item["root"] = os.path.join(trees, item["name"]) if state["trees"] else os.path.join(item["path"], "root")
        item["pristine"] = os.path.join(trees, item["name"] + ".pristine") if state["trees"] \
            else os.path.join(item["path"], "pristine")
    try:
        prepared = _bring_up(state, base_port, timeout)
    except BaseException:
        # Stop whatever started and free the trees' memory; keep the logs in DIR/hNN (the next
        # `up` or `down` removes them).
        _stop_hosts(state, quiet=True)
        for item in plan:
            item["stopped"] = True
        if state["trees"]:
            shutil.rmtree(state["trees"], ignore_errors=True)
        if os.path.isdir(fleet_dir):
            save_state(state)
        raise
    for item in plan:
        _namespace_init(item)
    _write_atomic(state["inventory"], render_inventory(state))
    save_state(state)
    _log(quiet, "fleet: %d hosts up in %.1f s (trees and keys %.1f s), inventory %s"
         % (len(plan), time.time() - began, prepared - began, state["inventory"]))
    if not quiet:
        print(format_hosts(state))
    return state


def format_hosts(state: Dict[str, Any], checks: Optional[Dict[str, str]] = None) -> str:
    rows: List[Tuple[str, ...]] = [("host", "port", "loopback", "group", "topology", "pid", "state")]
    for host in state["hosts"]:
        alive = is_ours(host.get("pid"), host.get("start"))
        status_text = "up" if alive else "DOWN"
        if alive and checks is not None:
            status_text = checks.get(host["name"], "?")
        rows.append((host["name"], str(host.get("port", "-")), host.get("loopback", "-"), host["group"],
                     ":".join([host["topology"]] + list(host.get("hugepages", ()))),
                     str(host.get("pid", "-")), status_text))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def _close_control_masters(state: Dict[str, Any]) -> None:
    """Ask every ControlPersist master ansible left in cp_dir to exit (else they linger 60 s)."""
    cp_dir = state.get("cp_dir")
    if not cp_dir or not os.path.isdir(cp_dir):
        return
    sockets = [os.path.join(cp_dir, name) for name in os.listdir(cp_dir)]
    procs = [subprocess.Popen(["ssh", "-o", "ControlPath=%s" % path, "-O", "exit", "fleet-host"],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for path in sockets]
    for proc in procs:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _stop_hosts(state: Dict[str, Any], quiet: bool = False, grace: float = 3.0) -> List[str]:
    """Stop exactly the processes this fleet started; return the names of hosts that resisted.

    sshd (the namespace's init) gets SIGTERM first so it closes sessions; when the namespace init
    dies the kernel kills everything else in that PID namespace. unshare ignores SIGTERM, so
    whatever is left after ``grace`` seconds gets SIGKILL (unshare's --kill-child passes that on).
    A killed process is a zombie until its parent reaps it and a zombie still answers kill -0,
    so liveness is judged from /proc/<pid>/stat's state and start time, never from kill -0.
    """
    targets: List[Tuple[str, int, int]] = []
    for host in state["hosts"]:
        if not host.get("init_pid") and is_ours(host.get("pid"), host.get("start")):
            _namespace_init(host)
        for pid_key, start_key in (("init_pid", "init_start"), ("pid", "start")):
            if is_ours(host.get(pid_key), host.get(start_key)):
                targets.append((host["name"], host[pid_key], host[start_key]))
    for _name, pid, start in targets:
        if is_ours(pid, start):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
    deadline = time.time() + grace
    while time.time() < deadline and any(is_ours(pid, start) for _n, pid, start in targets):
        time.sleep(0.05)
    for _name, pid, start in targets:
        if is_ours(pid, start):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    deadline = time.time() + 5
    while time.time() < deadline and any(is_ours(pid, start) for _n, pid, start in targets):
        time.sleep(0.05)
    _reap(pid for _n, pid, _s in targets)
    return sorted(set(name for name, pid, start in targets if is_ours(pid, start)))


def _reap(pids: Iterator[int], timeout: float = 5.0) -> None:
    """Collect exit statuses of our own dead children so they do not stay zombies.

    Waits (up to ``timeout`` for all) until each has exited: reaped now, the namespace's CPU is
    counted for the test that tore the fleet down (scripts/pytest_cpu.py), not for whichever later
    test happens to reap it."""
    deadline = time.time() + timeout
    for pid in pids:
        while True:
            try:
                done, _status = os.waitpid(pid, os.WNOHANG)
            except (ChildProcessError, OSError):
                break
            if done or time.time() > deadline:
                break
            time.sleep(0.02)


def _cleanup_files(state: Dict[str, Any]) -> None:
    fleet_dir = state["dir"]
    for host in state["hosts"]:
        path = host.get("path") or os.path.join(fleet_dir, host["name"])
        if os.path.dirname(path) == fleet_dir:
            shutil.rmtree(path, ignore_errors=True)
    for name in ("id_ed25519", "id_ed25519.pub", "authorized_keys", "inventory.yml", STATE_FILE):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(os.path.join(fleet_dir, name))
    trees = state.get("trees")
    if trees and os.path.basename(trees).startswith(TREES_PREFIX):
        shutil.rmtree(trees, ignore_errors=True)
    cp_dir = state.get("cp_dir")
    if cp_dir and (state.get("cp_dir_is_tmp") or os.path.dirname(cp_dir) == fleet_dir):
        shutil.rmtree(cp_dir, ignore_errors=True)
    with contextlib.suppress(OSError):
        os.rmdir(fleet_dir)


def down(fleet_dir: str = DEFAULT_DIR, keep: bool = False, quiet: bool = False) -> int:
    """Tear the fleet in ``fleet_dir`` down; returns the number of hosts stopped."""
    began = time.time()
    fleet_dir = os.path.abspath(fleet_dir)
    state = load_state(fleet_dir)
    if state is None:
        _log(quiet, "fleet: no fleet in %s (nothing to stop)" % fleet_dir)
        return 0
    running = [h for h in state["hosts"] if is_ours(h.get("pid"), h.get("start"))]
    _close_control_masters(state)
    resisted = _stop_hosts(state)
    if resisted:
        raise FleetError("hosts %s did not stop; their PIDs are in %s"
                         % (", ".join(resisted), os.path.join(fleet_dir, STATE_FILE)))
    busy = [h["port"] for h in running if h.get("port") and port_listening(h["port"])]
    if busy:
        raise FleetError("ports %s still answer after teardown (processes not started by this fleet?)"
                         % ", ".join(str(p) for p in busy))
    if keep:
        for host in state["hosts"]:
            host["stopped"] = True
        save_state(state)
    else:
        _cleanup_files(state)
    _log(quiet, "fleet: %d hosts stopped in %.1f s%s" % (len(running), time.time() - began,
                                                         " (files kept in %s)" % fleet_dir if keep else ""))
    return len(running)


def status(fleet_dir: str = DEFAULT_DIR, ssh: bool = False) -> Optional[Dict[str, Any]]:
    """The fleet state with a ``status`` per host: up / DOWN / no-listen / ssh-failed."""
    fleet_dir = os.path.abspath(fleet_dir)
    state = load_state(fleet_dir)
    if state is None:
        return None

    def check(host: Dict[str, Any]) -> str:
        if not is_ours(host.get("pid"), host.get("start")):
            return "DOWN"
        if not port_listening(host["port"]):
            return "no-listen"
        if ssh:
            proc = _run(ssh_base_args(state, host["port"]) + ["hostname"], stdin=subprocess.DEVNULL)
            if proc.returncode != 0 or proc.stdout.strip() != host["name"]:
                return "ssh-failed"
            return "up, ssh ok"
        return "up"
    with concurrent.futures.ThreadPoolExecutor(min(16, max(1, len(state["hosts"])))) as pool:
        results = list(pool.map(check, state["hosts"]))
    for host, result in zip(state["hosts"], results):
        host["status"] = result
    return state


def restore(fleet_dir: str = DEFAULT_DIR, names: Optional[Sequence[str]] = None) -> List[str]:
    """Put back each host's /var/lib/kubelet and /etc/kubernetes as they were at bring-up.

    The directories are bind mounts, so their contents are replaced in place (the directory
    inode must stay the same or the running host would keep seeing the old one).
    """
    state = load_state(os.path.abspath(fleet_dir))
    if state is None:
        raise FleetError("no fleet in %s" % fleet_dir)
    by_name = dict((h["name"], h) for h in state["hosts"])
    wanted = list(names) if names else sorted(by_name)
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        raise FleetError("unknown host%s %s (fleet has %s)" % ("s" if len(unknown) > 1 else "",
                                                               ", ".join(unknown), ", ".join(sorted(by_name))))
    for name in wanted:
        host = by_name[name]
        for rel in ETC_MOUNTS:
            live = os.path.join(host["root"], rel)
            saved = os.path.join(host["pristine"], rel)
            for entry in os.listdir(live):
                target = os.path.join(live, entry)
                if os.path.isdir(target) and not os.path.islink(target):
                    shutil.rmtree(target)
                else:
                    os.unlink(target)
            for entry in os.listdir(saved):
                source = os.path.join(saved, entry)
                if os.path.isdir(source) and not os.path.islink(source):
                    shutil.copytree(source, os.path.join(live, entry), symlinks=True)
                else:
                    shutil.copy2(source, os.path.join(live, entry), follow_symlinks=False)
    return wanted


# -- CLI ---------------------------------------------------------------------------------------

def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="fleet", description="Simulated fleet of NUMA hosts (sshd per namespace).")
    sub = parser.add_subparsers(dest="command")
    p_up = sub.add_parser("up", help="bring a fleet up")
    p_up.add_argument("--hosts", type=int, default=None,
                      help="number of hosts (default: the bundled example fleet)")
    p_up.add_argument("--topologies", default=None,
                      help="comma-separated host specs NAME[:SIZE=COUNT...][@GROUP] cycled over the hosts "
                           "(default: every bundled topology, plus the bundled fleet's extras when --hosts is not given)")
    p_up.add_argument("--base-port", default="2201", help="first ssh port, or 'auto' (default 2201)")
    p_up.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for logins (default 60)")
    p_down = sub.add_parser("down", help="stop the fleet and remove its files")
    p_down.add_argument("--keep", action="store_true", help="keep the host trees and logs")
    p_status = sub.add_parser("status", help="show the fleet's hosts")
    p_status.add_argument("--ssh", action="store_true", help="also log in to every host")
    p_status.add_argument("--json", action="store_true", help="print the state as JSON")
    p_restore = sub.add_parser("restore", help="reset hosts' /var/lib/kubelet and /etc/kubernetes")
    p_restore.add_argument("names", nargs="*", help="hosts (default: all)")
    sub.add_parser("list-topologies", help="list the bundled topologies")
    p_describe = sub.add_parser("describe", help="describe the running fleet (or, with --bundled, the bundled example fleet)")
    p_describe.add_argument("--bundled", action="store_true", help="the bundled example fleet, without bringing it up")
    for p in (p_up, p_down, p_status, p_restore, p_describe):
        p.add_argument("--dir", default=os.environ.get("NUMAGUARD_FLEET_DIR", DEFAULT_DIR),
                       help="fleet directory (default %s or $NUMAGUARD_FLEET_DIR)" % DEFAULT_DIR)
    args = parser.parse_args(argv)
    try:
        if args.command == "up":
            topologies = [t for t in args.topologies.split(",") if t.strip()] if args.topologies else None
            up(args.dir, hosts=args.hosts, topologies=topologies, base_port=args.base_port, timeout=args.timeout)
        elif args.command == "down":
            down(args.dir, keep=args.keep)
        elif args.command == "status":
            state = status(args.dir, ssh=args.ssh)
            if state is None:
                print("fleet: no fleet in %s" % os.path.abspath(args.dir))
                return 3
            if args.json:
                print(json.dumps(state, indent=1, sort_keys=True))
            else:
                print("fleet in %s (created %s), inventory %s" % (state["dir"], state["created"], state["inventory"]))
                print(format_hosts(state, dict((h["name"], h["status"]) for h in state["hosts"])))
            return 0 if all(h["status"].startswith("up") for h in state["hosts"]) else 1
        elif args.command == "restore":
            print("fleet: restored %s" % ", ".join(restore(args.dir, args.names)))
        elif args.command == "list-topologies":
            print("\n".join(list_topologies()))
        elif args.command == "describe":
            known = list_topologies()
            if args.bundled:
                hosts = plan_hosts(None, bundled_fleet(known), known)
            else:
                state = load_state(os.path.abspath(args.dir)) if os.path.isdir(args.dir) else None
                if state is None:
                    print("fleet: no fleet in %s" % os.path.abspath(args.dir))
                    return 3
                hosts = state["hosts"]
            print("\n".join(describe_hosts(hosts, known)))
        else:
            parser.print_help()
            return 2
    except FleetError as exc:
        print("fleet: error: %s" % exc, file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("fleet: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `fleet up | head`: the fleet is up and its state saved; only the table was cut short.
        sys.stderr.close()
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
