# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The built-in YAML reader of :mod:`.config`: the first reader of every kubelet configuration.

Why first: importing PyYAML costs a fresh process ~23 ms (issue 12: every AnsiballZ run is a
fresh process), this reader ~10 ms with its compile. It reads the YAML kubelet configurations are
written in and refuses, naming the line, what it does not handle; :func:`.config.parse_yaml`
then asks PyYAML (when installed). Where this reader gives an answer it is PyYAML's (tests
compare both readers on a corpus and on generated documents). A module of its own so that a run
without a configuration file does not compile it.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import datetime
import re

try:
    from typing import Any, Dict, Iterator, List, Optional, Tuple  # noqa: F401 (type comments)
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.yaml_base import (
    _FALSE_WORDS,
    _NULL_WORDS,
    _TRUE_WORDS,
    KubeletConfigError,
    _json_key,
)

# PyYAML's YAML 1.1 implicit resolvers (yaml/resolver.py), anchored with \Z
_INT_DEC = re.compile(r"^[-+]?(0|[1-9][0-9_]*)\Z")
_INT_OCT = re.compile(r"^[-+]?0[0-7_]+\Z")
_INT_HEX = re.compile(r"^[-+]?0x[0-9a-fA-F_]+\Z")
_INT_BIN = re.compile(r"^[-+]?0b[0-1_]+\Z")
_INT_BASE60 = re.compile(r"^[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+\Z")
_FLOAT = re.compile(r"^(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?)\Z")
_FLOAT_BASE60 = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*\Z")
_INF = re.compile(r"^[-+]?\.(?:inf|Inf|INF)\Z")
_NAN = re.compile(r"^\.(?:nan|NaN|NAN)\Z")
_DATE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})\Z")
_TIMESTAMP = re.compile(r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}"
                        r"(?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?\Z")
#: characters PyYAML's reader refuses anywhere in a stream (yaml/reader.py NON_PRINTABLE), plus
#: the Unicode line breaks that Python's splitlines and YAML would split differently
_UNREADABLE = re.compile("[^\x09\x0A\x0D\x20-\x7E\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010ffff]|[\u2028\u2029]")


class _PlainError(NumaguardError):
    """A plain scalar the built-in reader refuses (PyYAML would read it otherwise, or fail)."""


def _resolve_plain(text: str) -> Any:
    """Type a plain scalar exactly as PyYAML's YAML 1.1 resolver and SafeConstructor do, or
    raise :class:`_PlainError` for the forms the built-in reader does not take (base-60
    numbers, timestamps with a time, ``=`` and ``<<``, numbers PyYAML itself cannot convert)."""
    if text in _NULL_WORDS:
        return None
    if text in _TRUE_WORDS:
        return True
    if text in _FALSE_WORDS:
        return False
    if text in ("=", "<<"):
        raise _PlainError("the plain scalar %r has a special meaning in YAML 1.1; quote it" % text)
    if _INT_BASE60.match(text) or _FLOAT_BASE60.match(text):
        raise _PlainError("%r is a YAML 1.1 base-60 number; quote it if it is a string" % text)
    if _TIMESTAMP.match(text):
        raise _PlainError("%r is a YAML 1.1 timestamp; quote it" % text)
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-").replace("_", "")
    try:
        if _INT_HEX.match(text):
            return sign * int(body[2:], 16)
        if _INT_BIN.match(text):
            return sign * int(body[2:], 2)
        if _INT_OCT.match(text):
            return 0 if body == "0" else sign * int(body, 8)
        if _INT_DEC.match(text):
            return sign * int(body)
        if _FLOAT.match(text):
            return sign * float(body)
    except ValueError:
        raise _PlainError("%r looks like a number but has no digits" % text)
    if _INF.match(text):
        return sign * float("inf")
    if _NAN.match(text):
        return float("nan")
    date = _DATE.match(text)
    if date:
        try:
            datetime.date(int(date.group(1)), int(date.group(2)), int(date.group(3)))
        except ValueError as exc:
            raise _PlainError("%r is not a valid date (%s); quote it if it is a string" % (text, exc))
    return text


