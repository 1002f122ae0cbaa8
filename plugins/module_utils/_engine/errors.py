# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Errors shared by the admission engine.

Two families, because the kubelet treats them in two different ways:

* :class:`AdmissionError` is a *pod admission result*: the kubelet rejects the pod and records
  ``reason`` and ``message`` in the pod status ("Pod was rejected: " + message) and a Warning
  event. The simulator reports it as a result, never as a failure of the module.
* :class:`StateError` is a *start-up failure*: a state file or a configuration that the kubelet
  would refuse to start with (bad checksum, policy mismatch, unknown policy, ...). The module
  fails with its message, because no pod can be admitted on such a node.
"""

from __future__ import absolute_import, annotations, division, print_function

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError

__metaclass__ = type

#: Reason the kubelet uses for every allocation error without a type of its own (pkg/kubelet/cm/admission/errors.go).
UNEXPECTED_ADMISSION_ERROR = "UnexpectedAdmissionError"


class AdmissionError(Exception):
    """The kubelet would reject the pod with this ``reason`` and ``message``.

    ``message`` is the text after "Pod was rejected: " in the pod status. Subclasses used for
    allocation failures of the managers call :meth:`unexpected` so that the message gets the
    kubelet's "Allocate failed due to ..., which is unexpected" wrapping (pkg/kubelet/cm/admission/errors.go).
    """

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message

    @classmethod
    def unexpected(cls, error_text: str) -> AdmissionError:
        """Wrap a manager's plain error text the way the kubelet does for untyped errors."""
        return cls(UNEXPECTED_ADMISSION_ERROR,
                   "Allocate failed due to %s, which is unexpected" % (error_text,))

    def __repr__(self) -> str:
        return "%s(reason=%r, message=%r)" % (type(self).__name__, self.reason, self.message)


class StateError(NumaguardError):
    """A state file or configuration the kubelet would refuse to start with."""
