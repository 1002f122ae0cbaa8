# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""In-place resize of a Guaranteed pod next to the static CPU and Memory managers.

Why this exists: the kubelet refuses to resize the CPU (or memory) of a Guaranteed pod when the
static CPU manager (or the Static memory manager) pins it, unless the exclusive-resource resize
gate of that manager is on; the pod keeps its allocation and gets the condition
``PodResizePending`` with reason ``Infeasible`` and a fixed message. This module reproduces only
that decision (pkg/kubelet/allocation ``podResizesAdmitHandler.Admit`` /
``manager.canResizePod`` and ``guaranteedPodResourceResizeRequired``); the resize itself (new
CPU sets, the node-capacity check that follows) is not simulated.

Gates (docs/kubelet-versions.md): ``InPlacePodVerticalScalingExclusiveCPUs`` (alpha, off, from
1.32) and ``InPlacePodVerticalScalingExclusiveMemory`` (alpha, off, from 1.34). Resizing needs
``InPlacePodVerticalScaling`` itself (beta and on from 1.33); without it the API server refuses
the resize before the kubelet sees it, which is not this module's question.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

try:
    from typing import Any, Mapping, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

#: ``v1.PodReasonInfeasible``: the reason of the ``PodResizePending`` condition.
REASON_INFEASIBLE = "Infeasible"
CPU_STATIC = "static"
MEMORY_STATIC = "Static"
EXCLUSIVE_CPUS_GATE = "InPlacePodVerticalScalingExclusiveCPUs"
EXCLUSIVE_MEMORY_GATE = "InPlacePodVerticalScalingExclusiveMemory"


def infeasible_resize_message(manager: str, policy: str) -> str:
    """The kubelet's text: ``Resize is infeasible for Guaranteed Pods alongside <manager>
    policy "<policy>"`` (``manager``: "CPU Manager" or "Memory Manager")."""
    return 'Resize is infeasible for Guaranteed Pods alongside %s policy "%s"' % (manager, policy)


def _request_changed(allocated: Any, desired: Any, resource: str) -> bool:
    """``guaranteedPodResourceResizeRequired``: a resizable container (app container or sidecar)
    whose request differs from what was allocated to it (a new container counts from zero)."""
    before = dict((c.name, c) for c in allocated.all_containers())
    for container in desired.all_containers():
        if container.is_init and not container.restartable:
            continue  # regular init containers are not resizable
        old = before.get(container.name)
        wanted = container.request_quantities.get(resource)
        had = None if old is None else old.request_quantities.get(resource)
        if (wanted is None or wanted.is_zero()) and (had is None or had.is_zero()):
            continue
        if wanted is None or had is None or wanted != had:
            return True
    return False


def resize_infeasible(allocated: Any,
                      desired: Any,
                      cpu_manager_policy: Optional[str],
                      memory_manager_policy: Optional[str],
                      feature_gates: Mapping[str, bool]) -> Optional[Tuple[str, str, str]]:
    """Why the kubelet would mark the resize of ``allocated`` to ``desired`` infeasible.

    ``allocated`` and ``desired`` are :class:`~.pod.Pod` objects (the pod as admitted, the pod
    with the new requests); ``feature_gates`` the kubelet's effective gates
    (``_k8s.versions.effective_gates``). Returns (reason, message, metric label) as the kubelet
    reports them, or None when these rules let the resize through. The CPU rule is checked
    before the memory rule, as in the kubelet.
    """
    if desired.qos_class != "Guaranteed":
        return None
    if (not feature_gates.get(EXCLUSIVE_CPUS_GATE, False) and cpu_manager_policy == CPU_STATIC
            and _request_changed(allocated, desired, "cpu")):
        return (REASON_INFEASIBLE, infeasible_resize_message("CPU Manager", CPU_STATIC),
                "guaranteed_pod_cpu_manager_static_policy")
    if (not feature_gates.get(EXCLUSIVE_MEMORY_GATE, False) and memory_manager_policy == MEMORY_STATIC
            and _request_changed(allocated, desired, "memory")):
        return (REASON_INFEASIBLE, infeasible_resize_message("Memory Manager", MEMORY_STATIC),
                "guaranteed_pod_memory_manager_static_policy")
    return None
