# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The workload file of ``playbooks/recommend.yml``: pod templates with replica counts, the
candidate narrowing and the objective, checked once with errors that name the field.

::

    objective: aligned            # or admitted (default aligned)
    kubelet_version: "1.34"       # optional: decide as this kubelet release (default: the newest)
    pods:
      - name: db
        replicas: 6
        template: {apiVersion: v1, kind: Pod, spec: {...}}   # a Pod manifest (or a workload with a
                                                              # pod template: Deployment, StatefulSet, ...)
      - name: web
        replicas: 20
        template_file: web-pod.yml                            # read on the controller
    candidates:                   # optional: narrows the search (every key optional)
      topologyManagerPolicy: [restricted, single-numa-node]
      topologyManagerScope: [container, pod]
      topologyManagerPolicyOptions: [{}, {prefer-closest-numa-nodes: "true"}]
      cpuManagerPolicy: [static]
      cpuManagerPolicyOptions: [{}, {full-pcpus-only: "true"}]
      reservedSystemCPUs: [kubelet, first_core, core_per_node]
      memoryManagerPolicy: [None, Static]
      reservedMemory: [node0, spread, proportional, reserved_cpus]
      reservation: [sized, documented]
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import copy

try:
    from typing import Any, Dict, List, Mapping, Optional  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission_inputs import AdmissionInputError, pods_from_documents
from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError

OBJECTIVES = ("aligned", "admitted")
#: Candidate dimensions a workload's ``candidates:`` block may narrow, with their choices
#: (None: any value of the field's own type; the start-up validation judges them).
CANDIDATE_KEYS = {
    "topologyManagerPolicy": ("none", "best-effort", "restricted", "single-numa-node"),
    "topologyManagerScope": ("container", "pod"),
    "topologyManagerPolicyOptions": None,
    "cpuManagerPolicy": ("none", "static"),
    "cpuManagerPolicyOptions": None,
    "reservedSystemCPUs": ("kubelet", "first_core", "core_per_node"),
    "memoryManagerPolicy": ("None", "Static"),
    "reservedMemory": ("node0", "spread", "proportional", "reserved_cpus"),
    "reservation": ("sized", "documented"),
}
MAX_REPLICAS = 10000
_TOP_KEYS = ("pods", "candidates", "objective", "kubelet_version")


class WorkloadError(NumaguardError):
    """A workload file that cannot be used; the message names the field."""


class Workload:
    """``shapes``: [(name, replicas, Pod manifest)] in order; ``candidates``: key -> allowed values;
    ``objective``; ``kubelet_version`` (None: the newest released kubelet)."""

    def __init__(self, shapes: List[Dict[str, Any]], candidates: Dict[str, List[Any]], objective: str,
                 kubelet_version: Optional[str]) -> None:
        self.shapes = shapes
        self.candidates = candidates
        self.objective = objective
        self.kubelet_version = kubelet_version

    def to_dict(self) -> Dict[str, Any]:
        return {"objective": self.objective, "kubelet_version": self.kubelet_version,
                "pods": [{"name": s["name"], "replicas": s["replicas"]} for s in self.shapes],
                "candidates": copy.deepcopy(self.candidates)}


def _template(entry: Mapping[str, Any], where: str, name: str) -> Dict[str, Any]:
    template = entry.get("template")
    if template is None:
        raise WorkloadError("%s: give template (a Pod manifest) or template_file" % where)
    if not isinstance(template, dict):
        raise WorkloadError("%s.template must be a Pod manifest (a mapping), got %s" % (where, type(template).__name__))
    try:
        found = pods_from_documents([template], where + ".template")
    except AdmissionInputError as exc:
        raise WorkloadError(str(exc))
    if len(found) != 1:
        raise WorkloadError("%s.template must hold exactly one pod, found %d" % (where, len(found)))
    pod = copy.deepcopy(found[0][1])
    raw_meta = pod.get("metadata")
    meta: Dict[str, Any] = dict(raw_meta) if isinstance(raw_meta, dict) else {}
    if not meta.get("name") and not meta.get("generateName"):
        meta["name"] = name  # replicas are named <name>-<n> anyway
    pod["metadata"] = meta
    return pod


