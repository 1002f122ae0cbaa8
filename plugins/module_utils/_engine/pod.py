# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The pod model of the admission engine: validation, defaulting, QoS class, effective requests.

The kubelet never sees a manifest as written: the API server validates it and applies defaults
first (a container that sets only ``limits`` gets ``requests`` equal to them, pod-level
requests/limits are filled in from the containers). QoS, guaranteed CPU counts and memory
requests are all computed from the *defaulted* object, so we reproduce the validation we rely
on and the defaulting, then compute what the managers need (pkg/apis/core/v1/helper/qos/qos.go, k8s.io/component-helpers/resource/helpers.go):

* :attr:`Pod.qos_class` exactly as ``GetPodQOS`` (``status.qosClass`` wins when present);
* :func:`pod_requests` / :func:`pod_limits` as ``resourcehelper.PodRequests`` / ``PodLimits``:
  max(sum of app containers + sidecars, each regular init container + sidecars started before
  it), pod-level values when set, plus overhead unless excluded.

Quantities are held twice: as exact :class:`Quantity` values (QoS compares exactly, like Go's
``Cmp``) and as base-unit integers for the managers (cpu in millicores, rounded up like
``MilliValue``; everything else rounded up like ``Value``).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re
from dataclasses import dataclass, field

try:
    from typing import Any, Dict, Mapping, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_quote
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.names import DNS_SUBDOMAIN, DNS_SUBDOMAIN_FMT, is_dns_subdomain
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.qos import BEST_EFFORT, BURSTABLE, GUARANTEED, QOS_CLASSES
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import (
    ERR_FORMAT_WRONG,
    InvalidQuantity,
    Quantity,
    format_wrong,
    parse_object_quantity,
    parse_quantity,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import CPU, EPHEMERAL_STORAGE, HUGEPAGES_PREFIX, MEMORY, is_hugepages
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import NEWEST_RELEASED, effective_gates

#: Feature gates deciding how a pod is read when the caller gives none: the newest released
#: kubelet's (PodLevelResources is beta and on by default since 1.34); see _k8s/versions.py.
DEFAULT_FEATURE_GATES: Dict[str, bool] = effective_gates(NEWEST_RELEASED)

# \Z, not $: Go's $ (no multi-line flag) matches only at the end, Python's also before a final "\n"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_ZERO = Quantity.from_int(0)


class InvalidPod(NumaguardError):
    """A manifest the API server would refuse (or that is not a Pod), naming field and value."""


def _invalid(path: str, value: Any, detail: str) -> InvalidPod:
    return InvalidPod('%s: Invalid value: %s: %s' % (path, _show(value), detail))


def _show(value: Any) -> str:
    """The bad value as field.Error prints it: a string with Go's ``%q`` (a right-to-left
    override or a control character is escaped, never printed raw)."""
    if isinstance(value, str):
        return go_quote(value)
    return repr(value)


def is_native(name: str) -> bool:
    """Kubernetes-native resource: no domain, or a ``kubernetes.io/`` domain."""
    return "/" not in name or name.split("/", 1)[0].endswith("kubernetes.io")


def is_extended(name: str) -> bool:
    """Extended resource (device plugins, ``example.com/gpu``): fully qualified, not native."""
    return not is_native(name) and not name.startswith("requests.")


def overcommit_allowed(name: str) -> bool:
    """Requests may be below limits only for native non-hugepage resources."""
    return is_native(name) and not is_hugepages(name)


def _base_units(name: str, quantity: Quantity) -> int:
    if name == CPU:
        return quantity.milli_value()
    return quantity.value()


@dataclass(frozen=True)
class Container:
    """One init or app container: its resources (defaulted) and its kind.

    ``requests`` / ``limits`` are base-unit ints (cpu in millicores, bytes, counts);
    ``request_quantities`` / ``limit_quantities`` the exact values.
    """

    name: str
    requests: Dict[str, int]
    limits: Dict[str, int]
    is_init: bool = False
    restartable: bool = False
    request_quantities: Dict[str, Quantity] = field(default_factory=dict, compare=False, repr=False)
    limit_quantities: Dict[str, Quantity] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_sidecar(self) -> bool:
        """Restartable init container (``restartPolicy: Always``)."""
        return self.is_init and self.restartable

    @property
    def is_regular_init(self) -> bool:
        """Init container that runs to completion before the next one starts."""
        return self.is_init and not self.restartable

    def equivalent_guaranteed(self) -> bool:
        """``IsContainerEquivalentQOSGuaranteed``: cpu and memory requests non-zero and equal to limits."""
        for name in (CPU, MEMORY):
            request = self.request_quantities.get(name)
            limit = self.limit_quantities.get(name)
            if request is None or limit is None or request.is_zero() or request != limit:
                return False
        return True

    def to_dict(self) -> Dict[str, Any]:
        """JSON-friendly form for results."""
        return {
            "name": self.name,
            "init": self.is_init,
            "restartable": self.restartable,
            "requests": {k: str(v) for k, v in sorted(self.request_quantities.items())},
            "limits": {k: str(v) for k, v in sorted(self.limit_quantities.items())},
        }


@dataclass(frozen=True)
class Pod:
    """A validated, defaulted pod as the kubelet sees it at admission."""

    name: str
    namespace: str
    uid: str
    init_containers: Tuple[Container, ...]
    containers: Tuple[Container, ...]
    qos_class: str
    #: ``spec.resources`` after defaulting, ``None`` when the pod does not set it (or the gate is off).
    pod_requests_quantities: Optional[Dict[str, Quantity]] = field(default=None, compare=False)
    pod_limits_quantities: Optional[Dict[str, Quantity]] = field(default=None, compare=False)
    overhead_quantities: Dict[str, Quantity] = field(default_factory=dict, compare=False)
    feature_gates: Dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def from_manifest(cls,
                      manifest: Any,
                      feature_gates: Optional[Mapping[str, bool]] = None) -> Pod:
        """Validate and default a Pod manifest (dict); raise :class:`InvalidPod` naming the field."""
        gates = dict(DEFAULT_FEATURE_GATES)
        if feature_gates:
            gates.update(feature_gates)
        return _build(manifest, gates)

    # ---- derived views -------------------------------------------------------------------

    def all_containers(self) -> Tuple[Container, ...]:
        """Init containers (spec order) then app containers: the kubelet's admission order."""
        return self.init_containers + self.containers

    def container(self, name: str) -> Container:
        for container in self.all_containers():
            if container.name == name:
                return container
        raise KeyError(name)

    @property
    def has_pod_level_resources(self) -> bool:
        """Pod sets ``spec.resources`` and the PodLevelResources gate is on."""
        return self.pod_requests_quantities is not None or self.pod_limits_quantities is not None

    @property
    def pod_level_requests(self) -> Dict[str, int]:
        """Pod-level requests in base units ({} when none)."""
        return {k: _base_units(k, v) for k, v in (self.pod_requests_quantities or {}).items()}

    @property
    def overhead(self) -> Dict[str, int]:
        return {k: _base_units(k, v) for k, v in self.overhead_quantities.items()}

    @property
    def key(self) -> str:
        return "%s/%s" % (self.namespace, self.name)


# ---- effective requests (resourcehelper) ---------------------------------------------------


def _aggregate(containers: Tuple[Container, ...], which: str) -> Dict[str, Quantity]:
    """``AggregateContainerRequests``/``Limits``: app sum + sidecars vs each init + earlier sidecars."""
    result: Dict[str, Quantity] = {}
    for container in containers:
        if not container.is_init:
            _add(result, getattr(container, which))
    sidecars: Dict[str, Quantity] = {}
    init_max: Dict[str, Quantity] = {}
    for container in containers:
        if not container.is_init:
            continue
        values = getattr(container, which)
        if container.restartable:
            _add(result, values)
            _add(sidecars, values)
            candidate = dict(sidecars)
        else:
            candidate = dict(values)
            _add(candidate, sidecars)
        _max(init_max, candidate)
    _max(result, init_max)
    return result


def _add(target: Dict[str, Quantity], values: Mapping[str, Quantity]) -> None:
    for name, value in values.items():
        target[name] = target[name] + value if name in target else value


def _max(target: Dict[str, Quantity], values: Mapping[str, Quantity]) -> None:
    for name, value in values.items():
        if name not in target or value > target[name]:
            target[name] = value


def _pod_quantities(pod: Pod,
                    which: str,
                    pod_level: Optional[Dict[str, Quantity]],
                    exclude_overhead: bool,
                    skip_pod_level: bool) -> Dict[str, Quantity]:
    """Pod requests or limits: the containers' aggregate of ``which``, pod-level values, overhead.

    Why one function: requests and limits are totalled the same way; the supported pod-level
    values (``pod_level``) replace the containers' aggregate, then the pod overhead is added
    (to limits only where a limit exists, as ``PodLimits`` does).
    """
    totals = _aggregate(pod.all_containers(), which)
    if not skip_pod_level and pod_level:
        for name, value in pod_level.items():
            if supported_pod_level(name):
                totals[name] = value
    if not exclude_overhead:
        if which == "limit_quantities":
            # resourcehelper.PodLimits: overhead is added only to resources that have a limit
            _add(totals, dict((k, v) for k, v in pod.overhead_quantities.items() if k in totals))
        else:
            _add(totals, pod.overhead_quantities)
    return totals


def pod_request_quantities(pod: Pod,
                           exclude_overhead: bool = False,
                           skip_pod_level: bool = False) -> Dict[str, Quantity]:
    """``resourcehelper.PodRequests`` as exact quantities."""
    return _pod_quantities(pod, "request_quantities", pod.pod_requests_quantities, exclude_overhead, skip_pod_level)


def pod_limit_quantities(pod: Pod,
                         exclude_overhead: bool = False,
                         skip_pod_level: bool = False) -> Dict[str, Quantity]:
    """``resourcehelper.PodLimits`` as exact quantities."""
    return _pod_quantities(pod, "limit_quantities", pod.pod_limits_quantities, exclude_overhead, skip_pod_level)


def pod_requests(pod: Pod,
                 exclude_overhead: bool = False,
                 skip_pod_level: bool = False) -> Dict[str, int]:
    """Effective pod requests in base units (cpu millicores): what the scheduler and kubelet fit."""
    return {k: _base_units(k, v)
            for k, v in pod_request_quantities(pod, exclude_overhead, skip_pod_level).items()}


def pod_limits(pod: Pod,
               exclude_overhead: bool = False,
               skip_pod_level: bool = False) -> Dict[str, int]:
    """Effective pod limits in base units; the device manager uses these with overhead excluded."""
    return {k: _base_units(k, v)
            for k, v in pod_limit_quantities(pod, exclude_overhead, skip_pod_level).items()}


def supported_pod_level(name: str) -> bool:
    """Resources that ``spec.resources`` may set: cpu, memory, hugepages-*."""
    return name in (CPU, MEMORY) or is_hugepages(name)


# ---- QoS (GetPodQOS / ComputePodQOS) -------------------------------------------------------


def resource_qos(requests: Mapping[str, Quantity], limits: Mapping[str, Quantity]) -> str:
    """``resourceQOS``: the class of one requests/limits block (a container, or the pod level).

    cpu and memory must each have request == limit (a missing value is zero); both zero is
    "best-effort-like", both non-zero "guaranteed-like", and a mix is Burstable.
    """
    if not requests and not limits:
        return BEST_EFFORT
    qos: Optional[str] = None
    for name in (CPU, MEMORY):
        request = requests.get(name, _ZERO)
        limit = limits.get(name, _ZERO)
        if request != limit:
            return BURSTABLE
        best_effort = request.is_zero()
        if qos is None:
            qos = BEST_EFFORT if best_effort else GUARANTEED
        elif best_effort != (qos == BEST_EFFORT):
            return BURSTABLE
    return qos or BEST_EFFORT


def compute_qos(containers: Tuple[Container, ...],
                pod_requests_q: Optional[Dict[str, Quantity]] = None,
                pod_limits_q: Optional[Dict[str, Quantity]] = None,
                pod_level: bool = False) -> str:
    """``ComputePodQOS``: the pod-level block alone when ``spec.resources`` is present (and the
    PodLevelResources gate on), else the containers' classes combined (any Burstable, or a mix
    of BestEffort and Guaranteed, makes the pod Burstable)."""
    if pod_level:
        return resource_qos(pod_requests_q or {}, pod_limits_q or {})
    pod_qos: Optional[str] = None
    for container in containers:
        qos = resource_qos(container.request_quantities, container.limit_quantities)
        if qos == BURSTABLE:
            return qos
        if pod_qos is None:
            pod_qos = qos
        elif pod_qos != qos:
            return BURSTABLE
    return pod_qos or BEST_EFFORT


# ---- building from a manifest --------------------------------------------------------------


def _mapping(value: Any, path: str, required: bool = False) -> Dict[str, Any]:
    if value is None:
        if required:
            raise InvalidPod("%s: Required value" % path)
        return {}
    if not isinstance(value, dict):
        raise _invalid(path, value, "must be a mapping")
    return value


def _list(value: Any, path: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _invalid(path, value, "must be a list")
    return value


def _quantity(value: Any, path: str) -> Quantity:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise _invalid(path, value, "must be a quantity (string or number)")
    text = repr(value) if isinstance(value, float) else value
    try:
        return parse_object_quantity(text)  # Quantity.UnmarshalJSON trims surrounding whitespace
    except (InvalidQuantity, ValueError) as exc:
        if isinstance(text, str) and format_wrong(text.strip()):
            raise _invalid(path, value, "%s (%s)" % (ERR_FORMAT_WRONG, exc))  # the API server's answer, then ours
        raise _invalid(path, value, "must be a valid quantity (%s)" % exc)


def _check_resource_name(name: Any, path: str) -> None:
    if not isinstance(name, str) or not name:
        raise _invalid(path, name, "resource name must be a non-empty string")
    prefix, short = name.rpartition("/")[::2]
    if prefix and not DNS_SUBDOMAIN.match(prefix):
        raise _invalid(path, name, "prefix part must be a DNS subdomain")
    if not short or len(short) > 63 or not _QUALIFIED_NAME.match(short):
        raise _invalid(path, name, "name part must consist of alphanumeric characters, '-', '_' "
                                   "or '.', and must start and end with an alphanumeric character")
    if is_native(name):
        short_name = short if prefix else name
        if short_name not in (CPU, MEMORY, EPHEMERAL_STORAGE) and not is_hugepages(short_name):
            raise _invalid(path, name, "must be a standard resource for containers "
                                       "(cpu, memory, ephemeral-storage, hugepages-<size>) "
                                       "or a fully-qualified extended resource name")
        if is_hugepages(short_name):
            size_text = short_name[len(HUGEPAGES_PREFIX):]
            try:
                size = parse_quantity(size_text)
            except (InvalidQuantity, ValueError):
                size = None
            if size is None or size.sign() <= 0:
                raise _invalid(path, name, "must be hugepages-<page size> with a valid, "
                                           "positive page size quantity")
    elif name.startswith("requests."):
        raise _invalid(path, name, "extended resource names must not start with 'requests.'")


def _resource_list(raw: Any, path: str) -> Dict[str, Quantity]:
    out: Dict[str, Quantity] = {}
    for name, value in _mapping(raw, path).items():
        item_path = "%s[%s]" % (path, name)
        _check_resource_name(name, item_path)
        quantity = _quantity(value, item_path)
        if quantity.sign() < 0:
            raise _invalid(item_path, str(value), "must be greater than or equal to 0")
        if is_extended(name) and quantity.milli_value() % 1000 != 0:
            raise _invalid(item_path, str(value), "must be an integer")
        out[name] = quantity
    return out


def _resources(raw: Any,
               path: str,
               pod_level: bool = False) -> Tuple[Dict[str, Quantity], Dict[str, Quantity]]:
    resources = _mapping(raw, path)
    for key in resources:
        if key not in ("requests", "limits", "claims"):
            raise _invalid("%s.%s" % (path, key), key, "unknown field (expected requests, limits)")
    requests = _resource_list(resources.get("requests"), path + ".requests")
    limits = _resource_list(resources.get("limits"), path + ".limits")
    if pod_level:
        for kind, values in (("requests", requests), ("limits", limits)):
            for name in values:
                if not supported_pod_level(name):
                    raise InvalidPod('%s.%s[%s]: Unsupported value: "%s": supported values: '
                                     '"cpu", "memory", "hugepages-<size>"'
                                     % (path, kind, name, name))
    # requests <= limits; non-overcommittable resources need request == limit
    for name, request in sorted(requests.items()):
        limit = limits.get(name)
        item_path = "%s.requests[%s]" % (path, name)
        if limit is not None and not overcommit_allowed(name):
            if request != limit:
                raise _invalid(item_path, str(request),
                               "must be equal to %s limit of %s" % (name, limit))
        elif limit is not None and request > limit:
            raise _invalid(item_path, str(request),
                           "must be less than or equal to %s limit of %s" % (name, limit))
        if limit is None and not overcommit_allowed(name) and not pod_level:
            raise InvalidPod("%s.limits[%s]: Required value: Limit must be set for non "
                             "overcommitable resources" % (path, name))
    has_hugepages = any(is_hugepages(n) for n in list(requests) + list(limits))
    if has_hugepages and not pod_level:
        if not any(n in (CPU, MEMORY) for n in list(requests) + list(limits)):
            raise InvalidPod("%s: Forbidden: HugePages require cpu or memory" % path)
    return requests, limits


def _container(raw: Any, path: str, is_init: bool, seen: Dict[str, str]) -> Container:
    spec = _mapping(raw, path, required=True)
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidPod("%s.name: Required value" % path)
    if len(name) > 63 or not _DNS_LABEL.match(name):
        raise _invalid(path + ".name", name, "a lowercase RFC 1123 label must consist of lower "
                                             "case alphanumeric characters or '-', start and end "
                                             "with an alphanumeric character, at most 63 characters")
    if name in seen:
        raise InvalidPod('%s.name: Duplicate value: "%s" (already used by %s)'
                         % (path, name, seen[name]))
    seen[name] = path
    restart = spec.get("restartPolicy")
    if restart is not None:
        if not is_init:
            raise InvalidPod('%s.restartPolicy: Forbidden: may not be set for non-init containers '
                             '(got "%s")' % (path, restart))
        if restart != "Always":
            raise InvalidPod('%s.restartPolicy: Unsupported value: %s: supported values: "Always"'
                             % (path, _show(restart)))
    requests, limits = _resources(spec.get("resources"), path + ".resources")
    # API server defaulting: requests default to limits, key by key.
    for key, value in limits.items():
        requests.setdefault(key, value)
    return Container(
        name=name,
        requests={k: _base_units(k, v) for k, v in requests.items()},
        limits={k: _base_units(k, v) for k, v in limits.items()},
        is_init=is_init,
        restartable=restart == "Always",
        request_quantities=requests,
        limit_quantities=limits,
    )


#: ``uuid.NAMESPACE_URL`` (RFC 4122 appendix C) as bytes
_NAMESPACE_URL = bytes.fromhex("6ba7b8119dad11d180b400c04fd430c8")


def _uuid5_hex(name: str) -> str:
    """``uuid.uuid5(uuid.NAMESPACE_URL, name).hex``, computed here: the uuid module imports
    platform and hashlib (~5 ms of every fresh process; issue 12)."""
    data = _NAMESPACE_URL + name.encode("utf-8")
    try:  # CPython's own SHA-1: hashlib would load OpenSSL first (~3 ms more)
        from _sha1 import sha1 as builtin_sha1  # type: ignore[import-not-found,unused-ignore]

        digest = builtin_sha1(data).digest()
    except ImportError:  # pragma: no cover  (a build without the builtin hashes)
        import hashlib

        try:
            digest = hashlib.sha1(data, usedforsecurity=False).digest()  # type: ignore[call-arg,unused-ignore]
        except TypeError:  # Python 3.8: no usedforsecurity
            digest = hashlib.sha1(data).digest()
    raw = bytearray(digest[:16])
    raw[6] = (raw[6] & 0x0F) | 0x50  # version 5
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    return bytes(raw).hex()


def _default_uid(namespace: str, name: str) -> str:
    """Deterministic uid for manifests without one (same pod name -> same uid, run after run):
    ``str(uuid.uuid5(uuid.NAMESPACE_URL, "numaguard.kubelet/pod/<namespace>/<name>"))``."""
    text = _uuid5_hex("numaguard.kubelet/pod/%s/%s" % (namespace, name))
    return "%s-%s-%s-%s-%s" % (text[:8], text[8:12], text[12:16], text[16:20], text[20:])


def _build(manifest: Any, gates: Dict[str, bool]) -> Pod:
    if not isinstance(manifest, dict):
        raise InvalidPod("pod manifest must be a mapping (a Pod object), got %s"
                         % type(manifest).__name__)
    kind = manifest.get("kind", "Pod")
    if kind != "Pod":
        raise InvalidPod('kind: Unsupported value: %s: only "Pod" manifests can be checked '
                         '(for workloads, pass their pod template as a Pod)' % _show(kind))
    api_version = manifest.get("apiVersion", "v1")
    if api_version != "v1":
        raise InvalidPod('apiVersion: Unsupported value: %s: a Pod is "v1"' % _show(api_version))
    metadata = _mapping(manifest.get("metadata"), "metadata", required=True)
    name = metadata.get("name")
    if name is None and isinstance(metadata.get("generateName"), str):
        prefix = metadata["generateName"]
        name = prefix + _uuid5_hex(prefix)[:5]
    if not isinstance(name, str) or not name:
        raise InvalidPod("metadata.name: Required value: name or generateName is required")
    if not is_dns_subdomain(name):
        # k8s.io/apimachinery/pkg/util/validation: dns1123SubdomainErrorMsg + RegexError's examples
        raise _invalid("metadata.name", name, "a lowercase RFC 1123 subdomain must consist of "
                                              "lower case alphanumeric characters, '-' or '.', "
                                              "and must start and end with an alphanumeric "
                                              "character (e.g. 'example.com', regex used for "
                                              "validation is '%s')" % DNS_SUBDOMAIN_FMT)
    namespace = metadata.get("namespace", "default")
    if not isinstance(namespace, str) or len(namespace) > 63 or not _DNS_LABEL.match(namespace):
        raise _invalid("metadata.namespace", namespace, "must be a lowercase RFC 1123 label")
    uid = metadata.get("uid")
    if uid is None:
        uid = _default_uid(namespace, name)
    elif not isinstance(uid, str) or not uid:
        raise _invalid("metadata.uid", uid, "must be a non-empty string")

    spec = _mapping(manifest.get("spec"), "spec", required=True)
    seen: Dict[str, str] = {}
    init_containers = tuple(
        _container(raw, "spec.initContainers[%d]" % i, True, seen)
        for i, raw in enumerate(_list(spec.get("initContainers"), "spec.initContainers")))
    app_raw = _list(spec.get("containers"), "spec.containers")
    if not app_raw:
        raise InvalidPod("spec.containers: Required value: a pod needs at least one container")
    containers = tuple(_container(raw, "spec.containers[%d]" % i, False, seen)
                       for i, raw in enumerate(app_raw))
    all_containers = init_containers + containers

    overhead = _resource_list(spec.get("overhead"), "spec.overhead")

    pod_requests_q: Optional[Dict[str, Quantity]] = None
    pod_limits_q: Optional[Dict[str, Quantity]] = None
    pod_level = spec.get("resources") is not None and gates.get("PodLevelResources", False)
    if pod_level:
        pod_requests_q, pod_limits_q = _resources(spec.get("resources"), "spec.resources",
                                                  pod_level=True)
        pod_requests_q, pod_limits_q = _default_pod_level(all_containers, pod_requests_q,
                                                          pod_limits_q)
        _check_pod_level_consistency(all_containers, pod_requests_q, pod_limits_q)
    elif spec.get("resources") is not None:
        _mapping(spec.get("resources"), "spec.resources")

    status = _mapping(manifest.get("status"), "status")
    qos = status.get("qosClass")
    if qos is not None and qos not in QOS_CLASSES:
        raise InvalidPod('status.qosClass: Unsupported value: %s: supported values: '
                         '"Guaranteed", "Burstable", "BestEffort"' % _show(qos))
    if qos is None:
        qos = compute_qos(all_containers, pod_requests_q, pod_limits_q, pod_level)
    return Pod(name=name, namespace=namespace, uid=uid, init_containers=init_containers,
               containers=containers, qos_class=qos, pod_requests_quantities=pod_requests_q,
               pod_limits_quantities=pod_limits_q, overhead_quantities=overhead,
               feature_gates=dict(gates))


def _default_pod_level(containers: Tuple[Container, ...],
                       requests: Dict[str, Quantity],
                       limits: Dict[str, Quantity]) -> Tuple[Optional[Dict[str, Quantity]], Optional[Dict[str, Quantity]]]:
    """API-server defaulting of ``spec.resources`` (hugepage limits, requests, then limits)."""
    aggregated_limits = _aggregate(containers, "limit_quantities")
    if limits or requests:
        for name, value in aggregated_limits.items():
            if is_hugepages(name) and name not in requests and name not in limits:
                limits[name] = value
    if limits:
        aggregated_requests = _aggregate(containers, "request_quantities")
        for name, value in aggregated_requests.items():
            if name not in requests and supported_pod_level(name) and overcommit_allowed(name):
                requests[name] = value
        for name, value in limits.items():
            if name not in requests and supported_pod_level(name):
                requests[name] = value
    if not limits and requests:
        for name, value in aggregated_limits.items():
            if name in limits or not supported_pod_level(name) or not overcommit_allowed(name):
                continue
            if all(name in c.limit_quantities for c in containers):
                limits[name] = value
    return (requests or None), (limits or None)


def _check_pod_level_consistency(containers: Tuple[Container, ...],
                                 requests: Optional[Dict[str, Quantity]],
                                 limits: Optional[Dict[str, Quantity]]) -> None:
    """Pod-level requests cover the containers' aggregate; no container limit exceeds the pod's."""
    aggregated = _aggregate(containers, "request_quantities")
    for name, value in sorted((requests or {}).items()):
        if name in aggregated and aggregated[name] > value:
            raise _invalid("spec.resources.requests[%s]" % name, str(value),
                           "must be greater than or equal to aggregate container requests of %s"
                           % aggregated[name])
        limit = (limits or {}).get(name)
        if limit is not None and value > limit:
            raise _invalid("spec.resources.requests[%s]" % name, str(value),
                           "must be less than or equal to %s limit of %s" % (name, limit))
    for name, limit in sorted((limits or {}).items()):
        for container in containers:
            own = container.limit_quantities.get(name)
            if own is not None and own > limit:
                raise _invalid("spec.resources.limits[%s]" % name, str(limit),
                               "must be greater than or equal to container %s limit of %s"
                               % (container.name, own))
