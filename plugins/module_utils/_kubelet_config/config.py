# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""KubeletConfiguration files: read (main file + ``--config-dir`` drop-ins), write, merge.

Why this exists: every part of the collection needs the *effective* kubelet configuration of a
node (what the kubelet will really run with), and that is not simply the main file.

How the kubelet builds it (cmd/kubelet/app/server.go, ``loadConfigFile`` and
``mergeKubeletConfigurations``; GA in 1.35):

1. The main ``--config`` file is decoded (it must carry ``apiVersion``
   ``kubelet.config.k8s.io/v1beta1`` or ``/v1`` and ``kind: KubeletConfiguration``; an empty file
   is an error) and defaulted. When it leaves ``evictionHard`` unset, the kubelet puts the
   default thresholds there *before* merging drop-ins.
2. The ``--config-dir`` directory is walked recursively in lexical order (Go ``filepath.WalkDir``:
   entries of a directory sorted by name, sub-directories descended where they sort); every
   regular file whose extension is exactly ``.conf`` is a drop-in. Each drop-in is decoded on its
   own (so it too needs ``apiVersion``/``kind``) and applied with a JSON merge patch (RFC 7386):
   maps merge key by key at every depth, lists and scalars are replaced.
3. Because the accumulated drop-in JSON is finally *unmarshalled onto* the already loaded main
   configuration, a ``null`` in a drop-in only cancels what an earlier drop-in set; it cannot
   remove a value that comes from the main file (the base keeps it). Maps of the main file are
   extended, not replaced (``featureGates`` from the main file survive a drop-in that sets
   other gates).

