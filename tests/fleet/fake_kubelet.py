# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in kubelet service for the simulated fleet (no systemd, no kubelet binary here).

It offers the service interface the ``kubelet_numa`` role drives (in production: systemctl and
journalctl)::

    python3 fake_kubelet.py start|stop|restart|status|logs|fail-next-start [options]

and, like a real kubelet at start-up, it

* loads ``--config`` merged with the ``--config-dir`` drop-ins (with the collection's own loader,
  which reproduces the kubelet's merge) and refuses to start on a broken file;
* restores ``cpu_manager_state`` / ``memory_manager_state`` from ``--root-dir`` and refuses to
  start when the checkpoint's policy differs from the configured one, logging the kubelet's own
  message ("... please drain this node and delete the CPU manager checkpoint file ..."); a missing
  file is created fresh, as the kubelet does;
* serves ``GET /healthz`` (``ok``) and ``GET /configz`` (the effective configuration) on
  ``--healthz ADDRESS:PORT``.

``start`` behaves like ``systemctl start`` of a ``Type=simple`` unit: it returns 0 as soon as
the daemon is forked; a kubelet that then fails only shows in the health endpoint and the log.
``fail-next-start`` makes the next start fail once (a marker file that the start consumes), so
tests can force a failed rollout. Run files (pid, log, marker) live in ``<root-dir>/fake-kubelet``
so that every fleet host (own mount namespace over /var/lib/kubelet) has its own.
"""
from __future__ import annotations

import errno
import json
import os
import signal
import sys
import time

# ``status``, ``stop`` and ``logs`` import nothing more: the role runs ``status`` on every preflight,
# where a real host runs ``systemctl is-active`` (~5 ms). With argparse, http.server, hashlib and
# tempfile imported up front it cost ~75 ms CPU a call and inflated the rollout benchmarks' host side.

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))


def _scratch():
    """This checkout's scratch directory in the temporary directory (made on first use)."""
    # start only (see the imports at the top)
    import hashlib  # pylint: disable=import-outside-toplevel
    import tempfile  # pylint: disable=import-outside-toplevel

    digest = hashlib.sha1(REPO.encode("utf-8")).hexdigest()[:12]
    return os.path.join(tempfile.gettempdir(), "numaguard-fake-kubelet-" + digest)


def _collections_root():
    """A directory holding ``ansible_collections/numaguard/kubelet`` -> this checkout.

    The loader imports its sibling module_utils through the collection namespace, so the
    checkout must be importable as the collection wherever it was cloned.
    """
    parts = REPO.split(os.sep)
    if parts[-3:] == ["ansible_collections", "numaguard", "kubelet"]:
        return os.sep.join(parts[:-3])
    root = _scratch()
    link = os.path.join(root, "ansible_collections", "numaguard", "kubelet")
    if not os.path.islink(link):
        os.makedirs(os.path.dirname(link), exist_ok=True)
        try:
            os.symlink(REPO, link)
        except FileExistsError:  # a concurrent start made it
            pass
    return root


def _loader():
    """The collection's kubeletconfig module (stdlib only), the same code the modules run.

    Its bytecode goes to the scratch directory, never into the checkout: this is the one process
    that imports the collection's files from the tree itself (the modules import them from their
    zip payloads), and it left ``__pycache__`` directories under plugins/ of every clone it ran from.
    """
    # start only (see the imports at the top)
    import importlib  # pylint: disable=import-outside-toplevel

    sys.pycache_prefix = os.path.join(_scratch(), "pycache")
    root = _collections_root()
    if root not in sys.path:
        sys.path.insert(0, root)
    return importlib.import_module("ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config")


def run_dir(args):
    return os.path.join(args.root_dir, "fake-kubelet")


def _paths(args):
    base = run_dir(args)
    return (os.path.join(base, "kubelet.pid"), os.path.join(base, "kubelet.log"),
            os.path.join(base, "fail-next-start"))


def _log(args, level, message):
    _pid, log, _marker = _paths(args)
    os.makedirs(os.path.dirname(log), exist_ok=True)
    stamp = time.strftime("%m%d %H:%M:%S", time.gmtime())
    with open(log, "a") as handle:
        handle.write("%s%s %7d fake_kubelet.py] %s\n" % (level, stamp, os.getpid(), message))


def _running_pid(args):
    pid_file = _paths(args)[0]
    try:
        with open(pid_file) as handle:
            pid = int(handle.read().strip())
    except (OSError, ValueError):
        return None
    try:
        with open("/proc/%d/stat" % pid) as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
        if state == "Z":
            return None
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            if b"fake_kubelet.py" not in handle.read():
                return None
    except (OSError, IndexError):
        return None
    return pid


def _all_cpus():
    """Online CPUs of this host as the kubelet sees them (the fleet bind-mounts a fake sysfs)."""
    try:
        with open("/sys/devices/system/cpu/online") as handle:
            return handle.read().strip()
    except OSError:
        return "0"


def restore_state(args, config):
    """The kubelet's checkpoint restore for the two NUMA managers; returns an error or None."""
    checks = (
        ("cpu_manager_state", config.get("cpuManagerPolicy") or "none",
         'could not restore state from checkpoint: configured policy "%s" differs from state checkpoint policy "%s", '
         'please drain this node and delete the CPU manager checkpoint file "%s" before restarting Kubelet'),
        ("memory_manager_state", config.get("memoryManagerPolicy") or "None",
         'could not restore state from checkpoint: [memorymanager] configured policy "%s" differs from state '
         'checkpoint policy "%s", please drain this node and delete the memory manager checkpoint file "%s" '
         'before restarting Kubelet'),
    )
    for name, policy, message in checks:
        path = os.path.join(args.root_dir, name)
        try:
            with open(path) as handle:
                text = handle.read()
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                return "could not read %s: %s" % (path, exc.strerror)
            if name == "cpu_manager_state":
                fresh = {"policyName": policy, "defaultCpuSet": _all_cpus() if policy == "static" else "", "checksum": 0}
            else:
                fresh = {"policyName": policy, "machineState": {}, "checksum": 0}
            with open(path, "w") as handle:
                handle.write(json.dumps(fresh, separators=(",", ":")))
            _log(args, "I", "Created a new %s checkpoint for policy %s" % (name, policy))
            continue
        try:
            doc = json.loads(text)
            recorded = next((v for k, v in doc.items() if k.lower() == "policyname"), None)
        except (ValueError, AttributeError):
            return "could not restore state from checkpoint: checkpoint is corrupted, please drain this node and " \
                   "delete the checkpoint file %q before restarting Kubelet".replace("%q", '"%s"' % path)
        if recorded != policy:
            return message % (policy, recorded, path)
    return None


def _health_server(address, config):
    """The HTTP server of ``GET /healthz`` (``ok``) and ``GET /configz`` (``config``)."""
    from http.server import BaseHTTPRequestHandler, HTTPServer  # pylint: disable=import-outside-toplevel

    class Health(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server API)
            if self.path == "/healthz":
                body, kind = b"ok", "text/plain"
            elif self.path == "/configz":
                body, kind = json.dumps({"kubeletconfig": config}, sort_keys=True).encode(), "application/json"
            else:
                self.send_error(404)
                return
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args):
            return

    return HTTPServer(address, Health)


