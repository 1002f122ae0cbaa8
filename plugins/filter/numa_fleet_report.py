# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: numa_fleet_report
short_description: Fleet NUMA report from numa_facts results, grouped by topology fingerprint
version_added: 0.1.0
deprecated:
  removed_in: 1.0.0
  removed_from_collection: numaguard.kubelet
  why: No playbook of the collection uses it any more; one report model serves discover, validate and check_pod.
  alternative: >-
    the M(numaguard.kubelet.numa_report) action with C(kind=discover) (what playbooks/discover.yml uses) - the same
    summaries plus hardware classes and the JSON, JUnit, HTML and Prometheus renderings.
description:
  - Summarises the C(numa_topology) facts that M(numaguard.kubelet.numa_facts) gathered on many
    hosts, groups hosts by topology C(fingerprint), and flags every host whose fingerprint differs
    from the majority of an inventory group it belongs to (or every host of a group that has no
    majority).
  - Returns data (per-host summaries, fingerprint classes, per-group verdicts, flagged hosts) and
    C(lines), a readable report meant for M(ansible.builtin.debug).
  - Hosts without C(numa_topology), or not in O(active), are reported as failed.
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
  active:
    description:
      - Hosts still active in the play, normally C(ansible_play_hosts). Targeted hosts missing
        here failed discovery or were unreachable, even if stale facts exist for them.
      - Defaults to every host of O(hosts).
    type: list
    elements: str
seealso:
  - module: numaguard.kubelet.numa_facts
"""

EXAMPLES = r"""
- name: Print the fleet report (run once, after numa_facts ran on every host)
  ansible.builtin.debug:
    msg: "{{ (hostvars | numaguard.kubelet.numa_fleet_report(ansible_play_hosts_all, ansible_play_hosts)).lines }}"
  run_once: true

- name: Fail when a host differs from its group
  ansible.builtin.assert:
    that: report.differs | length == 0
    fail_msg: "{{ report.differs | map(attribute='host') | join(', ') }} differ from their group"
  vars:
    report: "{{ hostvars | numaguard.kubelet.numa_fleet_report(ansible_play_hosts_all, ansible_play_hosts) }}"
  run_once: true
"""

RETURN = r"""
_value:
  description: The report.
  type: dict
  contains:
    hosts:
      description: Per discovered host, its summary (C(fingerprint), C(node_count), C(cpu_node_count),
        C(cpu_count), C(memory_total_bytes), C(hugepage_totals), C(nodes), C(shape), C(kubelet)).
      type: dict
    failed:
      description: Host name to the reason discovery produced no facts for it.
      type: dict
    fingerprints:
      description: Fingerprint classes, largest first, each with C(fingerprint), C(hosts) and C(shape).
      type: list
      elements: dict
    groups:
      description: Per inventory group (except C(all) and C(ungrouped)) C(hosts), C(discovered),
        C(fingerprints), C(uniform) and C(majority) (null when there is no majority).
      type: dict
    differs:
      description: Flagged hosts with C(host), C(group), C(reason), C(peers), C(shape) and C(peer_shape).
      type: list
      elements: dict
    lines:
      description: The readable report, one string per line.
      type: list
      elements: str
"""

from ansible.errors import AnsibleFilterError
from ansible.utils.display import Display


def numa_fleet_report(hostvars, hosts, active=None):
    # imported here: ansible's filter loader imports every filter file (test_filter_loading_is_cheap.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._report.fleet import (
        FleetReportError,
        fleet_report,
    )
    from ansible_collections.numaguard.kubelet.plugins.plugin_utils.hostvars import host_names, host_variables

    Display().deprecated("the numaguard.kubelet.numa_fleet_report filter is deprecated: use the numaguard.kubelet.numa_report action "
                         "with kind=discover, as playbooks/discover.yml does", version="1.0.0", collection_name="numaguard.kubelet")
    hosts = host_names("numa_fleet_report", hostvars, hosts)
    alive = set(str(h) for h in (hosts if active is None else active))
    topologies = {}
    groups_of = {}
    failed = {}
    for host in hosts:
        variables = host_variables("numa_fleet_report", hostvars, host)
        groups_of[host] = list(variables.get("group_names") or [])
        if host not in alive:
            failed[host] = "failed or unreachable during this play"
            continue
        topologies[host] = variables.get("numa_topology")
    try:
        return fleet_report(topologies, groups_of, hosts=hosts, failed=failed)
    except FleetReportError as exc:
        raise AnsibleFilterError("numa_fleet_report: %s" % exc)


class FilterModule:
    def filters(self):
        return {"numa_fleet_report": numa_fleet_report}
