# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Kubelet releases 1.26-1.38: feature-gate defaults, policy-option maturity, behaviour switches.

Why one table: fleets run several kubelet minors and the rules moved between them (option
maturity, gate defaults, device hint generation, pod-level resource managers). Validation
(kubelet_config, reserved_memory, validate.yml) and the admission engine must decide as the
host's kubelet decides, so every version-dependent fact lives here once, with its source in
docs/kubelet-versions.md. Everything is keyed on the kubelet *minor* version.

Sources (details per row in docs/kubelet-versions.md): kubernetes/kubernetes
pkg/features/kube_features.go and test/compatibility_lifecycle/reference/versioned_feature_list.yaml
(gate defaults), pkg/kubelet/cm/cpumanager/policy_options.go and
cm/topologymanager/policy_options.go (option maturity and the kubelet's error texts),
k8s.io/component-base/featuregate (AllAlpha/AllBeta, locked gates).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import re

try:
    from typing import Any, Dict, Mapping, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.gostrconv import go_quote

#: Oldest release the table covers; older kubelets are refused (their option sets differ).
OLDEST_KNOWN = (1, 26)
#: Newest release the table covers. 1.38 rows come from KEPs targeting 1.38 (not released yet).
NEWEST_KNOWN = (1, 38)
#: Newest *released* kubelet: the assumption when a host's version cannot be found.
NEWEST_RELEASED = (1, 37)

ALPHA = "alpha"
BETA = "beta"
GA = "stable"
DEPRECATED = "deprecated"

# --------------------------------------------------------------------------------------------
# Feature gates: gate -> ((first minor, default, stage, locked), ...) in release order.
# Only gates that change what this collection decides are listed.
# --------------------------------------------------------------------------------------------
GATES: Dict[str, Tuple[Tuple[int, bool, str, bool], ...]] = {
    "CPUManagerPolicyOptions": ((22, False, ALPHA, False), (23, True, BETA, False), (33, True, GA, True)),
    "CPUManagerPolicyAlphaOptions": ((23, False, ALPHA, False),),
    "CPUManagerPolicyBetaOptions": ((23, True, BETA, False),),
    "TopologyManagerPolicyOptions": ((26, False, ALPHA, False), (28, True, BETA, False), (32, True, GA, False)),
    "TopologyManagerPolicyAlphaOptions": ((26, False, ALPHA, False),),
    "TopologyManagerPolicyBetaOptions": ((26, False, BETA, False), (28, True, BETA, False)),
    "MemoryManager": ((21, False, ALPHA, False), (22, True, BETA, False), (32, True, GA, True)),
    # restartable init containers (KEP-753); off in 1.28: the predicate admit handler rejects them
    "SidecarContainers": ((28, False, ALPHA, False), (29, True, BETA, False), (33, True, GA, True)),
    "PodLevelResources": ((32, False, ALPHA, False), (34, True, BETA, False)),
    # beta in 1.37 but switched off by default before the release (kubernetes/kubernetes#141209)
    "PodLevelResourceManagers": ((36, False, ALPHA, False), (37, False, BETA, False)),
    "InPlacePodVerticalScaling": ((27, False, ALPHA, False), (33, True, BETA, False), (35, True, GA, True)),
    "InPlacePodVerticalScalingExclusiveCPUs": ((32, False, ALPHA, False),),
    "InPlacePodVerticalScalingExclusiveMemory": ((34, False, ALPHA, False),),
    # KEP-6252 / KEP-6232: alpha targeted at 1.38, code not merged upstream yet (PR-only)
    "SystemReservedHugepages": ((38, False, ALPHA, False),),
    "MemoryManagerDriftTolerance": ((38, False, ALPHA, False),),
}

# --------------------------------------------------------------------------------------------
# Policy options: option -> ((first minor, maturity), ...)
# --------------------------------------------------------------------------------------------
CPU_MANAGER_OPTIONS: Dict[str, Tuple[Tuple[int, str], ...]] = {
    "full-pcpus-only": ((22, ALPHA), (23, BETA), (33, GA)),
    "distribute-cpus-across-numa": ((23, ALPHA), (33, BETA)),
    "align-by-socket": ((25, ALPHA),),
    "distribute-cpus-across-cores": ((31, ALPHA),),
    "strict-cpu-reservation": ((32, ALPHA), (33, BETA), (35, GA)),
    "prefer-align-cpus-by-uncorecache": ((32, ALPHA), (34, BETA), (36, GA)),
}
#: The Topology Manager's options: their names are spelled here only (the option registry; everything
#: else, the engine's parser, kubelet_config's checks, recommend's candidates, imports them).
PREFER_CLOSEST_NUMA_NODES = "prefer-closest-numa-nodes"
MAX_ALLOWABLE_NUMA_NODES = "max-allowable-numa-nodes"
TOPOLOGY_MANAGER_OPTIONS: Dict[str, Tuple[Tuple[int, str], ...]] = {
    PREFER_CLOSEST_NUMA_NODES: ((26, ALPHA), (28, BETA), (32, GA)),
    MAX_ALLOWABLE_NUMA_NODES: ((31, BETA), (35, GA)),
}
#: memoryManagerPolicyOptions (KEP-6232, PR-only): accepted only with MemoryManagerDriftTolerance.
MEMORY_MANAGER_OPTIONS: Dict[str, Tuple[Tuple[int, str], ...]] = {
    "memory-drift-tolerance": ((38, ALPHA),),
}
#: Static-policy option pairs the kubelet refuses together (cpumanager/policy_options.go
#: ``ValidateStaticPolicyOptions``/``NewStaticPolicyOptions``), in the kubelet's check order.
CPU_INCOMPATIBLE_OPTIONS: Tuple[Tuple[str, str], ...] = (
    ("full-pcpus-only", "distribute-cpus-across-cores"),
    ("distribute-cpus-across-numa", "distribute-cpus-across-cores"),
    ("prefer-align-cpus-by-uncorecache", "distribute-cpus-across-cores"),
    ("prefer-align-cpus-by-uncorecache", "distribute-cpus-across-numa"),
)
_OPTION_TABLES = {"cpu": CPU_MANAGER_OPTIONS, "topology": TOPOLOGY_MANAGER_OPTIONS, "memory": MEMORY_MANAGER_OPTIONS}
_OPTION_LABEL = {"cpu": "CPU", "topology": "Topology", "memory": "Memory"}
_OPTION_GATE_PREFIX = {"cpu": "CPUManagerPolicy", "topology": "TopologyManagerPolicy"}

# --------------------------------------------------------------------------------------------
# Behaviour switches that are not gates: name -> first minor with the new behaviour.
# --------------------------------------------------------------------------------------------
#: Device manager hints enumerate only the NUMA nodes hosting devices of the resource, plus one
#: non-preferred hint spanning every node (kubernetes/kubernetes#138244).
DEVICE_HINTS_FROM_DEVICE_NUMA_NODES = "device-hints-from-device-numa-nodes"
#: distribute-cpus-across-numa + full-pcpus-only no longer loops forever when free CPUs per NUMA
#: node are not whole cores (kubernetes/kubernetes#140730).
DISTRIBUTE_FULL_PCPUS_LOOP_FIXED = "distribute-full-pcpus-loop-fixed"
#: Memory manager, pod scope (PodLevelResourceManagers): a pod-level pod whose blocks were restored
#: from memory_manager_state gets its hint back from its pod-level blocks; before, from its first
#: container's blocks compared with the whole pod budget (kubernetes/kubernetes#141070, listed in
#: CHANGELOG v1.38.0-alpha.1 "since v1.37.0").
MEMORY_POD_HINTS_FROM_POD_BLOCKS = "memory-pod-hints-from-pod-blocks"
#: Memory manager ``AllocatePod`` keeps a restored pod-level allocation; before, it reserved the
#: budget a second time (kubernetes/kubernetes#141077, merged on master in August 2026; release
#: note NONE, so no changelog says whether 1.37.0 has it: see UNCONFIRMED).
MEMORY_ALLOCATE_POD_KEEPS_RESTORED = "memory-allocate-pod-keeps-restored"
#: The kubelet reads ``restartPolicy`` of init containers (KEP-753, 1.28); older API types have no
#: such field, so the kubelet decodes a sidecar as a regular init container and never rejects it
#: (k8s.io/api core/v1 types.go of 1.27 has no ``ContainerRestartPolicy``).
INIT_CONTAINER_RESTART_POLICY_FIELD = "init-container-restart-policy-field"
#: The CPU, memory and device managers size and reuse restartable init containers as sidecars
#: (long-running: summed with the app containers, their CPUs/memory/devices never reused);
#: before, every init container counts as a regular one, whatever ``SidecarContainers`` says
#: (kubernetes/kubernetes#119447 CPU, #120715 memory, #120461 device; issue #119442).
MANAGERS_SIDECAR_AWARE = "managers-sidecar-aware"
#: ``takeByTopology``'s shortage text says ``: requested=N, available=M`` (cpu_assignment.go of
#: 1.29; 1.28 prints the bare sentence). See TEXTS.
CPU_SHORTAGE_TEXT_COUNTS = "cpu-shortage-text-counts"
#: SMTAlignmentError prints its text by cause (``CausedByPhysicalCPUs``); before, by whether any
#: free physical CPU is left, so "not multiple cpus per core" also for a multiple when none is.
SMT_ALIGNMENT_ERROR_BY_CAUSE = "smt-alignment-error-by-cause"
#: Memory manager ``Allocate`` rejects a multi-NUMA affinity over nodes holding single-NUMA or
#: differently grouped allocations ("preferred hint violates NUMA node allocation",
#: kubernetes/kubernetes#123443); before, such pods get blocks spanning the nodes.
MEMORY_ALLOCATE_NUMA_GROUP_RULE = "memory-allocate-numa-group-rule"
#: Memory manager ``validateState`` compares free/reserved summed over each node's NUMA group;
#: before, every node's table exactly, so a state whose multi-NUMA releases left per-node values
#: that differ from the replay refuses to start (kubernetes/kubernetes#127074, issue #113130).
MEMORY_STATE_GROUP_SUMS = "memory-state-group-sums"
#: Start-up: ``validateNodeAllocatable`` says "has a reservation of R but capacity of C. Expected
#: capacity >= reservation."; before, "has an allocatable of R, capacity of C-R"
#: (kubernetes/kubernetes#119764; pkg/kubelet/cm/node_container_manager_linux.go of 1.29.6 and
#: 1.29.11 still print the old words, 1.30.7 the new ones).
NODE_ALLOCATABLE_RESERVATION_TEXT = "node-allocatable-reservation-text"
BEHAVIOURS: Dict[str, int] = {
    INIT_CONTAINER_RESTART_POLICY_FIELD: 28,
    MANAGERS_SIDECAR_AWARE: 29,
    CPU_SHORTAGE_TEXT_COUNTS: 29,
    NODE_ALLOCATABLE_RESERVATION_TEXT: 30,
    SMT_ALIGNMENT_ERROR_BY_CAUSE: 32,
    MEMORY_ALLOCATE_NUMA_GROUP_RULE: 32,
    MEMORY_STATE_GROUP_SUMS: 32,
    DEVICE_HINTS_FROM_DEVICE_NUMA_NODES: 36,
    DISTRIBUTE_FULL_PCPUS_LOOP_FIXED: 37,
    MEMORY_POD_HINTS_FROM_POD_BLOCKS: 38,
    MEMORY_ALLOCATE_POD_KEEPS_RESTORED: 38,
}
#: Behaviour -> minors for which no source says whether they have it (callers refuse to guess).
UNCONFIRMED: Dict[str, Tuple[int, ...]] = {
    MEMORY_ALLOCATE_POD_KEEPS_RESTORED: (37,),
}


#: The kubelet's texts that changed between releases: name -> ((first minor, %-format), ...).
#: ``cpu-shortage``: takeByTopology with fewer free CPUs than requested (cpu_assignment.go);
#: ``init-container-restart-policy-forbidden``: the predicate admit handler with
#: SidecarContainers off (pkg/kubelet/lifecycle/predicate.go; ``name`` is Go-quoted).
CPU_SHORTAGE = "cpu-shortage"
INIT_CONTAINER_RESTART_POLICY_FORBIDDEN = "init-container-restart-policy-forbidden"
TEXTS: Dict[str, Tuple[Tuple[int, str], ...]] = {
    CPU_SHORTAGE: ((OLDEST_KNOWN[1], "not enough cpus available to satisfy request"),
                   (BEHAVIOURS[CPU_SHORTAGE_TEXT_COUNTS],
                    "not enough cpus available to satisfy request: requested=%(requested)d, available=%(available)d")),
    INIT_CONTAINER_RESTART_POLICY_FORBIDDEN: (
        (BEHAVIOURS[INIT_CONTAINER_RESTART_POLICY_FIELD], "Init container %(name)s may not have a non-default restartPolicy"),),
}
#: reason of the predicate's refusal of restartable init containers (predicate.go)
INIT_CONTAINER_RESTART_POLICY_FORBIDDEN_REASON = "InitContainerRestartPolicyForbidden"


class VersionError(NumaguardError):
    """A kubelet version or feature-gate setting the table cannot use; the message names it."""


_VERSION = re.compile(r"^(?:kubernetes\s+)?v?(\d+)\.(\d+)(?:\.(\d+))?([-+][0-9A-Za-z.+_-]*)?$", re.IGNORECASE)


def parse_kubelet_version(text: Any) -> Tuple[int, int, int]:
    """``"Kubernetes v1.35.2"`` (``kubelet --version``), ``v1.35.2``, ``1.35``,
    ``v1.31.4-eks-1234``, ``v1.29.8+k3s1`` -> (1, 35, 2); the patch is 0 when absent.

    Raises VersionError for text that is not a version and for releases older than
    OLDEST_KNOWN (their option sets and gates are not in the table).
    """
    if isinstance(text, bool) or text is None:
        raise VersionError("kubelet_version: %r is not a Kubernetes version (expected e.g. 1.35 or v1.35.2)" % (text,))
    if isinstance(text, float):
        # YAML reads 1.30 as the float 1.3: refuse instead of guessing 1.3 vs 1.30
        raise VersionError("kubelet_version: %r was read as a number; quote it (\"1.30\")" % (text,))
    match = _VERSION.match(str(text).strip())
    if not match:
        raise VersionError("kubelet_version: %r is not a Kubernetes version (expected e.g. 1.35 or v1.35.2)" % (text,))
    version = (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))
    if version[0] != 1:
        raise VersionError("kubelet_version: %s is not a Kubernetes 1.x release" % str(text).strip())
    if version[:2] < OLDEST_KNOWN:
        raise VersionError("kubelet_version: %s is older than the oldest release this collection knows (%d.%d)"
                           % (str(text).strip(), OLDEST_KNOWN[0], OLDEST_KNOWN[1]))
    return version


