# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""validate.yml's judgement of every host, on the controller (the ``validate_hosts`` filter).

Why: the CI check must refuse what the rollout refuses. Each host's settings go through
``_kubelet_config.plan.settings_verdict`` - the start-up checks the rollout's preflight runs
(``plan_change`` -> ``startup_check``) - and through ``reserved_memory_check`` for the
reserved-memory report (per-node figures, computed strategies, state drift). The two verdicts are
merged: a host is valid only when both say so, and an error both give is listed once.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re
from collections.abc import Mapping

from ansible_collections.numaguard.kubelet.plugins.filter.controller_path import controller_path
from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_check import UNKNOWN_ON_CONTROLLER, reserved_memory_check
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import InvalidTopology, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.plan import settings_verdict
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.classes import HardwareClassError, hardware_class

SETTINGS_VARIABLE = "kubelet_numa_settings"


def _invalid(message):
    return {"valid": False, "errors": [message], "warnings": [], "input_error": message}


def read_topology_file(host, given, inventory_dir):
    """(facts dict, None) or (None, why): the host's ``numa_topology_file``, looked up as validate.yml
    documents (absolute; else the current directory, then the inventory directory)."""
    given = str(given)
    if os.path.isabs(os.path.expanduser(given)):
        candidates = [os.path.expanduser(given)]
        tried = candidates[0]
    else:
        candidates = [controller_path(given), os.path.join(inventory_dir, given)]
        tried = "%s (current directory) nor %s (inventory directory)" % tuple(candidates)
    path = next((c for c in candidates if os.path.isfile(c)), None)
    if path is None:
        return None, "cannot read the topology file %s of %s: neither %s exists or is readable" % (given, host, tried)
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as exc:
        return None, "cannot read the topology file %s of %s: %s" % (path, host, exc.strerror or exc)
    try:
        return json.loads(raw.decode("utf-8")), None
    except UnicodeDecodeError:
        return None, "the topology file %s of %s is not text (not a saved numa_facts JSON)" % (path, host)
    except ValueError as exc:
        return None, "the topology file %s of %s is not valid JSON: %s" % (path, host, exc)


def _fact_dict(value):
    if isinstance(value, Mapping) and isinstance(value.get("ansible_facts"), Mapping):
        value = value["ansible_facts"]
    if isinstance(value, Mapping) and isinstance(value.get("numa_topology"), Mapping):
        value = value["numa_topology"]
    return value


def startup_result(facts, settings, kubelet_version=None, strategy=None, split_unit="1Mi", memory_manager_state=None,
                   topologies=None):
    """The reserved_memory_check result for ``facts`` and ``settings`` with the rollout's start-up
    verdict merged in (``valid`` only when both pass). ``topologies`` (a dict) keeps the parsed
    topology of each distinct ``facts``."""
    result = reserved_memory_check(facts, kubelet_config=settings, strategy=strategy, split_unit=split_unit,
                                   memory_manager_state=memory_manager_state, kubelet_version=kubelet_version,
                                   errors="report")
    if result.get("input_error"):
        return result
    key = _cache_key(facts, None, None) if topologies is not None else None
    topology = topologies.get(key) if key is not None else None
    if topology is None:
        try:
            topology = Topology.from_facts(dict(_fact_dict(facts)))
        except (InvalidTopology, TypeError, ValueError) as exc:
            return _invalid("the topology is not usable: %s" % exc)
        if key is not None:
            topologies[key] = topology
    judged = dict(settings)
    if strategy not in (None, "explicit") and result.get("reserved_memory") is not None:
        # what the strategy computed (for the Memory Manager's Static policy) is what would be applied
        judged["reservedMemory"] = result["reserved_memory"]
        judged.setdefault("memoryManagerPolicy", result.get("memory_manager_policy") or "Static")
    # the kubelet as reserved_memory_check assumed it: its warnings are the report's "kubelet assumed" line
    gates = judged.get("featureGates")
    kubelet = KubeletAssumption.resolve(kubelet_version, None, gates if isinstance(gates, Mapping) else None,
                                        unknown_because=UNKNOWN_ON_CONTROLLER)
    errors, warnings = settings_verdict(judged, kubelet, topology)
    assumed = set(result.get("kubelet_warnings") or []) | set(kubelet.warnings)
    return merge_verdicts(result, errors, [w for w in warnings if w not in assumed])