def _plain_scalar_problem(text: str, flow: bool) -> Optional[str]:
    """Why PyYAML's scanner would not read ``text`` as one plain scalar here, else None."""
    if not text:
        return "empty entry" if flow else None
    first, second = text[0], text[1:2]
    if first in ",[]{}#&*!|>'\"%@`" or (first in "-?:" and second in ("", " ")):
        return "the plain scalar %r cannot start with %r; quote it" % (text, first)
    if flow and any(ch in text for ch in "[]{}"):
        return "flow indicators inside the plain scalar %r" % text
    if ": " in text or text.endswith(":"):
        return "mapping values are not allowed in the plain scalar %r" % text
    if " #" in text:
        return "unexpected comment in %r" % text
    return None


class _Line:
    __slots__ = ("number", "indent", "text")

    def __init__(self, number: int, indent: int, text: str) -> None:
        self.number = number
        self.indent = indent
        self.text = text


def _outside_quotes(text: str) -> Iterator[Tuple[int, str]]:
    """(index, character) of every character of one line outside quoted strings (a quote opens
    at the start or after whitespace or ``[{,:-``; ``''`` and backslash escapes stay inside)."""
    quote = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if quote == '"' and ch == "\\":
                i += 2
                continue
            if ch == quote:
                if quote == "'" and i + 1 < len(text) and text[i + 1] == "'":
                    i += 2
                    continue
                quote = None
        elif ch in "\"'" and (i == 0 or text[i - 1] in " \t[{,:-"):
            quote = ch
        else:
            yield i, ch
        i += 1


def _tab_outside_quotes(text: str) -> bool:
    """True when ``text`` (a line without its comment) has a tab outside quoted strings."""
    return any(ch == "\t" for _index, ch in _outside_quotes(text))


def _strip_comment(text: str) -> str:
    """Remove a ``#`` comment that is outside quotes and preceded by whitespace (or at start)."""
    for i, ch in _outside_quotes(text):
        if ch == "#" and (i == 0 or text[i - 1] in " \t"):
            return text[:i].rstrip()
    return text.rstrip()


