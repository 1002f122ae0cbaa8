# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Go ``encoding/json`` behaviour for the kubelet's checkpoint structs, in Python.

Why not plain :mod:`json`: the kubelet's state files are written by Go and their checksums are
computed over Go values, so three Go-specific behaviours matter byte for byte:

* **decoding** into a typed struct: keys match field names case-insensitively, unknown keys are
  ignored, ``null`` makes a map/slice/pointer *nil* but leaves a string or number unchanged, a
  duplicate key decodes into the already-decoded map (merging), numbers must fit the Go integer
  type, and a type mismatch is reported the Go way after the whole document was read;
* **nil versus empty**: the legacy checksums (see :mod:`.gospew`) render a nil map as ``<nil>``
  and an empty one as ``map[]``, so decoding keeps that distinction (``None`` = nil);
* **encoding**: compact, struct fields in declaration order, ``omitempty``, map keys sorted as
  strings (NUMA ids ``"10"`` before ``"2"``), ``<``, ``>``, ``&``, U+2028 and U+2029 escaped as
  ``\\u003c`` ... (``json.Marshal`` escapes HTML), ``\\b``/``\\f`` short escapes (Go >= 1.22).

A tiny type model (:class:`GoType`, :class:`Field`) describes the few structs involved; the same
description drives decoding, encoding and the go-spew rendering. Values of that model are plain
Python: ``str``, ``int``, ``dict`` (Go map, or Go struct keyed by Go field name), ``list``
(slice) and ``None`` (nil). Standard library only; Python 3.8+.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import codecs
import json
import re

try:
    from typing import Any, Dict, List, Optional, Sequence, Tuple  # noqa: F401 (type comments)
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_quote

STRING = "string"
UINT = "uint"
INT = "int"
MAP = "map"
SLICE = "slice"
PTR = "ptr"
STRUCT = "struct"

_UINT64_MAX = (1 << 64) - 1
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1


class GoJSONError(NumaguardError):
    """A document Go's ``encoding/json`` would refuse; the message is Go's wording."""


class Field:
    """One exported field of a Go struct: Go name, JSON name, type, ``omitempty``."""

    __slots__ = ("go_name", "json_name", "type", "omitempty")

    def __init__(self,
                 go_name: str,
                 json_name: str,
                 gotype: GoType,
                 omitempty: bool = False) -> None:
        self.go_name = go_name
        self.json_name = json_name
        self.type = gotype
        self.omitempty = omitempty


class GoType:
    """A Go type: its kind, its name as ``reflect.Type.String()`` prints it, and its parts."""

    __slots__ = ("kind", "name", "key", "elem", "fields")
    key: Any  # the key GoType of a map, else None
    elem: Any  # the element GoType of a map, slice or pointer, else None

    def __init__(self,
                 kind: str,
                 name: str,
                 key: Optional[GoType] = None,
                 elem: Optional[GoType] = None,
                 fields: Optional[Sequence[Field]] = None) -> None:
        self.kind = kind
        self.name = name
        self.key = key
        self.elem = elem
        self.fields = tuple(fields or ())

    def __repr__(self) -> str:
        return "GoType(%s)" % self.name


def string_type(name: str = "string") -> GoType:
    """A Go string (or a named string type such as ``v1.ResourceName``)."""
    return GoType(STRING, name)


def uint_type(name: str = "uint64") -> GoType:
    """A Go uint64 (or a named one such as ``checksum.Checksum``)."""
    return GoType(UINT, name)


def int_type(name: str = "int") -> GoType:
    """A Go int (64-bit on every platform the kubelet runs on)."""
    return GoType(INT, name)


def map_type(key: GoType, elem: GoType, name: Optional[str] = None) -> GoType:
    """A Go map; ``name`` for named map types (``state.NUMANodeMap``)."""
    return GoType(MAP, name or "map[%s]%s" % (key.name, elem.name), key=key, elem=elem)


def slice_type(elem: GoType, name: Optional[str] = None) -> GoType:
    """A Go slice."""
    return GoType(SLICE, name or "[]%s" % elem.name, elem=elem)


