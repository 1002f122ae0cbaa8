# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
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
import json
import math
import os
import re

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.eviction import (  # the Linux defaults
    DEFAULT_EVICTION_HARD,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.yaml_base import (  # noqa: F401 (KubeletConfigError: its home for callers)
    _FALSE_WORDS,
    _NULL_WORDS,
    _TRUE_WORDS,
    KubeletConfigError,
    _json_key,
)

try:
    from typing import Any, Dict, List, Optional, Tuple  # noqa: F401 (type comments)
except ImportError:  # pragma: no cover
    pass

#: PyYAML, imported at the first document the built-in reader refuses (None: not yet; False: not
#: installed). Why late: importing it costs a fresh process ~23 ms (issue 12), and the built-in
#: reader reads every kubelet configuration we have seen as PyYAML does.
_yaml: Any = None


def _pyyaml() -> Any:
    """The ``yaml`` module, or None when it is not installed."""
    global _yaml  # pylint: disable=global-statement
    if _yaml is None:
        try:
            import yaml  # type: ignore  # pylint: disable=import-outside-toplevel
        except ImportError:  # pragma: no cover
            _yaml = False
        else:
            _yaml = yaml
    return _yaml or None


KUBELET_API_VERSIONS = ("kubelet.config.k8s.io/v1beta1", "kubelet.config.k8s.io/v1")
KUBELET_KIND = "KubeletConfiguration"
DROPIN_EXTENSION = ".conf"


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
# YAML reading (the built-in reader for targets without PyYAML: yaml_reader.py)
# --------------------------------------------------------------------------------------------


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
                raise _pyyaml().constructor.ConstructorError("while constructing a mapping", node.start_mark,
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

    ``use_pyyaml`` None: the built-in reader, and PyYAML (when installed) for what the built-in
    reader refuses -- the two agree wherever the built-in reader gives an answer (tests compare
    them), so the result is PyYAML's either way, without importing PyYAML for the usual file.
    True forces PyYAML, False the built-in reader (tests use both to compare them).
    """
    if text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark is not content (PyYAML and Go's YAML reader skip it)
    stripped = text.strip()
    if stripped[:1] in ("{", "["):
        try:
            return json.loads(stripped)
        except ValueError:
            pass  # flow-style YAML, not JSON
    yaml = _pyyaml() if use_pyyaml else None
    if yaml is None:
        # imported here: a run without a configuration file does not compile it (issue 12)
        from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.yaml_reader import _MiniYAML

        try:
            return _MiniYAML(text, source).parse()
        except (KubeletConfigError, RecursionError):
            yaml = _pyyaml() if use_pyyaml is None else None
            if yaml is None:
                raise
    try:
        loader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader  # libyaml when present
        if _may_nest_deeply(text):
            # libyaml's composer recurses on the C stack and crashes the process on deep
            # nesting; the Python loader raises RecursionError instead (caught by callers)
            loader = yaml.SafeLoader
        for document in yaml.load_all(text, Loader=_json_keyed_loader(loader)):
            return _normalise(document, source)
        return None
    except yaml.YAMLError as exc:
        raise KubeletConfigError("%s: invalid YAML: %s" % (source, str(exc).replace("\n", " ")))
    except (ValueError, TypeError, OverflowError) as exc:
        # PyYAML's constructors raise these for values its resolver accepted (a date such
        # as 2001-13-45, the integer 0x_)
        raise KubeletConfigError("%s: invalid YAML value: %s" % (source, exc))


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
# Credentials
# --------------------------------------------------------------------------------------------

#: Keys whose values are credentials: ``staticPodURLHeader`` (the headers sent with the static
#: pod URL, often ``Authorization``) and any header, token, password or secret field.
CREDENTIAL_KEY = re.compile(r"(?i)(header|token|password|secret)")
MASK = "********"


def mask_credentials(value: Any, masked: bool = False) -> Any:
    """A copy of ``value`` with every scalar below a credential key replaced by :data:`MASK`
    (keys are kept: header names are not secret; lists keep their length)."""
    if isinstance(value, dict):
        return dict((k, mask_credentials(v, masked or bool(CREDENTIAL_KEY.search(str(k))))) for k, v in value.items())
    if isinstance(value, list):
        return [mask_credentials(v, masked) for v in value]
    return MASK if masked and value is not None else value


def credential_values(value: Any, masked: bool = False) -> List[str]:
    """The scalars :func:`mask_credentials` hides, as text (to hide them in whatever else is
    returned: a diff, a message)."""
    if isinstance(value, dict):
        return [text for k, v in value.items() for text in credential_values(v, masked or bool(CREDENTIAL_KEY.search(str(k))))]
    if isinstance(value, list):
        return [text for v in value for text in credential_values(v, masked)]
    return [value if isinstance(value, str) else json.dumps(value)] if masked and value not in (None, "") else []


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
    if "\x00" in path:  # open() raises ValueError for it
        raise KubeletConfigError("cannot read %s %r: the path contains a NUL byte" % (what, path))
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
    # the one schema of the managed fields (the ``settings`` option's), here for what the host
    # holds: a wrong type is refused naming the file, the key and the value
    from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.fields import field_type_errors

    problems = field_type_errors(data)
    if problems:
        raise KubeletConfigError("%s %s: %s" % (what, source, "; ".join(problems)))
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