class _MiniYAML:
    """A reader for the block/flow YAML subset found in kubelet configurations.

    Unsupported constructs (anchors, aliases, tags, block scalars, multi-line flow collections,
    complex keys) raise :class:`KubeletConfigError` naming the line, so a file is never
    misread silently.
    """

    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.lines: List[_Line] = []
        started = False
        bad = _UNREADABLE.search(text)
        if bad:
            self.fail(text.count("\n", 0, bad.start()) + 1,
                      "the character %r is not supported (PyYAML refuses control characters)" % bad.group())
        for number, raw in enumerate(text.splitlines(), 1):
            if "\t" in raw[: len(raw) - len(raw.lstrip(" \t"))]:
                self.fail(number, "tab characters are not allowed for indentation")
            stripped = _strip_comment(raw)
            if not stripped.strip():
                continue
            if _tab_outside_quotes(stripped):
                self.fail(number, "tab characters outside quoted strings are not supported; use spaces")
            if stripped.startswith("%"):
                self.fail(number, "YAML directives are not supported")
            if stripped.rstrip() in ("---",) or stripped.startswith("--- "):
                if started:
                    break  # like sigs.k8s.io/yaml: only the first document counts
                started = True
                if stripped[3:].strip():
                    self.fail(number, "content on the '---' line is not supported; start it on the next line")
                continue
            if stripped.rstrip() == "...":
                if not started:
                    self.fail(number, "document end marker '...' before any document")
                break
            started = True
            indent = len(stripped) - len(stripped.lstrip(" "))
            self.lines.append(_Line(number, indent, stripped.strip()))
        self.pos = 0

    def fail(self, number: int, message: str) -> None:
        raise KubeletConfigError("%s: line %d: %s" % (self.source, number, message))

    def parse(self) -> Any:
        if not self.lines:
            return None
        value = self.parse_node(self.lines[0].indent)
        if self.pos < len(self.lines):
            line = self.lines[self.pos]
            self.fail(line.number, "unexpected content %r (bad indentation?)" % line.text)
        return value

    def parse_node(self, indent: int) -> Any:
        line = self.lines[self.pos]
        if line.text.startswith("- ") or line.text == "-":
            return self.parse_sequence(line.indent)
        if self._split_key(line) is not None:
            return self.parse_mapping(line.indent)
        self.pos += 1
        return self.parse_inline(line.text, line.number)

    def _split_key(self, line: _Line) -> Optional[Tuple[str, str]]:
        """Split ``key: value`` (key plain or quoted); None when the line is not a mapping entry."""
        text = line.text
        if text[:1] in ("[", "{"):
            return None
        if text[:1] in ("'", '"'):
            end = self._quoted_end(text, line.number)
            rest = text[end:]
            if rest.startswith(":") and (len(rest) == 1 or rest[1] == " "):
                return text[:end], rest[1:].strip()
            return None
        match = re.match(r"^([^#]*?):(?: +(.*))?$", text)
        if not match or match.group(1).strip() == "":
            return None
        key = match.group(1)
        if ": " in key:
            return None
        return key, (match.group(2) or "").strip()

    def _quoted_end(self, text: str, number: int) -> int:
        quote = text[0]
        i = 1
        while i < len(text):
            if quote == '"' and text[i] == "\\":
                i += 2
                continue
            if text[i] == quote:
                if quote == "'" and i + 1 < len(text) and text[i + 1] == "'":
                    i += 2
                    continue
                return i + 1
            i += 1
        self.fail(number, "unterminated quoted string (multi-line quoted scalars are not supported)")
        return 0  # not reached

    def _key(self, raw: str, number: int) -> str:
        raw = raw.strip()
        if raw.startswith(("&", "*", "!", "?")):
            self.fail(number, "anchors, aliases, tags and complex keys are not supported")
        if raw[:1] in ("'", '"'):
            return str(self._quoted(raw, number))
        return _json_key(self._plain(raw, number, flow=False))

    def parse_mapping(self, indent: int) -> Dict[str, Any]:
        result: Dict[str, Any] = {}
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.indent < indent:
                break
            if line.indent > indent:
                self.fail(line.number, "unexpected indentation")
            split = self._split_key(line)
            if split is None:
                if line.text.startswith("-"):
                    break
                self.fail(line.number, "expected 'key: value', found %r" % line.text)
            raw_key, rest = split  # type: ignore[misc]
            key = self._key(raw_key, line.number)
            if key in result:
                self.fail(line.number, "duplicate key %r" % key)
            self.pos += 1
            result[key] = self._value_after_indicator(rest, line, indent, allow_same_indent_seq=True)
        return result

    def _value_after_indicator(self,
                               rest: str,
                               line: _Line,
                               indent: int,
                               allow_same_indent_seq: bool) -> Any:
        if rest:
            if rest[:1] in ("|", ">"):
                self.fail(line.number, "block scalars (| or >) are not supported; use a quoted string")
            if rest.startswith(("&", "*", "!")):
                self.fail(line.number, "anchors, aliases and tags are not supported")
            return self.parse_inline(rest, line.number)
        if self.pos < len(self.lines):
            nxt = self.lines[self.pos]
            if nxt.indent > indent:
                return self.parse_node(nxt.indent)
            if allow_same_indent_seq and nxt.indent == indent and (nxt.text.startswith("- ") or nxt.text == "-"):
                return self.parse_sequence(indent)
        return None

    def parse_sequence(self, indent: int) -> List[Any]:
        result: List[Any] = []
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            if line.indent != indent or not (line.text.startswith("- ") or line.text == "-"):
                if line.indent > indent:
                    self.fail(line.number, "unexpected indentation")
                break
            rest = line.text[1:].strip()
            if not rest:
                self.pos += 1
                result.append(self._value_after_indicator("", line, indent, allow_same_indent_seq=False))
                continue
            # "- key: value" starts a mapping whose keys sit at indent + 2 (+ extra spaces)
            offset = len(line.text) - len(line.text[1:].lstrip(" "))
            inner = _Line(line.number, indent + offset, rest)
            if rest.startswith("- ") or self._split_key(inner) is not None:
                self.lines[self.pos] = inner
                result.append(self.parse_node(inner.indent))
            else:
                self.pos += 1
                result.append(self.parse_inline(rest, line.number))
        return result

    def _quoted(self, text: str, number: int) -> str:
        end = self._quoted_end(text, number)
        if text[end:].strip():
            self.fail(number, "unexpected text after quoted string: %r" % text[end:].strip())
        body = text[1 : end - 1]
        if text[0] == "'":
            return body.replace("''", "'")
        try:
            return _unescape_double(body)
        except ValueError as exc:
            self.fail(number, "%s in double-quoted string %s" % (exc, text))
        return ""  # not reached

    def parse_inline(self, text: str, number: int) -> Any:
        text = text.strip()
        if text[:1] in ("[", "{"):
            value, end = self._flow(text, 0, number)
            if text[end:].strip():
                self.fail(number, "unexpected text after flow collection: %r" % text[end:].strip())
            return value
        if text[:1] in ("'", '"'):
            return self._quoted(text, number)
        if text.startswith(("&", "*", "!")):
            self.fail(number, "anchors, aliases and tags are not supported")
        if text[:1] in ("|", ">"):
            self.fail(number, "block scalars (| or >) are not supported; use a quoted string")
        if text.startswith("- "):
            self.fail(number, "unexpected sequence entry %r" % text)
        return self._plain(text, number, flow=False)

    def _plain(self, text: str, number: int, flow: bool) -> Any:
        """A plain scalar typed as PyYAML types it, or refused with the line named."""
        problem = _plain_scalar_problem(text, flow)
        if problem is not None:
            self.fail(number, problem)
        try:
            return _resolve_plain(text)
        except _PlainError as exc:
            self.fail(number, str(exc))
        return None  # not reached

    def _flow(self, text: str, i: int, number: int) -> Tuple[Any, int]:
        """Parse a one-line flow collection starting at text[i]; return (value, index after)."""
        opener = text[i]
        closer = "]" if opener == "[" else "}"
        items: Any = [] if opener == "[" else {}
        i += 1
        while True:
            while i < len(text) and text[i] == " ":
                i += 1
            if i >= len(text):
                self.fail(number, "unterminated flow collection (multi-line flow collections are not supported)")
            if text[i] == closer:
                return items, i + 1
            key_text, i = self._flow_scalar_or_collection(text, i, number, stop=",:" + closer)
            while i < len(text) and text[i] == " ":
                i += 1
            if opener == "{":
                if i < len(text) and text[i] == ":":
                    i += 1
                    while i < len(text) and text[i] == " ":
                        i += 1
                    if i < len(text) and text[i] in "," + closer:
                        value: Any = None
                    else:
                        value, i = self._flow_scalar_or_collection(text, i, number, stop="," + closer)
                else:
                    value = None
                key = key_text if isinstance(key_text, str) and not isinstance(key_text, bool) else _json_key(key_text)
                if isinstance(key_text, (dict, list)):
                    self.fail(number, "complex mapping keys are not supported")
                items[_json_key(key)] = value
            else:
                items.append(key_text)
            while i < len(text) and text[i] == " ":
                i += 1
            if i < len(text) and text[i] == ",":
                i += 1
                continue
            if i < len(text) and text[i] == closer:
                return items, i + 1
            if i >= len(text):
                self.fail(number, "unterminated flow collection (multi-line flow collections are not supported)")
            self.fail(number, "expected ',' or %r in flow collection %r" % (closer, text))

    def _flow_scalar_or_collection(self,
                                   text: str,
                                   i: int,
                                   number: int,
                                   stop: str) -> Tuple[Any, int]:
        if text[i] in "[{":
            return self._flow(text, i, number)
        if text[i] in "'\"":
            end = i + self._quoted_end(text[i:], number)
            return self._quoted(text[i:end], number), end
        j = i
        while j < len(text):
            ch = text[j]
            if ch in stop and (ch != ":" or j + 1 >= len(text) or text[j + 1] in " ,]}"):
                break
            j += 1
        return self._plain(text[i:j].strip(), number, flow=True), j


_SIMPLE_ESCAPES = {
    "0": "\0", "a": "\a", "b": "\b", "t": "\t", "\t": "\t", "n": "\n", "v": "\v", "f": "\f",
    "r": "\r", "e": "\x1b", " ": " ", '"': '"', "/": "/", "\\": "\\", "N": "\x85", "_": "\xa0",
    "L": "\u2028", "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}


def _unescape_double(body: str) -> str:
    """Decode the escapes of a YAML double-quoted scalar (single line)."""
    out = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        code = body[i + 1 : i + 2]
        if code in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[code])
            i += 2
        elif code in _HEX_ESCAPES:
            width = _HEX_ESCAPES[code]
            digits = body[i + 2 : i + 2 + width]
            if len(digits) != width or not re.match(r"^[0-9a-fA-F]+$", digits):
                raise ValueError("bad escape \\%s%s" % (code, digits))
            out.append(chr(int(digits, 16)))
            i += 2 + width
        else:
            raise ValueError("unsupported escape \\%s" % code)
    return "".join(out)