def format_version(version: Tuple[int, ...]) -> str:
    """(1, 35) -> ``1.35``; (1, 35, 2) -> ``1.35.2``."""
    return ".".join(str(part) for part in version)


def table_minor(version: Tuple[int, ...]) -> int:
    """The minor the table answers for: newer releases than NEWEST_KNOWN read as NEWEST_KNOWN."""
    return min(tuple(version[:2]), NEWEST_KNOWN)[1]


def _at(entries: Tuple[Tuple[Any, ...], ...], minor: int) -> Optional[Tuple[Any, ...]]:
    found = None
    for entry in entries:
        if minor >= entry[0]:
            found = entry
    return found


# ---- gates -----------------------------------------------------------------------------------

def gate_spec(gate: str, version: Tuple[int, ...]) -> Optional[Tuple[bool, str, bool]]:
    """(default, stage, locked) of a gate in that release; None if the release does not have it."""
    entry = _at(GATES.get(gate, ()), table_minor(version))
    return None if entry is None else (entry[1], entry[2], entry[3])


def gate_defaults(version: Tuple[int, ...]) -> Dict[str, bool]:
    """Default of every tabled gate the release has."""
    result: Dict[str, bool] = {}
    for gate in sorted(GATES):
        spec = gate_spec(gate, version)
        if spec is not None:
            result[gate] = spec[0]
    return result


