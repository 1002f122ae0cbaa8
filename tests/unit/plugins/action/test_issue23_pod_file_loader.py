# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 23, case 3: every error of check_pod's pod-file loader names the file (the action
plugin's side; the loader's limits, which do not depend on ansible-core, are
tests/unit/plugins/plugin_utils/test_issue23_bounded_yaml_limits.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.errors import AnsibleError

from ansible_collections.numaguard.kubelet.plugins.action.admission_check import ActionModule
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.bounded_yaml import MAX_BYTES


class _Loader:
    @staticmethod
    def get_real_file(path, decrypt=True):
        return path


def _action():
    action = object.__new__(ActionModule)
    action._find_needle = lambda kind, path: path
    action._loader = _Loader()
    return action


@pytest.mark.parametrize("content,fragment", [
    ("é".encode() * (MAX_BYTES // 2 + 1), "is larger than %d bytes" % MAX_BYTES),
    (b"kind: Pod\n\xff\n", "cannot read"),
    (b"kind: Pod\nmetadata: {name: \x00}\n", "is not valid YAML"),
    (b"", "contains no manifest"),
])
def test_every_pod_file_error_names_the_file(tmp_path, content, fragment):
    path = tmp_path / "pods.yaml"
    path.write_bytes(content)
    with pytest.raises(AnsibleError) as err:
        _action()._read_manifests(str(path))
    assert str(path) in str(err.value) and fragment in str(err.value)
