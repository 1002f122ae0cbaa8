# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""In-place resize of a running pod: the kubelet's own refusals, release by release.

Why this exists: the kubelet refuses to resize the CPU (or memory) of a Guaranteed pod when the
static CPU manager (or the Static memory manager) pins it, unless the exclusive-resource resize
gate of that manager is on; the pod keeps its allocation and the resize is reported with reason
``Infeasible`` and a fixed message. This module reproduces the resize admit handler's decisions
(pkg/kubelet/allocation ``podResizesAdmitHandler.Admit`` in handlers.go, before it
``manager.canResizePod`` in allocation_manager.go and, before 1.34, ``Kubelet.canResizePod`` in
kubelet.go; ``guaranteedPodResourceResizeRequired``; features_linux.go
``IsInPlacePodVerticalScalingAllowed``). The resize itself (new CPU sets, memory blocks) and the
admit handlers that run after this one are not simulated here.

Release by release (docs/admission.md, "Resizing a running pod"):

* ``InPlacePodVerticalScaling`` off (alpha 1.27-1.32, off by default): the kubelet does not
  resize ("InPlacePodVerticalScaling is disabled"). Static pods are never resized.
* before 1.32: no rule for Guaranteed pods next to the static managers.
* 1.32-1.33: any resize of a Guaranteed pod is refused under CPU Manager ``static`` ("Resize is
  infeasible for Guaranteed Pods alongside CPU Manager static policy") or Memory Manager
  ``Static`` ("... Memory Manager static policy"), both unless
  ``InPlacePodVerticalScalingExclusiveCPUs`` (alpha, off, from 1.32) is on.
* from 1.34: only a change of the CPU requests (memory requests) of a resizable container counts,
  memory has its own gate ``InPlacePodVerticalScalingExclusiveMemory`` (alpha, off, from 1.34),
  and the text names the policy quoted: 'Resize is infeasible for Guaranteed Pods alongside CPU
  Manager policy "static"'.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Mapping, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager.state import POLICY_STATIC as CPU_POLICY_STATIC
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.policy_none import POLICY_STATIC as MEMORY_POLICY_STATIC

#: ``v1.PodReasonInfeasible``: the reason of the ``PodResizePending`` condition.
REASON_INFEASIBLE = "Infeasible"
EXCLUSIVE_CPUS_GATE = "InPlacePodVerticalScalingExclusiveCPUs"
EXCLUSIVE_MEMORY_GATE = "InPlacePodVerticalScalingExclusiveMemory"
RESIZE_GATE = "InPlacePodVerticalScaling"
#: the gates a resize decision depends on (reported with every resize result)
RESIZE_GATES = (RESIZE_GATE, EXCLUSIVE_CPUS_GATE, EXCLUSIVE_MEMORY_GATE)
#: first minor with the rule for Guaranteed pods next to the static managers (PR #128287)
FIRST_GUARANTEED_RULE = 32
#: first minor where only the resized resource counts, with a memory gate of its own and the
#: policy name quoted in the message (PR #132473)
FIRST_PER_RESOURCE_RULE = 34
#: features_linux.go ``IsInPlacePodVerticalScalingAllowed``
GATE_OFF_MESSAGE = "InPlacePodVerticalScaling is disabled"
STATIC_POD_MESSAGE = "In-place resize of static-pods is not supported"


def infeasible_resize_message(manager: str, policy: str, minor: Optional[int] = None) -> str:
    """The kubelet's text: ``Resize is infeasible for Guaranteed Pods alongside <manager>
    policy "<policy>"`` (``manager``: "CPU Manager" or "Memory Manager"); before 1.34
    (``minor`` < 34) ``... alongside <manager> static policy``."""
    if minor is not None and minor < FIRST_PER_RESOURCE_RULE:
        return "Resize is infeasible for Guaranteed Pods alongside %s static policy" % manager
    return 'Resize is infeasible for Guaranteed Pods alongside %s policy "%s"' % (manager, policy)


def _resizable(container: Any) -> bool:
    """``IsResizableContainer``: app containers and sidecars (restartable init containers)."""
    return not (container.is_init and not container.restartable)


def resources_changed(allocated: Any, desired: Any) -> bool:
    """``UpdatePodFromAllocation`` reports an update: a resizable container whose requests or
    limits differ from the allocation (compared by value, as ``Semantic.DeepEqual`` does)."""
    before = dict((c.name, c) for c in allocated.all_containers())
    for container in desired.all_containers():
        if not _resizable(container):
            continue
        old = before.get(container.name)
        if old is None:
            return True
        for which in ("request_quantities", "limit_quantities"):
            new_values, old_values = getattr(container, which), getattr(old, which)
            if set(new_values) != set(old_values):
                return True
            if any(new_values[name] != old_values[name] for name in new_values):
                return True
    return False


def request_changed(allocated: Any, desired: Any, resource: str) -> bool:
    """``guaranteedPodResourceResizeRequired``: a resizable container (app container or sidecar)
    whose request differs from what was allocated to it (a new container counts from zero)."""
    before = dict((c.name, c) for c in allocated.all_containers())
    for container in desired.all_containers():
        if not _resizable(container):
            continue  # regular init containers are not resizable
        old = before.get(container.name)
        wanted = container.request_quantities.get(resource)
        had = None if old is None else old.request_quantities.get(resource)
        if (wanted is None or wanted.is_zero()) and (had is None or had.is_zero()):
            continue
        if wanted is None or had is None or wanted != had:
            return True
    return False


def guaranteed_rule(qos_class: str,
                    changed: Mapping[str, Optional[bool]],
                    cpu_manager_policy: Optional[str],
                    memory_manager_policy: Optional[str],
                    feature_gates: Mapping[str, bool],
                    minor: Optional[int] = None) -> Tuple[Optional[Tuple[str, str, Optional[str]]], bool]:
    """The rule for Guaranteed pods next to the static managers, on precomputed changes.

    ``changed``: ``cpu`` / ``memory`` (a resizable container's request of that resource
    differs from the allocation) and ``any`` (any resize at all), each True, False or None
    (not known: the allocation was rebuilt from the state files). ``minor``: the kubelet minor
    (None: the newest rules). Returns ((reason, message, metric label) or None, decided):
    ``decided`` is False when an unknown change would decide the outcome.
    """
    if qos_class != "Guaranteed" or (minor is not None and minor < FIRST_GUARANTEED_RULE):
        return None, True
    cpu_static = cpu_manager_policy == CPU_POLICY_STATIC
    memory_static = memory_manager_policy == MEMORY_POLICY_STATIC
    if minor is not None and minor < FIRST_PER_RESOURCE_RULE:
        # 1.32-1.33: any resize; both managers behind the exclusive-CPU gate
        if feature_gates.get(EXCLUSIVE_CPUS_GATE, False) or not (cpu_static or memory_static):
            return None, True
        if changed.get("any") is None:
            return None, False
        if not changed.get("any"):
            return None, True
        if cpu_static:
            return (REASON_INFEASIBLE, infeasible_resize_message("CPU Manager", CPU_POLICY_STATIC, minor), None), True
        return (REASON_INFEASIBLE, infeasible_resize_message("Memory Manager", MEMORY_POLICY_STATIC, minor), None), True
    rules = (
        ("cpu", cpu_static and not feature_gates.get(EXCLUSIVE_CPUS_GATE, False),
         "CPU Manager", CPU_POLICY_STATIC, "guaranteed_pod_cpu_manager_static_policy"),
        ("memory", memory_static and not feature_gates.get(EXCLUSIVE_MEMORY_GATE, False),
         "Memory Manager", MEMORY_POLICY_STATIC, "guaranteed_pod_memory_manager_static_policy"),
    )
    for resource, applies, manager, policy, label in rules:  # CPU before memory, as the kubelet
        if not applies:
            continue
        if changed.get(resource) is None:
            return None, False
        if changed.get(resource):
            return (REASON_INFEASIBLE, infeasible_resize_message(manager, policy, minor), label), True
    return None, True


def resize_infeasible(allocated: Any,
                      desired: Any,
                      cpu_manager_policy: Optional[str],
                      memory_manager_policy: Optional[str],
                      feature_gates: Mapping[str, bool],
                      minor: Optional[int] = None) -> Optional[Tuple[str, str, Optional[str]]]:
    """Why the kubelet would mark the resize of ``allocated`` to ``desired`` infeasible.

    ``allocated`` and ``desired`` are :class:`~.pod.Pod` objects (the pod as admitted, the pod
    with the new requests); ``feature_gates`` the kubelet's effective gates
    (``_k8s.versions.effective_gates``); ``minor`` the kubelet minor (None: the newest rules).
    Returns (reason, message, metric label) as the kubelet reports them (the label is None
    before 1.34, which had no such metric), or None when these rules let the resize through. The
    CPU rule is checked before the memory rule, as in the kubelet.
    """
    changed = {"cpu": request_changed(allocated, desired, "cpu"),
               "memory": request_changed(allocated, desired, "memory"),
               "any": resources_changed(allocated, desired)}
    outcome, _decided = guaranteed_rule(desired.qos_class, changed, cpu_manager_policy, memory_manager_policy,
                                        feature_gates, minor)
    return outcome


def resize_not_allowed(feature_gates: Mapping[str, bool], static_pod: bool) -> Optional[Tuple[str, str, str]]:
    """``IsInPlacePodVerticalScalingAllowed`` (checked first): (reason, message, metric label)
    when the kubelet resizes no pod (gate off) or not this one (a static pod), else None."""
    if not feature_gates.get(RESIZE_GATE, False):
        return (REASON_INFEASIBLE, GATE_OFF_MESSAGE, "feature_gate_off")
    if static_pod:
        return (REASON_INFEASIBLE, STATIC_POD_MESSAGE, "static_pod")
    return None
