# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Go's ``strconv`` as the kubelet's messages show it: ``Quote`` (``%q``), ``ParseBool``, ``Atoi``.

Why one home: the kubelet's error texts quote values with ``%q`` and embed strconv's own errors
(``strconv.ParseBool: parsing "x": invalid syntax``); a copy that escapes less than Go (a tab
printed raw instead of ``\\t``) makes our message differ from the kubelet's. The errors raised
here are plain ``ValueError`` with Go's text; callers add the kubelet's wrapping.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re

try:
    from typing import Any  # noqa: F401
except ImportError:  # pragma: no cover
    pass

_INT64_MAX = (1 << 63) - 1
_INT64_MIN = -(1 << 63)

_QUOTE_ESCAPES = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f",
                  "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}

#: ``strconv.ParseBool``'s accepted words and their values.
BOOL_WORDS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
              "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}

_DECIMAL = re.compile(r"[+-]?[0-9]+\Z")


def go_quote(text: str) -> str:
    """Go's ``strconv.Quote`` (what ``%q`` prints) for a string."""
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _QUOTE_ESCAPES:
            out.append(_QUOTE_ESCAPES[char])
        elif code < 0x20 or code == 0x7F:
            out.append("\\x%02x" % code)
        elif char.isprintable():
            out.append(char)
        elif code < 0x10000:
            out.append("\\u%04x" % code)
        else:
            out.append("\\U%08x" % code)
    out.append('"')
    return "".join(out)


def go_parse_bool(text: str) -> bool:
    """Go's ``strconv.ParseBool``; raises ValueError with Go's message."""
    try:
        return BOOL_WORDS[text]
    except (KeyError, TypeError):
        raise ValueError("strconv.ParseBool: parsing %s: invalid syntax" % go_quote(str(text)))


def go_atoi(text: str) -> int:
    """Go's ``strconv.Atoi`` on a 64-bit platform (ASCII digits, optional sign, no spaces)."""
    if not _DECIMAL.match(text):
        raise ValueError("strconv.Atoi: parsing %s: invalid syntax" % go_quote(text))
    value = int(text, 10)
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError("strconv.Atoi: parsing %s: value out of range" % go_quote(text))
    return value


def option_text(value: Any) -> str:
    """The string a kubelet ``map[string]string`` (policy options, ...) holds for a YAML value, as
    our configuration writer writes it: YAML booleans as ``true``/``false``, null as the empty
    string, an integral float (``2.0``) as ``2``; anything else as its text. The one home of that
    rule (settings, the CPU and Topology Manager options)."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)