def gate_errors(version: Tuple[int, ...], configured: Optional[Mapping[str, Any]]) -> Dict[str, str]:
    """featureGates settings the kubelet refuses at start-up (component-base featuregate
    ``SetFromMap``): non-boolean values, a tabled gate the release does not have yet, and a
    locked gate set against its default.

    Gates missing from the table are not judged (the table lists only NUMA-relevant gates).
    Returns gate -> the kubelet's message.
    """
    errors: Dict[str, str] = {}
    for gate, value in sorted((configured or {}).items()):
        if not isinstance(value, bool):
            errors[gate] = "invalid value of %s=%s, err: expected a boolean" % (gate, value)
            continue
        spec = gate_spec(gate, version)
        if spec is None and gate in GATES:
            errors[gate] = "unrecognized feature gate: %s" % gate
            continue
        if spec is not None and spec[2] and value != spec[0]:
            errors[gate] = "cannot set feature gate %s to %s, feature is locked to %s" % (
                gate, str(value).lower(), str(spec[0]).lower())
    return errors


def effective_gates(version: Tuple[int, ...], configured: Optional[Mapping[str, Any]] = None) -> Dict[str, bool]:
    """Every tabled gate with its value in that release (False for a gate the release does not
    have yet): an explicit ``featureGates`` entry wins,
    then ``AllAlpha``/``AllBeta`` for gates at that stage in that release, then the default.
    Explicit entries for gates the table does not list are kept as given."""
    configured = dict(configured or {})
    result = dict((gate, False) for gate in GATES)  # a gate the release does not have yet is off
    result.update(gate_defaults(version))
    for gate in gate_defaults(version):
        row = gate_spec(gate, version)  # a gate of gate_defaults(version): never None
        stage = None if row is None else row[1]
        if stage == ALPHA and isinstance(configured.get("AllAlpha"), bool):
            result[gate] = configured["AllAlpha"]
        elif stage == BETA and isinstance(configured.get("AllBeta"), bool):
            result[gate] = configured["AllBeta"]
    for gate, value in configured.items():
        if isinstance(value, bool):
            result[gate] = value
    return result


