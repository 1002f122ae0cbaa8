# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Options of ``numaguard.kubelet.admission_check`` (PRIVATE to this collection): declared once.

Its own file, without imports, so that the controller-side action plugin can learn the valid
options without importing the backend and through it the whole admission engine (tens of
milliseconds per task on the controller). The backend builds ``AnsibleModule`` from it.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Dict  # noqa: F401
except ImportError:  # pragma: no cover
    pass

#: Options the action plugin fills in itself; a task may not pass them.
INTERNAL_OPTIONS = frozenset(("pod_file_content", "dra_file_content"))


def argument_spec() -> Dict[str, Dict[str, Any]]:
    """The module's argument spec (a fresh dict: callers may extend it)."""
    return dict(
        pod=dict(type="raw"),
        pod_file=dict(type="list", elements="path"),
        pod_file_content=dict(type="list", elements="dict"),
        root=dict(type="path", default="/"),
        topology=dict(type="dict"),
        kubelet_config=dict(type="raw"),
        kubelet_config_dir=dict(type="path"),
        kubelet_flags=dict(type="dict"),
        memory_manager_state=dict(type="str"),
        cpu_manager_state=dict(type="str"),
        devices=dict(type="dict"),
        device_allocations=dict(type="dict"),
        running_pods=dict(type="raw"),
        node_allocatable=dict(type="dict"),
        readmit=dict(type="raw"),
        return_state=dict(type="bool", default=False),
        merge_method=dict(type="str", default="fast", choices=["fast", "exhaustive"]),
        kubelet_version=dict(type="str"),
        dra_objects=dict(type="list", elements="raw"),
        dra_file=dict(type="list", elements="path"),
        dra_file_content=dict(type="list", elements="dict"),
    )
