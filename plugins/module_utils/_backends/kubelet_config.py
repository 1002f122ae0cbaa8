# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Backend of ``numaguard.kubelet.kubelet_config`` (PRIVATE to this collection).

Plans a KubeletConfiguration change (drop-in or merge), validates it against the host and writes
it durably; the logic lives in ``_kubelet_config/``.

From the object called ``module`` only these are used: ``params``, ``check_mode``, ``_diff``, ``warn``,
``fail_json``, ``exit_json``, ``get_bin_path``, ``run_command``, ``backup_local``, ``atomic_move``, ``no_log_values``.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import hashlib
import os
from typing import Any, Dict, Tuple

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.kubelet_paths import KubeletPathsError, locate_kubelet
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import SysfsError, read_topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import InvalidTopology, Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._io import write_file
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import KubeletAssumption, VersionError, probe_host_kubelet
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.backup import path_problem
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import KubeletConfigError, mask_credentials, nesting_exceeds
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.fields import MANAGED_FIELDS
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.plan import (
    DEFAULT_CONFIG_DIR,
    kubelet_reservation_validator,
    plan_change,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.settings import SettingsError

#: A KubeletConfiguration's managed fields nest at most a few levels (reservedMemory: 4).
MAX_SETTINGS_DEPTH = 16


def found_running_without_config_dir(found):
    """True when the located kubelet runs (flags read from /proc) but has no --config-dir."""
    return bool(found) and found.get("running") and found.get("source") == "cmdline" and not found.get("config_dir")


def write_config(module: Any, path: str, text: str, mode_bits: str) -> None:
    """Write ``text`` to ``path`` durably (``_io.write_file``: temp file, fsync, rename, directory
    fsync); a new file gets ``mode_bits``, a replaced one keeps its mode, owner and SELinux context
    (``module.atomic_move`` does the rename)."""
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    mode = None if os.path.exists(path) else int(mode_bits, 8)
    write_file(path, text.encode("utf-8", "surrogateescape"), mode, rename=module.atomic_move)


def argument_spec() -> Dict[str, Dict[str, Any]]:
    """The module's options (a fresh dict)."""
    return dict(
        settings=dict(type="dict", required=True),
        mode=dict(type="str", choices=["dropin", "merge"], default="dropin"),
        path=dict(type="path"),
        config=dict(type="path"),
        config_dir=dict(type="path"),
        root_dir=dict(type="path"),
        kubelet_version=dict(type="str"),
        validate_host=dict(type="bool", default=True),
        sysfs_root=dict(type="path", default="/"),
        topology=dict(type="dict"),
        backup=dict(type="bool", default=False),
        mode_bits=dict(type="str", default="0644"),
    )


def module_kwargs() -> Dict[str, Any]:
    """Keyword arguments for ``AnsibleModule``: the spec and its constraints."""
    return dict(argument_spec=argument_spec(), supports_check_mode=True)


def run(module: Any) -> None:
    p = module.params
    try:
        int(p["mode_bits"], 8)
    except ValueError:
        module.fail_json(msg="mode_bits: %r is not an octal permission such as 0644" % p["mode_bits"])
    result, plan = plan_result(module, p)
    if plan["changed"] and not module.check_mode:
        if p["backup"] and plan["before"] is not None:
            result["backup_file"] = module.backup_local(plan["path"])
        try:
            write_config(module, plan["path"], plan["after"], p["mode_bits"])
        except OSError as exc:
            module.fail_json(msg="cannot write %s: %s" % (plan["path"], exc.strerror or exc), **result)
    module.exit_json(**result)


def plan_result(module: Any, p: Dict[str, Any]) -> Tuple[Dict[str, Any], Dict[str, Any]]:
    """The module's result for the options ``p`` (kubelet_config's names) and the plan behind it,
    writing nothing: the kubelet located, its version resolved, the host's topology read, the
    change planned and validated. Errors end the module (``module.fail_json``); the plan's
    credentials are added to ``module.no_log_values``. kubelet_rollout's ``operation=status``
    returns the same result as its ``plan`` (one module call for the role's preflight, issue 22)."""
    _check_inputs(module, p)
    locations = _locations(module, p)
    try:
        # the module changes the live host's own kubelet: its version decides, whatever topology validates
        kubelet_version = KubeletAssumption.resolve(p["kubelet_version"], probe_host_kubelet(module, p["kubelet_version"]))
    except VersionError as exc:
        module.fail_json(msg=str(exc), errors=[str(exc)], locations=locations)

    topology = _host_topology(module, p, locations)
    try:
        plan = plan_change(
            p["settings"], mode=p["mode"], path=p["path"], config=locations["config"], config_dir=locations["config_dir"],
            root_dir=locations["root_dir"], kubelet_version=kubelet_version, topology=topology,
            reservation_validator=kubelet_reservation_validator(kubelet_version),
        )
    except SettingsError as exc:
        module.fail_json(msg="invalid kubelet settings: %s" % "; ".join(exc.errors), errors=exc.errors,
                         locations=locations, **kubelet_version.result())
    except KubeletConfigError as exc:
        module.fail_json(msg=str(exc), errors=[str(exc)], locations=locations)

    # the kubelet configuration's credentials (staticPodURLHeader, ...) never leave the host:
    # masked in the returned content, and hidden by Ansible wherever else they would appear
    # (the diff of a merge, a message)
    module.no_log_values.update(plan["credentials"])
    for warning in plan["warnings"]:
        module.warn(warning)
    return _result(module, plan, locations, kubelet_version), plan


def _check_inputs(module: Any, p: Dict[str, Any]) -> None:
    """Refuse an empty path and inputs nested too deep."""
    for option in ("path", "config", "config_dir", "root_dir", "sysfs_root"):
        # "" is refused, not treated as unset: an empty templated variable must never turn into
        # a write to the host's default kubelet directory
        problem = path_problem(p[option]) if p[option] is not None else None
        if problem:
            module.fail_json(msg="%s: %r %s%s" % (option, p[option], problem,
                                                  "; leave the option out to use the running kubelet's (or the default) "
                                                  "location" if p[option] == "" else ""))
    for option in ("settings", "topology"):
        if p[option] is not None and nesting_exceeds(p[option], MAX_SETTINGS_DEPTH):
            module.fail_json(msg="%s: nests deeper than %d levels; refusing it" % (option, MAX_SETTINGS_DEPTH))


def _running_kubelet(module: Any, p: Dict[str, Any]) -> Dict[str, Any]:
    """The running kubelet as ``locate_kubelet`` finds it ({} when none can be trusted), with a
    warning for each untrusted process and each managed field its flags override."""
    try:
        found = locate_kubelet("/")
    except KubeletPathsError as exc:
        # kubelets that disagree on their files: only pinned paths are an answer
        if not (p["config"] and p["config_dir"] and p["root_dir"]):
            module.fail_json(msg=str(exc))
        module.warn("%s (the pinned paths are used)" % exc)
        found = {}
    except Exception as exc:  # a broken /proc entry must not hide the real task
        module.warn("could not locate the running kubelet: %s" % exc)
        found = {}
    for ignored in found.get("ignored") or ():
        module.warn("process %d calls itself kubelet but is not trusted to locate the kubelet's files: %s"
                    % (ignored["pid"], ignored["reason"]))
    overriding = sorted(set(found.get("flags") or {}) & set(f[0][2:] for f in MANAGED_FIELDS.values()))
    if overriding:
        module.warn("the running kubelet (pid %s) sets --%s on its command line; flags override the configuration files, "
                    "so move them into the configuration (see the flags return value) or change them in the unit"
                    % (found.get("pid"), ", --".join(overriding)))
    return found


def _locations(module: Any, p: Dict[str, Any]) -> Dict[str, Any]:
    """The kubelet's config, config_dir and root_dir: pinned by the options, else the running
    kubelet's, else the defaults; a drop-in for a kubelet without --config-dir is refused."""
    config, config_dir, root_dir = p["config"], p["config_dir"], p["root_dir"]
    found = _running_kubelet(module, p)
    if not (config and config_dir and root_dir):
        if not config:
            config = found.get("config")
        if not config_dir:
            config_dir = found.get("config_dir") or DEFAULT_CONFIG_DIR
        if not root_dir:
            root_dir = found.get("root_dir") or "/var/lib/kubelet"
    locations = dict(config=config, config_dir=config_dir, root_dir=root_dir)
    if p["mode"] == "dropin" and found_running_without_config_dir(found):
        message = ("the running kubelet (pid %s) was started without --config-dir, so it ignores drop-in files"
                   % found.get("pid"))
        if not p["config_dir"]:
            module.fail_json(msg=message + "; add --config-dir=%s to its flags first, pass config_dir explicitly if you "
                             "are changing the flags, or use mode: merge" % config_dir, locations=locations)
        module.warn(message + "; make sure it is restarted with --config-dir=%s" % config_dir)
    return locations


def _host_topology(module: Any, p: Dict[str, Any], locations: Dict[str, Any]) -> Any:
    """The topology the host checks use (``topology``, else sysfs), None with ``validate_host: false``."""
    if not p["validate_host"]:
        return None
    try:
        if p["topology"]:
            return Topology.from_facts(p["topology"])
        return read_topology(p["sysfs_root"])
    except (SysfsError, InvalidTopology) as exc:
        module.fail_json(msg="cannot read the host's NUMA topology for validation: %s "
                             "(set validate_host: false to skip the host checks)" % exc, locations=locations)
    return None


def _result(module: Any, plan: Dict[str, Any], locations: Dict[str, Any], kubelet_version: Any) -> Dict[str, Any]:
    """The module's result for a plan (before any write)."""
    result = dict(
        changed=plan["changed"],
        needs_write=plan["changed"],
        path=plan["path"],
        config_mode=plan["mode"],
        content=mask_credentials(plan["content"]),
        effective=plan["effective"],
        previous=plan["previous"],
        effective_changed=plan["effective_changed"],
        flags=plan["flags"],
        flags_string=" ".join(plan["flags"]),
        reset=plan["reset"],
        intended_sha256=hashlib.sha256(plan["after"].encode("utf-8", "surrogateescape")).hexdigest(),
        state_files=plan["state_files"],
        locations=locations,
        inputs=plan["inputs"],
    )
    result.update(kubelet_version.with_gates(plan["effective"].get("featureGates")).result())
    if module._diff:
        result["diff"] = dict(before=plan["before"] or "", after=plan["after"],
                              before_header=plan["path"] if plan["before"] is not None else "%s (absent)" % plan["path"],
                              after_header=plan["path"])
    return result
