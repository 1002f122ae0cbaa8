# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Action plugin of ``numaguard.kubelet.admission_check``: read ``pod_file`` and ``dra_file`` on the controller.

The manifests live with the playbook (or next to the ad hoc command), not on the hosts being
checked, so the files are looked up like ``copy``/``template`` sources (the role/playbook
``files/`` directories, then the path as given), parsed here (multi-document YAML or JSON) and
handed to the module as ``pod_file_content``. A file that cannot be found or parsed fails the
task with the file name and the YAML error, before anything runs on the host.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleActionFail, AnsibleError, AnsibleFileNotFound
from ansible.module_utils.common.text.converters import to_native, to_text
from ansible.plugins.action import ActionBase

from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.admission_check_options import INTERNAL_OPTIONS, argument_spec
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.bounded_yaml import MAX_BYTES, BoundedYAMLError, load_all


def _plain(value):
    """YAML-loaded data with only JSON types (dates and other tags become strings)."""
    if isinstance(value, dict):
        return dict((to_text(k), _plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return to_text(value)


class ActionModule(ActionBase):
    """Read and parse ``pod_file`` on the controller, then run the module on the host."""

    TRANSFERS_FILES = False
    _VALID_ARGS = frozenset(argument_spec()) - INTERNAL_OPTIONS

    def _read_manifests(self, path, option="pod_file"):
        try:
            source = self._find_needle("files", path)
        except AnsibleFileNotFound as exc:
            # the file is read here, on the controller: Ansible's own message ends with a hint about
            # remote_src (a file on the hosts), which this option does not have
            searched = [to_native(p) for p in (exc.paths or [])] or [path]
            raise AnsibleError("%s: %s does not exist on the controller (the manifest is read where ansible-playbook runs, "
                               "not on the hosts; looked for %s)" % (option, path, ", ".join(searched)))
        except AnsibleError as exc:
            raise AnsibleError("%s: could not find %s: %s" % (option, path, to_native(exc)))
        try:
            b_source = self._loader.get_real_file(source, decrypt=True)
            with open(b_source, "rb") as handle:
                raw = handle.read(MAX_BYTES + 1)
        except (OSError, AnsibleError) as exc:
            raise AnsibleError("%s: cannot read %s: %s" % (option, source, to_native(exc)))
        if len(raw) > MAX_BYTES:  # before decoding: a character cut at the limit is not the problem
            raise AnsibleError("%s: %s is larger than %d bytes; refusing it" % (option, source, MAX_BYTES))
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AnsibleError("%s: cannot read %s: not UTF-8 text (byte %d)" % (option, source, exc.start))
        try:
            documents = load_all(text, source)
        except BoundedYAMLError as exc:
            raise AnsibleError("%s: %s" % (option, to_native(exc)))
        documents = [_plain(d) for d in documents]
        if not any(d is not None for d in documents):
            raise AnsibleError("%s: %s contains no manifest" % (option, source))
        return {"source": path, "manifests": documents}

    def run(self, tmp=None, task_vars=None):
        self._supports_check_mode = True
        result = super().run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        for option, given in (("pod_file", "pod_file or pod"), ("dra_file", "dra_file or dra_objects")):
            if option + "_content" in args:
                raise AnsibleActionFail("%s_content is internal; use %s" % (option, given))
            files = args.get(option)
            if files is None:
                continue
            if isinstance(files, str):
                files = [f.strip() for f in files.split(",") if f.strip()]
            if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
                raise AnsibleActionFail("%s must be a path or a list of paths, got %r" % (option, files))
            try:
                args[option + "_content"] = [self._read_manifests(path, option) for path in files]
            except AnsibleError as exc:
                raise AnsibleActionFail(to_native(exc.message if hasattr(exc, "message") else exc))
            args[option] = files
        result.update(self._execute_module(module_name="numaguard.kubelet.admission_check", module_args=args,
                                           task_vars=task_vars))
        return result