def gate_enabled(gate: str, version: Tuple[int, ...], configured: Optional[Mapping[str, Any]] = None) -> bool:
    """Whether ``gate`` is on in that release with those ``featureGates``."""
    return bool(effective_gates(version, configured).get(gate, False))


# ---- policy options --------------------------------------------------------------------------

def option_maturity(manager: str, option: str, version: Tuple[int, ...]) -> Optional[str]:
    """alpha/beta/stable for a ``cpu``, ``topology`` or ``memory`` manager policy option in that
    release; None when the release does not know the option."""
    entry = _at(_OPTION_TABLES[manager].get(option, ()), table_minor(version))
    return None if entry is None else entry[1]


def option_introduced(manager: str, option: str) -> Optional[int]:
    """First minor that knows the option (None for an option no release knows)."""
    entries = _OPTION_TABLES[manager].get(option)
    return entries[0][0] if entries else None


def known_options(manager: str, version: Tuple[int, ...]) -> Tuple[str, ...]:
    """The options the release knows, sorted."""
    return tuple(sorted(o for o in _OPTION_TABLES[manager] if option_maturity(manager, o, version) is not None))


def option_gate(manager: str, option: str, version: Tuple[int, ...]) -> Optional[str]:
    """The feature gate that must be on for the option in that release (None: always available)."""
    maturity = option_maturity(manager, option, version)
    if manager == "memory":
        return "MemoryManagerDriftTolerance" if maturity is not None else None
    if maturity == ALPHA:
        return _OPTION_GATE_PREFIX[manager] + "AlphaOptions"
    if maturity == BETA:
        return _OPTION_GATE_PREFIX[manager] + "BetaOptions"
    return None


