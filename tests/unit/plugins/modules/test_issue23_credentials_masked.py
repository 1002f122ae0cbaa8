# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 23, case 5: kubelet_config's results never carry a credential of the kubelet configuration.

``staticPodURLHeader`` (and any header, token, password or secret field) is masked in the returned
``content``, and its values are hidden wherever else they would appear (the diff of a merge, a
message), in check mode and when writing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import credential_values, mask_credentials
from ansible_collections.numaguard.kubelet.plugins.modules import kubelet_config
from ansible_collections.numaguard.kubelet.tests.unit.plugins.modules.module_args import patch_module_args

HEADER = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"
SECRET = "Bearer s3cr3t-t0ken-value"
MAIN = HEADER + ("staticPodURL: https://pods.example/manifests\nstaticPodURLHeader:\n  Authorization: [\"%s\"]\n"
                 "  X-Extra: [one-secret-value, another-secret-value]\ncpuManagerPolicy: none\n" % SECRET)


def run(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit):
            kubelet_config.main()
    out = capsys.readouterr().out
    return out, json.loads(out)


@pytest.fixture
def paths(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "config.yaml").write_text(MAIN)
    return {"config": str(tmp_path / "config.yaml"), "config_dir": str(tmp_path / "conf.d"), "root_dir": str(tmp_path),
            "kubelet_version": "1.31", "validate_host": False}


@pytest.mark.parametrize("mode", ["merge", "dropin"])
@pytest.mark.parametrize("check_mode", [True, False])
def test_no_credential_value_in_the_result(capsys, paths, mode, check_mode):
    out, result = run(capsys, dict(paths, mode=mode, settings={"topologyManagerPolicy": "restricted"},
                                   _ansible_check_mode=check_mode, _ansible_diff=True))
    assert not result.get("failed"), result
    for value in (SECRET, "s3cr3t", "one-secret-value", "another-secret-value"):
        assert value not in out
    if mode == "merge":
        assert result["content"]["staticPodURLHeader"] == {"Authorization": ["********"], "X-Extra": ["********", "********"]}
        assert result["content"]["staticPodURL"] == "https://pods.example/manifests"  # not a credential
        assert "staticPodURLHeader" in result["diff"]["before"]
    if not check_mode and mode == "merge":
        with open(paths["config"]) as handle:
            assert SECRET in handle.read()  # the file itself keeps it, of course


def test_credentials_in_a_drop_in_are_hidden_too(capsys, paths, tmp_path):
    (tmp_path / "conf.d" / "10-site.conf").write_text(HEADER + "staticPodURLHeader: {Authorization: [dropin-token-xyz]}\n")
    out, result = run(capsys, dict(paths, mode="merge", settings={"topologyManagerPolicy": "restricted"}, _ansible_diff=True,
                                   _ansible_check_mode=True))
    assert not result.get("failed"), result
    assert "dropin-token-xyz" not in out


def test_mask_and_values():
    doc = {"staticPodURLHeader": {"A": ["x1", "x2"]}, "authentication": {"webhook": {"cacheTTL": "2m"}},
           "bootstrapToken": "tok", "nested": [{"clientSecret": {"k": "v"}}], "cpuManagerPolicy": "static"}
    assert mask_credentials(doc) == {"staticPodURLHeader": {"A": ["********", "********"]}, "authentication": {"webhook": {"cacheTTL": "2m"}},
                                     "bootstrapToken": "********", "nested": [{"clientSecret": {"k": "********"}}],
                                     "cpuManagerPolicy": "static"}
    assert sorted(credential_values(doc)) == ["tok", "v", "x1", "x2"]
