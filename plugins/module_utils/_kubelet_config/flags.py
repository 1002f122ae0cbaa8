# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The NUMA-related kubelet command-line flags as KubeletConfiguration fields (PRIVATE).

:func:`flags_to_config` reads ``--cpu-manager-policy``, ``--reserved-memory``, ... as the kubelet
parses them; flags override the configuration files, so the admission checker applies them last.
Errors are the admission checker's :class:`AdmissionInputError` (a ValueError) naming the flag.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Dict, Mapping, Optional, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission_inputs import AdmissionInputError
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import parse_eviction_map, string_map
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_parse_bool

#: flags that locate files, accepted and returned separately
PATH_FLAGS = ("config", "config-dir", "root-dir")


def _go_bool(text: str, flag: str) -> bool:
    try:
        return go_parse_bool(text)
    except ValueError as err:
        raise AdmissionInputError("kubelet_flags: invalid value %r for --%s: %s" % (text, flag, err))


def flags_to_config(flags: Optional[Mapping[str, Any]]) -> Tuple[Dict[str, Any], Dict[str, str]]:
    """(KubeletConfiguration fields, path flags) from NUMA-related kubelet flags.

    Keys may be written ``--cpu-manager-policy``, ``cpu-manager-policy`` or as the config field
    (``cpuManagerPolicy``, taken as is). Values are the flag strings (a list for repeated
    ``--reserved-memory``). Unknown flags are an error naming the supported ones.
    """
    config: Dict[str, Any] = {}
    paths: Dict[str, str] = {}
    if not flags:
        return config, paths
    if not isinstance(flags, dict):
        raise AdmissionInputError("kubelet_flags must be a mapping of flag name to value, got %s"
                                  % type(flags).__name__)
    managed: Dict[str, Any] = {}
    flag_fields: Dict[str, Tuple[str, str]] = {}
    for raw_name in sorted(flags):
        value = flags[raw_name]
        name = str(raw_name).lstrip("-")
        if name in PATH_FLAGS:  # (no config field is spelled like these)
            paths[name] = str(value)
            continue
        if not managed:
            # the managed fields' table only when a NUMA flag is given (most kubelets pass
            # --config only): a module run then does not compile the fields module (9 KB)
            from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.fields import MANAGED_FIELDS, field_type_errors
            managed = dict(MANAGED_FIELDS)
            flag_fields = dict((flag.lstrip("-"), (field, kind)) for field, (flag, kind) in managed.items())
        if raw_name in managed:
            problems = field_type_errors({raw_name: value})  # the one schema, as for files and settings
            if problems:
                raise AdmissionInputError("kubelet_flags: %s" % "; ".join(problems))
            config[raw_name] = value
            continue
        if name not in flag_fields:
            raise AdmissionInputError(
                "kubelet_flags: unsupported flag --%s (supported: %s)"
                % (name, ", ".join("--" + f for f in sorted(list(flag_fields) + list(PATH_FLAGS)))))
        field, kind = flag_fields[name]
        option = "kubelet_flags --%s" % name
        try:
            if kind == "reservedMemory":
                # the reserved-memory model only where the flag is given (issue 12: compile cost)
                from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.reserved import (
                    parse_reserved_memory_flag,
                    reservations_to_config,
                )

                config[field] = reservations_to_config(parse_reserved_memory_flag(value, option))
            elif kind == "eviction":
                config[field] = parse_eviction_map(value, option)
            elif kind in ("resources", "options"):
                config[field] = string_map(value, "=", option)
            elif kind == "gates":
                config[field] = dict((k, _go_bool(v, name)) for k, v in string_map(value, "=", option).items())
            else:
                if isinstance(value, (list, dict)):
                    raise AdmissionInputError("%s: expected a single value, got %r" % (option, value))
                config[field] = str(value)
        except ValueError as err:
            if isinstance(err, AdmissionInputError):
                raise
            raise AdmissionInputError(str(err))
    return config, paths