_TAGGED = re.compile(r"^(?:[A-Za-z/]+: )?\[([a-z0-9-]+)\] ")


def merge_verdicts(result, errors, warnings):
    """``result`` (reserved_memory_check's) with the start-up ``errors``/``warnings`` added; a
    start-up message about a rule the result already reports (the same ``[rule]`` tag: both come
    from the reserved-memory validation) or the very same text is not repeated."""
    merged = dict(result)

    def union(first, second):
        tags = set(m.group(1) for m in (_TAGGED.match(t) for t in first) if m)
        out = list(first)
        for text in second:
            tagged = _TAGGED.match(text)
            if text not in out and not (tagged and tagged.group(1) in tags):
                out.append(text)
        return out

    merged["errors"] = union(result.get("errors") or [], errors)
    merged["warnings"] = union(result.get("warnings") or [], warnings)
    merged["startup_errors"] = list(errors)
    merged["valid"] = bool(result.get("valid")) and not errors
    return merged


def _cache_key(facts, settings, options):
    try:
        return json.dumps([facts, settings, options], sort_keys=True)
    except (TypeError, ValueError):
        return None


def judge_host(host, variables, default_dir=None, cache=None):
    """(result, facts or None) for one host's variables (a Mapping). ``cache`` (a dict) keeps the
    result of each distinct (topology, settings, options): a fleet's hosts share a few of them."""
    options = dict(kubelet_version=variables.get("kubelet_numa_kubelet_version"),
                   strategy=variables.get("validate_strategy"),
                   split_unit=variables.get("validate_split_unit") or "1Mi",
                   memory_manager_state=variables.get("validate_memory_manager_state"))
    if variables.get("numa_topology_file") is not None:
        where = (str(variables["numa_topology_file"]), str(variables.get("inventory_dir") or default_dir or "."))
        files = cache.setdefault("files", {}) if cache is not None else {}
        facts, why = files[where] if where in files else read_topology_file(host, *where)
        if not why:
            files[where] = (facts, None)  # a file read once for all the hosts naming it (failures name each host)
        if why:
            return _invalid(why), None
    elif variables.get("numa_topology") is not None:
        facts = variables["numa_topology"]
    else:
        # the report says "cannot check" and names the host on the row: the reason alone, once
        return _invalid(str(variables.get("_ng_gather_error") or "unreachable: no topology gathered")), None
    settings = variables.get(SETTINGS_VARIABLE)
    if settings is None:
        # the same words for every such host: the report lists the reason once with its hosts
        message = ("not configured: %s is not set for this host (check the variable's spelling in the inventory, "
                   "group_vars or host_vars)" % SETTINGS_VARIABLE)
        return _invalid(message), facts
    if not isinstance(settings, Mapping):
        return _invalid("%s of %s must be a dict of KubeletConfiguration fields, got %s"
                        % (SETTINGS_VARIABLE, host, type(settings).__name__)), facts
    settings = dict(settings)
    key = _cache_key(facts, settings, options) if cache is not None else None
    if key is None:
        return startup_result(facts, settings, **options), facts
    results = cache.setdefault("results", {})
    if key not in results:
        results[key] = startup_result(facts, settings, topologies=cache.setdefault("topologies", {}), **options)
    return dict(results[key]), facts


def judge_hosts(hostvars, hosts, default_dir=None):
    """{'results': host -> result, 'classes': host -> hardware class group} for ``hosts``."""
    results, classes, cache = {}, {}, {}
    for host in hosts:
        results[host], facts = judge_host(host, hostvars[host], default_dir, cache)
        if facts is not None:
            try:
                classes[host] = hardware_class(_fact_dict(facts))["group"]
            except HardwareClassError:
                pass
    return {"results": results, "classes": classes}
