# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The managed KubeletConfiguration fields: their table, their one schema and its types check.

Why a file of its own: every admission run given a kubelet configuration (a file, a drop-in,
a dict or a NUMA flag) checks the managed fields' types (:func:`field_type_errors`), and that is
all it needs of :mod:`settings`; a module run compiles its module_utils from source, so this
small file is what the admission path compiles instead of the settings checks (issue 24).
:mod:`settings` imports everything here and remains where the rest of the settings live.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re
from typing import Any, Dict, List

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.state import POLICIES as CPU_MANAGER_POLICIES
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.policy_none import POLICIES as MEMORY_MANAGER_POLICIES
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy import POLICIES as TOPOLOGY_MANAGER_POLICIES
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.scope import SCOPES as TOPOLOGY_MANAGER_SCOPES

# --------------------------------------------------------------------------------------------
# Field table
# --------------------------------------------------------------------------------------------

#: Managed field -> (kubelet flag, kind). Kind drives normalisation and flag rendering.
MANAGED_FIELDS = {
    "cpuManagerPolicy": ("--cpu-manager-policy", "string"),
    "cpuManagerPolicyOptions": ("--cpu-manager-policy-options", "options"),
    "cpuManagerReconcilePeriod": ("--cpu-manager-reconcile-period", "duration"),
    "reservedSystemCPUs": ("--reserved-cpus", "cpuset"),
    "topologyManagerPolicy": ("--topology-manager-policy", "string"),
    "topologyManagerScope": ("--topology-manager-scope", "string"),
    "topologyManagerPolicyOptions": ("--topology-manager-policy-options", "options"),
    "memoryManagerPolicy": ("--memory-manager-policy", "string"),
    "reservedMemory": ("--reserved-memory", "reservedMemory"),
    "kubeReserved": ("--kube-reserved", "resources"),
    "systemReserved": ("--system-reserved", "resources"),
    "evictionHard": ("--eviction-hard", "eviction"),
    "featureGates": ("--feature-gates", "gates"),
}

CPU_POLICIES = CPU_MANAGER_POLICIES
TOPOLOGY_POLICIES = TOPOLOGY_MANAGER_POLICIES
TOPOLOGY_SCOPES = TOPOLOGY_MANAGER_SCOPES
MEMORY_POLICIES = MEMORY_MANAGER_POLICIES

#: JSON schema (draft-07) of the ``settings`` option. The module checks it with the stdlib
#: validator below; tests check that jsonschema agrees and that the schema itself is valid.
_QUANTITY_TEXT = {"type": ["string", "integer"]}
SETTINGS_SCHEMA: Dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "numaguard.kubelet kubelet_config settings",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "cpuManagerPolicy": {"type": "string", "enum": list(CPU_POLICIES)},
        "cpuManagerPolicyOptions": {
            "type": "object",
            "additionalProperties": {"type": ["string", "boolean", "integer"]},
        },
        "cpuManagerReconcilePeriod": {"type": "string", "pattern": r"^([0-9]+(\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+$|^0$"},
        "reservedSystemCPUs": {"type": ["string", "integer"]},
        "topologyManagerPolicy": {"type": "string", "enum": list(TOPOLOGY_POLICIES)},
        "topologyManagerScope": {"type": "string", "enum": list(TOPOLOGY_SCOPES)},
        "topologyManagerPolicyOptions": {
            "type": "object",
            "additionalProperties": {"type": ["string", "boolean", "integer"]},
        },
        "memoryManagerPolicy": {"type": "string", "enum": list(MEMORY_POLICIES)},
        "reservedMemory": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["numaNode", "limits"],
                "properties": {
                    "numaNode": {"type": "integer", "minimum": 0},
                    "limits": {"type": "object", "additionalProperties": _QUANTITY_TEXT},
                },
            },
        },
        "kubeReserved": {"type": "object", "additionalProperties": _QUANTITY_TEXT},
        "systemReserved": {"type": "object", "additionalProperties": _QUANTITY_TEXT},
        "evictionHard": {"type": "object", "additionalProperties": {"type": "string"}},
        "featureGates": {"type": "object", "additionalProperties": {"type": "boolean"}},
    },
}


