# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: controller_path
short_description: A path on the controller, relative ones resolved against the current directory
version_added: 0.2.0
description:
  - Returns O(_input) unchanged when absolute (after C(~) expansion), else joined to the current working directory
    of the C(ansible-playbook) process - where a CI job or an operator runs it - rather than the playbook's or the
    inventory's directory, which Ansible uses for relative paths.
  - Uses the process's real working directory, not C($PWD), so it is right when a wrapper changed directory too.
options:
  _input:
    description: The path.
    type: path
    required: true
"""

EXAMPLES = r"""
- name: Read a file named on the command line
  ansible.builtin.set_fact:
    pod_text: "{{ lookup('ansible.builtin.file', pod_file | numaguard.kubelet.controller_path) }}"
"""

RETURN = r"""
_value:
  description: The absolute path.
  type: path
"""

import os

from ansible.errors import AnsibleFilterError


def controller_path(path):
    if not isinstance(path, str) or not path:
        raise AnsibleFilterError("controller_path: expected a non-empty path, got %r" % (path,))
    path = os.path.expanduser(path)
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(os.getcwd(), path))


class FilterModule:
    def filters(self):
        return {"controller_path": controller_path}
