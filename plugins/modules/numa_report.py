#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: numa_report
short_description: Build the fleet report of discover, validate or check_pod once and write its renderings
version_added: 0.2.0
description:
  - Runs on the controller (action plugin). Builds ONE report model from the play's per-host results and
    renders it as compact text (RV(lines)), JSON, JUnit XML, a self-contained HTML page with a per-NUMA-node
    memory picture, and a Prometheus textfile, writing the files asked for.
  - Hosts are grouped by hardware class (the inventory group C(numa_<nodes>n_<cpus>c_<hugepages>_<fingerprint>)
    that C(discover.yml) creates); identical warnings are shown once with the hosts they apply to.
  - Hosts whose answer is identical (same class, status, numbers and warnings; the kernel's free memory and the
    kubelet's pid, which change by the second, left out) are one entry of the report's C(answers) with a count and
    their hosts. Every rendering leads with the hosts that need action (error, invalid, rejected, cannot check,
    differs) and why, named in full, then answers that differ from the rest of their class; then one entry per
    answer and one NUMA picture per class; each distinct warning once with its count.
  - Relative output paths are relative to the current directory of C(ansible-playbook), not to the playbook
    or the inventory. Files are written whole (temporary file and rename); parent directories are created.
    In check mode nothing is written.
options:
  kind:
    description: Which report.
    type: str
    required: true
    choices: [discover, validate, check_pod]
  hosts:
    description: Hosts to report on, in order. Default C(ansible_play_hosts_all).
    type: list
    elements: str
  active:
    description: Hosts still active in the play; the others failed or were unreachable. Default C(ansible_play_hosts).
    type: list
    elements: str
  results:
    description:
      - Host name to result. Required for O(kind=validate) (P(numaguard.kubelet.reserved_memory_check#filter)
        results); for O(kind=check_pod) the default is each host's O(result_var).
    type: dict
  result_var:
    description:
      - For O(kind=check_pod), the host variable holding the registered M(numaguard.kubelet.admission_check) result.
      - For O(kind=discover), only when given, the host variable holding the registered M(numaguard.kubelet.numa_facts)
        result; a host whose result is unreachable (a task with C(ignore_unreachable)) is reported as unreachable, with
        the connection's message.
    type: str
    default: admission_check_result
  topologies:
    description: Host name to C(numa_topology) fact dict, for hardware classes. Default each host's C(numa_topology).
    type: dict
  classes:
    description: Host name to hardware class group, overriding the classes derived from O(topologies).
    type: dict
  classes_file:
    description:
      - Write a YAML inventory snippet with one group per hardware class here (use it with a second C(-i) and put
        per-class settings in C(group_vars/<class>.yml)).
    type: path
  json_file:
    description: Write the report model as JSON here.
    type: path
  junit_file:
    description: Write JUnit XML here (one test case per host, classname C(<kind>.<first inventory group>)).
    type: path
  html_file:
    description: Write the self-contained HTML report here.
    type: path
  prometheus_file:
    description: Write a node_exporter textfile collector file here (per NUMA node memory gauges).
    type: path
  text_file:
    description: Write the text rendering (RV(lines)) here.
    type: path
attributes:
  check_mode:
    support: full
    description: In check mode the report is built and returned but no file is written.
  diff_mode:
    support: none
    description: No diff.
author:
  - numaguard.kubelet contributors (@numaguard)
"""

EXAMPLES = r"""
- name: Report, once for the whole play
  numaguard.kubelet.numa_report:
    kind: check_pod
    html_file: numa-report.html
    junit_file: check-pod.xml
  register: report
  run_once: true
  delegate_to: localhost

- name: Print it
  ansible.builtin.debug:
    msg: "{{ report.lines }}"
  run_once: true
"""

RETURN = r"""
report:
  description: The report model (C(kind), C(headline), C(counts), C(needs_action), C(classes), C(answers),
    C(warnings), C(hosts), ...; see docs/reports.md).
  returned: success
  type: dict
headline:
  description: The one-line summary.
  returned: success
  type: str
counts:
  description: Hosts per status.
  returned: success
  type: dict
lines:
  description: The compact text rendering, one string per line.
  returned: success
  type: list
  elements: str
files:
  description: Rendering name to the absolute path written.
  returned: success
  type: dict
unreachable:
  description: The hosts whose registered result (O(result_var), or the C(check_pod) results) says they did
    not answer, in host order; empty for C(validate).
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.numaguard.kubelet.plugins.module_utils._zip_compile import compile_each_module_once


def main():
    compile_each_module_once()  # first: the backend's imports then compile once (see _zip_compile.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.numa_report import module_kwargs, run

    run(AnsibleModule(**module_kwargs()))


if __name__ == "__main__":
    main()
