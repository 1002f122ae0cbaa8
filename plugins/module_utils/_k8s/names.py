# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The DNS-1123 subdomain rule of Kubernetes object names (k8s.io/apimachinery/pkg/util/validation:
``IsDNS1123Subdomain``), in one place: a pod's ``metadata.name`` (``_engine/pod.py``) and the node
name the role hands to kubectl (``plugin_utils/rollout_decision.py``) obey the same rule.

A file of its own so that the controller's rollout plugins do not compile the pod model for it.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re
from typing import Any

#: the validation's regex, as its error message quotes it
DNS_SUBDOMAIN_FMT = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
#: DNS1123SubdomainMaxLength
DNS_SUBDOMAIN_MAX_LENGTH = 253
# \Z, not $: Go's $ (no multi-line flag) matches only at the end, Python's also before a final "\n"
DNS_SUBDOMAIN = re.compile(r"^" + DNS_SUBDOMAIN_FMT + r"\Z")


def is_dns_subdomain(name: Any) -> bool:
    """Whether ``name`` is a string Kubernetes accepts as a DNS-1123 subdomain (length and form)."""
    return isinstance(name, str) and len(name) <= DNS_SUBDOMAIN_MAX_LENGTH and DNS_SUBDOMAIN.match(name) is not None
