# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared error handling for the reservation filters (``*_format`` / ``*_parse``).

Why: each of those filters is one call into module_utils whose parse errors
(:class:`ReservationSyntaxError`, already naming the bad value) must reach the playbook as an
``AnsibleFilterError`` prefixed with the filter's name, the same way for all of them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from contextlib import contextmanager

from ansible.errors import AnsibleFilterError

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import ReservationSyntaxError


@contextmanager
def reservation_errors(filter_name):
    """Re-raise a ReservationSyntaxError from the block as AnsibleFilterError naming the filter."""
    try:
        yield
    except ReservationSyntaxError as exc:
        raise AnsibleFilterError("numaguard.kubelet.%s: %s" % (filter_name, exc)) from exc
