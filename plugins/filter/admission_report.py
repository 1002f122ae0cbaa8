# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: admission_report
short_description: Fleet report of admission_check results (which hosts admit a pod, where, why not)
version_added: 0.1.0
deprecated:
  removed_in: 1.0.0
  removed_from_collection: numaguard.kubelet
  why: No playbook of the collection uses it any more; one report model serves discover, validate and check_pod.
  alternative: >-
    the M(numaguard.kubelet.numa_report) action with C(kind=check_pod) (what playbooks/check_pod.yml uses) - the same
    verdicts plus the resource fit plus hardware classes and the JSON, JUnit, HTML and Prometheus renderings.
description:
  - Takes the registered results of M(numaguard.kubelet.admission_check) from many hosts and tells
    which hosts would admit the pod(s), on which NUMA nodes, and why the others would not (the
    kubelet's reason and message), or why a host could not be checked.
  - A host admits when every pod of its checked sequence is admitted.
options:
  _input:
    description: C(hostvars), or any dict of host name to that host's variables.
    type: dict
    required: true
  hosts:
    description: The hosts to report on, in order; normally C(ansible_play_hosts_all).
    type: list
    elements: str
    required: true
  var:
    description: Name of the variable holding each host's registered admission_check result.
    type: str
    default: admission_check_result
  active:
    description: Hosts still active in the play, normally C(ansible_play_hosts); defaults to O(hosts).
    type: list
    elements: str
seealso:
  - module: numaguard.kubelet.admission_check
"""

EXAMPLES = r"""
- name: Report (run once after admission_check registered admission_check_result on every host)
  ansible.builtin.debug:
    msg: "{{ (hostvars | numaguard.kubelet.admission_report(ansible_play_hosts_all)).lines }}"
  run_once: true
"""

RETURN = r"""
_value:
  description: The report.
  type: dict
  contains:
    hosts:
      description: Per host C(status) (C(admitted), C(rejected) or C(error)), C(pods) (name, namespace,
        admitted, reason, message, numa_nodes, line), C(numa_nodes) and C(error).
      type: dict
    admitted:
      description: Hosts that admit every pod.
      type: list
      elements: str
    rejected:
      description: Hosts that reject at least one pod.
      type: list
      elements: str
    errors:
      description: Hosts that could not be checked.
      type: list
      elements: str
    lines:
      description: The readable report, one string per line.
      type: list
      elements: str
"""

from ansible.errors import AnsibleFilterError
from ansible.utils.display import Display


def admission_report(hostvars, hosts, var="admission_check_result", active=None):
    from ansible_collections.numaguard.kubelet.plugins.module_utils._report.admission import (
        AdmissionReportError,
    )
    from ansible_collections.numaguard.kubelet.plugins.module_utils._report.admission import (
        admission_report as _report,
    )
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.hostvars import host_names, host_variables

    Display().deprecated("the numaguard.kubelet.admission_report filter is deprecated: use the numaguard.kubelet.numa_report action "
                         "with kind=check_pod, as playbooks/check_pod.yml does", version="1.0.0", collection_name="numaguard.kubelet")
    hosts = host_names("admission_report", hostvars, hosts)
    results = {}
    for host in hosts:
        results[host] = host_variables("admission_report", hostvars, host).get(var)
    try:
        return _report(results, hosts, None if active is None else [str(h) for h in active])
    except AdmissionReportError as exc:
        raise AnsibleFilterError("admission_report: %s" % exc)


class FilterModule:
    def filters(self):
        return {"admission_report": admission_report}
