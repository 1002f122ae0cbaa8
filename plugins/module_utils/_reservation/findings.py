# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A reservation check's result: which rule, how bad, the numbers, the fix (PRIVATE).

Shared by the reservation validation and the memory_manager_state drift check, which
reservation validation runs; kept apart so neither imports the other's module.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from dataclasses import dataclass
from typing import Any, Dict, Optional

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Finding:
    """One validation result: which rule, what is wrong (with the numbers) and how to fix it.

    ``kubelet_message`` is the kubelet's own text when the kubelet has one (quoted verbatim, so it
    can be matched against kubelet logs); ``fatal`` says whether the kubelet refuses to start.
    """

    rule: str
    severity: str
    message: str
    fix: str = ""
    kubelet_message: Optional[str] = None
    fatal: bool = False

    def __str__(self) -> str:
        text = "[%s] %s" % (self.rule, self.message)
        if self.fix:
            text += " Fix: " + self.fix
        return text

    def to_dict(self) -> Dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "message": self.message, "fix": self.fix,
                "kubelet_message": self.kubelet_message, "fatal": self.fatal, "text": str(self)}
