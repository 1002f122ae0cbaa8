# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Backend of ``numaguard.kubelet.numa_facts`` (PRIVATE to this collection).

Reads the host (or the snapshot under ``root``) the way cadvisor and the kubelet do and
returns it as the ``numa_topology`` fact (the gathering lives in ``_host/facts.py``).

From the object called ``module`` only these are used: ``params``, ``warn``, ``fail_json``, ``exit_json``.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Dict

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.devices import DeviceError
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.facts import gather, warning_prefix
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.kubelet_paths import KubeletPathsError
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import SysfsError


def argument_spec() -> Dict[str, Dict[str, Any]]:
    """The module's options (a fresh dict)."""
    return dict(root=dict(type="path", default="/"))


def module_kwargs() -> Dict[str, Any]:
    """Keyword arguments for ``AnsibleModule``: the spec and its constraints."""
    return dict(argument_spec=argument_spec(), supports_check_mode=True)


def run(module: Any) -> None:
    root = module.params["root"]
    try:
        facts = gather(root)
    except (SysfsError, KubeletPathsError, DeviceError) as exc:
        module.fail_json(msg=str(exc), root=root)
    where = warning_prefix(root)
    for warning in facts["warnings"]:
        module.warn("%s: %s" % (where, warning))
    module.exit_json(changed=False, ansible_facts={"numa_topology": facts})
