# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one base of the errors this collection raises on purpose (PRIVATE to this collection).

Every parse, validation and state error (bad quantity, bad cpuset, bad topology, a setting the
kubelet refuses, ...) derives from :class:`NumaguardError`, itself a ``ValueError`` as
pypa/packaging's errors are: the message is complete and names the bad value, so a module turns
it into ``fail_json(msg=str(exc))`` and never shows a traceback.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type


class NumaguardError(ValueError):
    """An input or state this collection refuses, with a message that names the bad value."""
