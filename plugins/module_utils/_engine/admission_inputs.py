# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""Turning the admission checker's inputs into what the engine needs.

Why a separate file: the module (on the target, standard library only) and the action plugin
(on the controller) both need to know which manifests count as pods and how kubelet flags map
to KubeletConfiguration fields, and both must fail with a message that names the file, the
document and the field -- never with a traceback.

* :func:`pods_from_documents`: Pod manifests from parsed YAML documents: ``Pod``, ``List`` /
  ``PodList`` items, and the pod template of workload kinds (Deployment, ReplicaSet,
  StatefulSet, DaemonSet, Job, CronJob, ReplicationController) -- one pod per template, named
  after the workload, because the admission question is "would one replica fit here".
* :func:`flags_to_config`: the NUMA-related kubelet command-line flags (``--cpu-manager-policy``,
  ``--reserved-memory``, ...) as KubeletConfiguration fields, parsed as the kubelet parses them.
* :func:`state_input`: a state-file option value that is either JSON content or a path.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import copy

try:
    from typing import Any, Dict, List, Mapping, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_parse_bool
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.settings import MANAGED_FIELDS
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.flags import (
    parse_eviction_map, parse_reserved_memory_flag, reservations_to_config, string_map)


class AdmissionInputError(ValueError):
    """An input of the admission checker that cannot be used, named precisely."""


_TEMPLATE_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "ReplicationController")


def _template_pod(document: Mapping[str, Any], where: str) -> Dict[str, Any]:
    kind = document.get("kind")
    spec = document.get("spec")
    if not isinstance(spec, dict):
        raise AdmissionInputError("%s: %s has no spec" % (where, kind))
    if kind == "CronJob":
        job = spec.get("jobTemplate")
        spec = job.get("spec") if isinstance(job, dict) else None
        if not isinstance(spec, dict):
            raise AdmissionInputError("%s: CronJob has no spec.jobTemplate.spec" % where)
    template = spec.get("template")
    if not isinstance(template, dict) or not isinstance(template.get("spec"), dict):
        raise AdmissionInputError("%s: %s has no pod template (spec.template.spec)" % (where, kind))
    meta = document.get("metadata") if isinstance(document.get("metadata"), dict) else {}
    tmeta = dict(template.get("metadata") or {}) if isinstance(template.get("metadata"), dict) else {}
    tmeta.setdefault("name", meta.get("name") or "pod")
    if meta.get("namespace") and not tmeta.get("namespace"):
        tmeta["namespace"] = meta["namespace"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": tmeta, "spec": copy.deepcopy(template["spec"])}


def pods_from_documents(documents: List[Any],
                        source: str,
                        numbered: bool = False) -> List[Tuple[str, Dict[str, Any]]]:
    """(label, pod manifest) for every pod in ``documents`` (parsed YAML documents of one source).

    ``label`` names the source and document (``pod.yaml#2``) for error messages. Empty documents
    are skipped; anything that is not a mapping, or a kind without a pod, is an error.
    """
    out: List[Tuple[str, Dict[str, Any]]] = []
    for index, document in enumerate(documents):
        where = "%s#%d" % (source, index + 1) if numbered or len(documents) > 1 else source
        if document is None:
            continue
        if not isinstance(document, dict):
            raise AdmissionInputError("%s: a manifest must be a mapping, got %s"
                                      % (where, type(document).__name__))
        kind = document.get("kind", "Pod")
        if kind in ("List", "PodList"):
            items = document.get("items")
            if not isinstance(items, list):
                raise AdmissionInputError("%s: %s without an items list" % (where, kind))
            out.extend(pods_from_documents(items, where + ".items", numbered=True))
            continue
        if kind == "Pod":
            out.append((where, document))
        elif kind in _TEMPLATE_KINDS or kind == "CronJob":
            out.append((where, _template_pod(document, where)))
        else:
            raise AdmissionInputError("%s: kind %r has no pod to admit (expected Pod, List or a workload "
                                      "with a pod template)" % (where, kind))
    return out


# ---- kubelet flags --------------------------------------------------------------------------

_FLAG_FIELDS = dict((flag.lstrip("-"), (field, kind)) for field, (flag, kind) in MANAGED_FIELDS.items())
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
    fields = set(MANAGED_FIELDS)
    for raw_name in sorted(flags):
        value = flags[raw_name]
        name = str(raw_name).lstrip("-")
        if raw_name in fields:
            config[raw_name] = value
            continue
        if name in PATH_FLAGS:
            paths[name] = str(value)
            continue
        if name not in _FLAG_FIELDS:
            raise AdmissionInputError(
                "kubelet_flags: unsupported flag --%s (supported: %s)"
                % (name, ", ".join("--" + f for f in sorted(list(_FLAG_FIELDS) + list(PATH_FLAGS)))))
        field, kind = _FLAG_FIELDS[name]
        option = "kubelet_flags --%s" % name
        try:
            if kind == "reservedMemory":
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


# ---- state files ------------------------------------------------------------------------------

def state_input(value: Optional[str]) -> Tuple[str, Optional[str]]:
    """Classify a state option: ('default', None), ('fresh', None), ('content', text) or ('path', path).

    JSON content starts with ``{``; the empty string means "ignore the node's file" (a fresh
    node); anything else is a path.
    """
    if value is None:
        return "default", None
    text = str(value)
    if text.strip() == "":
        return "fresh", None
    if text.lstrip().startswith("{"):
        return "content", text
    return "path", text