def daemon(args):
    """Body of the forked kubelet: validate like the kubelet, then serve until SIGTERM."""
    pid_file, _log_file, marker = _paths(args)
    _log(args, "I", "Starting fake kubelet (config=%s, config-dir=%s, root-dir=%s)"
         % (args.config, args.config_dir, args.root_dir))
    if os.path.exists(marker):
        os.unlink(marker)
        _log(args, "E", "run.go:72] \"command failed\" err=\"failed to run Kubelet: forced start failure "
                        "(fail-next-start marker %s)\"" % marker)
        return 1
    try:
        config = _loader().load_kubelet_config(args.config or None, args.config_dir or None, with_defaults=True)
    except ValueError as exc:
        _log(args, "E", "run.go:72] \"command failed\" err=\"failed to construct kubelet dependencies: %s\"" % exc)
        return 1
    problem = restore_state(args, config)
    if problem:
        _log(args, "E", "run.go:72] \"command failed\" err=\"failed to run Kubelet: %s\"" % problem)
        return 1
    host, _sep, port = args.healthz.rpartition(":")
    try:
        server = _health_server((host, int(port)), config)
    except OSError as exc:
        _log(args, "E", "cannot listen on %s: %s" % (args.healthz, exc.strerror))
        return 1
    with open(pid_file + ".tmp", "w") as handle:
        handle.write("%d\n" % os.getpid())
    os.rename(pid_file + ".tmp", pid_file)

    def shutdown(_signum, _frame):
        _log(args, "I", "Shutting down")
        server.server_close()
        os._exit(0)

    signal.signal(signal.SIGTERM, shutdown)
    _log(args, "I", "Started kubelet; healthz on http://%s/healthz (cpuManagerPolicy=%s, memoryManagerPolicy=%s, "
         "topologyManagerPolicy=%s)" % (args.healthz, config.get("cpuManagerPolicy"), config.get("memoryManagerPolicy"),
                                        config.get("topologyManagerPolicy")))
    server.serve_forever()
    return 0  # not reached: SIGTERM exits


