# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Turning the admission checker's inputs into what the engine needs.

Why a separate file: the module (on the target, standard library only) and the action plugin
(on the controller) both need to know which manifests count as pods, and both must fail with a
message that names the file, the document and the field -- never with a traceback.

* :func:`pods_from_documents`: Pod manifests from parsed YAML documents: ``Pod``, ``List`` /
  ``PodList`` items, and the pod template of workload kinds (Deployment, ReplicaSet,
  StatefulSet, DaemonSet, Job, CronJob, ReplicationController) -- one pod per template, named
  after the workload, because the admission question is "would one replica fit here".
* :func:`state_input`: a state-file option value that is either JSON content or a path.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import copy

try:
    from typing import Any, Dict, List, Mapping, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError


class AdmissionInputError(NumaguardError):
    """An input of the admission checker that cannot be used, named precisely."""


class InvalidPodInput(AdmissionInputError):
    """A manifest that is no valid pod (what the API server refuses, with its validation
    message): the pod's fault, not the host's -- a failure of the check, never "cannot check"."""


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
    raw_meta = document.get("metadata")
    meta = raw_meta if isinstance(raw_meta, dict) else {}
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
            raise InvalidPodInput("%s: a manifest must be a mapping, got %s"
                                  % (where, type(document).__name__))
        kind = document.get("kind", "Pod")
        if kind in ("List", "PodList"):
            items = document.get("items")
            if not isinstance(items, list):
                raise InvalidPodInput("%s: %s without an items list" % (where, kind))
            out.extend(pods_from_documents(items, where + ".items", numbered=True))
            continue
        if kind == "Pod":
            out.append((where, document))
        elif kind in _TEMPLATE_KINDS or kind == "CronJob":
            out.append((where, _template_pod(document, where)))
        else:
            raise InvalidPodInput("%s: kind %r has no pod to admit (expected Pod, List or a workload "
                                  "with a pod template)" % (where, kind))
    return out


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
