# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Backend of ``numaguard.kubelet.kubelet_backup`` (PRIVATE to this collection).

Backs up (copy or move), checks, prunes and restores the kubelet files a change touches (the
logic, and its safety rules, live in ``_kubelet_config/backup.py``).

From the object called ``module`` only these are used: ``params``, ``check_mode``, ``fail_json``, ``exit_json``.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Dict

from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.backup import (
    DEFAULT_KUBELET_DIRS,
    BackupError,
    check_backup_root,
    check_path,
    check_writable,
    create_backup,
    plan_backup,
    plan_restore,
    prune_backups,
    restore_backup,
    space_wanted,
)


def check_params(p):
    """Every path option usable (no NUL, absolute, not empty when given) or BackupError naming it."""
    for option in ("backup_root", "backup_dir"):
        if p[option] is not None:
            check_path(option, p[option])
    for option in ("copy", "move", "kubelet_dirs", "protect"):
        for index, value in enumerate(p[option] or []):
            check_path("%s[%d]" % (option, index), value)
    if not p["kubelet_dirs"]:
        raise BackupError("kubelet_dirs: give at least one kubelet directory")
    if p["keep"] < 0:
        raise BackupError("keep: %d is negative; use 0 to keep every backup" % p["keep"])


def _operate(module: Any) -> Dict[str, Any]:
    """Do the operation; the result dict, or BackupError/OSError."""
    p = module.params
    check_params(p)
    dirs = p["kubelet_dirs"]
    operation = p["operation"]
    if operation == "check":
        if not p["backup_root"]:
            raise BackupError("backup_root: required by operation=check")
        check_backup_root(p["backup_root"], dirs)
        plan_backup(p["copy"], p["move"], dirs)
        return dict(changed=False, writable=check_writable(space_wanted(p["backup_root"], p["copy"], p["move"])), files=[], pruned=[])
    if operation == "prune":
        if not p["backup_root"]:
            raise BackupError("backup_root: required by operation=prune")
        check_backup_root(p["backup_root"], dirs)
        if module.check_mode:
            return dict(changed=False, files=[], pruned=[])
        pruned = prune_backups(p["backup_root"], p["keep"], p["protect"])
        return dict(changed=bool(pruned), files=[], pruned=pruned)
    if operation == "backup":
        if not p["backup_root"]:
            raise BackupError("backup_root: required by operation=backup")
        if module.check_mode:
            check_backup_root(p["backup_root"], dirs)
            files = plan_backup(p["copy"], p["move"], dirs)
            return dict(changed=bool(files), files=files, pruned=[])
        backup_dir, files = create_backup(p["backup_root"], p["copy"], p["move"], dirs, name=p["name"] or None)
        pruned = prune_backups(p["backup_root"], p["keep"], list(p["protect"]) + [backup_dir])
        return dict(changed=True, backup_dir=backup_dir, files=files, pruned=pruned)
    if not p["backup_dir"]:
        raise BackupError("backup_dir: required by operation=restore")
    if module.check_mode:
        files = [{"path": e["path"], "result": "would be " + e["result"] if e["result"] in ("restored", "removed") else e["result"]}
                 for e in plan_restore(p["backup_dir"], dirs)]
        return dict(changed=any(f["result"].startswith("would") for f in files), backup_dir=p["backup_dir"], files=files, pruned=[])
    files = restore_backup(p["backup_dir"], dirs)
    return dict(changed=any(f["result"] in ("restored", "removed") for f in files),
                backup_dir=p["backup_dir"], files=files, pruned=[])


def argument_spec() -> Dict[str, Dict[str, Any]]:
    """The module's options (a fresh dict)."""
    return dict(
        operation=dict(type="str", choices=["backup", "restore", "check", "prune"], required=True),
        backup_root=dict(type="path"),
        backup_dir=dict(type="path"),
        copy=dict(type="list", elements="path", default=[]),
        move=dict(type="list", elements="path", default=[]),
        kubelet_dirs=dict(type="list", elements="path", default=list(DEFAULT_KUBELET_DIRS)),
        name=dict(type="str"),
        keep=dict(type="int", default=0),
        protect=dict(type="list", elements="path", default=[]),
    )


def module_kwargs() -> Dict[str, Any]:
    """Keyword arguments for ``AnsibleModule``: the spec and its constraints."""
    return dict(argument_spec=argument_spec(), supports_check_mode=True)


def run(module: Any) -> None:
    try:
        module.exit_json(**_operate(module))
    except BackupError as exc:
        module.fail_json(msg=str(exc))
    except OSError as exc:
        module.fail_json(msg="%s: %s" % (getattr(exc, "filename", None) or module.params.get("backup_dir")
                                         or module.params.get("backup_root"), exc.strerror or exc))
