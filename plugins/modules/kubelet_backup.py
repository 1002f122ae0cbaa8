#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

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
    it existed, its sha256, mode and owner. Nothing is ever deleted without its bytes being kept -
    the copies are fsynced and verified, and the backup directory is complete, before an original moves.
    A backup that fails leaves no directory or temporary file behind, and the message names the file
    that could not be written.
  - With O(operation=restore), validates the whole manifest of O(backup_dir) and the sha256 of every
    stored copy before touching anything, then puts every recorded file back byte for byte (each
    temporary copy verified before it replaces the file) and removes the listed files that did not
    exist at backup time.
  - With O(operation=check), checks that the backup root and the directories of O(copy) can be written
    and have room for the backup (nothing is changed besides a probe file that is removed again).
  - With O(operation=prune), removes all but the newest O(keep) backups below O(backup_root). Only backups this
    collection made are removed (a directory with its C(manifest.json) and its C(.numaguard-kubelet-backup) marker;
    the C(.partial-*) directory of an interrupted backup with the marker); nothing else in O(backup_root) is touched.
  - Every path backed up or restored must lie inside O(kubelet_dirs); symlinked files, and a backup root
    or manifest path that leads out of those directories through a symlink, are refused.
  - Used by the R(numaguard.kubelet.kubelet_numa, ansible_collections.numaguard.kubelet.kubelet_numa_role)
    role around a kubelet restart; see docs/rollout.md for
    restoring by hand.
author:
  - numaguard.kubelet contributors (@numaguard)
extends_documentation_fragment:
  - numaguard.kubelet.kubelet_dirs
options:
  operation:
    description: What to do.
    type: str
    choices: [backup, restore, check, prune]
    required: true
  backup_root:
    description:
      - Directory under which O(operation=backup) creates the timestamped backup directory.
      - A normalised absolute path (no C(..), C(.) or C(//) components) inside one of O(kubelet_dirs), also after
        resolving symlinks; anything else is refused.
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
  name:
    description:
      - Name of the backup directory to create (for example a rollout's change id, so that its journal can
        name the directory before it exists). It must start with a UTC timestamp such as C(20260101T100000Z).
      - Default is the current UTC timestamp (with C(-N) added when taken).
    type: str
  keep:
    description:
      - After a backup (and with O(operation=prune)), remove all but the newest O(keep) backups below
        O(backup_root), never one named in O(protect). V(0) keeps all.
    type: int
    default: 0
  protect:
    description: Backup directories never pruned (for example the one of an unfinished change).
    type: list
    elements: path
    default: []
attributes:
  check_mode:
    support: full
    description: Reports what would be backed up, restored or pruned and changes nothing; a restore is fully validated.
  diff_mode:
    support: none
    description: No diff; RV(files) lists every path and what happens to it.
notes:
  - Keep the backup root on the same filesystem as the kubelet root directory.
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
pruned:
  description: Backup directories removed by pruning.
  returned: always
  type: list
  elements: str
writable:
  description: For O(operation=check), per directory C(path), C(checked), C(free_bytes), C(needed_bytes).
  returned: when O(operation=check)
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.numaguard.kubelet.plugins.module_utils._zip_compile import compile_each_module_once


def main():
    compile_each_module_once()  # first: the backend's imports then compile once (see _zip_compile.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.kubelet_backup import module_kwargs, run

    run(AnsibleModule(**module_kwargs()))


if __name__ == "__main__":
    main()
