# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The preflight's role inputs are checked in kubelet_rollout's action plugin: wrong inputs fail the
host's status task with the role's message before anything reaches the host (issue 22)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from unittest import mock

from ansible.plugins.action import ActionBase

from ansible_collections.numaguard.kubelet.plugins.action.kubelet_rollout import ActionModule

ARGS = {"operation": "status", "state_dir": "/var/lib/kubelet/numaguard-backups", "settings": {"topologyManagerScope": "pod"},
        "config_mode": "dropin", "health_url": "http://127.0.0.1:10248/healthz",
        "decide": {"inputs": {"start_cmd": "systemctl start kubelet", "stop_cmd": "systemctl stop kubelet",
                              "restart_cmd": "systemctl restart kubelet", "backup_keep": 10, "drain": False,
                              "wait_node_ready": False, "node_name": "worker-1"},
                   "options": {}}}


def _run(args):
    task = mock.MagicMock()
    task.args = args
    action = ActionModule(task, mock.MagicMock(), mock.MagicMock(check_mode=True), loader=None, templar=None,
                          shared_loader_obj=None)
    with mock.patch.object(ActionBase, "run", return_value={}), \
            mock.patch.object(ActionModule, "_execute_module", return_value={"changed": False}) as execute:
        result = action.run(task_vars={"inventory_hostname": "worker-1"})
    return result, execute


def test_settings_not_set_fail_naming_the_variable_and_the_host_without_a_module_run():
    args = dict(ARGS)
    del args["settings"]
    result, execute = _run(args)
    execute.assert_not_called()
    assert result["failed"] is True
    assert result["msg"].startswith("kubelet_numa: kubelet_numa_settings is not set for worker-1: ")


def test_an_argument_of_the_task_is_checked_as_a_role_input():
    result, execute = _run(dict(ARGS, health_url="127.0.0.1:10248/healthz"))
    execute.assert_not_called()
    assert "health_url=127.0.0.1:10248/healthz" in result["msg"]


def test_right_inputs_reach_the_host_without_the_inputs():
    _result, execute = _run(ARGS)
    assert execute.called
    sent = execute.call_args.kwargs["module_args"]
    assert "decide" not in sent and "inputs" not in sent and sent["operation"] == "status"