This module reproduces exactly that, with the standard library only: YAML is read with PyYAML
when it is importable on the target and otherwise with a small reader of the YAML subset that
kubelet configurations use (block and flow mappings/sequences, plain and quoted scalars with
YAML 1.1 typing, comments); JSON is accepted too (it is YAML). Writing uses our own emitter
(:func:`dump_yaml`), so that output is byte-for-byte deterministic whatever is installed.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import copy
import datetime
import json
import math
import os
import re

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.eviction import (  # the Linux defaults
    DEFAULT_EVICTION_HARD,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError

try:  # pragma: no cover - exercised when PyYAML is present (it is, in the project venv)
    import yaml as _yaml  # type: ignore

    _HAVE_PYYAML = True
except ImportError:  # pragma: no cover
    _yaml = None
    _HAVE_PYYAML = False

try:
    from typing import Any, Dict, Iterator, List, Optional, Tuple  # noqa: F401 (type comments)
except ImportError:  # pragma: no cover
    pass

KUBELET_API_VERSIONS = ("kubelet.config.k8s.io/v1beta1", "kubelet.config.k8s.io/v1")
KUBELET_KIND = "KubeletConfiguration"
DROPIN_EXTENSION = ".conf"


class KubeletConfigError(NumaguardError):
    """A kubelet configuration file or directory that the kubelet would not load."""


def kubelet_defaults() -> Dict[str, Any]:
    """The kubelet's defaults for the NUMA-related fields (v1beta1 ``SetDefaults`` + loader).

    A fresh copy every call, so callers may mutate it.
    """
    return {
        "cpuManagerPolicy": "none",
        "cpuManagerPolicyOptions": {},
        "cpuManagerReconcilePeriod": "10s",
        "reservedSystemCPUs": "",
        "topologyManagerPolicy": "none",
        "topologyManagerScope": "container",
        "topologyManagerPolicyOptions": {},
        "memoryManagerPolicy": "None",
        "reservedMemory": [],
        "kubeReserved": {},
        "systemReserved": {},
        "evictionHard": dict(DEFAULT_EVICTION_HARD),
        "featureGates": {},
        "mergeDefaultEvictionSettings": False,
    }


# --------------------------------------------------------------------------------------------
# YAML reading
# --------------------------------------------------------------------------------------------

_NULL_WORDS = ("", "~", "null", "Null", "NULL")
_TRUE_WORDS = ("true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON")
_FALSE_WORDS = ("false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF")
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


def _escape_double(text: str) -> str:
    """Double-quote a string so that every YAML reader gets it back exactly (ASCII output)."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif 0x20 <= code < 0x7F:
            out.append(ch)
        elif code <= 0xFF:
            out.append("\\x%02x" % code)
        elif code <= 0xFFFF:
            out.append("\\u%04x" % code)
        else:
            out.append("\\U%08x" % code)
    out.append('"')
    return "".join(out)


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


def _normalise(value: Any, where: str) -> Any:
    """Make PyYAML output JSON-shaped: string keys, no dates/bytes/sets."""
    if isinstance(value, dict):
        return dict((_json_key(k), _normalise(v, where)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_normalise(v, where) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    # dates and timestamps: the kubelet's YAML->JSON step makes them strings
    return str(value)


_KEYED_LOADERS: Dict[Any, Any] = {}


def _json_keyed_loader(base: Any) -> Any:
    """PyYAML's loader ``base`` with mappings keyed by JSON strings as they are built.

    Why: PyYAML's own mapping is a Python dict, where the keys ``1``, ``1.0`` and ``true`` are
    equal and merge into one entry; the kubelet's YAML-to-JSON step keeps them apart ("1",
    "true"), and so does the built-in reader.
    """
    loader = _KEYED_LOADERS.get(base)
    if loader is not None:
        return loader

    class _Loader(base):
        pass

    def construct_map(self: Any, node: Any) -> Any:
        self.flatten_mapping(node)
        data: Dict[str, Any] = {}
        yield data
        for key_node, value_node in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (list, dict)):
                raise _yaml.constructor.ConstructorError("while constructing a mapping", node.start_mark,
                                                         "found a complex key", key_node.start_mark)
            data[_json_key(key)] = self.construct_object(value_node, deep=False)

    _Loader.add_constructor("tag:yaml.org,2002:map", construct_map)
    _KEYED_LOADERS[base] = _Loader
    return _Loader


_NESTED_LINE = re.compile(r"(?:[-?][ \t]+){32}")


def _may_nest_deeply(text: str) -> bool:
    """Cheap over-estimate: many flow brackets, or a line opening 32 nested block sequences."""
    return text.count("[") + text.count("{") > 256 or _NESTED_LINE.search(text) is not None


def parse_yaml(text: str, source: str = "<string>", use_pyyaml: Optional[bool] = None) -> Any:
    """Parse YAML (or JSON) text into plain JSON-shaped data (first document only).

    ``use_pyyaml`` None means "when importable"; False forces the built-in reader (tests use it
    to prove both give the same result).
    """
    if use_pyyaml is None:
        use_pyyaml = _HAVE_PYYAML
    if text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark is not content (PyYAML and Go's YAML reader skip it)
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except ValueError:
            pass  # flow-style YAML, not JSON
    if use_pyyaml and _yaml is not None:
        try:
            loader = getattr(_yaml, "CSafeLoader", None) or _yaml.SafeLoader  # libyaml when present
            if _may_nest_deeply(text):
                # libyaml's composer recurses on the C stack and crashes the process on deep
                # nesting; the Python loader raises RecursionError instead (caught by callers)
                loader = _yaml.SafeLoader
            for document in _yaml.load_all(text, Loader=_json_keyed_loader(loader)):
                return _normalise(document, source)
            return None
        except _yaml.YAMLError as exc:
            raise KubeletConfigError("%s: invalid YAML: %s" % (source, str(exc).replace("\n", " ")))
        except (ValueError, TypeError, OverflowError) as exc:
            # PyYAML's constructors raise these for values its resolver accepted (a date such
            # as 2001-13-45, the integer 0x_)
            raise KubeletConfigError("%s: invalid YAML value: %s" % (source, exc))
    return _MiniYAML(text, source).parse()


# --------------------------------------------------------------------------------------------
# YAML writing (deterministic)
# --------------------------------------------------------------------------------------------

_PLAIN_SAFE = re.compile(r"^[A-Za-z_/][A-Za-z0-9_./-]*\Z")
_RESERVED_WORDS = set(w.lower() for w in _NULL_WORDS + _TRUE_WORDS + _FALSE_WORDS + ("y", "n", ".inf", ".nan"))


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise KubeletConfigError("cannot write the non-finite number %r to a kubelet configuration" % value)
        return repr(value)
    if isinstance(value, str):
        if _PLAIN_SAFE.match(value) and value.lower() not in _RESERVED_WORDS:
            return value
        return _escape_double(value)
    raise KubeletConfigError("cannot write a value of type %s (%r) to a kubelet configuration" % (type(value).__name__, value))


def _emit(value: Any, indent: int, out: List[str]) -> None:
    pad = " " * indent
    if isinstance(value, dict):
        for key in sorted(value):
            item = value[key]
            label = pad + _scalar(str(key)) + ":"
            if isinstance(item, dict) and item:
                out.append(label)
                _emit(item, indent + 2, out)
            elif isinstance(item, list) and item:
                out.append(label)
                _emit(item, indent + 2, out)
            else:
                out.append(label + " " + _inline(item))
    elif isinstance(value, list):
        for item in value:
            if isinstance(item, dict) and item:
                sub: List[str] = []
                _emit(item, indent + 2, sub)
                sub[0] = pad + "- " + sub[0][indent + 2 :]
                out.extend(sub)
            elif isinstance(item, list) and item:
                sub = []
                _emit(item, indent + 2, sub)
                sub[0] = pad + "- " + sub[0][indent + 2 :]
                out.extend(sub)
            else:
                out.append(pad + "- " + _inline(item))
    else:
        out.append(pad + _inline(value))


def _inline(value: Any) -> str:
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, list):
        return "[]"
    return _scalar(value)


def dump_yaml(data: Any, header_keys: Tuple[str, ...] = ("apiVersion", "kind")) -> str:
    """Deterministic block YAML: ``header_keys`` first (when present), then keys sorted.

    Strings that YAML 1.1 could read as something else (``0-3``, ``100Mi``, ``on``, ``10%``)
    are double-quoted; output always ends with a newline. ``parse_yaml(dump_yaml(x)) == x`` for
    JSON-shaped data (tested).
    """
    out: List[str] = []
    if isinstance(data, dict):
        head = [k for k in header_keys if k in data]
        for key in head:
            _emit({key: data[key]}, 0, out)
        rest = dict((k, v) for k, v in data.items() if k not in head)
        if rest or not head:
            if rest:
                _emit(rest, 0, out)
            elif not out:
                out.append("{}")
    else:
        _emit(data, 0, out)
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------------------------
# Merge semantics
# --------------------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (what the kubelet applies for each drop-in). Returns a new value."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def overlay(base: Any, overrides: Any) -> Any:
    """Unmarshal ``overrides`` onto ``base`` the way Go's encoding/json does onto a loaded struct.

    Maps and structs are extended key by key, everything else is replaced, and a JSON ``null``
    leaves the base value alone (it has no Go field to clear in the already-loaded struct).
    """
    if isinstance(base, dict) and isinstance(overrides, dict):
        result = copy.deepcopy(base)
        for key, value in overrides.items():
            if value is None:
                continue
            result[key] = overlay(result.get(key), value)
        return result
    if overrides is None:
        return copy.deepcopy(base)
    return copy.deepcopy(overrides)


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


#: Bounds on a kubelet config file we read (real ones are a few KB and a few levels deep); a file
#: beyond them is refused with a message instead of exhausting memory or the Python stack.
MAX_CONFIG_BYTES = 4 << 20
MAX_CONFIG_DEPTH = 64


def nesting_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests dicts/lists deeper than ``limit`` (iterative, so never overflows)."""
    stack = [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, (dict, list)):
            if level > limit:
                return True
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def _read_text(path: str, what: str) -> str:
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise KubeletConfigError("cannot read %s %s: %s" % (what, path, exc.strerror or exc))
    if len(raw) > MAX_CONFIG_BYTES:
        raise KubeletConfigError("%s %s is larger than %d bytes; refusing it" % (what, path, MAX_CONFIG_BYTES))
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise KubeletConfigError("%s %s is not UTF-8 text (byte %d)" % (what, path, exc.start))


