# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Boot drift: does the Static memory manager accept its state file after the machine moved?

Why: after a reboot a NUMA node's ``MemTotal`` often differs from the total recorded in
``memory_manager_state`` -- KASLR puts the kernel image on another node (MiB-scale, the sum over
nodes unchanged) and the kernel frees a slightly different amount of boot memory (KiB-scale, even
on one node). The kubelet's exact start-up comparison then refuses to start until the file is
deleted on a drained node (kubernetes/kubernetes#131253).

KEP-6232 (``MemoryManagerDriftTolerance``, alpha in 1.38; kubernetes/enhancements#6232, design
kubernetes/enhancements#6233, code kubernetes/kubernetes#140473 and #142121) adds the
memory-manager policy option ``memory-drift-tolerance`` (``memoryManagerPolicyOptions``):

* unset or ``off``: the exact comparison (the gate alone changes nothing);
* ``auto``: bound = the kernel image span from ``/proc/iomem`` (lowest start to highest end of
  the ``Kernel code``/``Kernel data``/``Kernel bss`` lines) + 64Mi; when that cannot be read
  (absent, or addresses zeroed for a reader without CAP_SYS_ADMIN) the exact comparison stays;
* a quantity (``128Mi``): that bound; negative or not a quantity fails the start.

With a bound in effect, a state that fails the exact comparison is accepted iff it differs from
the replayed expectation only by regular-memory ``total``/``allocatable`` changes within the
bound per node: same nodes, NUMA groups and assignment counts, same memory types,
``systemReserved`` and hugepage tables exact, reserved memory summed over each group exact, and
every recorded block still fits the machine as it is now (conservation). The kubelet then
continues with the expected state (re-baseline).

:func:`boot_drift` (``boot_drift.py``, above the manager) reports, per node and memory type, how
far the machine moved from the file and whether the kubelet starts (exactly, with the tolerance,
or not at all).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple  # noqa: F401

if TYPE_CHECKING:  # the state model is needed only to compare states (Static): see memory_manager.py
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager.machine_state import NUMANodeState

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import InvalidQuantity, format_bytes, parse_quantity
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import MEMORY
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import NEWEST_RELEASED, option_availability_error

GATE = "MemoryManagerDriftTolerance"
OPTION = "memory-drift-tolerance"
GRACE_BYTES = 64 * 1024 * 1024
AUTO = "auto"
OFF = "off"
POLICY_OPTIONS_FIELD = "memoryManagerPolicyOptions"
_KERNEL_LINES = ("Kernel code", "Kernel data", "Kernel bss")


class DriftOptionError(StateError):
    """A ``memoryManagerPolicyOptions`` value the kubelet refuses to start with."""


def kernel_image_size(iomem_text: Optional[str]) -> Optional[int]:
    """Bytes from the lowest start to the highest end of the kernel image lines of
    ``/proc/iomem`` (rodata and alignment gaps included); None when absent or zeroed."""
    if not iomem_text:
        return None
    lowest: Optional[int] = None
    highest: Optional[int] = None
    non_zero = False
    for line in iomem_text.splitlines():
        head, sep, name = line.rpartition(":")
        if not sep or name.strip() not in _KERNEL_LINES:
            continue
        start_text, dash, end_text = head.strip().partition("-")
        if not dash:
            continue
        try:
            start, end = int(start_text.strip(), 16), int(end_text.strip(), 16)
        except ValueError:
            continue
        if end < start:
            continue
        non_zero = non_zero or start != 0 or end != 0
        lowest = start if lowest is None else min(lowest, start)
        highest = end if highest is None else max(highest, end)
    if lowest is None or highest is None or not non_zero:
        return None
    return highest - lowest + 1


class DriftTolerance:
    """The bound in effect (0 = exact comparison) and how it was decided, for results."""

    def __init__(self, bound: int, option: Optional[str], source: str) -> None:
        self.bound = bound
        self.option = option
        self.source = source

    def to_dict(self) -> Dict[str, Any]:
        return {"option": self.option, "bound_bytes": self.bound,
                "bound": format_bytes(self.bound) if self.bound else "0 (exact comparison)", "source": self.source}


def drift_tolerance(kubelet_config: Mapping[str, Any], iomem_text: Optional[str] = None,
                    version: Tuple[int, ...] = NEWEST_RELEASED) -> DriftTolerance:
    """The memory manager's drift bound for this configuration (``NewPolicyOptions``).

    Raises :class:`DriftOptionError` with the kubelet's message where it refuses to start.
    ``iomem_text``: the host's ``/proc/iomem`` (None = not readable) for ``auto``. Whether the
    option exists and its gate is on is the version x gate table's answer (``_k8s/versions.py``:
    ``MemoryManagerDriftTolerance`` alpha in 1.38, ``AllAlpha`` included) for ``version``
    (default: the newest released kubelet, the one engine default) and the config's ``featureGates``.
    """
    options = kubelet_config.get(POLICY_OPTIONS_FIELD) or {}
    if not isinstance(options, Mapping):
        raise DriftOptionError("%s must be a map of option name to value, got %r" % (POLICY_OPTIONS_FIELD, options))
    if not options:
        return DriftTolerance(0, None, "option not set: exact comparison")
    policy = kubelet_config.get("memoryManagerPolicy") or "None"
    gates = kubelet_config.get("featureGates") or {}
    tolerance = DriftTolerance(0, None, "option not set: exact comparison")
    for name in sorted(options):
        value = options[name]
        refused = option_availability_error("memory", str(name), version, gates)
        if refused is not None:
            raise DriftOptionError(refused)
        if policy != "Static":
            # KEP-6232: only the Static policy takes options (message not confirmed upstream)
            raise DriftOptionError('memory manager policy option "%s" is only supported by the Static policy, '
                                   'not %r' % (name, policy))
        tolerance = _parse_tolerance(str(value), iomem_text)
    return tolerance


def _parse_tolerance(value: str, iomem_text: Optional[str]) -> DriftTolerance:
    if value == AUTO:
        size = kernel_image_size(iomem_text)
        if size is None:
            return DriftTolerance(0, value, "auto: kernel image size not readable from /proc/iomem: exact comparison")
        return DriftTolerance(size + GRACE_BYTES, value, "auto: kernel image %s (/proc/iomem) + 64Mi grace"
                              % format_bytes(size))
    if value == OFF:
        return DriftTolerance(0, value, "off: exact comparison")
    try:
        quantity = parse_quantity(value)
    except InvalidQuantity as exc:
        raise DriftOptionError('bad value for option "%s": %s' % (OPTION, exc))
    if quantity.sign() < 0:
        raise DriftOptionError('bad value for option "%s": "%s" is negative' % (OPTION, value))
    bound = quantity.value()
    return DriftTolerance(bound, value, "explicit bound %s" % value)


def drift_refusal(stored: Mapping[int, NUMANodeState], expected: Mapping[int, NUMANodeState],
                  bound: int, unfitted: List[str]) -> Optional[str]:
    """None when the tolerance accepts ``stored`` against ``expected`` (replayed on the machine
    as it is now), else the first reason it does not."""
    if bound <= 0:
        return "no drift tolerance in effect"
    if unfitted:
        return "a recorded assignment no longer fits: %s" % unfitted[0]
    if set(stored) != set(expected):
        return "NUMA nodes %s in the state, %s on the machine" % (sorted(stored), sorted(expected))
    for node_id in sorted(expected):
        mine, theirs = stored[node_id], expected[node_id]
        if mine.number_of_assignments != theirs.number_of_assignments:
            return "NUMA node %d: assignment count differs" % node_id
        if sorted(mine.cells or []) != sorted(theirs.cells or []):
            return "NUMA node %d: NUMA group differs" % node_id
        if set(mine.memory_map) != set(theirs.memory_map):
            return "NUMA node %d: memory types differ" % node_id
        for name in sorted(theirs.memory_map):
            got, want = mine.memory_map[name], theirs.memory_map[name]
            if got.system_reserved != want.system_reserved:
                return "NUMA node %d %s: systemReserved differs" % (node_id, name)
            if name != MEMORY:
                if got.total != want.total or got.allocatable != want.allocatable:
                    return "NUMA node %d %s: hugepages differ" % (node_id, name)
                continue
            for label, left, right in (("total", got.total, want.total),
                                       ("allocatable", got.allocatable, want.allocatable)):
                if abs(left - right) > bound:
                    return ("NUMA node %d memory %s moved by %s, more than the bound %s"
                            % (node_id, label, format_bytes(abs(left - right)), format_bytes(bound)))
            group = list(mine.cells or [node_id])
            got_sum = sum(stored[n].memory_map[name].reserved for n in group if n in stored)
            want_sum = sum(expected[n].memory_map[name].reserved for n in group if n in expected)
            if got_sum != want_sum:
                return "group %s memory: reserved differs" % group
    return None