def start(args):
    if _running_pid(args):
        return 0
    os.makedirs(run_dir(args), exist_ok=True)
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)  # the intermediate child exits at once
        return 0
    os.setsid()
    if os.fork():
        os._exit(0)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    try:
        code = daemon(args)
    except Exception as exc:  # the daemon must log, never vanish silently
        _log(args, "E", "fake kubelet crashed: %r" % (exc,))
        code = 2
    os._exit(code)


def stop(args):
    pid = _running_pid(args)
    if not pid:
        return 0
    os.kill(pid, signal.SIGTERM)
    for _attempt in range(100):
        if not _running_pid(args):
            break
        time.sleep(0.05)
    else:
        os.kill(pid, signal.SIGKILL)
    try:
        os.unlink(_paths(args)[0])
    except OSError:
        pass
    return 0


def role_variables():
    """The kubelet_numa role's variables that make it drive this stand-in on a fleet host: the one
    place the e2e rollout fleets and the rollout benchmarks take them from."""
    fake = "/usr/bin/python3 " + os.path.abspath(__file__)
    return {
        "kubelet_numa_kubelet_config": "/etc/kubernetes/kubelet-config.yaml",
        "kubelet_numa_kubelet_config_dir": "/etc/kubernetes/kubelet.conf.d",
        "kubelet_numa_kubelet_version": "1.31",
        "kubelet_numa_health_url": "http://{{ fleet_loopback }}:10248/healthz",
        "kubelet_numa_health_delay": 1,
        "kubelet_numa_service_start_cmd": fake + " start --healthz {{ fleet_loopback }}:10248",
        "kubelet_numa_service_stop_cmd": fake + " stop",
        "kubelet_numa_service_restart_cmd": fake + " restart --healthz {{ fleet_loopback }}:10248",
        "kubelet_numa_service_status_cmd": fake + " status",
        "kubelet_numa_service_logs_cmd": fake + " logs",
    }


COMMANDS = ("start", "stop", "restart", "status", "logs", "fail-next-start")
USAGE = ("usage: fake_kubelet.py {%s} [--config FILE] [--config-dir DIR] [--root-dir DIR] "
         "[--healthz ADDRESS:PORT] [--lines N]" % ",".join(COMMANDS))


def _usage_error(message):
    """argparse's way: usage and the error on stderr, exit status 2."""
    sys.stderr.write("%s\nfake_kubelet.py: error: %s\n" % (USAGE, message))
    raise SystemExit(2)


class Options:
    """The command line (a hand-written parser: argparse alone cost ~30 ms a call, see the imports)."""

    def __init__(self, argv):
        self.command = None
        self.config = "/etc/kubernetes/kubelet-config.yaml"
        self.config_dir = "/etc/kubernetes/kubelet.conf.d"
        self.root_dir = "/var/lib/kubelet"
        self.healthz = "127.0.0.1:10248"  # ADDRESS:PORT of /healthz and /configz
        self.lines = 20  # log lines for `logs`
        words = list(argv)
        while words:
            word = words.pop(0)
            name, eq, value = word.partition("=")
            field = name[2:].replace("-", "_") if name.startswith("--") else None
            if field in ("config", "config_dir", "root_dir", "healthz", "lines"):
                if not eq:
                    if not words:
                        _usage_error("%s needs a value" % name)
                    value = words.pop(0)
                if field == "lines":
                    try:
                        value = int(value)
                    except ValueError:
                        _usage_error("--lines: not a number: %r" % (value,))
                setattr(self, field, value)
            elif self.command is None and word in COMMANDS:
                self.command = word
            else:
                _usage_error("unexpected argument %r" % (word,))
        if self.command is None:
            _usage_error("give one of the commands")


def main(argv=None):
    args = Options(sys.argv[1:] if argv is None else argv)
    if args.command == "start":
        return start(args)
    if args.command == "stop":
        return stop(args)
    if args.command == "restart":
        stop(args)
        return start(args)
    if args.command == "status":
        pid = _running_pid(args)
        print("active (pid %d)" % pid if pid else "inactive")
        return 0 if pid else 3
    if args.command == "fail-next-start":
        os.makedirs(run_dir(args), exist_ok=True)
        with open(_paths(args)[2], "w") as handle:
            handle.write("fail\n")
        return 0
    try:
        with open(_paths(args)[1]) as handle:
            lines = handle.readlines()
    except OSError:
        lines = []
    sys.stdout.write("".join(lines[-args.lines:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