def parse_config_text(text: str, source: str, what: str = "kubelet config file") -> Dict[str, Any]:
    """Parse and check one KubeletConfiguration document (main file or drop-in)."""
    if not text.strip():
        raise KubeletConfigError("%s %s was empty" % (what, source))
    if len(text) > MAX_CONFIG_BYTES:
        raise KubeletConfigError("%s %s is larger than %d bytes; refusing it" % (what, source, MAX_CONFIG_BYTES))
    too_deep = KubeletConfigError("%s %s nests deeper than %d levels; refusing it" % (what, source, MAX_CONFIG_DEPTH))
    try:
        data = parse_yaml(text, source)
    except RecursionError:
        raise too_deep
    if nesting_exceeds(data, MAX_CONFIG_DEPTH):
        raise too_deep
    if not isinstance(data, dict):
        raise KubeletConfigError("%s %s: the document must be a mapping, found %s" % (what, source, type(data).__name__))
    kind = data.get("kind")
    api_version = data.get("apiVersion")
    if not kind:
        raise KubeletConfigError("%s %s: 'kind' is missing (expected kind: %s)" % (what, source, KUBELET_KIND))
    if not api_version:
        raise KubeletConfigError(
            "%s %s: 'apiVersion' is missing (expected apiVersion: %s)" % (what, source, KUBELET_API_VERSIONS[0])
        )
    if kind != KUBELET_KIND or api_version not in KUBELET_API_VERSIONS:
        raise KubeletConfigError(
            "%s %s: unsupported apiVersion/kind %s/%s (expected %s, kind %s)"
            % (what, source, api_version, kind, " or ".join(KUBELET_API_VERSIONS), KUBELET_KIND)
        )
    return data


