# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 23, case 3: parsing bounded wherever input size drives memory or time.

CPU lists are bounded by the kernel's CPU limit before a range is expanded (also in check mode);
numeric retry/delay/size options have bounds. (The pod-file loader: test_issue23_pod_file_loader.)
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import tracemalloc

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends import kubelet_rollout as kubelet_rollout_backend
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.readmit import ReadmitInputError, readmit
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import NR_CPUS_LIMIT, InvalidCPUSet, parse_cpuset, parse_go_cpuset
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.plan import plan_change
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.settings import SettingsError
from ansible_collections.numaguard.kubelet.plugins.modules import kubelet_config
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import patch_module_args

HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
HUGE = ["0-4294967295", "0-9999999", "4294967295", "0-3,8192", "8191-9223372036854775807"]


@pytest.mark.parametrize("text", HUGE)
@pytest.mark.parametrize("parser", [parse_cpuset, parse_go_cpuset])
def test_cpu_ids_beyond_the_kernel_limit_are_refused_before_expansion(parser, text):
    tracemalloc.start()
    try:
        with pytest.raises(InvalidCPUSet) as err:
            parser(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "CPU ids are 0 to 8191" in str(err.value)
    assert peak < 1 << 20  # nothing was expanded


def test_the_largest_cpu_id_of_any_kernel_is_accepted():
    assert parse_go_cpuset("0-%d" % (NR_CPUS_LIMIT - 1)) == frozenset(range(NR_CPUS_LIMIT))
    assert parse_cpuset("%d\n" % (NR_CPUS_LIMIT - 1)) == frozenset([NR_CPUS_LIMIT - 1])


def test_kubelet_config_refuses_a_huge_reserved_cpu_range_in_check_mode(capsys, tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "config.yaml").write_text(HEADER)
    args = {"settings": {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0-4294967295"}, "kubelet_version": "1.31",
            "config": str(tmp_path / "config.yaml"), "config_dir": str(tmp_path / "conf.d"), "root_dir": str(tmp_path),
            "validate_host": False, "_ansible_check_mode": True}
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            kubelet_config.main()
    result = json.loads(capsys.readouterr().out)
    assert result["failed"] and "reservedSystemCPUs: unable to parse reserved-cpus list" in result["msg"]
    assert "CPU ids are 0 to 8191" in result["msg"]


def test_a_host_file_with_a_huge_reserved_cpu_range_is_a_clear_error(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "config.yaml").write_text(HEADER + "reservedSystemCPUs: 0-4294967295\n")
    with pytest.raises(SettingsError) as err:
        plan_change({"cpuManagerPolicy": "static"}, config=str(tmp_path / "config.yaml"), config_dir=str(tmp_path / "conf.d"),
                    root_dir=str(tmp_path), kubelet_version="1.31")
    assert "CPU ids are 0 to 8191" in str(err.value)


def _rollout_params(tmp_path, **extra):
    p = dict((k, v.get("default")) for k, v in kubelet_rollout_backend.argument_spec().items())
    p.update(operation="status", state_dir=str(tmp_path / "state"), kubelet_dirs=[str(tmp_path)])
    p.update(extra)
    return p


@pytest.mark.parametrize("option,value", [
    ("retries", 10 ** 12), ("retries", -1), ("delay", float("nan")), ("delay", float("inf")), ("delay", -1.0),
    ("delay", 601.0), ("pause_timeout", float("inf")), ("lock_lease", 59), ("lock_lease", 10 ** 9),
])
def test_every_retry_and_delay_option_has_a_bound(tmp_path, option, value):
    with pytest.raises(kubelet_rollout_backend.BackupError) as err:
        kubelet_rollout_backend.run(_rollout_params(tmp_path, **{option: value}), None, True)
    assert str(err.value).startswith("%s: %r is out of bounds (" % (option, value))


def test_the_defaults_are_within_the_bounds(tmp_path):
    (tmp_path / "state").mkdir()
    assert kubelet_rollout_backend.run(_rollout_params(tmp_path), None, True)["changed"] is False


@pytest.mark.parametrize("max_orders", [10 ** 9, 10001])
def test_readmit_max_orders_has_a_bound(max_orders):
    with pytest.raises(ReadmitInputError) as err:
        readmit(lambda: None, [], max_orders=max_orders)
    assert "readmit max_orders is at most 10000" in str(err.value)