def option_availability_error(manager: str, option: str, version: Tuple[int, ...],
                              configured_gates: Optional[Mapping[str, Any]] = None) -> Optional[str]:
    """``CheckPolicyOptionAvailable`` of that release: None when the kubelet accepts the option,
    else the kubelet's start-up error text (``%q`` quoting as in policy_options.go)."""
    label = _OPTION_LABEL[manager]
    maturity = option_maturity(manager, option, version)
    quoted = go_quote(option)
    if maturity is None:
        return "unknown %s Manager Policy option: %s" % (label, quoted)
    gate = option_gate(manager, option, version)
    if gate is None or gate_enabled(gate, version, configured_gates):
        return None
    if manager == "memory":
        # KEP-6232 code is not merged: wording as in _engine/memorymanager/memory_drift.py (unconfirmed)
        return "memory manager policy option %s requires the %s feature gate" % (quoted, gate)
    level = "Alpha" if maturity == ALPHA else "Beta"
    return "%s Manager Policy %s-level Options not enabled, but option %s provided" % (label, level, quoted)


# ---- behaviour switches ----------------------------------------------------------------------

def behaviour(name: str, version: Tuple[int, ...]) -> bool:
    """Whether the release has the behaviour ``name`` (see BEHAVIOURS)."""
    return table_minor(version) >= BEHAVIOURS[name]