# --------------------------------------------------------------------------------------------
# A small JSON-schema validator (the subset SETTINGS_SCHEMA uses), standard library only
# --------------------------------------------------------------------------------------------

_JSON_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    # like JSON schema (and jsonschema): 1.0 is an integer
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _json_type_name(value: Any) -> str:
    for name in ("boolean", "integer", "number", "string", "array", "object", "null"):
        if _JSON_TYPES[name](value):
            return name
    return type(value).__name__


def schema_errors(value: Any, schema: Dict[str, Any], where: str = "settings") -> List[str]:
    """Errors of ``value`` against ``schema`` (type, enum, pattern, minimum, required,
    properties, additionalProperties, items), each naming the path and the bad value."""
    errors: List[str] = []
    types = schema.get("type")
    if types is not None:
        names = types if isinstance(types, list) else [types]
        if not any(_JSON_TYPES[name](value) for name in names):
            errors.append("%s: expected %s, got %s %r" % (where, " or ".join(names), _json_type_name(value), value))
            return errors
    if "enum" in schema and value not in schema["enum"]:
        errors.append("%s: %r is not one of %s" % (where, value, ", ".join(repr(v) for v in schema["enum"])))
    if "pattern" in schema and isinstance(value, str) and not re.search(schema["pattern"], value):
        errors.append("%s: %r does not match the expected format" % (where, value))
    if "minimum" in schema and _JSON_TYPES["number"](value) and value < schema["minimum"]:
        errors.append("%s: %r is less than the minimum %r" % (where, value, schema["minimum"]))
    if isinstance(value, dict):
        for key in schema.get("required", ()):
            if key not in value:
                errors.append("%s: required key %r is missing" % (where, key))
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key in sorted(value):
            sub = "%s.%s" % (where, key)
            if key in props:
                errors.extend(schema_errors(value[key], props[key], sub))
            elif extra is False:
                # the closest known field: a typo (reservedMemroy) says what was meant
                import difflib  # here: only an unknown key needs it (a module run's import, ~1 ms; issue 24)

                close = difflib.get_close_matches(key, sorted(props), n=1, cutoff=0.6) if isinstance(key, str) else []
                errors.append("%s: unknown key %r%s" % (where, key, "; did you mean %r?" % close[0] if close else ""))
            elif isinstance(extra, dict):
                errors.extend(schema_errors(value[key], extra, sub))
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            errors.extend(schema_errors(item, schema["items"], "%s[%d]" % (where, index)))
    return errors


def _shape(schema: Dict[str, Any]) -> Dict[str, Any]:
    """``schema`` with only its structure (types, properties, items): what a decoder checks."""
    shape: Dict[str, Any] = dict((k, schema[k]) for k in ("type",) if k in schema)
    if "properties" in schema:
        shape["properties"] = dict((k, _shape(v)) for k, v in schema["properties"].items())
    if isinstance(schema.get("additionalProperties"), dict):
        shape["additionalProperties"] = _shape(schema["additionalProperties"])
    if "items" in schema:
        shape["items"] = _shape(schema["items"])
    return shape


#: The types of SETTINGS_SCHEMA, for the managed fields of a document read from the host.
_FIELD_SHAPES: Dict[str, Any] = dict((field, _shape(sub)) for field, sub in SETTINGS_SCHEMA["properties"].items())


def field_type_errors(document: Any) -> List[str]:
    """Wrong types among the managed fields of a KubeletConfiguration document read from a host
    file, a drop-in or the kubelet's flags: the types of :data:`SETTINGS_SCHEMA`, the one schema
    of these fields whatever their source, each error naming the key path and the value.

    Only the types: the kubelet's decoder refuses a wrong type (a map where it wants a list, a
    string where it wants a boolean) but keeps unknown keys (its lenient v1beta1 fallback), and
    its validation, not its decoder, refuses bad values (``validate_settings`` words those).
    A ``null`` is "unset" for the decoder. Not a dict: [] (the caller words that)."""
    if not isinstance(document, dict):
        return []
    errors: List[str] = []
    for field in sorted(document):
        if field in _FIELD_SHAPES and document[field] is not None:
            errors.extend(schema_errors(document[field], _FIELD_SHAPES[field], field))
    return errors