def read_config_file(path: str, what: str = "kubelet config file") -> Dict[str, Any]:
    """Read and check one KubeletConfiguration file."""
    return parse_config_text(_read_text(path, what), path, what)


def list_dropins(config_dir: str) -> List[str]:
    """Drop-in files of ``config_dir`` in the order the kubelet applies them.

    Like Go's ``filepath.WalkDir``: directory entries sorted by name (bytewise), directories
    descended in place, regular files (and symlinks to them) with extension exactly ``.conf``.
    """
    if not os.path.isdir(config_dir):
        raise KubeletConfigError("kubelet drop-in directory %s does not exist or is not a directory" % config_dir)
    found: List[str] = []

    def walk(directory: str) -> None:
        try:
            names = sorted(os.listdir(directory), key=lambda n: n.encode("utf-8", "surrogateescape"))
        except OSError as exc:
            raise KubeletConfigError("failed to walk through kubelet dropin directory %s: %s" % (directory, exc.strerror))
        for name in names:
            full = os.path.join(directory, name)
            if os.path.isdir(full) and not os.path.islink(full):
                walk(full)
            elif os.path.splitext(name)[1] == DROPIN_EXTENSION and not os.path.isdir(full):
                found.append(full)

    walk(config_dir)
    return found


def merge_dropins(base: Dict[str, Any], dropins: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Apply parsed drop-in documents to a loaded main configuration (kubelet semantics).

    ``base`` must already have the loader's ``evictionHard`` default filled in when the main file
    did not set it (see :func:`load_kubelet_config`).
    """
    accumulated: Dict[str, Any] = {}
    for document in dropins:
        accumulated = merge_patch(accumulated, document)
    return overlay(base, accumulated)


def load_kubelet_config(path: Optional[str],
                        config_dir: Optional[str] = None,
                        with_defaults: bool = False) -> Dict[str, Any]:
    """The effective KubeletConfiguration of a node as a plain camelCase dict.

    ``path`` is the ``--config`` file (None: a kubelet configured by flags only; then only
    drop-ins and defaults count). ``config_dir`` is ``--config-dir`` (None: no drop-ins).
    The result keeps every key of the files (also unmanaged ones); ``evictionHard`` gets the
    kubelet's default thresholds when the main file does not set it but a drop-in does (that is
    what the kubelet does) -- or always with ``with_defaults=True``, which also fills every field
    of :func:`kubelet_defaults` that is still unset.
    Raises :class:`KubeletConfigError` naming the file and the problem.
    """
    if path:
        base = read_config_file(path)
    else:
        base = {"apiVersion": KUBELET_API_VERSIONS[0], "kind": KUBELET_KIND}
    main_has_eviction = base.get("evictionHard") is not None
    documents = []
    if config_dir:
        for dropin in list_dropins(config_dir):
            documents.append(read_config_file(dropin, what="drop-in kubelet config file"))
    if not main_has_eviction and (with_defaults or any(d.get("evictionHard") is not None for d in documents)):
        base["evictionHard"] = dict(DEFAULT_EVICTION_HARD)
    merged = merge_dropins(base, documents)
    if with_defaults:
        for key, value in kubelet_defaults().items():
            if merged.get(key) is None:
                merged[key] = value
    return merged
