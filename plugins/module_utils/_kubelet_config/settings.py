# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The NUMA-related KubeletConfiguration fields: validation, flags, reset decision (their table
and schema are in ``fields.py``, imported here).

Why: the kubelet checks most of these settings only when it starts, and then refuses to start
(a crash-looping node). Everything the kubelet would reject at start-up because of these fields
is checked here *before* anything is written, with the kubelet's own wording where it has one
plus the field, the value and the fix. The checks are plain functions over dicts so that the
module (on the target, standard library only) and tests use the same code.

Sources: pkg/kubelet/apis/config/validation/validation.go (enums, messages),
pkg/kubelet/cm/cpumanager/policy_options.go and cm/topologymanager/policy_options.go (options per
release and their maturity), cmd/kubelet/app/server.go (``getReservedCPUs``), and the spec
sections 6.1-6.3 (start-up checks and state restore).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.policy_options import StaticPolicyOptions
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.policy_options import parse_bool as parse_cpu_option_bool
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.reserved import (
    ReservedMemoryError,
    convert_reserved,
    parse_reserved_memory_config,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.node_allocatable import SYSTEM_RESERVED_HUGEPAGES
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.reservation_flags import ReservationSyntaxError, reservable
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import NUMAInfo
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_options import (
    DEFAULT_MAX_ALLOWABLE_NUMA_NODES,
    INTEGER_OPTIONS,
    MAX_ALLOWABLE_NUMA_NODES,
    PREFER_CLOSEST_NUMA_NODES,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.policy_options import PolicyOptions as TopologyPolicyOptions
from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import (
    InvalidCPUSet,
    format_cpuset,
    parse_cpuset,
    parse_go_cpuset,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import BOOL_WORDS, go_atoi, option_text
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import (
    InvalidQuantity,
    parse_quantity,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import RESERVABLE_RESOURCES
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import (
    CPU_INCOMPATIBLE_OPTIONS,
    DISTRIBUTE_FULL_PCPUS_LOOP_FIXED,
    KubeletAssumption,
    VersionError,
    behaviour,
    gate_errors,
    known_options,
    option_availability_error,
    option_gate,
    option_introduced,
    option_maturity,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.fields import (
    CPU_POLICIES,
    MANAGED_FIELDS,
    MEMORY_POLICIES,
    SETTINGS_SCHEMA,
    TOPOLOGY_POLICIES,
    TOPOLOGY_SCOPES,
    schema_errors,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import (
    POLICY_STATIC,
    reserved_numa_node_findings,
    reserved_quantity_finding,
    static_needs_reservation,
)

try:
    from typing import Any, Dict, List, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass


_FIX_HINT = {
    "cpuManagerPolicy": "use one of: none, static (lower case)",
    "topologyManagerPolicy": "use one of: none, best-effort, restricted, single-numa-node (lower case)",
    "topologyManagerScope": "use one of: container, pod",
    "memoryManagerPolicy": "use one of: None, Static (capitalised; 'BestEffort' is Windows only)",
}


class SettingsError(NumaguardError):
    """One or more settings the kubelet would reject; ``errors`` lists them all."""

    def __init__(self, errors: List[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = list(errors)


# --------------------------------------------------------------------------------------------
# Kubelet versions, policy options and feature gates
# --------------------------------------------------------------------------------------------


def resolve_assumption(kubelet_version: Any, feature_gates: Optional[Dict[str, Any]]) -> KubeletAssumption:
    """The release and gates to check against: a ready KubeletAssumption (the module resolved it
    from the host), a version string, or None (newest released kubelet, with a warning).
    Raises SettingsError for an unusable version string."""
    if isinstance(kubelet_version, KubeletAssumption):
        return kubelet_version.with_gates(feature_gates)
    try:
        return KubeletAssumption.resolve(kubelet_version, None, feature_gates)
    except VersionError as exc:
        raise SettingsError([str(exc)])


# --------------------------------------------------------------------------------------------
# Normalisation
# --------------------------------------------------------------------------------------------

_GO_BOOL = BOOL_WORDS


def normalise_settings(settings: Dict[str, Any]) -> Dict[str, Any]:
    """Make ``settings`` what the kubelet decodes: option and quantity values as strings (the
    API types are map[string]string / Quantity), ``reservedSystemCPUs`` as a string.

    Values are otherwise kept as written (``1Gi`` stays ``1Gi``), so the file shows what the user
    asked for and a second run compares equal.
    """
    result: Dict[str, Any] = {}
    for key, value in settings.items():
        if value is None:
            continue
        kind = MANAGED_FIELDS.get(key, (None, None))[1]
        if kind == "options":
            result[key] = dict((str(k), option_text(v)) for k, v in value.items())
        elif kind == "resources":
            result[key] = dict((str(k), option_text(v)) for k, v in value.items())
        elif kind == "cpuset":
            result[key] = option_text(value)
        elif kind == "reservedMemory":
            result[key] = [
                {"numaNode": int(entry.get("numaNode")),
                 "limits": dict((str(k), option_text(v)) for k, v in (entry.get("limits") or {}).items())}
                for entry in value
            ]
        elif kind == "gates":
            result[key] = dict((str(k), v) for k, v in value.items())
        else:
            result[key] = value
    return result


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _casing_errors(settings: Dict[str, Any]) -> List[str]:
    """Friendlier messages than the schema's for the classic wrong-case policy names."""
    errors = []
    pairs = (
        ("cpuManagerPolicy", CPU_POLICIES),
        ("topologyManagerPolicy", TOPOLOGY_POLICIES),
        ("topologyManagerScope", TOPOLOGY_SCOPES),
        ("memoryManagerPolicy", MEMORY_POLICIES),
    )
    for field, allowed in pairs:
        value = settings.get(field)
        if not isinstance(value, str) or value in allowed:
            continue
        folded = dict((re.sub(r"[-_ ]", "", a.lower()), a) for a in allowed)
        suggestion = folded.get(re.sub(r"[-_ ]", "", value.lower()))
        if suggestion:
            errors.append(
                "%s: %r is not a valid policy name; names are case-sensitive, use %r" % (field, value, suggestion)
            )
        else:
            errors.append("%s: %r is not valid; %s" % (field, value, _FIX_HINT[field]))
    return errors


def _check_options(manager: str,
                   options: Dict[str, str],
                   assumed: KubeletAssumption,
                   errors: List[str],
                   warnings: List[str]) -> None:
    field = "cpuManagerPolicyOptions" if manager == "cpu" else "topologyManagerPolicyOptions"
    version = assumed.version
    for option in sorted(options):
        value = options[option]
        where = "%s.%s" % (field, option)
        problem = option_availability_error(manager, option, version, assumed.gates)
        if problem is not None:
            first = option_introduced(manager, option)
            if option_maturity(manager, option, version) is None and first is not None:
                problem += " -- kubelet %d.%d does not know it (added in 1.%d); remove it or set kubelet_version to the release you run" % (
                    assumed.minor + (first,))
            elif option_maturity(manager, option, version) is None:
                problem += "; known options: %s" % ", ".join(known_options(manager, version))
            else:
                problem += "; set featureGates.%s: true" % option_gate(manager, option, version)
            errors.append("%s: %s" % (where, problem))
            continue
        # the value as the kubelet parses it (the engine's parsers, the one home of these rules)
        try:
            if manager == "topology":
                limit = TopologyPolicyOptions.parse({option: value}, assumed.gates, version).max_allowable_numa_nodes
            else:
                limit = DEFAULT_MAX_ALLOWABLE_NUMA_NODES
                parse_cpu_option_bool(option, value)
        except NumaguardError as exc:
            errors.append("%s: %s; %s" % (where, exc, "use a whole number >= %d" % DEFAULT_MAX_ALLOWABLE_NUMA_NODES
                                          if manager == "topology" and option in INTEGER_OPTIONS else "use true or false"))
            continue
        if limit > DEFAULT_MAX_ALLOWABLE_NUMA_NODES:
            warnings.append("%s: %s; the kubelet warns that admission time grows exponentially with the number of NUMA nodes"
                            % (where, value))


def _partial_cores(topology: Any, reserved: Any) -> Optional[str]:
    """The cores of which ``reserved`` holds some but not all threads, as a cpuset text, or None."""
    if topology is None or not reserved:
        return None
    partial = set()
    for cpu_id in reserved:
        try:
            cpu = topology.cpu(cpu_id)
        except (KeyError, ValueError, LookupError):
            continue
        siblings = set((cpu.id,) + tuple(cpu.siblings))
        if not siblings <= set(reserved):
            partial.add(min(siblings))
    return format_cpuset(partial) if partial else None


def settings_schema_errors(settings: Any) -> List[str]:
    """Type/enum/shape errors of the raw ``settings`` option (schema + policy-name casing hints)."""
    if not isinstance(settings, dict):
        return ["settings: expected a dict of KubeletConfiguration fields, got %s" % type(settings).__name__]
    errors = _casing_errors(settings)
    casing_fields = set(e.split(":", 1)[0] for e in errors)
    for message in schema_errors(settings, SETTINGS_SCHEMA):
        path = message.split(":", 1)[0]
        field = path.split(".")[1].split("[")[0] if "." in path else ""
        if field in casing_fields:
            continue  # already explained with a casing hint
        if message.startswith("settings: unknown key"):
            message += "; managed fields: %s" % ", ".join(sorted(MANAGED_FIELDS))
        errors.append(message)
    return errors


def _cpu_reserved_milli(config: Dict[str, Any], errors: Optional[List[str]] = None) -> int:
    """``kubeReserved.cpu`` + ``systemReserved.cpu`` in millicores.

    Why one function: validation needs the sum (the static policy requires it > 0) and the
    reset decision compares it between two configurations. An unparsable value is reported in
    ``errors``, naming its field, when a list is given; without one the result is -1, which no
    valid sum equals.
    """
    total = 0
    for field in ("kubeReserved", "systemReserved"):
        value = (config.get(field) or {}).get("cpu")
        if value is not None:
            try:
                total += parse_quantity(value).milli_value()
            except InvalidQuantity as exc:
                if errors is None:
                    return -1
                errors.append("%s.cpu: %s" % (field, exc))
    return total


def static_reserved_memory_errors(entries: Any) -> List[str]:
    """``memoryManagerPolicy: Static``: what the memory manager refuses whatever the host, through
    the one reserved-memory model (``_engine/memorymanager/reserved.py``: the config parser, which
    trims quantities as the kubelet's decoder does; ``convertReserved``'s ``AsInt64``; the Static
    policy's "you should specify the system reserved memory" on the converted bytes) and worded as
    ``reserved_memory`` words it (``reservedMemory: [rule] ...``). The host-dependent rules (sums,
    NUMA ids, capacity) are the reservation validator's."""
    try:
        reservations = parse_reserved_memory_config(entries, "reservedMemory")
    except ReservationSyntaxError as exc:
        return [str(exc)]
    problems = []
    for reservation in reservations:
        for name, quantity in reservation.limits_map().items():
            finding = reserved_quantity_finding(reservation.numa_node, name, quantity, POLICY_STATIC)
            if finding is not None:
                problems.append("reservedMemory: %s" % finding)
    if not problems:
        needs = static_needs_reservation(reservations)
        if needs is not None:
            problems.append("reservedMemory: %s" % needs)
    return problems


class _Counts:
    """The socket and NUMA node counts the CPU Manager's option validation reads (0: no host)."""

    def __init__(self, topology: Any) -> None:
        self.num_sockets = len(topology.socket_ids()) if topology is not None else 0
        self.num_numa_nodes = len(topology.node_ids()) if topology is not None else 0


def _align_by_socket_errors(tm_policy: str, topology: Any, errors: List[str]) -> None:
    """align-by-socket as the CPU Manager validates it (``ValidateStaticPolicyOptions``: the
    Topology Manager policy, then sockets vs NUMA nodes when the host is known), with a fix hint."""
    try:
        StaticPolicyOptions(align_by_socket=True).validate(_Counts(topology), tm_policy)
    except NumaguardError as exc:
        errors.append("cpuManagerPolicyOptions.align-by-socket: %s; use another topologyManagerPolicy, or hardware "
                      "with as many NUMA nodes as sockets, or drop the option" % exc)


def validate_settings(settings: Dict[str, Any],
                      effective: Dict[str, Any],
                      kubelet_version: Any = None,
                      topology: Any = None,
                      reservation_validator: Any = None) -> Tuple[List[str], List[str]]:
    """Check ``settings`` (raw option value) and ``effective`` (the configuration the kubelet
    would run with after the change, kubelet defaults filled in).

    ``topology`` (a topology.Topology) enables the host checks (reserved CPUs exist and are
    online, NUMA node count vs max-allowable-numa-nodes, reservedMemory node ids, distances).
    ``reservation_validator(effective, topology)`` -> list of error strings, or (errors,
    warnings), when given, is the reserved-memory validation (docs/reserved-memory.md); it runs
    when the Memory Manager is Static or reservedMemory is set. Returns (errors, warnings); empty errors = valid.
    """
    warnings: List[str] = []
    errors = settings_schema_errors(settings)
    if errors:
        return errors, warnings

    try:
        assumed = resolve_assumption(kubelet_version, effective.get("featureGates"))
    except SettingsError as exc:
        return exc.errors, warnings
    warnings.extend(assumed.warnings)
    for gate, message in sorted(gate_errors(assumed.version, effective.get("featureGates")).items()):
        errors.append("featureGates.%s: %s" % (gate, message))

    checked = _Checked(effective, assumed, topology)
    for field, allowed in (("cpuManagerPolicy", CPU_POLICIES), ("topologyManagerPolicy", TOPOLOGY_POLICIES),
                           ("topologyManagerScope", TOPOLOGY_SCOPES), ("memoryManagerPolicy", MEMORY_POLICIES)):
        if field in effective and effective[field] not in allowed:
            errors.append("%s: %r (from the existing kubelet configuration) is not valid; %s"
                          % (field, effective[field], _FIX_HINT[field]))

    # CPU manager
    _check_cpu_options(checked, errors, warnings)
    reserved_cpus = _reserved_cpus(checked, errors)
    _check_reserved_maps(checked, errors)
    _check_distribute_loop(checked, reserved_cpus, warnings)

    # Topology manager
    if checked.tm_options:
        if checked.tm_policy == "none":
            warnings.append("topologyManagerPolicyOptions are ignored while topologyManagerPolicy is none")
        _check_options("topology", checked.tm_options, assumed, errors, warnings)

    # Memory manager
    if checked.mm_policy == "Static":
        errors.extend(static_reserved_memory_errors(effective.get("reservedMemory")))
    elif effective.get("reservedMemory"):
        warnings.append("reservedMemory is only used by memoryManagerPolicy: Static (it is %r)" % checked.mm_policy)

    # Host checks
    if topology is not None:
        _check_host(checked, reserved_cpus, errors)
    if reservation_validator is not None and not errors:
        found = reservation_validator(effective, topology)
        found_errors, found_warnings = found if isinstance(found, tuple) else (found, [])
        if checked.mm_policy == "Static" or effective.get("reservedMemory"):
            errors.extend(found_errors)
            warnings.extend(found_warnings)
        else:
            # without the memory manager only the Node Allocatable capacity check stops the kubelet
            errors.extend(e for e in found_errors if "[node-allocatable-capacity]" in e)

    # evictionHard: partial maps zero the unset default signals
    eviction = effective.get("evictionHard")
    if isinstance(eviction, dict) and "evictionHard" in settings and not effective.get("mergeDefaultEvictionSettings"):
        missing = [s for s in ("memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available") if s not in eviction]
        if missing:
            warnings.append(
                "evictionHard does not set %s: the kubelet treats unset signals as 0 (disabled); set them explicitly "
                "or set mergeDefaultEvictionSettings: true" % ", ".join(missing)
            )
    return errors, warnings


class _Checked:
    """What :func:`validate_settings`' steps read: the effective configuration's policies and
    option texts, the kubelet assumed and the host topology (None: no host)."""

    def __init__(self, effective: Dict[str, Any], assumed: Any, topology: Any) -> None:
        self.effective = effective
        self.assumed = assumed
        self.topology = topology
        self.cpu_policy = effective.get("cpuManagerPolicy", "none")
        self.tm_policy = effective.get("topologyManagerPolicy", "none")
        self.mm_policy = effective.get("memoryManagerPolicy", "None")
        self.cpu_options = dict((k, option_text(v)) for k, v in (effective.get("cpuManagerPolicyOptions") or {}).items())
        self.tm_options = dict((k, option_text(v)) for k, v in (effective.get("topologyManagerPolicyOptions") or {}).items())
        self.raw_reserved = effective.get("reservedSystemCPUs")


def _check_cpu_options(checked: _Checked, errors: List[str], warnings: List[str]) -> None:
    cpu_options = checked.cpu_options
    if not cpu_options:
        return
    if checked.cpu_policy != "static":
        errors.append(
            "cpuManagerPolicyOptions: %s set but cpuManagerPolicy is %r; the none policy cannot apply cpu "
            "policy options: remove the options or use cpuManagerPolicy: static" % (", ".join(sorted(cpu_options)), checked.cpu_policy)
        )
    _check_options("cpu", cpu_options, checked.assumed, errors, warnings)
    for first, second in CPU_INCOMPATIBLE_OPTIONS:
        if _GO_BOOL.get(cpu_options.get(first, "false")) and _GO_BOOL.get(cpu_options.get(second, "false")):
            errors.append(
                "cpuManagerPolicyOptions: static policy options %s and %s can not be used at the same time; drop one"
                % (first, second)
            )
    if _GO_BOOL.get(cpu_options.get("align-by-socket", "false")):
        _align_by_socket_errors(checked.tm_policy, checked.topology, errors)


def _reserved_cpus(checked: _Checked, errors: List[str]) -> Any:
    """``reservedSystemCPUs`` as a CPU set (None: unset or invalid), and the static policy's
    need for reserved CPUs."""
    reserved_cpus = None
    raw_reserved = checked.raw_reserved
    if raw_reserved not in (None, ""):
        try:
            reserved_cpus = parse_go_cpuset(str(raw_reserved))
        except InvalidCPUSet as exc:
            errors.append("reservedSystemCPUs: unable to parse reserved-cpus list: %s (%r); use a CPU list without "
                          "spaces such as 0-1,32-33" % (exc, raw_reserved))
    if checked.cpu_policy == "static" and raw_reserved in (None, ""):
        if _cpu_reserved_milli(checked.effective, errors) <= 0:
            errors.append(
                "cpuManagerPolicy: static: the static policy requires systemreserved.cpu + kubereserved.cpu to be "
                "greater than zero; set reservedSystemCPUs (e.g. '0') or kubeReserved/systemReserved cpu"
            )
    return reserved_cpus


def _check_reserved_maps(checked: _Checked, errors: List[str]) -> None:
    """kubeReserved and systemReserved: reservable resources, non-negative quantities."""
    hugepages_reservable = checked.assumed.enabled(SYSTEM_RESERVED_HUGEPAGES)
    for field in ("kubeReserved", "systemReserved"):
        for resource, value in sorted((checked.effective.get(field) or {}).items()):
            if not reservable(resource, hugepages_reservable):
                errors.append("%s.%s: only %s can be reserved" % (field, resource, ", ".join(RESERVABLE_RESOURCES)))
                continue
            try:
                if parse_quantity(value).sign() < 0:
                    errors.append("%s.%s: %r is negative" % (field, resource, value))
            except InvalidQuantity as exc:
                errors.append("%s.%s: %s" % (field, resource, exc))


def _check_distribute_loop(checked: _Checked, reserved_cpus: Any, warnings: List[str]) -> None:
    """distribute-cpus-across-numa + full-pcpus-only looped forever (holding the CPU manager lock)
    when free CPUs per NUMA node are not whole cores; fixed in 1.37 (kubernetes/kubernetes#140730)."""
    cpu_options, assumed, topology = checked.cpu_options, checked.assumed, checked.topology
    if (checked.cpu_policy == "static" and _GO_BOOL.get(cpu_options.get("full-pcpus-only", "false"))
            and _GO_BOOL.get(cpu_options.get("distribute-cpus-across-numa", "false"))
            and not behaviour(DISTRIBUTE_FULL_PCPUS_LOOP_FIXED, assumed.version)):
        partial = _partial_cores(topology, reserved_cpus) if topology is not None else None
        if topology is None or partial:
            detail = ("reservedSystemCPUs %s leave(s) part of core(s) %s free" % (checked.raw_reserved, partial) if partial else
                      "check that reservedSystemCPUs cover whole cores (no host topology to check)")
            warnings.append(
                "cpuManagerPolicyOptions: distribute-cpus-across-numa with full-pcpus-only can make kubelet %d.%d loop "
                "forever in pod admission, holding the CPU manager lock, when a NUMA node's free CPUs are not whole "
                "cores (fixed in 1.37, kubernetes/kubernetes#140730); %s" % (assumed.minor + (detail,)))


def _check_host(checked: _Checked, reserved_cpus: Any, errors: List[str]) -> None:
    """The checks that need the host: reserved CPUs online, the NUMA node limit, distances, and
    the reservedMemory node ids."""
    topology, raw_reserved, tm_policy, tm_options = checked.topology, checked.raw_reserved, checked.tm_policy, checked.tm_options
    online = frozenset(topology.online_cpus())
    if reserved_cpus is not None and not reserved_cpus <= online:
        errors.append(
            "reservedSystemCPUs: reserved-cpus: %s is not a subset of online-cpus: %s; CPUs %s do not exist or are offline on this host"
            % (raw_reserved, format_cpuset(online), format_cpuset(reserved_cpus - online))
        )
    if reserved_cpus is not None and reserved_cpus == online and checked.cpu_policy == "static":
        errors.append(
            "reservedSystemCPUs: %s reserves every online CPU; the static policy would have no CPU to give exclusively"
            % raw_reserved
        )
    if tm_policy != "none":
        limit = DEFAULT_MAX_ALLOWABLE_NUMA_NODES
        text = tm_options.get(MAX_ALLOWABLE_NUMA_NODES)
        try:
            limit = go_atoi(text) if text is not None else limit
        except ValueError:  # reported by the option check
            pass
        count = len(topology.node_ids())
        if count > limit:
            errors.append(
                "topologyManagerPolicy: %s: unsupported on machines with more than %d NUMA Nodes (this host has %d); "
                "set topologyManagerPolicyOptions.%s: \"%d\" or topologyManagerPolicy: none"
                % (tm_policy, limit, count, MAX_ALLOWABLE_NUMA_NODES, count)
            )
        if _GO_BOOL.get(tm_options.get(PREFER_CLOSEST_NUMA_NODES, "false")):
            try:  # NewNUMAInfo, under every policy: the engine's rule
                NUMAInfo.from_topology(topology, True)
            except NumaguardError as exc:
                errors.append("topologyManagerPolicyOptions.%s: %s" % (PREFER_CLOSEST_NUMA_NODES, exc))
    if checked.mm_policy == "Static":
        try:
            reservations = parse_reserved_memory_config(checked.effective.get("reservedMemory"), "reservedMemory")
        except ReservationSyntaxError:
            reservations = []  # reported by the Static check above
        errors.extend("reservedMemory: %s" % finding
                      for finding in reserved_numa_node_findings(reservations, topology.node_ids(), POLICY_STATIC))


# --------------------------------------------------------------------------------------------
# Flags
# --------------------------------------------------------------------------------------------


def _pairs(mapping: Dict[str, Any], sep: str = "=") -> str:
    return ",".join("%s%s%s" % (k, sep, option_text(mapping[k])) for k in sorted(mapping))


def render_flags(settings: Dict[str, Any]) -> List[str]:
    """The kubelet command-line flags equivalent to ``settings`` (sorted by flag name).

    For kubelets configured by flags. ``--reserved-memory`` is rendered once per NUMA node
    (``--reserved-memory=0:memory=1Gi,hugepages-1Gi=2Gi``), as the kubelet accepts it.
    """
    flags: List[str] = []
    for field in sorted(settings, key=lambda f: MANAGED_FIELDS[f][0] if f in MANAGED_FIELDS else f):
        if field not in MANAGED_FIELDS:
            continue
        flag, kind = MANAGED_FIELDS[field]
        value = settings[field]
        if kind in ("options", "resources", "gates"):
            flags.append("%s=%s" % (flag, _pairs(value)))
        elif kind == "eviction":
            flags.append("%s=%s" % (flag, _pairs(value, "<")))
        elif kind == "reservedMemory":
            for entry in sorted(value, key=lambda e: e["numaNode"]):
                flags.append("%s=%s:%s" % (flag, entry["numaNode"], _pairs(entry["limits"])))
        else:
            flags.append("%s=%s" % (flag, value))
    return flags


# --------------------------------------------------------------------------------------------
# Does the change need the state files reset?
# --------------------------------------------------------------------------------------------


def _reserved_memory_bytes(config: Dict[str, Any]) -> Optional[Dict[int, Dict[str, int]]]:
    """Per NUMA node, per type, the bytes the Static memory manager holds as ``systemReserved``
    (the one model: the config parser, then ``convertReserved``: later entries replace earlier
    ones, ``AsInt64``, unsigned). None when the kubelet could not read or convert it."""
    try:
        converted = convert_reserved((), parse_reserved_memory_config(config.get("reservedMemory"), "reservedMemory"))
    except (ReservationSyntaxError, ReservedMemoryError):
        return None
    return dict((node, limits) for node, limits in converted.items() if limits)


def _cpuset_or_text(value: Any) -> Any:
    try:
        return parse_cpuset(str(value or ""))
    except InvalidCPUSet:
        return str(value)


def reset_decision(old: Dict[str, Any],
                   new: Dict[str, Any],
                   cpu_state: Any = None,
                   memory_state: Any = None,
                   topology: Any = None) -> Dict[str, Any]:
    """Decide which state files the change makes the kubelet refuse (validateState of
    pkg/kubelet/cm/cpumanager/policy_static.go and pkg/kubelet/cm/memorymanager/policy_static.go).

    ``old``/``new``: effective configurations before/after (defaults filled in).
    ``cpu_state``/``memory_state``: the parsed JSON of the state files, the string
    ``"unreadable"`` for a file that exists but is not valid JSON, or None when absent (nothing
    to reset then). Returns ``{"cpu_manager_state": bool, "memory_manager_state": bool,
    "reasons": [...]}``.
    """
    reasons: List[str] = []
    cpu = False
    if cpu_state is not None:
        if not isinstance(cpu_state, dict):
            cpu = True
            reasons.append("cpu_manager_state is not a readable checkpoint; the kubelet would refuse it")
        else:
            state_policy = cpu_state.get("policyName")
            if state_policy != new.get("cpuManagerPolicy", "none"):
                cpu = True
                reasons.append(
                    "cpuManagerPolicy %r differs from the cpu_manager_state checkpoint policy %r"
                    % (new.get("cpuManagerPolicy", "none"), state_policy)
                )
        if new.get("cpuManagerPolicy", "none") == "static" and not cpu:
            old_set = _cpuset_or_text(old.get("reservedSystemCPUs"))
            new_set = _cpuset_or_text(new.get("reservedSystemCPUs"))
            if old_set != new_set:
                cpu = True
                reasons.append("reservedSystemCPUs changed from %r to %r" % (old.get("reservedSystemCPUs") or "", new.get("reservedSystemCPUs") or ""))
            elif not new_set and _cpu_reserved_milli(old) != _cpu_reserved_milli(new):
                cpu = True
                reasons.append("the CPU reservation (kubeReserved + systemReserved cpu) changed, so the reserved CPUs change")
            old_strict = _GO_BOOL.get(option_text((old.get("cpuManagerPolicyOptions") or {}).get("strict-cpu-reservation", "false")), False)
            new_strict = _GO_BOOL.get(option_text((new.get("cpuManagerPolicyOptions") or {}).get("strict-cpu-reservation", "false")), False)
            if old_strict != new_strict and not cpu:
                cpu = True
                reasons.append("strict-cpu-reservation changed, so the default CPU set in the checkpoint no longer validates")
    memory = False
    if memory_state is not None:
        if not isinstance(memory_state, dict):
            memory = True
            reasons.append("memory_manager_state is not a readable checkpoint; the kubelet would refuse it")
        else:
            state_policy = memory_state.get("policyName")
            new_policy = new.get("memoryManagerPolicy", "None")
            if state_policy != new_policy:
                memory = True
                reasons.append("memoryManagerPolicy %r differs from the memory_manager_state checkpoint policy %r" % (new_policy, state_policy))
            elif new_policy == "Static":
                old_reserved, new_reserved = _reserved_memory_bytes(old), _reserved_memory_bytes(new)
                if old_reserved is None or new_reserved is None or old_reserved != new_reserved:
                    memory = True
                    reasons.append("reservedMemory changed, so the checkpoint's systemReserved per NUMA node no longer matches")
                drift = _memory_drift(memory_state, topology)
                if drift:
                    memory = True
                    reasons.append(drift)
    return {"cpu_manager_state": cpu, "memory_manager_state": memory, "reasons": reasons}


def _memory_drift(memory_state: Dict[str, Any], topology: Any) -> Optional[str]:
    """A message when the checkpoint's per-node totals differ from the host (pkg/kubelet/cm/memorymanager/policy_static.go validateState)."""
    if topology is None:
        return None
    machine = memory_state.get("machineState")
    if isinstance(memory_state.get("data"), str):
        try:
            machine = json.loads(memory_state["data"]).get("machineState", machine)
        except (ValueError, RecursionError, AttributeError):
            return "memory_manager_state data is not valid JSON"
    if not machine:
        return None
    if not isinstance(machine, dict):
        return "memory_manager_state machineState is not a mapping"
    state_nodes = set()
    for key in machine:
        try:
            state_nodes.add(int(key))
        except ValueError:
            return "memory_manager_state names NUMA node %r" % key
    host_nodes = set(topology.node_ids())
    if state_nodes != host_nodes:
        return "memory_manager_state covers NUMA nodes %s but the host has %s" % (
            ",".join(str(n) for n in sorted(state_nodes)), ",".join(str(n) for n in sorted(host_nodes)))
    for node in topology.nodes:
        memory_map = (machine.get(str(node.id)) or {}).get("memoryMap") or {}
        recorded = (memory_map.get("memory") or {}).get("total")
        if recorded != node.memory_total_bytes:
            return "NUMA node %d memory drifted: checkpoint total %s bytes, host now %d bytes" % (node.id, recorded, node.memory_total_bytes)
        for name, pool in node.hugepages.items():
            recorded_hp = (memory_map.get(name) or {}).get("total")
            if recorded_hp is not None and recorded_hp != pool.total_pages * pool.page_size_bytes:
                return "NUMA node %d %s drifted: checkpoint total %s bytes, host now %d bytes" % (
                    node.id, name, recorded_hp, pool.total_pages * pool.page_size_bytes)
    return None
