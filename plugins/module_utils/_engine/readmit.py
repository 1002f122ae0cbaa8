# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Re-admission: do the running pods all come back after a kubelet restart, a reboot or a reset?

Why: the kubelet re-admits every pod bound to the node when it starts, and it does not promise an
order (pods arrive from the API server and static sources in batches; the Memory Manager GA
announcement warns that some orders make the memory manager reject pods). With a fresh state
(reboot with the state file refused, a rollout's reset) the exclusive CPUs, memory blocks and
devices are handed out again from scratch, so a pod can lose its place to pods admitted before
it: a NUMA group formed by a different pod, a node filled by a smaller one.

:func:`readmit` admits the running pods again with the admission engine
(:class:`~.engine.admission.AdmissionSimulator`, the kubelet's own rules) in

* the recorded order (the order given: creation order when known);
* every order when there are few pods (``exhaustive_up_to``, default 7): a depth-first walk over
  the orders that shares prefixes and merges prefixes that leave the node in the same state with
  the same pods still to admit (the future is then identical), so all n! orders are covered
  exactly while far fewer admissions run;
* beyond that, a bounded adversarial search: orders built by heuristics that make the kubelet's
  greedy choices fail (largest first, multi-NUMA pods first or last, by NUMA-group shape, each
  multi-NUMA pod last, ...) and then seeded random orders, up to ``max_orders`` orders.

It reports every pod that some tried order rejects, one such order, the kubelet's reason and
message, and how many orders were tried out of how many exist. A pod never rejected in a bounded
search is not proven safe: the result says the search was bounded.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import json
import math
import random
import time

try:
    from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.errors import StateError
from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.resources import is_memory_type

START_FRESH = "fresh"
START_RESTORED = "restored"
STARTS = (START_FRESH, START_RESTORED)
DEFAULT_EXHAUSTIVE_UP_TO = 7
DEFAULT_MAX_ORDERS = 100
#: never enumerate more than 8! orders (the walk's worst case without merged states)
EXHAUSTIVE_LIMIT = 8
#: Each order is a whole admission run of the running pods: more than this many is a mistake.
MAX_ORDERS_LIMIT = 10000


class ReadmitInputError(NumaguardError):
    """A re-admission input that cannot be used, named precisely."""


def _pod_label(pod: Any) -> str:
    return "%s/%s" % (pod.namespace, pod.name)


def _rejection(result: Mapping[str, Any]) -> Dict[str, Any]:
    return {
        "reason": result["reason"],
        "message": result["message"],
        "failed_container": result.get("failed_container"),
        "failed_provider": result.get("failed_provider"),
    }


def _signature(simulator: Any) -> str:
    """The node state that decides every later admission (what the state files and the device
    checkpoint would hold), as one comparable string."""
    memory = simulator.memory_manager.state()
    cpu = simulator.cpu_manager.state()
    devices = simulator.device_manager.state()
    return json.dumps([memory.get("machine_state"), memory.get("entries"), cpu, devices],
                      sort_keys=True, default=_plain)


def _plain(value: Any) -> Any:
    if hasattr(value, "to_plain"):
        return value.to_plain()
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    if isinstance(value, tuple):
        return list(value)
    if hasattr(value, "_asdict"):
        return value._asdict()
    if hasattr(value, "__dict__"):
        return value.__dict__
    return repr(value)


def _requested(pod: Any) -> Dict[str, int]:
    """What the pod asks of the managers, for ordering heuristics (init containers count as the
    largest of them, like the kubelet's effective request)."""
    totals: Dict[str, int] = {}
    for container in pod.containers:
        for name, value in container.requests.items():
            totals[name] = totals.get(name, 0) + value
    for container in pod.init_containers:
        for name, value in container.requests.items():
            totals[name] = max(totals.get(name, 0), value)
    return totals


def _memory_bytes(requests: Mapping[str, int]) -> int:
    return sum(v for k, v in requests.items() if is_memory_type(k))


def _device_count(requests: Mapping[str, int]) -> int:
    return sum(v for k, v in requests.items() if "/" in k)


class _Search:
    """Runs orders against fresh simulators and keeps the first witness of each rejection."""

    def __init__(self, build: Callable[[], Any], pods: Sequence[Any]) -> None:
        self.build = build
        self.pods = list(pods)
        self.admissions = 0
        self.orders_tried = 0
        self.tried: set = set()
        self.rejected: Dict[int, Dict[str, Any]] = {}
        self.strategies: List[Dict[str, Any]] = []

    def run(self, order: Sequence[int], strategy: str) -> Optional[List[Dict[str, Any]]]:
        """Admit the pods in ``order`` on a fresh node; None when the order was already tried."""
        key = tuple(order)
        if key in self.tried:
            return None
        self.tried.add(key)
        self.orders_tried += 1
        simulator = self.build()
        results = []
        rejected_here = []
        for position, index in enumerate(order):
            result = simulator.admit(self.pods[index])
            self.admissions += 1
            results.append(result)
            if not result["admitted"]:
                rejected_here.append(index)
                self._witness(index, key, position, result, strategy, 1)
        self.strategies.append({"strategy": strategy, "rejected": [_pod_label(self.pods[i]) for i in rejected_here]})
        return results

    def _witness(self, index: int, order: Tuple[int, ...], position: int, result: Mapping[str, Any],
                 strategy: str, count: int) -> None:
        entry = self.rejected.get(index)
        if entry is None:
            entry = dict(_rejection(result))
            entry.update({"order": order, "position": position, "found_by": strategy, "rejected_in_orders": 0})
            self.rejected[index] = entry
        entry["rejected_in_orders"] += count

    # ---- every order -------------------------------------------------------------------
    def exhaustive(self) -> int:
        """Cover all n! orders; returns the number of distinct (state, pods left) points walked."""
        memo: Dict[Tuple[FrozenSet[int], str], Tuple[int, Dict[int, int], Dict[int, Tuple[Any, ...]]]] = {}
        everyone = frozenset(range(len(self.pods)))

        def replay(prefix: Tuple[int, ...]) -> Any:
            simulator = self.build()
            for index in prefix:
                simulator.admit(self.pods[index])
                self.admissions += 1
            return simulator

        def walk(simulator: Any, prefix: Tuple[int, ...],
                 remaining: FrozenSet[int]) -> Tuple[int, Dict[int, int], Dict[int, Tuple[Any, ...]]]:
            if not remaining:
                return 1, {}, {}
            key = (remaining, _signature(simulator))
            known = memo.get(key)
            if known is not None:
                return known
            total = 0
            counts: Dict[int, int] = {}
            witness: Dict[int, Tuple[Any, ...]] = {}
            ordered = sorted(remaining)
            for number, index in enumerate(ordered):
                # the simulators' objects are not copyable (immutable masks, shared tables):
                # a branch replays its prefix on a new node, the last branch continues this one
                child = simulator if number == len(ordered) - 1 else replay(prefix)
                result = child.admit(self.pods[index])
                self.admissions += 1
                rest = remaining - {index}
                sub_total, sub_counts, sub_witness = walk(child, prefix + (index,), rest)
                total += sub_total
                if not result["admitted"]:
                    counts[index] = counts.get(index, 0) + sub_total
                    if index not in witness:
                        witness[index] = ((index,) + tuple(sorted(rest)), 0, result)
                for other, count in sub_counts.items():
                    counts[other] = counts.get(other, 0) + count
                    if other not in witness:
                        suffix, position, other_result = sub_witness[other]
                        witness[other] = ((index,) + suffix, position + 1, other_result)
            value = (total, counts, witness)
            memo[key] = value
            return value

        total, counts, witness = walk(self.build(), (), everyone)
        self.orders_tried = total
        for index in sorted(witness):
            order, position, result = witness[index]
            self._witness(index, order, position, result, "exhaustive", 0)
            self.rejected[index]["rejected_in_orders"] = counts[index]
        return len(memo)


def _heuristic_orders(pods: Sequence[Any], recorded_numa: Mapping[int, Tuple[int, ...]]) -> List[Tuple[str, List[int]]]:
    """Orders that tend to defeat the kubelet's greedy placement, most telling first."""
    indices = list(range(len(pods)))
    requests = [_requested(pod) for pod in pods]

    def memory(i: int) -> int:
        return _memory_bytes(requests[i])

    def cpu(i: int) -> int:
        return requests[i].get("cpu", 0)

    def width(i: int) -> int:
        return len(recorded_numa.get(i, ()))

    orders: List[Tuple[str, List[int]]] = [
        ("reverse", list(reversed(indices))),
        ("single-NUMA-first", sorted(indices, key=lambda i: (width(i) > 1, -memory(i), i))),
        ("multi-NUMA-first", sorted(indices, key=lambda i: (-width(i), -memory(i), i))),
        ("largest-memory-first", sorted(indices, key=lambda i: (-memory(i), -cpu(i), i))),
        ("largest-cpu-first", sorted(indices, key=lambda i: (-cpu(i), -memory(i), i))),
        ("smallest-first", sorted(indices, key=lambda i: (memory(i), cpu(i), i))),
        ("devices-last", sorted(indices, key=lambda i: (_device_count(requests[i]) > 0, i))),
    ]
    # by NUMA-group shape: the pods that shared a group, group by group, in both directions and
    # interleaved, so that a group is formed by a different member or not formed at all
    groups: Dict[Tuple[int, ...], List[int]] = {}
    for i in indices:
        groups.setdefault(recorded_numa.get(i, ()), []).append(i)
    shapes = sorted(groups, key=lambda shape: (-len(shape), shape))
    if len(shapes) > 1:
        orders.append(("by-group-widest-first", [i for shape in shapes for i in groups[shape]]))
        orders.append(("by-group-narrowest-first", [i for shape in reversed(shapes) for i in groups[shape]]))
        interleaved: List[int] = []
        queues = [list(groups[shape]) for shape in reversed(shapes)]
        while any(queues):
            for queue in queues:
                if queue:
                    interleaved.append(queue.pop(0))
        orders.append(("by-group-interleaved", interleaved))
    # each multi-NUMA pod admitted last, after the single-NUMA pods took their nodes
    base = sorted(indices, key=lambda i: (width(i) > 1, -memory(i), i))
    for i in sorted(indices, key=lambda i: (-width(i), -memory(i), i)):
        if width(i) <= 1 and recorded_numa:
            break
        orders.append(("last:%s" % _pod_label(pods[i]), [j for j in base if j != i] + [i]))
    return orders


def _recorded_numa(results: Sequence[Mapping[str, Any]], order: Sequence[int]) -> Dict[int, Tuple[int, ...]]:
    return dict((index, tuple(result.get("numa_nodes") or ())) for index, result in zip(order, results))


def orders_possible(count: int) -> Optional[int]:
    """n! when it is a reasonable number to print (n <= 20), else None."""
    return math.factorial(count) if count <= 20 else None


def readmit(build: Callable[[], Any],
            manifests: Sequence[Mapping[str, Any]],
            start: str = START_FRESH,
            max_orders: int = DEFAULT_MAX_ORDERS,
            exhaustive_up_to: int = DEFAULT_EXHAUSTIVE_UP_TO,
            seed: int = 0,
            labels: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """Admit the running pods again and report which can be rejected, in which order, and why.

    ``build``: returns a new :class:`AdmissionSimulator` for the node as it starts (fresh state or
    restored state, current or proposed configuration: the caller decides); a :class:`StateError`
    from it means the kubelet would not start, which is the answer (``kubelet_starts: false``).
    ``manifests``: the running pods in the recorded order. ``labels`` name them in errors.
    """
    if start not in STARTS:
        raise ReadmitInputError("readmit start must be one of %s, got %r" % (", ".join(STARTS), start))
    for name, value, low in (("max_orders", max_orders, 1), ("exhaustive_up_to", exhaustive_up_to, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ReadmitInputError("readmit %s must be an integer >= %d, got %r" % (name, low, value))
    if max_orders > MAX_ORDERS_LIMIT:
        raise ReadmitInputError("readmit max_orders is at most %d, got %d" % (MAX_ORDERS_LIMIT, max_orders))
    if exhaustive_up_to > EXHAUSTIVE_LIMIT:
        raise ReadmitInputError("readmit exhaustive_up_to is at most %d (%d! orders), got %d"
                                % (EXHAUSTIVE_LIMIT, EXHAUSTIVE_LIMIT, exhaustive_up_to))
    clock = time.perf_counter()
    result: Dict[str, Any] = {"start": start, "kubelet_starts": True, "start_error": None}
    try:
        probe = build()
    except StateError as exc:
        result.update({"kubelet_starts": False, "start_error": str(exc), "pods": [], "rejected": [],
                       "all_readmitted": False, "recorded_order": None,
                       "search": {"method": "none", "orders_tried": 0, "seconds": 0.0}})
        return result
    pods = []
    seen: Dict[str, str] = {}
    for index, manifest in enumerate(manifests):
        label = labels[index] if labels is not None and index < len(labels) else "running pod #%d" % (index + 1)
        try:
            pod = probe.pod_from_manifest(manifest, index)
        except ValueError as exc:
            raise ReadmitInputError("%s: %s" % (label, exc))
        if pod.uid in seen:
            raise ReadmitInputError("%s: uid %s is also the uid of %s; running pods have distinct uids"
                                    % (label, pod.uid, seen[pod.uid]))
        seen[pod.uid] = label
        pods.append(pod)
    search = _Search(build, pods)
    count = len(pods)
    recorded = list(range(count))
    recorded_results = search.run(recorded, "recorded") or []
    recorded_rejected = [dict(_rejection(r), pod="%s/%s" % (r["namespace"], r["name"]), uid=r["uid"])
                         for r in recorded_results if not r["admitted"]]
    states = None
    if count <= exhaustive_up_to:
        method = "exhaustive"
        states = search.exhaustive()
        bound = orders_possible(count)
    else:
        method = "bounded"
        bound = max_orders
        numa = _recorded_numa(recorded_results, recorded)
        for name, order in _heuristic_orders(pods, numa):
            if search.orders_tried >= max_orders:
                break
            search.run(order, name)
        rnd = random.Random(seed)
        attempts = 0
        while search.orders_tried < max_orders and attempts < 4 * max_orders:
            attempts += 1
            order = list(recorded)
            rnd.shuffle(order)
            search.run(order, "random")
    rejected = []
    for index in sorted(search.rejected, key=lambda i: i):
        entry = search.rejected[index]
        pod = pods[index]
        rejected.append({
            "pod": _pod_label(pod), "uid": pod.uid, "name": pod.name, "namespace": pod.namespace,
            "reason": entry["reason"], "message": entry["message"],
            "failed_container": entry["failed_container"], "failed_provider": entry["failed_provider"],
            "order": [_pod_label(pods[i]) for i in entry["order"]], "position": entry["position"] + 1,
            "found_by": entry["found_by"], "rejected_in_orders": entry["rejected_in_orders"],
        })
    result.update({
        "pods": [{"pod": _pod_label(pod), "uid": pod.uid} for pod in pods],
        "recorded_order": {"order": [_pod_label(pod) for pod in pods], "rejected": recorded_rejected,
                           "all_readmitted": not recorded_rejected},
        "rejected": rejected,
        "all_readmitted": not rejected,
        "search": {
            "method": method,
            "pods": count,
            "orders_possible": orders_possible(count),
            "orders_tried": search.orders_tried,
            "orders_bound": bound,
            "exhaustive_up_to": exhaustive_up_to,
            "seed": seed if method == "bounded" else None,
            "admissions": search.admissions,
            "states_merged": states,
            "strategies": [s["strategy"] for s in search.strategies if s["strategy"] != "random"]
            + (["random x%d" % sum(1 for s in search.strategies if s["strategy"] == "random")]
               if any(s["strategy"] == "random" for s in search.strategies) else []),
            "seconds": round(time.perf_counter() - clock, 3),
        },
    })
    return result
