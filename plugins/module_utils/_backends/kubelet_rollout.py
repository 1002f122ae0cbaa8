# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Backend of ``numaguard.kubelet.kubelet_rollout`` (PRIVATE to this collection).

The module file holds the documentation; :func:`argument_spec` declares the options once (the
action plugin adds the controller's identity), :func:`run` does the work with the module's
``run_command`` so that the service commands run exactly as the role's command tasks would.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import hashlib
import http.client
import os
import shlex
import time
import urllib.parse
from typing import Any, Callable, Dict, List, Optional

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.kubelet_config import argument_spec as kubelet_config_spec
from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.kubelet_config import plan_result
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import SysfsError, read_topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import InvalidTopology, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._io import write_file
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption, VersionError, probe_host_kubelet
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config import rollout
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.backup import (
    DEFAULT_KUBELET_DIRS,
    MANIFEST,
    BackupError,
    check_backup_root,
    check_path,
    plan_restore,
    restore_backup,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import KubeletConfigError
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.plan import kubelet_reservation_validator, plan_change
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.rollout_common import plan_dirs
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.settings import SettingsError

#: kubelet_config's options that operation=transaction takes as they are (its plan is made under the lock).
PLAN_OPTIONS = ("path", "config", "config_dir", "root_dir", "kubelet_version", "validate_host", "sysfs_root", "topology", "mode_bits")
OPERATIONS = ("status", "begin", "step", "wait_healthy", "finish", "release", "transaction")
#: Options filled in by the action plugin from the controller process (a task may set them too,
#: for example when the module is run by hand to finish a change; see docs/rollout.md).
HOLDER_OPTIONS = ("change_id", "controller", "pid", "started")


def argument_spec() -> Dict[str, Dict[str, Any]]:
    return dict(
        operation=dict(type="str", choices=list(OPERATIONS), required=True),
        state_dir=dict(type="path", required=True),
        change_id=dict(type="str"),
        controller=dict(type="str"),
        pid=dict(type="int"),
        pid_start=dict(type="str"),
        started=dict(type="str"),
        take_over=dict(type="str"),
        kubelet_dirs=dict(type="list", elements="path", default=list(DEFAULT_KUBELET_DIRS)),
        service_start_cmd=dict(type="str"),
        service_stop_cmd=dict(type="str"),
        service_status_cmd=dict(type="str"),
        health_url=dict(type="str"),
        configz_url=dict(type="str"),
        expected=dict(type="dict"),
        retries=dict(type="int", default=30),
        delay=dict(type="float", default=2.0),
        step=dict(type="str", choices=list(rollout.STEPS)),
        intended=dict(type="dict"),
        backup_dir=dict(type="path"),
        status=dict(type="str", choices=list(rollout.FINAL_STATES)),
        reason=dict(type="str", default=""),
        pause_dir=dict(type="path"),
        pause_timeout=dict(type="float", default=300.0),
        lock_lease=dict(type="int", default=rollout.DEFAULT_LEASE),
        plan_inputs=dict(type="dict"),
        # operation=transaction: the change itself, planned under the lock with kubelet_config's options
        settings=dict(type="dict"),
        config_mode=dict(type="str", choices=["dropin", "merge"], default="dropin"),
        backup_keep=dict(type="int", default=10),
        repair_state=dict(type="bool", default=False),
        restart=dict(type="bool", default=True),
        service_restart_cmd=dict(type="str"),
        service_logs_cmd=dict(type="str"),
        preflight_journal=dict(type="dict"),
        host_name=dict(type="str"),
        **dict((name, option) for name, option in kubelet_config_spec().items() if name in PLAN_OPTIONS)
    )


class Host:
    """The host's service interface: commands run through ``run_command``, HTTP with http.client."""

    def __init__(self, params: Dict[str, Any], run_command: Callable[..., Any]) -> None:
        self.p = params
        self.run_command = run_command

    def command(self, option: str) -> Dict[str, Any]:
        line = self.p.get(option)
        if not line:
            raise BackupError("%s: give the command (the role passes kubelet_numa_%s)" % (option, option))
        try:
            argv = shlex.split(line)
        except ValueError as exc:
            raise BackupError("%s: %r cannot be split into words: %s" % (option, line, exc))
        rc, out, err = self.run_command(argv)
        return {"rc": rc, "out": (out or "") + (err or ""), "cmd": line}

    def fetch(self, url: str) -> Dict[str, Any]:
        """GET ``url`` (http or https, certificates verified) with the standard library's http.client;
        status 0 and the reason when it cannot connect."""
        try:
            parts = urllib.parse.urlsplit(url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ValueError("not an http(s) URL: %r" % url)
            connection_type = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
            connection = connection_type(parts.hostname, parts.port, timeout=rollout.HTTP_TIMEOUT)
            try:
                connection.request("GET", (parts.path or "/") + ("?" + parts.query if parts.query else ""))
                answer = connection.getresponse()
                body = answer.read(1 << 20).decode("utf-8", "replace")
                return {"status": answer.status, "body": body if answer.status < 400 else (answer.reason or body)}
            finally:
                connection.close()
        except (http.client.HTTPException, OSError, ValueError) as exc:
            return {"status": 0, "body": "cannot connect: %s" % exc}

    def probe(self, use_expected: bool = True) -> Dict[str, Any]:
        """One health probe; ``use_expected=False`` skips /configz (after a rollback the files, and
        so the fields in force, are the old ones, which ``expected`` does not describe)."""
        return self.probe_for(self.p.get("expected") if use_expected else None)

    def probe_for(self, expected: Any) -> Dict[str, Any]:
        """One health probe, /configz compared with ``expected`` (None: not compared)."""
        return rollout.check_health(lambda: self.command("service_status_cmd"), self.fetch, self.p["health_url"],
                                    self.p.get("configz_url") or None, expected)

    def wait_healthy(self, use_expected: bool = True) -> Dict[str, Any]:
        return self.wait_for(self.p.get("expected") if use_expected else None)

    def wait_for(self, expected: Any) -> Dict[str, Any]:
        """Probe until healthy, at most ``retries`` more times ``delay`` seconds apart (both bounded)."""
        result = self.probe_for(expected)
        for _attempt in range(max(0, self.p["retries"])):
            if result["healthy"]:
                break
            time.sleep(max(0.0, self.p["delay"]))
            result = self.probe_for(expected)
        return result


def _holder(p: Dict[str, Any]) -> Dict[str, Any]:
    missing = [k for k in HOLDER_OPTIONS if p.get(k) in (None, "")]
    if missing:
        raise BackupError("%s: needed to take the lock (the action plugin fills them in)" % ", ".join(missing))
    holder = dict((k, p[k]) for k in HOLDER_OPTIONS)
    if p.get("pid_start"):
        holder["pid_start"] = p["pid_start"]
    return holder


def _pause(p: Dict[str, Any], step: str) -> None:
    """Test hook: announce ``step`` in ``pause_dir`` and wait for the test to let it go on."""
    if not p.get("pause_dir"):
        return
    reached = os.path.join(p["pause_dir"], "reached-" + step)
    go_on = os.path.join(p["pause_dir"], "continue-" + step)
    if not os.path.isdir(p["pause_dir"]) or not os.path.exists(os.path.join(p["pause_dir"], "pause-" + step)):
        return
    with open(reached, "w") as handle:
        handle.write("%d\n" % os.getpid())
    deadline = time.time() + p["pause_timeout"]
    while not os.path.exists(go_on):
        if time.time() > deadline:
            raise BackupError("pause_dir: nobody let step %s go on within %ss" % (step, p["pause_timeout"]))
        time.sleep(0.05)


def recover(p: Dict[str, Any], host: Host, journal: Dict[str, Any], check_mode: bool) -> Dict[str, Any]:
    """Finish or roll back the unfinished change of ``journal``; returns what was done and why."""
    state_dir = p["state_dir"]
    decision = rollout.resume_decision(journal)
    result = {"change_id": journal["change_id"], "step": journal.get("step"), "action": decision["action"],
              "reason": decision["reason"], "backup_dir": journal.get("backup_dir") or ""}
    if check_mode:
        result["action"] = "would " + decision["action"]
        return result
    if decision["action"] == "complete":
        if host.probe()["active"] is False:
            host.command("service_start_cmd")
        health = host.wait_healthy()
        if health["healthy"]:
            rollout.finish(state_dir, journal["change_id"], "done", "completed by change %s: %s" % (p["change_id"], decision["reason"]))
            result.update(action="completed", health=health)
            return result
        result["reason"] += "; but the kubelet is not healthy with it (%s)" % "; ".join(health["problems"])
    result.update(_roll_back(p, host, journal, result["reason"]))
    return result


def _roll_back(p: Dict[str, Any], host: Host, journal: Dict[str, Any], reason: str) -> Dict[str, Any]:
    state_dir = p["state_dir"]
    backup_dir = journal.get("backup_dir")
    if backup_dir and os.path.isfile(os.path.join(backup_dir, MANIFEST)):
        try:  # the whole backup is checked while the kubelet still runs
            plan_restore(backup_dir, p["kubelet_dirs"])
        except BackupError as exc:
            raise BackupError("interrupted change %s (%s) cannot be rolled back automatically, the kubelet was left as it "
                              "is: %s; see docs/rollout.md (recovery runbook)" % (journal["change_id"], reason, exc))
    rollout.record_step(state_dir, journal["change_id"], "rolling_back", {"rolled_back_by": p["change_id"]})
    _pause(p, "rolling_back")
    host.command("service_stop_cmd")
    restored: List[Dict[str, Any]] = []
    if backup_dir and os.path.isfile(os.path.join(backup_dir, MANIFEST)):
        restored = restore_backup(backup_dir, p["kubelet_dirs"])
        where = "restored from its own backup %s" % backup_dir
    else:
        # the backup directory appears (complete) before any original moves: without it nothing moved
        where = "nothing to restore (its backup %s was never completed, so no file had been changed)" % (backup_dir or "-")
    host.command("service_start_cmd")
    health = host.wait_healthy(use_expected=False)
    if not health["healthy"]:
        rollout.finish(state_dir, journal["change_id"], "failed", "%s; %s; kubelet NOT healthy after the rollback" % (reason, where))
        raise BackupError("interrupted change %s was rolled back (%s; %s) but the kubelet is not healthy: %s"
                          % (journal["change_id"], reason, where, "; ".join(health["problems"])))
    rollout.finish(state_dir, journal["change_id"], "rolled back", "%s; %s" % (reason, where))
    return {"action": "rolled back", "restored": restored, "detail": where, "health": health}


#: Bounds of the numeric options (inclusive): a retry count or a wait beyond them is a mistake
#: (30 probes 2 s apart is the default; a week of lease outlives any rollout), and an infinite or
#: NaN wait would make ``time.sleep`` fail or never return.
OPTION_BOUNDS = {
    "retries": (0, 1000),
    "delay": (0.0, 600.0),
    "pause_timeout": (0.0, 86400.0),
    "lock_lease": (60, 7 * 86400),
    "backup_keep": (0, 10000),
}


#: The longest health wait (``retries`` x ``delay``) a rollout accepts: one hour.
MAX_HEALTH_WAIT = 3600


def check_bounds(p: Dict[str, Any]) -> None:
    """Every numeric option within :data:`OPTION_BOUNDS`, or BackupError naming it and its bounds."""
    for option, (low, high) in sorted(OPTION_BOUNDS.items()):
        value = p.get(option)
        if value is None:
            continue
        if not low <= value <= high:  # also False for NaN
            raise BackupError("%s: %r is out of bounds (%s to %s%s)" % (
                option, value, low, high, "; the default is %d" % rollout.DEFAULT_LEASE if option == "lock_lease" else " seconds"
                if option in ("delay", "pause_timeout") else ""))
    if p.get("retries") is not None and p.get("delay") is not None and p["retries"] * p["delay"] > MAX_HEALTH_WAIT:
        raise BackupError("retries x delay: %d x %ss waits longer than %d seconds for the kubelet; lower one of them"
                          % (p["retries"], p["delay"], MAX_HEALTH_WAIT))


def _plan_now(p: Dict[str, Any], detect_version: Optional[Callable[[], Optional[str]]]) -> Callable[[], Dict[str, Any]]:
    """A function planning this run's settings from the files as they are now (the kubelet_config
    module's plan, with the locations the preflight found; the host's kubelet version decides)."""
    for option in ("path", "config", "config_dir", "root_dir", "sysfs_root"):
        if p.get(option) is not None:
            check_path(option, p[option])
    if not p.get("settings"):
        raise BackupError("settings: required by operation=transaction (the KubeletConfiguration fields to manage)")
    try:
        version = KubeletAssumption.resolve(p.get("kubelet_version") or None,
                                            None if p.get("kubelet_version") or detect_version is None else detect_version())
    except VersionError as exc:
        raise BackupError(str(exc))
    topology = None
    if p["validate_host"]:
        try:
            topology = Topology.from_facts(p["topology"]) if p.get("topology") else read_topology(p["sysfs_root"])
        except (SysfsError, InvalidTopology) as exc:
            raise BackupError("cannot read the host's NUMA topology for validation: %s "
                              "(set validate_host: false to skip the host checks)" % exc)

    def plan() -> Dict[str, Any]:
        try:
            made = plan_change(p["settings"], mode=p["config_mode"], path=p.get("path"), config=p.get("config"),
                               config_dir=p.get("config_dir"), root_dir=p.get("root_dir") or "/var/lib/kubelet",
                               kubelet_version=version, topology=topology,
                               reservation_validator=kubelet_reservation_validator(version))
        except SettingsError as exc:
            raise BackupError("invalid kubelet settings: %s" % "; ".join(exc.errors))
        except KubeletConfigError as exc:
            raise BackupError(str(exc))
        made["intended_sha256"] = hashlib.sha256(made["after"].encode("utf-8", "surrogateescape")).hexdigest()
        return made

    return plan


def transaction(p: Dict[str, Any], host: Host, detect_version: Optional[Callable[[], Optional[str]]] = None,
                atomic_move: Optional[Callable[[str, str], None]] = None) -> Dict[str, Any]:
    """operation=transaction: the whole change in this process, which holds the flock throughout."""
    # imported here: the other operations (status: apply.yml's preflight on every host) do not compile it (23 KB; issue 24)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.transaction import OwnedLock, Transaction, release_bound

    for option in ("service_start_cmd", "service_stop_cmd", "service_status_cmd", "health_url"):
        if not p.get(option):
            raise BackupError("%s: required by operation=transaction" % option)
    try:
        mode_bits = int(p["mode_bits"], 8)
    except ValueError:
        raise BackupError("mode_bits: %r is not an octal permission such as 0644" % p["mode_bits"])
    plan = _plan_now(p, detect_version)
    lock = OwnedLock(p["state_dir"], _holder(p), p["lock_lease"], release_bound(p["retries"], p["delay"]))
    lock.take(p.get("take_over"))

    def write(path: str, text: str) -> None:
        directory = os.path.dirname(path) or "."
        if not os.path.isdir(directory):
            os.makedirs(directory, 0o755)
        write_file(path, text.encode("utf-8", "surrogateescape"), None if os.path.exists(path) else mode_bits, rename=atomic_move)

    ops: Dict[str, Callable[..., Any]] = {
        "command": host.command, "probe": host.probe_for, "wait_healthy": host.wait_for, "plan": plan, "write": write,
        "pause": lambda step: _pause(p, step), "recover": lambda journal: recover(p, host, journal, False),
    }
    try:
        result = Transaction(p, lock, ops).run()
    finally:
        released = lock.release()
    made = result.pop("plan", None) or {}
    result.update(released=released, stale_lock_replaced=lock.replaced, stale_lock_free=lock.stale, state_dir=p["state_dir"],
                  path=made.get("path"), reset=made.get("reset"), effective=made.get("effective"), previous=made.get("previous"))
    if result.get("msg"):  # rolled back, or fenced: this run's settings are not in force
        result["failed"] = True
    return result


def _check_paths(p: Dict[str, Any]) -> None:
    """The bounds of the options and the paths given (raises BackupError)."""
    check_bounds(p)
    check_path("state_dir", p["state_dir"])
    for index, value in enumerate(p["kubelet_dirs"] or []):
        check_path("kubelet_dirs[%d]" % index, value)
    if p.get("pause_dir"):
        check_path("pause_dir", p["pause_dir"])


def _status(p: Dict[str, Any], host: Any, result: Dict[str, Any]) -> Dict[str, Any]:
    """operation=status: the lock, the journal, whether the plan is current (and the health)."""
    state_dir = p["state_dir"]
    lock = rollout.lock_state(state_dir)
    holder = rollout.lock_holder(state_dir) if lock["held"] else None
    journal = rollout.read_journal(state_dir)
    result.update(lock_holder=holder, lock_held=lock["held"], stale_lock=None if lock["held"] else lock["record"],
                  journal=journal,
                  locked_by_other=holder is not None and bool(holder) and holder.get("change_id") != p.get("change_id"),
                  pending=journal is not None and bool(journal) and journal.get("status") == rollout.IN_PROGRESS,
                  plan_current=rollout.plan_is_current(p["plan_inputs"]) if p.get("plan_inputs") is not None else None)
    if p.get("health_url"):
        result["health"] = host.probe()
    _pause(p, "status")
    return result


def _step(p: Dict[str, Any], check_mode: bool, result: Dict[str, Any]) -> Dict[str, Any]:
    """operation=step: record a step of the change in the journal (under the holder's lock)."""
    if not p.get("step") or not p.get("change_id"):
        raise BackupError("step and change_id: required by operation=step")
    if check_mode:
        return result
    state_dir = p["state_dir"]
    rollout.require_holder(state_dir, p["change_id"])
    fields: Dict[str, Any] = {}
    if p["step"] == "begin":
        fields.update(_holder(p))
        fields["intended"] = p.get("intended") or {}
        fields["backup_dir"] = p.get("backup_dir")
    elif p.get("backup_dir"):
        fields["backup_dir"] = p["backup_dir"]
    result["journal"] = rollout.record_step(state_dir, p["change_id"], p["step"], fields)
    result["changed"] = True
    _pause(p, p["step"])
    return result


def run(p: Dict[str, Any], run_command: Callable[..., Any], check_mode: bool,
        detect_version: Optional[Callable[[], Optional[str]]] = None,
        atomic_move: Optional[Callable[[str, str], None]] = None) -> Dict[str, Any]:
    """Do ``p["operation"]``; returns the module result (raises BackupError / LockHeld)."""
    _check_paths(p)
    state_dir = p["state_dir"]
    operation = p["operation"]
    if operation in ("status", "begin", "transaction"):
        # the journal and lock live in the backup root: never written through a symlink leading out
        # (later steps run only after begin passed this check)
        check_backup_root(state_dir, p["kubelet_dirs"])
    host = Host(p, run_command)
    result: Dict[str, Any] = {"changed": False, "state_dir": state_dir}

    if operation == "status":
        return _status(p, host, result)

    if operation == "transaction":
        if check_mode:
            plan = _plan_now(p, detect_version)()
            journal = rollout.read_journal(state_dir)
            result.update(path=plan["path"], reset=plan["reset"], needs_write=plan["changed"], journal=journal,
                          lock_holder=rollout.lock_holder(state_dir))
            return result
        return transaction(p, host, detect_version, atomic_move)

    if operation == "begin":
        holder = _holder(p)
        if check_mode:
            current = rollout.lock_holder(state_dir)
            if current and current.get("change_id") not in (holder["change_id"], p.get("take_over")):
                raise rollout.LockHeld("host is locked by another rollout: %s" % rollout.describe_holder(current), current)
            journal = rollout.read_journal(state_dir)
            result["recovered"] = recover(p, host, journal, True) \
                if journal and journal.get("status") == rollout.IN_PROGRESS and journal["change_id"] != holder["change_id"] else None
            result["health"] = host.probe()
            result["change_id"] = holder["change_id"]
            return result
        taken = rollout.acquire(state_dir, holder, p.get("take_over"), lease=p["lock_lease"])
        result["change_id"] = holder["change_id"]
        result["stale_lock_replaced"] = taken["replaced"]
        result["stale_lock_free"] = taken["stale"]
        result["changed"] = True
        journal = rollout.read_journal(state_dir)
        result["recovered"] = None
        if journal and journal.get("status") == rollout.IN_PROGRESS and journal["change_id"] != holder["change_id"]:
            try:
                result["recovered"] = recover(p, host, journal, False)
            except BackupError:
                rollout.release(state_dir, holder["change_id"])
                raise
        result["health"] = host.probe(use_expected=result["recovered"] is None)
        # checked under the lock: nothing can change the files between this and the change
        result["plan_current"] = rollout.plan_is_current(p["plan_inputs"]) if p.get("plan_inputs") is not None else None
        return result

    if operation == "step":
        return _step(p, check_mode, result)

    if operation == "wait_healthy":
        health = host.wait_healthy()
        result["health"] = health
        if not health["healthy"]:
            raise BackupError("the kubelet is not healthy: %s" % "; ".join(health["problems"]))
        return result

    if not p.get("change_id"):
        raise BackupError("change_id: required by operation=%s" % operation)
    if check_mode:
        return result
    if operation == "finish":
        if not p.get("status"):
            raise BackupError("status: required by operation=finish")
        result["journal"] = rollout.finish(state_dir, p["change_id"], p["status"], p["reason"])
    result["released"] = rollout.release(state_dir, p["change_id"])
    result["changed"] = result["released"] or operation == "finish"
    return result


def module_kwargs() -> Dict[str, Any]:
    """Keyword arguments for ``AnsibleModule``: the spec and its constraints."""
    return dict(argument_spec=argument_spec(), supports_check_mode=True)


def status_plan(module: Any) -> Optional[Dict[str, Any]]:
    """operation=status with ``settings``: kubelet_config's result (check mode: nothing is written)
    for the same options, in the same process as the status (the role's preflight makes one module
    call per host, issue 22); its ``diff`` (with ``--diff``) becomes the task's. None otherwise."""
    p = module.params
    if p["operation"] != "status" or not p.get("settings"):
        return None
    options = dict((name, p.get(name)) for name in PLAN_OPTIONS)
    options.update(settings=p["settings"], mode=p["config_mode"], backup=False)
    planned, _plan = plan_result(module, options)
    if p.get("expected") is None:
        # /configz is compared with the fields in force now: those of the files as they are
        p["expected"] = planned["previous"]
    if list(p.get("kubelet_dirs") or ()) == list(DEFAULT_KUBELET_DIRS):
        # as the action plugin does for a plan it is given: the directories the planned change may touch
        p["kubelet_dirs"] = plan_dirs(planned) or p["kubelet_dirs"]
    return planned


def run_module(module: Any) -> None:
    """The module's main: :func:`run` with ``module.params``, ``run_command``, ``check_mode``;
    failures become ``fail_json`` (a lock held by another run names its holder)."""
    try:
        planned = status_plan(module)
        result = run(module.params, module.run_command, module.check_mode,
                     lambda: probe_host_kubelet(module), getattr(module, "atomic_move", None))
        if planned is not None:
            if "diff" in planned:
                result["diff"] = planned.pop("diff")
            result["plan"] = planned
        if result.pop("failed", False):
            module.fail_json(**result)
        module.exit_json(**result)
    except rollout.LockHeld as exc:
        module.fail_json(msg=str(exc), lock_holder=exc.holder)
    except BackupError as exc:
        module.fail_json(msg=str(exc))
    except OSError as exc:
        module.fail_json(msg="%s: %s" % (getattr(exc, "filename", None) or module.params["state_dir"], exc.strerror or exc))
