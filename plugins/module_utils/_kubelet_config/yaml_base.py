# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What :mod:`.config` and its built-in YAML reader (:mod:`.yaml_reader`) share: the error, the
YAML 1.1 boolean and null words, and how mapping keys become JSON strings.

Why a module of its own: :mod:`.yaml_reader` is imported only on targets without PyYAML (issue 12:
fresh-process cost), and it cannot import :mod:`.config` (files do not import each other).
:class:`KubeletConfigError` is imported from :mod:`.config` by everyone else.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import math

try:
    from typing import Any  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError


class KubeletConfigError(NumaguardError):
    """A kubelet configuration file or directory that the kubelet would not load."""


_NULL_WORDS = ("", "~", "null", "Null", "NULL")
_TRUE_WORDS = ("true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON")
_FALSE_WORDS = ("false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF")


def _json_key(value: Any) -> str:
    """Mapping keys become strings, as sigs.k8s.io/yaml's YAML-to-JSON conversion makes them."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return str(int(value))
    return str(value)
