# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Backend of ``numaguard.kubelet.numa_snapshot`` (PRIVATE to this collection).

Captures the files discovery reads into a snapshot tree under ``dest`` (the capture lives in
``_host/snapshot.py``).

From the object called ``module`` only these are used: ``params``, ``check_mode``, ``warn``, ``fail_json``, ``exit_json``.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Dict

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.devices import DeviceError
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.facts import gather, warning_prefix
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.kubelet_paths import KubeletPathsError
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.snapshot import SnapshotError, capture
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import SysfsError


def argument_spec() -> Dict[str, Dict[str, Any]]:
    """The module's options (a fresh dict)."""
    return dict(dest=dict(type="path", required=True), root=dict(type="path", default="/"))


def module_kwargs() -> Dict[str, Any]:
    """Keyword arguments for ``AnsibleModule``: the spec and its constraints."""
    return dict(argument_spec=argument_spec(), supports_check_mode=True)


def run(module: Any) -> None:
    dest = module.params["dest"]
    try:
        result = capture(module.params["root"], None if module.check_mode else dest, gather)
    except (SnapshotError, SysfsError, KubeletPathsError, DeviceError) as exc:
        module.fail_json(msg=str(exc), dest=dest)
    where = warning_prefix(module.params["root"])
    for warning in result["numa_topology"]["warnings"]:
        module.warn("%s: %s" % (where, warning))
    module.exit_json(changed=True, dest=dest, **result)