def behaviour_confirmed(name: str, version: Tuple[int, ...]) -> bool:
    """False when no source says whether the release has the behaviour ``name`` (see UNCONFIRMED)."""
    return table_minor(version) not in UNCONFIRMED.get(name, ())


def kubelet_text(which: str, version: Tuple[int, ...], **values: Any) -> str:
    """The kubelet's text ``which`` (see TEXTS) as that release prints it; ``values`` fill it in
    (string values are Go-quoted, as the kubelet's ``%q``)."""
    entry = _at(TEXTS[which], table_minor(version))
    if entry is None:
        raise VersionError("kubelet %s has no text %r" % (format_version(version), which))
    filled = dict((key, go_quote(value) if isinstance(value, str) else value) for key, value in values.items())
    return entry[1] % filled


# ---- what a result assumed -------------------------------------------------------------------

class KubeletAssumption:
    """The kubelet version and gates a decision was made for, and where they came from.

    ``source``: ``option`` (given by the user), ``host`` (``kubelet --version`` on the target)
    or ``default`` (nothing found: NEWEST_RELEASED, with a warning).
    """

    #: why a module found no version (a filter on the controller passes its own reason)
    UNKNOWN_ON_HOST = "no kubelet_version given and no kubelet binary found"

    def __init__(self, version: Tuple[int, ...], source: str, configured_gates: Optional[Mapping[str, Any]] = None,
                 text: Optional[str] = None, unknown_because: str = UNKNOWN_ON_HOST) -> None:
        self.version = tuple(version)
        self.source = source
        self.text = text or format_version(self.version)
        self.configured_gates = dict(configured_gates or {})
        self.gates = effective_gates(self.version, self.configured_gates)
        self.warnings = []  # type: list
        if source == "default":
            self.warnings.append(
                "kubelet version unknown (%s): decisions follow kubelet %s, the newest released kubelet this "
                "collection knows" % (unknown_because, format_version(self.version)))
        elif tuple(self.version[:2]) > NEWEST_KNOWN:
            self.warnings.append(
                "kubelet %s is newer than the newest release this collection knows (%s): decisions follow %s"
                % (self.text, format_version(NEWEST_KNOWN), format_version(NEWEST_KNOWN)))

    @classmethod
    def resolve(cls, option_value: Any = None, host_version: Any = None,
                configured_gates: Optional[Mapping[str, Any]] = None,
                unknown_because: str = UNKNOWN_ON_HOST) -> KubeletAssumption:
        """The one resolution order (docs/kubelet-versions.md): the option when given, else the
        host's ``kubelet --version`` output (:func:`probe_host_kubelet` decides whether to ask),
        else NEWEST_RELEASED. Raises VersionError for an unusable option value; an
        unparsable host output falls back to the default with a warning naming it."""
        if option_value not in (None, ""):
            return cls(parse_kubelet_version(option_value), "option", configured_gates, str(option_value).strip())
        if host_version not in (None, ""):
            try:
                parsed = parse_kubelet_version(host_version)
            except VersionError as exc:
                assumed = cls(NEWEST_RELEASED, "default", configured_gates, unknown_because=unknown_because)
                assumed.warnings.append("the host's kubelet --version output was not usable: %s" % exc)
                return assumed
            text = str(host_version).strip()
            if text.lower().startswith("kubernetes "):
                text = text.split(None, 1)[1]
            return cls(parsed, "host", configured_gates, text)
        return cls(NEWEST_RELEASED, "default", configured_gates, unknown_because=unknown_because)

    def with_gates(self, configured_gates: Optional[Mapping[str, Any]]) -> KubeletAssumption:
        """The same kubelet with another ``featureGates`` map (e.g. the configuration after a
        change); warnings are kept."""
        other = KubeletAssumption(self.version, self.source, configured_gates, self.text)
        other.warnings = list(self.warnings)
        return other

    @property
    def minor(self) -> Tuple[int, int]:
        return (self.version[0], self.version[1])

    def enabled(self, gate: str) -> bool:
        return bool(self.gates.get(gate, False))

    def result(self) -> Dict[str, Any]:
        """The result fields every module reports: ``kubelet_version`` (as found),
        ``kubelet_version_source`` and ``feature_gates`` (the tabled gates' effective values)."""
        return {"kubelet_version": self.text, "kubelet_version_source": self.source,
                "feature_gates": dict(sorted(self.gates.items()))}

    def report_in(self, output: Dict[str, Any]) -> Dict[str, Any]:
        """Add :meth:`result` to a result dict and put :attr:`warnings` first in its ``warnings``
        list (how ``reserved_memory`` and the ``reserved_memory_check`` filter both say what they
        assumed); returns ``output``."""
        output.update(self.result())
        output["warnings"] = list(self.warnings) + list(output.get("warnings") or [])
        return output


