# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared argument handling for the fleet report filters: ``hostvars`` and a list of hosts.

Why: ``admission_report`` and ``numa_fleet_report`` both take ``hostvars | filter(hosts)`` and
must refuse the same mistakes (input that is not hostvars, ``hosts`` that is a string or not a
list, a host that is not in the inventory) with the same messages, each naming its filter.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError


def host_names(filter_name, hostvars, hosts):
    """Check the filter's input and ``hosts``; the host names as strings, in order."""
    if not isinstance(hostvars, Mapping):
        raise AnsibleFilterError("%s: input must be hostvars (a dict of host -> variables), got %s"
                                 % (filter_name, type(hostvars).__name__))
    if isinstance(hosts, str) or not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("%s: hosts must be a list of host names, got %r" % (filter_name, hosts))
    return [str(h) for h in hosts]


def host_variables(filter_name, hostvars, host):
    """The variables of ``host``, which must be in the inventory."""
    if host not in hostvars:
        raise AnsibleFilterError("%s: host %r is not in the inventory" % (filter_name, host))
    return hostvars[host]
