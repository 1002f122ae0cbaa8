# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: reserved_memory_junit
short_description: Render reserved-memory check results of many hosts as a JUnit XML report
version_added: 0.1.0
description:
  - Turns a dict of host name to M(numaguard.kubelet.reserved_memory) / P(numaguard.kubelet.reserved_memory_check#filter)
    result into JUnit XML that CI systems (GitLab, Jenkins, GitHub test reporters) display - one test case per
    host, a C(failure) listing every error, warnings and the equations in C(system-out) - the same JUnit as
    C(validate.yml) writes, valid against Jenkins xunit's JUnit schema.
  - A host whose result is not a dict (e.g. its topology could not be read) is reported as an C(error) with that
    text.
options:
  _input:
    description: Host name to result dict (or to an error string).
    type: dict
    required: true
  suite:
    description: Name of the test suite.
    type: str
    default: numaguard.kubelet reserved memory
"""

EXAMPLES = r"""
- name: Write the report
  ansible.builtin.copy:
    content: "{{ results | numaguard.kubelet.reserved_memory_junit }}"
    dest: reports/reserved-memory.xml
    mode: "0644"
  delegate_to: localhost
"""

RETURN = r"""
_value:
  description: The JUnit XML document (UTF-8, with an XML declaration).
  type: str
"""

from ansible.errors import AnsibleFilterError


def reserved_memory_junit(results, suite="numaguard.kubelet reserved memory"):
    # the one JUnit writer of the collection (validate.yml's): hosts sorted, Jenkins xunit's schema;
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import validate_report
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report_render import render_junit

    if not isinstance(results, dict):
        raise AnsibleFilterError("numaguard.kubelet.reserved_memory_junit: input must be a dict of host name to "
                                 "result, got %s" % type(results).__name__)
    checked = dict((str(host), result if isinstance(result, dict) else
                    {"valid": False, "errors": [str(result)], "warnings": [], "input_error": str(result)})
                   for host, result in results.items())
    return render_junit(validate_report(checked, {}, {}, sorted(checked)), suite=str(suite))


class FilterModule:
    def filters(self):
        return {"reserved_memory_junit": reserved_memory_junit}
