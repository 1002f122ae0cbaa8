# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kubelet's legacy checkpoint checksum: FNV-1a 32 over go-spew's ``%#v`` rendering.

Why this exists: ``cpu_manager_state`` V1/V2/V3 and ``memory_manager_state`` V1/V2 (and the
legacy ``checksum`` field kept inside memory V3 files) carry ``checksum.New(cp)``, which is
``DeepHashObject``: go-spew prints the Go checkpoint *struct* with the configuration
{SortKeys, DisableMethods, SpewKeys, DisablePointerAddresses, DisableCapacities} and ``%#v``,
and FNV-1a 32 hashes the text. The hash therefore depends on Go type and package names and on
nil versus empty maps/slices. Only the small grammar these structs need is reproduced
(k8s.io/apimachinery/pkg/util/dump, hashed by pkg/kubelet/checkpointmanager/checksum), driven by the :mod:`.gojson` type model:

* a pointer shown with its type: ``(*state.T)`` then the pointee without type; inside a map or
  slice: ``<*>`` then the pointee; a nil pointer there: ``<nil>``;
* a struct: ``{Name:value Name:value}``, each field value prefixed by ``(type)``;
* a map: ``map[k:v k:v]`` with keys sorted (ints numerically, strings bytewise), keys and
  values without type; nil map ``<nil>``; a slice ``[a b]``, nil slice ``<nil>``;
* strings raw (no quotes, no escaping), integers in decimal.

The new-format checksums (``dataChecksum``) hash a Go *string*, which spew renders as
``(string)`` + raw text: :func:`string_checksum`.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s import gojson

try:
    from typing import Any, List  # noqa: F401 (type comments)
except ImportError:  # pragma: no cover
    pass

_FNV_OFFSET = 2166136261
_FNV_PRIME = 16777619


def fnv1a32(data: bytes) -> int:
    """FNV-1a, 32 bit (Go's hash/fnv New32a)."""
    value = _FNV_OFFSET
    for byte in bytearray(data):
        value ^= byte
        value = (value * _FNV_PRIME) & 0xFFFFFFFF
    return value


def spew(value: Any, gotype: gojson.GoType) -> str:
    """go-spew ``%#v`` of ``value`` (a Go value of ``gotype`` in the gojson model)."""
    out: List[str] = []
    _format(value, gotype, True, out, [False])
    return "".join(out)


def _sort_key(key: Any, key_type: gojson.GoType) -> Any:
    if key_type.kind == gojson.STRING:
        return key.encode("utf-8", "surrogatepass")
    return key


def _format(value: Any,
            gotype: gojson.GoType,
            show_type: bool,
            out: List[str],
            skip_type: List[bool]) -> None:
    """Append the rendering of ``value``.

    ``skip_type`` is go-spew's ``ignoreNextType`` flag as a mutable cell: go-spew sets it before
    every map key, map value and slice item, and clears it when it formats a non-pointer value.
    A nil pointer inside a map returns early without clearing it, so when that nil is the map's
    last value the *next* struct field is printed without its ``(type)`` prefix. The kubelet
    hashes that text, so we reproduce it (verified against go-spew 1.1.1).
    """
    if skip_type[0]:
        show_type = False
    kind = gotype.kind
    if kind == gojson.PTR:
        if value is None:
            out.append("(%s)<nil>" % gotype.name if show_type else "<nil>")
            skip_type[0] = not show_type  # the early return leaves the flag set
            return
        out.append("(%s)" % gotype.name if show_type else "<*>")
        skip_type[0] = True
        _format(value, gotype.elem, False, out, skip_type)
        return
    if show_type:
        out.append("(%s)" % gotype.name)
    skip_type[0] = False
    if kind == gojson.STRING:
        out.append(value)
    elif kind in (gojson.UINT, gojson.INT):
        out.append(str(int(value)))
    elif kind == gojson.MAP:
        if value is None:
            out.append("<nil>")
            return
        out.append("map[")
        keys = sorted(value, key=lambda k: _sort_key(k, gotype.key))
        for index, key in enumerate(keys):
            if index:
                out.append(" ")
            skip_type[0] = True
            _format(key, gotype.key, False, out, skip_type)
            out.append(":")
            skip_type[0] = True
            _format(value[key], gotype.elem, False, out, skip_type)
        out.append("]")
    elif kind == gojson.SLICE:
        if value is None:
            out.append("<nil>")
            return
        out.append("[")
        for index, item in enumerate(value):
            if index:
                out.append(" ")
            skip_type[0] = True
            _format(item, gotype.elem, False, out, skip_type)
        out.append("]")
    elif kind == gojson.STRUCT:
        out.append("{")
        for index, field in enumerate(gotype.fields):
            if index:
                out.append(" ")
            out.append(field.go_name + ":")
            _format(value.get(field.go_name), field.type, True, out, skip_type)
        out.append("}")
    else:  # pragma: no cover
        raise AssertionError("unsupported Go kind %r" % kind)


def object_checksum(value: Any, gotype: gojson.GoType) -> int:
    """checksum.New(&value): FNV-1a 32 of the spew rendering of a pointer to the struct."""
    text = spew(value, gojson.ptr_type(gotype))
    return fnv1a32(text.encode("utf-8", "surrogatepass"))


def string_checksum(text: str) -> int:
    """checksum.New(string): the ``dataChecksum`` of the V3/V4 formats."""
    return fnv1a32(("(string)" + text).encode("utf-8", "surrogatepass"))