def ptr_type(elem: GoType) -> GoType:
    """A Go pointer."""
    return GoType(PTR, "*%s" % elem.name, elem=elem)


def struct_type(name: str, fields: Sequence[Field]) -> GoType:
    """A Go struct with its exported fields in declaration order."""
    return GoType(STRUCT, name, fields=fields)


# --------------------------------------------------------------------------------------------
# Syntax: parse with the json module, reproduce Go's error wording.
# --------------------------------------------------------------------------------------------

class _Number:
    """A JSON number literal, kept as text: Go decides per target type what it accepts."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class JSONObject:
    """A JSON object as its list of (key, value) pairs, duplicates and order preserved."""

    __slots__ = ("pairs",)

    def __init__(self, pairs: List[Tuple[str, Any]]) -> None:
        self.pairs = pairs


def _go_replace(error: Any) -> Tuple[str, int]:
    """Go replaces every byte of an invalid UTF-8 sequence by U+FFFD."""
    return ("\ufffd" * (error.end - error.start), error.end)


codecs.register_error("numaguard-go-replace", _go_replace)

_SURROGATE = re.compile("[\ud800-\udfff]")


def to_text(data: Any) -> str:
    """Return ``data`` (str or bytes) as text, invalid UTF-8 replaced the way Go does."""
    if isinstance(data, bytes):
        return data.decode("utf-8", "numaguard-go-replace")
    if not isinstance(data, str):
        raise GoJSONError("checkpoint content must be text or bytes, got %s" % type(data).__name__)
    return data


def _quote_char(char: str) -> str:
    """Go's quoteChar for a scanner error: the offending *byte* as a rune, quoted with '."""
    if char >= "\x80":
        char = chr(char.encode("utf-8", "surrogatepass")[0])
    if char == "'":
        return "'\\''"
    if char == '"':
        return "'\"'"
    return "'" + go_quote(char)[1:-1] + "'"


_SPACE = " \t\r\n"
_HEX = "0123456789abcdefABCDEF"
_DIGITS = "0123456789"
_ESCAPABLE = '"\\/bfnrtu'


class _Scanner:
    """A JSON syntax check with the error texts of Go's encoding/json scanner.

    Go validates the whole input before decoding anything, so a syntax error always wins over
    a type error, and its wording is what the kubelet reports ("unexpected end of JSON input",
    "invalid character 'x' after object key", ...).
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, where: str) -> GoJSONError:
        if self.pos >= len(self.text):
            return GoJSONError("unexpected end of JSON input")
        return GoJSONError("invalid character %s %s" % (_quote_char(self.text[self.pos]), where))

    def skip_space(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in _SPACE:
            pos += 1
        self.pos = pos

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def check(self) -> None:
        self.skip_space()
        self.value()
        self.skip_space()
        if self.pos < len(self.text):
            raise self.fail("after top-level value")

    def value(self) -> None:
        # explicit stack instead of recursion: arbitrarily deep unknown keys stay checkable
        stack: List[str] = []
        while True:
            self.skip_space()
            char = self.peek()
            if char == "{":
                self.pos += 1
                self.skip_space()
                if self.peek() == "}":
                    self.pos += 1
                else:
                    self.key()
                    stack.append("{")
                    continue
            elif char == "[":
                self.pos += 1
                self.skip_space()
                if self.peek() == "]":
                    self.pos += 1
                else:
                    stack.append("[")
                    continue
            elif char == '"':
                self.string()
            elif char == "-" or char in _DIGITS and char:
                self.number()
            elif char in ("t", "f", "n") and char:
                self.literal({"t": "true", "f": "false", "n": "null"}[char])
            else:
                raise self.fail("looking for beginning of value")
            # a value ended: close containers as far as the input says
            while stack:
                self.skip_space()
                char = self.peek()
                if stack[-1] == "{":
                    if char == ",":
                        self.pos += 1
                        self.skip_space()
                        self.key()
                        break
                    if char == "}":
                        self.pos += 1
                        stack.pop()
                        continue
                    raise self.fail("after object key:value pair")
                if char == ",":
                    self.pos += 1
                    break
                if char == "]":
                    self.pos += 1
                    stack.pop()
                    continue
                raise self.fail("after array element")
            if not stack:
                return

    def key(self) -> None:
        if self.peek() != '"':
            raise self.fail("looking for beginning of object key string")
        self.string()
        self.skip_space()
        if self.peek() != ":":
            raise self.fail("after object key")
        self.pos += 1

    def string(self) -> None:
        text = self.text
        pos = self.pos + 1
        while True:
            if pos >= len(text):
                self.pos = pos
                raise self.fail("in string literal")
            char = text[pos]
            if char == '"':
                self.pos = pos + 1
                return
            if char < " ":
                self.pos = pos
                raise self.fail("in string literal")
            if char == "\\":
                pos += 1
                if pos < len(text) and text[pos] not in _ESCAPABLE:
                    self.pos = pos
                    raise self.fail("in string escape code")
                if pos < len(text) and text[pos] == "u":
                    for _index in range(4):
                        pos += 1
                        if pos >= len(text) or text[pos] not in _HEX:
                            self.pos = pos
                            raise self.fail("in \\u hexadecimal character escape")
            pos += 1

    def number(self) -> None:
        if self.peek() == "-":
            self.pos += 1
            if self.peek() not in _DIGITS or not self.peek():
                raise self.fail("in numeric literal")
        if self.peek() == "0":
            self.pos += 1
        else:
            self.digits()
        if self.peek() == ".":
            self.pos += 1
            if self.peek() not in _DIGITS or not self.peek():
                raise self.fail("after decimal point in numeric literal")
            self.digits()
        if self.peek() in ("e", "E") and self.peek():
            self.pos += 1
            if self.peek() in ("+", "-") and self.peek():
                self.pos += 1
            if self.peek() not in _DIGITS or not self.peek():
                raise self.fail("in exponent of numeric literal")
            self.digits()

    def digits(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in _DIGITS:
            pos += 1
        self.pos = pos

    def literal(self, word: str) -> None:
        for expected in word:
            if self.peek() != expected:
                raise self.fail("in literal %s (expecting %s)" % (word, _quote_char(expected)))
            self.pos += 1


def parse(data: Any) -> Any:
    """Parse JSON text the way Go's scanner accepts it; return an untyped tree.

    Objects become :class:`JSONObject` (pairs), numbers :class:`_Number` (literal text), strings
    ``str`` (lone surrogate escapes replaced by U+FFFD, as Go does), ``true``/``false`` bool,
    ``null`` None. Raises :class:`GoJSONError` with Go's message on a syntax error.
    """
    text = to_text(data)
    try:
        # Python's parser accepts exactly Go's grammar once NaN/Infinity are refused (a property
        # test checks this), and it is fast; the scanner runs only to word the error as Go does.
        tree = json.loads(text, object_pairs_hook=JSONObject, parse_int=_Number,
                          parse_float=_Number, parse_constant=_refuse_constant)
    except RecursionError:
        raise GoJSONError("JSON nested too deeply to read")
    except ValueError as error:
        _Scanner(text).check()
        raise GoJSONError("invalid JSON: %s" % error)  # pragma: no cover - scanner raises first
    return _fix_surrogates(tree)


def _refuse_constant(name: str) -> Any:
    raise ValueError("%s is not JSON" % name)


def _fix_surrogates(node: Any) -> Any:
    if isinstance(node, str):
        return _SURROGATE.sub("\ufffd", node) if _SURROGATE.search(node) else node
    if isinstance(node, JSONObject):
        node.pairs = [(_fix_surrogates(k), _fix_surrogates(v)) for k, v in node.pairs]
        return node
    if isinstance(node, list):
        return [_fix_surrogates(item) for item in node]
    return node


# --------------------------------------------------------------------------------------------
# Decoding into a typed Go value.
# --------------------------------------------------------------------------------------------

def fold_name(name: str) -> str:
    """Case folding as Go's bytes.EqualFold matches ASCII field names (Kelvin sign, long s)."""
    out = []
    for char in name:
        if char == "\u212a":
            out.append("k")
        elif char == "\u017f":
            out.append("s")
        elif char < "\x80":
            out.append(char.lower())
        else:
            out.append(char)
    return "".join(out)


def _json_kind(node: Any) -> str:
    if isinstance(node, JSONObject):
        return "object"
    if isinstance(node, list):
        return "array"
    if isinstance(node, bool):
        return "bool"
    if isinstance(node, _Number):
        return "number"
    return "string"


class _Decoder:
    """Decode an untyped tree into a typed value; remember the first type error like Go."""

    def __init__(self, top_name: str) -> None:
        self.top_name = top_name
        self.error: Optional[GoJSONError] = None

    def _save(self,
              value_desc: str,
              gotype: GoType,
              struct_name: Optional[str],
              path: List[str]) -> None:
        if self.error is not None:
            return
        if struct_name is not None and path:
            self.error = GoJSONError("json: cannot unmarshal %s into Go struct field %s.%s of type %s"
                                     % (value_desc, struct_name, ".".join(path), gotype.name))
        else:
            self.error = GoJSONError("json: cannot unmarshal %s into Go value of type %s"
                                     % (value_desc, gotype.name))

    def decode(self,
               node: Any,
               gotype: GoType,
               current: Any,
               struct_name: Optional[str],
               path: List[str]) -> Any:
        """Return the new Go value of ``gotype`` after decoding ``node`` into ``current``."""
        if node is None:
            if gotype.kind in (MAP, SLICE, PTR):
                return None
            return current
        kind = gotype.kind
        if kind == PTR:
            inner = current if current is not None else zero_value(gotype.elem)
            return self.decode(node, gotype.elem, inner, struct_name, path)
        if kind == STRING:
            if isinstance(node, str):
                return node
            self._save(_json_kind(node), gotype, struct_name, path)
            return current
        if kind in (UINT, INT):
            if not isinstance(node, _Number):
                self._save(_json_kind(node), gotype, struct_name, path)
                return current
            value = _parse_integer(node.text, kind)
            if value is None:
                self._save("number " + node.text, gotype, struct_name, path)
                return current
            return value
        if kind == MAP:
            if not isinstance(node, JSONObject):
                self._save(_json_kind(node), gotype, struct_name, path)
                return current
            result = current if current is not None else {}
            for key_text, item in node.pairs:
                key = self._map_key(key_text, gotype.key, struct_name, path)
                if key is None:
                    continue
                result[key] = self.decode(item, gotype.elem, zero_value(gotype.elem), struct_name, path)
            return result
        if kind == SLICE:
            if not isinstance(node, list):
                self._save(_json_kind(node), gotype, struct_name, path)
                return current
            old = current or []
            items = []
            for index, item in enumerate(node):
                base = old[index] if index < len(old) else zero_value(gotype.elem)
                items.append(self.decode(item, gotype.elem, base, struct_name, path))
            return items
        if kind == STRUCT:
            if not isinstance(node, JSONObject):
                self._save(_json_kind(node), gotype, struct_name, path)
                return current
            result = dict(current) if current is not None else zero_value(gotype)
            by_name = dict((f.json_name, f) for f in gotype.fields)
            by_fold = dict((fold_name(f.json_name), f) for f in gotype.fields)
            for key, item in node.pairs:
                field = by_name.get(key) or by_fold.get(fold_name(key))
                if field is None:
                    continue  # unknown keys are ignored
                result[field.go_name] = self.decode(item, field.type, result[field.go_name],
                                                    gotype.name.split(".")[-1], path + [field.json_name])
            return result
        raise AssertionError("unsupported Go kind %r" % kind)  # pragma: no cover

    def _map_key(self,
                 text: str,
                 key_type: GoType,
                 struct_name: Optional[str],
                 path: List[str]) -> Any:
        if key_type.kind == STRING:
            return text
        value = _parse_integer(text, key_type.kind)
        if value is None:
            self._save("number " + text, key_type, struct_name, path)
        return value


def _parse_integer(text: str, kind: str) -> Optional[int]:
    """strconv.ParseUint / ParseInt(text, 10, 64): digits only (sign allowed for int)."""
    body = text
    if kind == INT and body[:1] in ("+", "-"):
        body = body[1:]
    elif kind == UINT and body[:1] == "+":
        body = body[1:]
    if not body or not body.isdigit() or not body.isascii():
        return None
    value = int(text)
    if kind == UINT and not 0 <= value <= _UINT64_MAX:
        return None
    if kind == INT and not _INT64_MIN <= value <= _INT64_MAX:
        return None
    return value


def zero_value(gotype: GoType) -> Any:
    """Go's zero value: "" / 0 / nil, and a struct of zero fields."""
    if gotype.kind == STRING:
        return ""
    if gotype.kind in (UINT, INT):
        return 0
    if gotype.kind == STRUCT:
        return dict((f.go_name, zero_value(f.type)) for f in gotype.fields)
    return None


def decode_tree(tree: Any,
                gotype: GoType,
                initial: Optional[Dict[str, Any]] = None) -> Tuple[Dict[str, Any], Optional[GoJSONError]]:
    """Decode a :func:`parse` tree into a struct type; return (value, first type error or None).

    Like Go, decoding goes on after a type error, so the fields that did decode are set; the
    caller decides whether the error matters (the kubelet's version fallback does).
    """
    start = zero_value(gotype)
    if initial:
        start.update(initial)
    decoder = _Decoder(gotype.name)
    value = decoder.decode(tree, gotype, start, None, [])
    return value, decoder.error


def unmarshal(data: Any,
              gotype: GoType,
              initial: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """``json.Unmarshal(data, &v)`` for a struct type; ``initial`` = pre-initialised fields.

    Syntax errors win over type errors (Go validates the whole input first); of several type
    errors the first one is reported, after the whole document was decoded (as Go does).
    """
    value, error = decode_tree(parse(data), gotype, initial)
    if error is not None:
        raise error
    return value


# --------------------------------------------------------------------------------------------
# Encoding.
# --------------------------------------------------------------------------------------------

_ESCAPES = {
    '"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f",
    "<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029",
}
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f<>&\u2028\u2029\ud800-\udfff]')


def _escape_char(match: Any) -> str:
    char = match.group(0)
    if char in _ESCAPES:
        return _ESCAPES[char]
    if "\ud800" <= char <= "\udfff":
        return "\ufffd"
    return "\\u%04x" % ord(char)


def encode_string(text: str) -> str:
    """A Go ``json.Marshal`` string literal (HTML-safe, U+2028/2029 escaped, UTF-8 raw)."""
    return '"' + _NEEDS_ESCAPE.sub(_escape_char, text) + '"'


def _is_empty(value: Any, gotype: GoType) -> bool:
    if gotype.kind in (MAP, SLICE):
        return not value
    if gotype.kind == PTR:
        return value is None
    if gotype.kind == STRING:
        return value == ""
    if gotype.kind in (UINT, INT):
        return value == 0
    return False  # structs are never empty for omitempty


def _map_key_text(key: Any, key_type: GoType) -> str:
    return key if key_type.kind == STRING else str(key)


def marshal(value: Any, gotype: GoType) -> str:
    """``json.Marshal(value)``: compact Go encoding of a typed value."""
    kind = gotype.kind
    if kind == PTR:
        return "null" if value is None else marshal(value, gotype.elem)
    if kind == STRING:
        return encode_string(value)
    if kind in (UINT, INT):
        return str(int(value))
    if kind == MAP:
        if value is None:
            return "null"
        items = sorted(((_map_key_text(k, gotype.key), v) for k, v in value.items()),
                       key=lambda pair: pair[0])
        return "{" + ",".join(encode_string(k) + ":" + marshal(v, gotype.elem) for k, v in items) + "}"
    if kind == SLICE:
        if value is None:
            return "null"
        return "[" + ",".join(marshal(item, gotype.elem) for item in value) + "]"
    if kind == STRUCT:
        parts = []
        for field in gotype.fields:
            item = value.get(field.go_name, zero_value(field.type))
            if field.omitempty and _is_empty(item, field.type):
                continue
            parts.append(encode_string(field.json_name) + ":" + marshal(item, field.type))
        return "{" + ",".join(parts) + "}"
    raise AssertionError("unsupported Go kind %r" % kind)  # pragma: no cover
