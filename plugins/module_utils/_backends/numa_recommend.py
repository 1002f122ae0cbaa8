# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Backend of ``numaguard.kubelet.numa_recommend`` (PRIVATE to this collection).

The module runs on the controller through its action plugin (the search works from the play's
``numa_topology`` facts, one host per hardware class, and the files are the controller's); this
declares its options once and refuses to run on a host.

From the object called ``module`` only these are used: ``fail_json``.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Dict


def argument_spec() -> Dict[str, Dict[str, Any]]:
    """The module's options (a fresh dict)."""
    return dict(
        workload_file=dict(type="path", required=True),
        recommend_dir=dict(type="path", required=True),
        hosts=dict(type="list", elements="str"),
        topologies=dict(type="dict"),
        baseline_dir=dict(type="path"),
    )


def module_kwargs() -> Dict[str, Any]:
    """Keyword arguments for ``AnsibleModule``: the spec and its constraints."""
    return dict(argument_spec=argument_spec(), supports_check_mode=True)


def run(module: Any) -> None:
    module.fail_json(msg="numaguard.kubelet.numa_recommend runs on the controller through its action plugin")