def parse_workload(data: Any, source: str = "workload") -> Workload:
    """Check a parsed workload document (``template_file`` entries already replaced by ``template``
    by the caller that can read files)."""
    if not isinstance(data, Mapping):
        raise WorkloadError("%s: the workload must be a mapping with a pods list, got %s" % (source, type(data).__name__))
    unknown = sorted(str(k) for k in data if k not in _TOP_KEYS)
    if unknown:
        raise WorkloadError("%s: unknown key(s) %s (expected %s)" % (source, ", ".join(unknown), ", ".join(_TOP_KEYS)))
    pods = data.get("pods")
    if not isinstance(pods, list) or not pods:
        raise WorkloadError("%s: pods must be a non-empty list of {name, replicas, template | template_file}" % source)
    shapes: List[Dict[str, Any]] = []
    seen = set()
    for index, entry in enumerate(pods):
        where = "%s: pods[%d]" % (source, index)
        if not isinstance(entry, Mapping):
            raise WorkloadError("%s must be a mapping, got %s" % (where, type(entry).__name__))
        extra = sorted(str(k) for k in entry if k not in ("name", "replicas", "template", "template_file"))
        if extra:
            raise WorkloadError("%s: unknown key(s) %s (expected name, replicas, template or template_file)"
                                % (where, ", ".join(extra)))
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise WorkloadError("%s.name must be a non-empty string, got %r" % (where, name))
        if name in seen:
            raise WorkloadError("%s.name %r is used twice" % (where, name))
        seen.add(name)
        replicas = entry.get("replicas", 1)
        if isinstance(replicas, bool) or not isinstance(replicas, int) or not 1 <= replicas <= MAX_REPLICAS:
            raise WorkloadError("%s.replicas must be a whole number from 1 to %d, got %r" % (where, MAX_REPLICAS, replicas))
        shapes.append({"name": name, "replicas": replicas, "template": _template(entry, where, name)})
    objective = data.get("objective", "aligned")
    if objective not in OBJECTIVES:
        raise WorkloadError("%s: objective must be one of %s, got %r" % (source, ", ".join(OBJECTIVES), objective))
    version = data.get("kubelet_version")
    if version is not None and not isinstance(version, (str, int, float)):
        raise WorkloadError("%s: kubelet_version must be a release such as \"1.34\", got %r" % (source, version))
    return Workload(shapes, _candidates(data.get("candidates"), source), str(objective),
                    None if version is None else str(version))


def _candidates(raw: Any, source: str) -> Dict[str, List[Any]]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise WorkloadError("%s: candidates must be a mapping of field -> list of values, got %s"
                            % (source, type(raw).__name__))
    out: Dict[str, List[Any]] = {}
    for key in sorted(raw):
        if key not in CANDIDATE_KEYS:
            raise WorkloadError("%s: candidates.%s is not a dimension of the search (expected %s)"
                                % (source, key, ", ".join(CANDIDATE_KEYS)))
        values = raw[key]
        if not isinstance(values, list) or not values:
            values = [values]
        allowed = CANDIDATE_KEYS[key]
        for value in values:
            if allowed is None:
                if not isinstance(value, Mapping) or not all(isinstance(v, (str, bool, int)) for v in value.values()):
                    raise WorkloadError("%s: candidates.%s values must be option maps such as {full-pcpus-only: \"true\"}, "
                                        "got %r" % (source, key, value))
            elif value not in allowed:
                raise WorkloadError("%s: candidates.%s: %r is not one of %s" % (source, key, value, ", ".join(allowed)))
        out[str(key)] = [dict((str(k), v) for k, v in v.items()) if isinstance(v, Mapping) else v for v in values]
    return out