def reads_live_host(root: Any = "/", topology: Any = None) -> bool:
    """Whether a module's inputs are the live host's own: ``root`` is ``/`` (or unset) and no
    ``topology`` option replaces the host's. Only then is the host's kubelet the one decided for."""
    return (root or "/") == "/" and topology is None


def probe_host_kubelet(module: Any, option_value: Any = None, root: Any = "/", topology: Any = None) -> Optional[str]:
    """The host's ``kubelet --version`` output when the resolution needs it, else None: only when
    no ``kubelet_version`` is given and the module reads the live host (:func:`reads_live_host`).
    The one place a module asks the host (``module``: an AnsibleModule, or None on the controller)."""
    if option_value not in (None, "") or module is None or not reads_live_host(root, topology):
        return None
    return host_kubelet_version(module)


def host_kubelet_version(module: Any) -> Optional[str]:
    """``kubelet --version`` output of the host the module runs on (``Kubernetes v1.35.2``),
    or None when there is no kubelet binary or it fails. ``module``: an AnsibleModule (only
    ``get_bin_path`` and ``run_command`` are used)."""
    binary = module.get_bin_path("kubelet")
    if not binary:
        return None
    rc, out, _err = module.run_command([binary, "--version"])
    if rc != 0 or not out.strip():
        return None
    return out.strip()
