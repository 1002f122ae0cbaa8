# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""patch_module_args for every tested ansible-core: 2.19's own, or the same by hand before 2.19;
run_main: a module's ``main()`` run in this process, its JSON result.

ansible-core 2.19 added ``ansible.module_utils.testing.patch_module_args``; 2.16-2.18 read the
arguments from ``ansible.module_utils.basic._ANSIBLE_ARGS``, which this patches the same way.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type
__all__ = ["patch_module_args", "run_main"]

import json as _json

try:
    from ansible.module_utils.testing import patch_module_args  # ansible-core >= 2.19
except ImportError:  # ansible-core 2.16 - 2.18
    import contextlib
    import json

    from ansible.module_utils import basic
    from ansible.module_utils.common.text.converters import to_bytes

    @contextlib.contextmanager
    def patch_module_args(args=None):
        """Make the next AnsibleModule in this process read ``args`` as its module arguments."""
        payload = dict(args or {})
        payload.setdefault("_ansible_remote_tmp", "/tmp")
        payload.setdefault("_ansible_keep_remote_files", False)
        saved = basic._ANSIBLE_ARGS
        basic._ANSIBLE_ARGS = to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": payload}))
        try:
            yield
        finally:
            basic._ANSIBLE_ARGS = saved


def run_main(module, capsys, args):
    """Run ``module.main()`` here with ``args`` as its module arguments; the result it printed (exit_json/fail_json exit)."""
    with patch_module_args(args):
        try:
            module.main()
        except SystemExit:
            pass
        else:
            raise AssertionError("%s.main() returned without exit_json or fail_json" % module.__name__)
    return _json.loads(capsys.readouterr().out)
