# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the rollout on the host and the ``kubelet_rollout`` action plugin on the controller share,
without the rollout's imports.

Why a file of its own: every task worker on the controller imports the action plugin afresh (no
bytecode is cached: PYTHONDONTWRITEBYTECODE), and importing ``rollout.py`` for these two functions
compiled the backups, the kubelet configuration loader, the eviction thresholds and the stdlib
YAML reader with it: about 50 ms of controller CPU per host and kubelet_rollout task (issue 24).
Standard library only.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import os
from typing import Any, Dict, List, Optional


def start_ticks(pid: Any) -> Optional[str]:
    """The kernel start time of ``pid`` (clock ticks since boot, field 22 of /proc/PID/stat) or
    None when no such process runs; with the pid it names one process, never a recycled pid."""
    try:
        with open("/proc/%d/stat" % int(pid)) as handle:
            return handle.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError, ValueError, TypeError):
        return None


def plan_dirs(plan: Dict[str, Any]) -> List[str]:
    """The kubelet directories a change may touch, from kubelet_config's plan: its root and drop-in
    directories and the directories of the main config and of the file it writes."""
    locations = plan.get("locations") or {}
    found = [locations.get("root_dir"), locations.get("config_dir"), os.path.dirname(locations.get("config") or ""),
             os.path.dirname(plan.get("path") or "")]
    return list(dict.fromkeys(d for d in found if d))
