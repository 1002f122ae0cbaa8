# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Backend of ``numaguard.kubelet.numa_report`` (PRIVATE to this collection).

The module runs on the controller through its action plugin; this declares its options once
and refuses to run on a host.

From the object called ``module`` only these are used: ``fail_json``.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Dict


def argument_spec() -> Dict[str, Dict[str, Any]]:
    """The module's options (a fresh dict)."""
    return dict(
        kind=dict(type="str", required=True, choices=["discover", "validate", "check_pod"]),
        hosts=dict(type="list", elements="str"),
        active=dict(type="list", elements="str"),
        results=dict(type="dict"),
        result_var=dict(type="str", default="admission_check_result"),
        topologies=dict(type="dict"),
        json_file=dict(type="path"),
        junit_file=dict(type="path"),
        html_file=dict(type="path"),
        prometheus_file=dict(type="path"),
        text_file=dict(type="path"),
        classes=dict(type="dict"),
        classes_file=dict(type="path"),
    )


def module_kwargs() -> Dict[str, Any]:
    """Keyword arguments for ``AnsibleModule``: the spec and its constraints."""
    return dict(argument_spec=argument_spec(), supports_check_mode=True)


def run(module: Any) -> None:
    module.fail_json(msg="numaguard.kubelet.numa_report runs on the controller through its action plugin")
