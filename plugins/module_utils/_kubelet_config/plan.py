# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Plan a kubelet NUMA configuration change: what to write, what it changes, what it breaks.

Why a separate step: the rollout must know *before* stopping anything whether the new
configuration is valid, whether the file changes at all, and whether the kubelet will refuse its
state files afterwards (the cpu and memory managers' validateState). :func:`plan_change` answers all three from the files on
the host, without writing; the module writes only what the plan says.

Two modes:

* ``dropin`` (default): our own file in the kubelet's ``--config-dir``; it holds exactly the
  managed settings (plus apiVersion/kind), so the main file and other drop-ins are untouched.
  The effective result is computed with the kubelet's merge (see kubeletconfig), and a later
  drop-in that overrides one of our fields is an error (the change would silently not apply).
* ``merge``: the main KubeletConfiguration file is updated in place; unmanaged keys are kept,
  managed fields are replaced as a whole except ``featureGates``, which is merged gate by gate
  (gates belong to many owners). When the parsed content already has the desired values the
  file is left byte-for-byte alone (no reformatting churn).
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import copy
import json
import os

from ansible_collections.numaguard.kubelet.plugins.module_utils._io import read_file_if_exists
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import (
    DEFAULT_EVICTION_HARD,
    KUBELET_API_VERSIONS,
    KUBELET_KIND,
    MAX_CONFIG_DEPTH,
    KubeletConfigError,
    credential_values,
    dump_yaml,
    kubelet_defaults,
    list_dropins,
    merge_dropins,
    nesting_exceeds,
    parse_config_text,
    read_config_file,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.fields import MANAGED_FIELDS
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.rollout import input_snapshot
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.settings import (
    SettingsError,
    normalise_settings,
    render_flags,
    reset_decision,
    resolve_assumption,
    settings_schema_errors,
    validate_settings,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import reservation_validator

try:
    from typing import Any, Dict, List, Optional, Tuple  # noqa: F401
except ImportError:  # pragma: no cover
    pass

DEFAULT_DROPIN_NAME = "50-numaguard-numa.conf"
DEFAULT_CONFIG_DIR = "/etc/kubernetes/kubelet.conf.d"
STATE_FILES = ("cpu_manager_state", "memory_manager_state")


def _read_optional(path: Optional[str]) -> Optional[str]:
    if not path:
        return None
    try:
        raw = read_file_if_exists(path)
        return None if raw is None else raw.decode("utf-8")
    except OSError as exc:
        raise KubeletConfigError("cannot read %s: %s" % (path, exc.strerror or exc))
    except UnicodeDecodeError as exc:
        raise KubeletConfigError("%s is not UTF-8 text (byte %d)" % (path, exc.start))


def _inside(path: str, directory: str) -> bool:
    """Whether ``path`` is below ``directory`` (lexically, after making both absolute)."""
    return os.path.abspath(path).startswith(os.path.abspath(directory).rstrip(os.sep) + os.sep)


def _walk_key(path: str, config_dir: str) -> Tuple[bytes, ...]:
    """Sort key giving Go filepath.WalkDir order (names compared per directory level)."""
    rel = os.path.relpath(path, os.path.abspath(config_dir))
    return tuple(part.encode("utf-8", "surrogateescape") for part in rel.split(os.sep))


def effective_config(main_doc: Optional[Dict[str, Any]],
                     dropin_docs: List[Dict[str, Any]]) -> Dict[str, Any]:
    """Kubelet merge of parsed documents, then kubelet defaults for unset NUMA fields."""
    base = copy.deepcopy(main_doc) if main_doc else {"apiVersion": KUBELET_API_VERSIONS[0], "kind": KUBELET_KIND}
    if base.get("evictionHard") is None:
        base["evictionHard"] = dict(DEFAULT_EVICTION_HARD)
    merged = merge_dropins(base, dropin_docs)
    for key, value in kubelet_defaults().items():
        if merged.get(key) is None:
            merged[key] = value
    return merged


def managed_view(config: Dict[str, Any]) -> Dict[str, Any]:
    """Only the managed fields of a configuration (for reporting)."""
    return dict((k, config[k]) for k in sorted(MANAGED_FIELDS) if k in config)


def desired_main(existing: Dict[str, Any], settings: Dict[str, Any]) -> Dict[str, Any]:
    """The main file after a ``merge`` mode update (see module docstring)."""
    result = copy.deepcopy(existing)
    result.setdefault("apiVersion", KUBELET_API_VERSIONS[0])
    result.setdefault("kind", KUBELET_KIND)
    for key, value in settings.items():
        if key == "featureGates" and isinstance(result.get(key), dict):
            gates = dict(result[key])
            gates.update(value)
            result[key] = gates
        else:
            result[key] = copy.deepcopy(value)
    return result


def _applied(effective: Dict[str, Any], key: str, wanted: Any) -> bool:
    have = effective.get(key)
    if isinstance(wanted, dict):
        return isinstance(have, dict) and all(have.get(k) == v for k, v in wanted.items())
    return have == wanted


def load_state(path: str) -> Any:
    """Parsed JSON of a state file, None when absent, ``"unreadable"`` when not a JSON object."""
    text = _read_optional(path)
    if text is None:
        return None
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return "unreadable"
    if not isinstance(doc, dict) or nesting_exceeds(doc, MAX_CONFIG_DEPTH):
        return "unreadable"
    # Go's encoding/json matches keys case-insensitively (old files use e.g. "PolicyName")
    for key in list(doc):
        if key.lower() == "policyname" and key != "policyName":
            doc["policyName"] = doc[key]
    return doc


def kubelet_reservation_validator(kubelet: Any) -> Any:
    """The ``reservation_validator`` of :func:`startup_check` for a kubelet release (a
    KubeletAssumption): reserved memory and Node Allocatable as that kubelet checks them."""
    return lambda effective, topology: reservation_validator(effective, topology, kubelet)


def startup_check(settings: Dict[str, Any], effective: Dict[str, Any], kubelet_version: Any = None,
                  topology: Any = None, reservation_validator: Any = None) -> Tuple[List[str], List[str]]:
    """(errors, warnings): everything the kubelet refuses at start-up about ``settings`` once they
    make the configuration ``effective`` - policies, options against the release and the NUMA node
    count, reserved CPUs, reserved memory. The rollout's preflight (:func:`plan_change`) and the
    offline CI check (:func:`settings_verdict`, validate.yml) both decide here.

    With a host ``topology`` the verdict is the engine's start-up (``_engine/startup.py``: the
    managers built in the kubelet's order, then validateNodeAllocatable) once the settings checks
    pass, and the crash risk of prefer-closest-numa-nodes on sparse NUMA ids is a warning."""
    errors, warnings = validate_settings(settings, effective, kubelet_version=kubelet_version, topology=topology,
                                         reservation_validator=reservation_validator)
    if errors or topology is None:
        return errors, warnings
    # imported here: +60-95 ms of imports (measured, PYTHONDONTWRITEBYTECODE=1) that runs without a topology skip
    from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.startup import REFUSES, panics_possible, startup_verdict

    try:
        assumed = resolve_assumption(kubelet_version, effective.get("featureGates"))
    except SettingsError as exc:  # reported by validate_settings already
        return errors + exc.errors, warnings
    verdict = startup_verdict(topology, effective, assumed)
    if verdict["verdict"] == REFUSES:
        errors.append("the kubelet refuses to start (%s manager): %s" % (verdict["manager"].replace("_", " "), verdict["message"]))
    elif panics_possible(topology, effective):
        warnings.append(_SPARSE_PANIC_WARNING % ", ".join(str(n) for n in topology.node_ids()))
    return errors, warnings


#: our extra check (the kubelet starts): prefer-closest-numa-nodes on sparse NUMA ids
_SPARSE_PANIC_WARNING = (
    "topologyManagerPolicyOptions.prefer-closest-numa-nodes: this host's NUMA ids (%s) are not 0..N-1; the kubelet starts "
    "but panics (index out of range) and crashes at the first Guaranteed pod whose merge compares two different "
    "NUMA masks of equal width (it reads each node's distance list by node id); drop the option or use "
    "topologyManagerPolicy: single-numa-node")


def settings_verdict(settings: Any, kubelet_version: Any = None, topology: Any = None) -> Tuple[List[str], List[str]]:
    """(errors, warnings) of :func:`plan_change` for ``settings`` on a host whose kubelet has no
    configuration of its own (kubelet defaults, one drop-in holding ``settings``), with the
    reserved-memory validation of the kubelet assumed: the verdict of the rollout's preflight,
    computed without the host (``topology`` a topology.Topology, or None to skip the host checks)."""
    if not isinstance(settings, dict) or not settings:
        return (["settings: give at least one KubeletConfiguration field (managed fields: %s)"
                 % ", ".join(sorted(MANAGED_FIELDS))], [])
    problems = settings_schema_errors(settings)
    if problems:
        return problems, []
    content = {"apiVersion": KUBELET_API_VERSIONS[0], "kind": KUBELET_KIND}
    content.update(normalise_settings(settings))
    effective = effective_config(None, [content])
    try:
        assumed = resolve_assumption(kubelet_version, effective.get("featureGates"))
    except SettingsError as exc:
        return exc.errors, []
    return startup_check(settings, effective, assumed, topology, kubelet_reservation_validator(assumed))


def plan_change(settings: Dict[str, Any], mode: str = "dropin", path: Optional[str] = None,
                config: Optional[str] = None, config_dir: Optional[str] = None, root_dir: str = "/var/lib/kubelet",
                kubelet_version: Any = None, topology: Any = None, reservation_validator: Any = None) -> Dict[str, Any]:
    """Compute everything about the change without writing anything.

    Returns a dict with ``path``, ``before`` (file text or None), ``after`` (text to write),
    ``changed``, ``content`` (the document written), ``effective``/``previous`` (managed fields
    after/before), ``flags``, ``reset`` (see kubelet_settings.reset_decision), ``warnings``.
    Raises SettingsError (invalid settings, all problems listed) or KubeletConfigError (files).
    """
    if mode not in ("dropin", "merge"):
        raise SettingsError(["mode: %r is not one of dropin, merge" % (mode,)])
    if not isinstance(settings, dict) or not settings:
        raise SettingsError(["settings: give at least one KubeletConfiguration field (managed fields: %s)"
                             % ", ".join(sorted(MANAGED_FIELDS))])
    # Schema first, on the raw value, so type errors are reported before normalisation.
    schema_problems = settings_schema_errors(settings)
    if schema_problems:
        raise SettingsError(schema_problems)
    wanted = normalise_settings(settings)

    main_doc = read_config_file(config) if config and os.path.exists(config) else None
    if config and main_doc is None and mode == "dropin":
        raise KubeletConfigError("kubelet config file %s does not exist (option config)" % config)
    dropin_paths = list_dropins(config_dir) if config_dir and os.path.isdir(config_dir) else []

    path, content, before, after, changed = _planned_file(mode, path, config, config_dir, wanted)

    read_docs: List[Any] = [main_doc, content] + ([parse_config_text(before, path)] if before is not None and mode == "merge" else [])
    new_paths, old_effective, new_effective = _effective_configs(mode, path, config_dir, dropin_paths, main_doc, content,
                                                                 before, after, read_docs)
    _refuse_overridden(wanted, new_effective, new_paths, mode, path, config_dir)

    errors, warnings = startup_check(settings, new_effective, kubelet_version, topology, reservation_validator)
    if errors:
        raise SettingsError(errors)

    states = {}
    for name in STATE_FILES:
        states[name] = load_state(os.path.join(root_dir, name))
    reset = reset_decision(old_effective, new_effective, states["cpu_manager_state"], states["memory_manager_state"], topology)
    return {
        "path": path,
        "mode": mode,
        "before": before,
        "after": after,
        "changed": changed,
        "content": content,
        "settings": wanted,
        "effective": managed_view(new_effective),
        "previous": managed_view(old_effective),
        "effective_changed": managed_view(new_effective) != managed_view(old_effective),
        "flags": render_flags(wanted),
        "reset": reset,
        "state_files": dict((n, {"path": os.path.join(root_dir, n), "exists": states[n] is not None}) for n in STATE_FILES),
        "warnings": warnings,
        # what the files read hold in credential fields (hide them in whatever is returned)
        "credentials": sorted(set(value for doc in read_docs for value in credential_values(doc))),
        # what this plan read (a later step of the same run reuses the plan while these are unchanged)
        "inputs": input_snapshot([path] + ([config] if config else []) + list(dropin_paths)
                                 + [os.path.join(root_dir, n) for n in STATE_FILES], [config_dir] if config_dir else []),
    }


def _planned_file(mode: str, path: Optional[str], config: Optional[str], config_dir: Optional[str],
                  wanted: Dict[str, Any]) -> Tuple[str, Dict[str, Any], Optional[str], str, bool]:
    """The file the change writes: (path, content, before, after, changed)."""
    if mode == "dropin":
        if not path:
            path = os.path.join(config_dir or DEFAULT_CONFIG_DIR, DEFAULT_DROPIN_NAME)
        if not path.endswith(".conf"):
            raise KubeletConfigError("drop-in path %s must end in .conf or the kubelet ignores it (option path)" % path)
        if config_dir and not _inside(path, config_dir):
            raise KubeletConfigError("drop-in path %s is not inside the kubelet drop-in directory %s" % (path, config_dir))
        content = {"apiVersion": KUBELET_API_VERSIONS[0], "kind": KUBELET_KIND}
        content.update(wanted)
        before = _read_optional(path)
        after = dump_yaml(content)
        return path, content, before, after, before != after
    if not path:
        path = config
    if not path:
        raise KubeletConfigError("merge mode needs the kubelet config file: set option path (or config)")
    before = _read_optional(path)
    existing = parse_config_text(before, path) if before is not None else {}
    content = desired_main(existing, wanted)
    changed = before is None or existing != content
    after = before if before is not None and not changed else dump_yaml(content)
    return path, content, before, after, changed


def _effective_configs(mode: str, path: str, config_dir: Optional[str], dropin_paths: List[str], main_doc: Any,
                       content: Dict[str, Any], before: Optional[str], after: str,
                       read_docs: List[Any]) -> Tuple[List[str], Dict[str, Any], Dict[str, Any]]:
    """(the drop-ins after the change, the effective configuration before, after); the documents
    read are added to ``read_docs``."""
    if config_dir and _inside(path, config_dir):
        # the file is (or becomes) a drop-in: main config + drop-ins with this one replaced
        old_docs = [read_config_file(p, what="drop-in kubelet config file") for p in dropin_paths]
        read_docs.extend(old_docs)
        new_paths = sorted(set(os.path.abspath(p) for p in dropin_paths) | {os.path.abspath(path)},
                           key=lambda p: _walk_key(p, config_dir))
        new_docs = [parse_config_text(after, path, "drop-in kubelet config file") if p == os.path.abspath(path)
                    else read_config_file(p, what="drop-in kubelet config file") for p in new_paths]
        return new_paths, effective_config(main_doc, old_docs), effective_config(main_doc, new_docs)
    if mode == "dropin":
        # no drop-in directory known: the file is the only drop-in
        return [os.path.abspath(path)], effective_config(main_doc, []), effective_config(main_doc, [content])
    # merge mode on a file outside the drop-in directory: it is the kubelet's main config
    new_paths = [os.path.abspath(p) for p in dropin_paths]
    docs = [read_config_file(p, what="drop-in kubelet config file") for p in new_paths]
    read_docs.extend(docs)
    old_effective = effective_config(parse_config_text(before, path) if before is not None else None, docs)
    return new_paths, old_effective, effective_config(content, docs)


def _refuse_overridden(wanted: Dict[str, Any], new_effective: Dict[str, Any], new_paths: List[str], mode: str, path: str,
                       config_dir: Optional[str]) -> None:
    """SettingsError when a later file overrides a field the change sets."""
    overridden = []
    for key, value in wanted.items():
        if not _applied(new_effective, key, value):
            later = [p for p in new_paths if p != os.path.abspath(path)
                     and key in read_config_file(p, what="drop-in kubelet config file")]
            overridden.append("%s is overridden by %s" % (key, ", ".join(later) or "another drop-in"))
    if overridden:
        if mode == "dropin" or _inside(path, config_dir or "/nonexistent"):
            hint = "drop-ins apply in file-name order, so rename %s to sort after them or remove the field there" % os.path.basename(path)
        else:
            hint = "drop-ins override the main config: use mode dropin or remove the field from those drop-ins"
        raise SettingsError(["%s; %s" % (o, hint) for o in overridden])
