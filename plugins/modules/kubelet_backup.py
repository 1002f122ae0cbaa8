#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: kubelet_backup
short_description: Back up kubelet config and state files into a timestamped directory, or restore them exactly
version_added: 0.1.0
description:
  - With O(operation=backup), creates C(<backup_root>/<UTC timestamp>/), copies the files in O(copy)
    and moves the files in O(move) (typically C(cpu_manager_state) / C(memory_manager_state), so the
    kubelet starts with fresh state) into it, and records in C(manifest.json) for every path whether
    it existed, its sha256, mode and owner. Nothing is ever deleted without its bytes being kept.
  - With O(operation=restore), puts every file recorded in O(backup_dir) back byte for byte (verified
    by sha256) and removes the listed files that did not exist at backup time.
  - Used by the C(numaguard.kubelet.kubelet_numa) role around a kubelet restart.
author:
  - numaguard.kubelet contributors (@numaguard)
options:
  operation:
    description: What to do.
    type: str
    choices: [backup, restore]
    required: true
  backup_root:
    description: Directory under which O(operation=backup) creates the timestamped backup directory.
    type: path
  backup_dir:
    description: The backup directory to restore from (the RV(backup_dir) of an earlier backup).
    type: path
  copy:
    description: Files to copy into the backup (they stay in place). Missing files are recorded as absent.
    type: list
    elements: path
    default: []
  move:
    description: Files to move into the backup (they disappear from their place). Missing files are recorded as absent.
    type: list
    elements: path
    default: []
attributes:
  check_mode:
    support: full
    description: Reports what would be backed up or restored and changes nothing.
  diff_mode:
    support: none
    description: No diff; RV(files) lists every path and what happens to it.
notes:
  - Keep the backup root on the same filesystem as the kubelet root directory; backups are never
    pruned by this module.
"""

EXAMPLES = r"""
- name: Move the CPU manager state aside and keep a copy of the config
  numaguard.kubelet.kubelet_backup:
    operation: backup
    backup_root: /var/lib/kubelet/numaguard-backups
    copy:
      - /etc/kubernetes/kubelet.conf.d/50-numaguard-numa.conf
      - /var/lib/kubelet/memory_manager_state
    move:
      - /var/lib/kubelet/cpu_manager_state
  register: kubelet_backup

- name: Put everything back exactly
  numaguard.kubelet.kubelet_backup:
    operation: restore
    backup_dir: "{{ kubelet_backup.backup_dir }}"
"""

RETURN = r"""
backup_dir:
  description: The backup directory (created by a backup, read by a restore).
  returned: when a backup was made or restored
  type: str
  sample: /var/lib/kubelet/numaguard-backups/20260101T100000Z
files:
  description:
    - Per path. For a backup, C(path), C(action) (copy or move), C(existed), C(sha256), C(stored).
      For a restore, C(path) and C(result) (restored, removed, unchanged or absent).
  returned: always
  type: list
  elements: dict
  sample: [{"path": "/var/lib/kubelet/cpu_manager_state", "action": "move", "existed": true, "sha256": "9f2c..."}]
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.backup import (
    BackupError,
    make_backup,
    new_backup_dir,
    plan_backup,
    read_manifest,
    restore_backup,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            operation=dict(type="str", choices=["backup", "restore"], required=True),
            backup_root=dict(type="path"),
            backup_dir=dict(type="path"),
            copy=dict(type="list", elements="path", default=[]),
            move=dict(type="list", elements="path", default=[]),
        ),
        required_if=[("operation", "backup", ("backup_root",)), ("operation", "restore", ("backup_dir",))],
        supports_check_mode=True,
    )
    p = module.params
    try:
        if p["operation"] == "backup":
            if module.check_mode:
                files = plan_backup(p["copy"], p["move"])
                module.exit_json(changed=bool(files), files=files)
            backup_dir = new_backup_dir(p["backup_root"])
            files = make_backup(backup_dir, p["copy"], p["move"])
            module.exit_json(changed=True, backup_dir=backup_dir, files=files)
        if module.check_mode:
            files = [{"path": e["path"], "result": "would restore" if e.get("existed") else "would remove"}
                     for e in read_manifest(p["backup_dir"])]
            module.exit_json(changed=bool(files), backup_dir=p["backup_dir"], files=files)
        files = restore_backup(p["backup_dir"])
        module.exit_json(changed=any(f["result"] in ("restored", "removed") for f in files),
                         backup_dir=p["backup_dir"], files=files)
    except BackupError as exc:
        module.fail_json(msg=str(exc))
    except (IOError, OSError) as exc:
        module.fail_json(msg="%s: %s" % (getattr(exc, "filename", None) or p.get("backup_dir") or p.get("backup_root"),
                                         exc.strerror or exc))


if __name__ == "__main__":
    main()
