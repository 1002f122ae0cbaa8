#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: kubelet_config
short_description: Render and validate the kubelet's CPU, Topology and Memory Manager settings
version_added: 0.1.0
description:
  - Manages the NUMA-related KubeletConfiguration fields C(cpuManagerPolicy), C(cpuManagerPolicyOptions),
    C(cpuManagerReconcilePeriod), C(reservedSystemCPUs), C(topologyManagerPolicy), C(topologyManagerScope),
    C(topologyManagerPolicyOptions), C(memoryManagerPolicy), C(reservedMemory), C(kubeReserved),
    C(systemReserved), C(evictionHard) and C(featureGates).
  - In the default O(mode=dropin) it writes a drop-in file for the kubelet's C(--config-dir) that holds
    exactly these settings and leaves the main configuration untouched. O(mode=merge) updates an
    existing KubeletConfiguration file in place and keeps every key it does not manage.
  - Before writing, it validates what the kubelet would only find at start-up (and then refuse to
    start) - field types and enums (a JSON schema), policy name casing, policy options known to
    O(kubelet_version) and enabled by its feature gates, max-allowable-numa-nodes against the host's
    NUMA node count, reserved CPUs that exist and are online, a CPU reservation for the static CPU
    policy, and the reserved-memory rules (per-type sums, NUMA ids). Every error names the field,
    the value and the fix, and nothing is written when any check fails.
  - Reports which kubelet state files the change would make the kubelet refuse (a changed CPU or
    Memory Manager policy, changed reserved CPUs or reserved memory, per-NUMA memory drift), so a
    rollout can move them aside first; see the C(numaguard.kubelet.kubelet_numa) role.
  - Also returns the equivalent kubelet command-line flags for kubelets configured by flags.
  - Output is deterministic (sorted YAML written by the collection's own emitter); the write is
    atomic, with an optional backup.
author:
  - numaguard.kubelet contributors (@numaguard)
extends_documentation_fragment:
  - numaguard.kubelet.topology
options:
  settings:
    description:
      - The managed KubeletConfiguration fields, spelled as in the KubeletConfiguration API
        (camelCase), for example C(cpuManagerPolicy=static) and C(reservedSystemCPUs="0-1").
      - Option values (policy options) may be given as booleans or numbers; they are written as the
        strings the kubelet expects. Quantities are kept as written.
      - Unknown fields are rejected (they are not managed by this module).
    type: dict
    required: true
  mode:
    description:
      - V(dropin) writes O(path) as a drop-in for the kubelet's C(--config-dir).
      - V(merge) updates the KubeletConfiguration file O(path) (default O(config)) in place, keeping
        unmanaged keys; C(featureGates) are merged gate by gate, other managed fields replaced.
        Comments in that file are not kept when it has to change.
    type: str
    choices: [dropin, merge]
    default: dropin
  path:
    description:
      - The file to write.
      - Default with O(mode=dropin) is C(50-numaguard-numa.conf) in O(config_dir); with O(mode=merge) it
        is O(config).
      - A drop-in must end in C(.conf) (the kubelet ignores other files).
    type: path
  config:
    description:
      - The kubelet's main configuration file (its C(--config)), used to compute the effective
        configuration. Default is what a running kubelet uses, else the usual locations
        (C(/var/lib/kubelet/config.yaml), ...).
      - An explicitly empty value is refused (leave the option out for the default), so an empty templated
        variable never turns into a write to the host's default kubelet directory.
    type: path
  config_dir:
    description:
      - The kubelet's drop-in directory (its C(--config-dir)). Default is what a running kubelet
        uses, else C(/etc/kubernetes/kubelet.conf.d).
      - An explicitly empty value is refused (leave the option out for the default), so an empty templated
        variable never turns into a write to the host's default kubelet directory.
    type: path
  root_dir:
    description:
      - The kubelet root directory holding C(cpu_manager_state) and C(memory_manager_state).
        Default is what a running kubelet uses, else C(/var/lib/kubelet).
      - An explicitly empty value is refused (leave the option out for the default), so an empty templated
        variable never turns into a write to the host's default kubelet directory.
    type: path
  kubelet_version:
    description:
      - Kubernetes release of the kubelet (V(1.31), V(v1.31.4)); decides which policy options exist
        and their feature gates.
      - Default is what C(kubelet --version) on the host says; when there is no kubelet binary the
        newest released kubelet the collection knows (1.37) is assumed, with a warning.
      - The release decides option maturity, feature-gate defaults and locked gates
        (see C(docs/kubelet-versions.md)).
    type: str
  validate_host:
    description:
      - Read the host's NUMA topology (from O(sysfs_root) or O(topology)) for the host checks (reserved
        CPUs online, NUMA node count, reserved-memory NUMA ids and sums, memory drift).
    type: bool
    default: true
  sysfs_root:
    description:
      - Root of the filesystem whose sysfs describes the host (C(/) for the live host).
    type: path
    default: /
  backup:
    description:
      - Keep a timestamped copy of the previous file next to it before changing it.
    type: bool
    default: false
  mode_bits:
    description:
      - Permissions of a newly created file. An existing file keeps its permissions and owner.
    type: str
    default: '0644'
attributes:
  check_mode:
    support: full
    description: Computes, validates and reports everything, writes nothing.
  diff_mode:
    support: full
    description: Shows the file before and after.
notes:
  - The effective configuration follows the kubelet's own merge of C(--config-dir) drop-ins (file-name
    order, maps merged key by key, lists replaced). A later drop-in that overrides a field this module
    sets is reported as an error.
  - Setting only some C(evictionHard) signals makes the kubelet treat the others as 0; the module warns.
  - See C(docs/kubelet-config.md) in the collection.
seealso:
  - module: numaguard.kubelet.numa_facts
  - name: Kubelet configuration drop-in directory
    description: How the kubelet merges C(--config-dir) files.
    link: https://kubernetes.io/docs/reference/node/kubelet-config-directory-merging/
"""

EXAMPLES = r"""
- name: Static CPU manager and single-numa-node topology manager as a drop-in
  numaguard.kubelet.kubelet_config:
    kubelet_version: "1.31"
    settings:
      cpuManagerPolicy: static
      cpuManagerPolicyOptions:
        full-pcpus-only: true
      reservedSystemCPUs: "0-1"
      topologyManagerPolicy: single-numa-node
      topologyManagerScope: pod
  register: kubelet_numa

- name: Show whether the state files must be moved aside before restarting the kubelet
  ansible.builtin.debug:
    var: kubelet_numa.reset

- name: Update the main configuration file in place, keeping a backup
  numaguard.kubelet.kubelet_config:
    mode: merge
    path: /var/lib/kubelet/config.yaml
    backup: true
    settings:
      memoryManagerPolicy: Static
      reservedMemory:
        - numaNode: 0
          limits:
            memory: 1100Mi
      kubeReserved:
        memory: 500Mi
      systemReserved:
        memory: 500Mi

- name: Only validate and render the equivalent flags (nothing is written in check mode)
  numaguard.kubelet.kubelet_config:
    settings:
      cpuManagerPolicy: static
      kubeReserved:
        cpu: 500m
  check_mode: true
  register: planned
"""

RETURN = r"""
path:
  description: The file written (or that would be written).
  returned: always
  type: str
  sample: /etc/kubernetes/kubelet.conf.d/50-numaguard-numa.conf
needs_write:
  description:
    - Whether the file differs from what O(settings) asks for (same as C(changed), but kept when a
      task overrides C(changed) with C(changed_when), as the role's planning step does).
  returned: always
  type: bool
  sample: true
config_mode:
  description: The mode used, V(dropin) or V(merge).
  returned: always
  type: str
  sample: dropin
backup_file:
  description: The backup of the previous file, when O(backup=true) and the file changed.
  returned: when a backup was made
  type: str
  sample: /etc/kubernetes/kubelet.conf.d/50-numaguard-numa.conf.12345.2026-01-01@10:00:00~
content:
  description: The document written (managed settings normalised; in merge mode the whole file).
  returned: always
  type: dict
  sample: {"apiVersion": "kubelet.config.k8s.io/v1beta1", "kind": "KubeletConfiguration", "cpuManagerPolicy": "static"}
effective:
  description: The managed fields of the effective configuration after the change (kubelet defaults filled in).
  returned: always
  type: dict
  sample: {"cpuManagerPolicy": "static", "memoryManagerPolicy": "None", "topologyManagerPolicy": "none"}
previous:
  description: The managed fields of the effective configuration before the change.
  returned: always
  type: dict
  sample: {"cpuManagerPolicy": "none"}
effective_changed:
  description: Whether the effective managed configuration changes (false when only the file layout changes).
  returned: always
  type: bool
  sample: true
flags:
  description: The equivalent kubelet command-line flags of O(settings), sorted.
  returned: always
  type: list
  elements: str
  sample: ["--cpu-manager-policy=static", "--reserved-cpus=0-1"]
flags_string:
  description: O(settings) as one kubelet command-line string.
  returned: always
  type: str
  sample: --cpu-manager-policy=static --reserved-cpus=0-1
intended_sha256:
  description: sha256 of the file as this change writes it (the rollout journal records it to tell a complete write).
  returned: always
  type: str
  sample: 9f2c3a...
reset:
  description:
    - Which state files the kubelet would refuse after this change, and why. When a value is true,
      stop the kubelet and move that file aside before starting it with the new configuration.
  returned: always
  type: dict
  contains:
    cpu_manager_state:
      description: C(cpu_manager_state) must be moved aside.
      type: bool
    memory_manager_state:
      description: C(memory_manager_state) must be moved aside.
      type: bool
    reasons:
      description: Why, one sentence each.
      type: list
      elements: str
  sample: {"cpu_manager_state": true, "memory_manager_state": false,
           "reasons": ["cpuManagerPolicy 'static' differs from the cpu_manager_state checkpoint policy 'none'"]}
state_files:
  description: Where the state files are and whether they exist.
  returned: always
  type: dict
  sample: {"cpu_manager_state": {"path": "/var/lib/kubelet/cpu_manager_state", "exists": true}}
kubelet_version:
  description: The kubelet release the checks assumed (as given or as C(kubelet --version) printed it).
  returned: always
  type: str
  sample: v1.35.2
kubelet_version_source:
  description: Where O(kubelet_version) came from, V(option), V(host) (C(kubelet --version)) or V(default).
  returned: always
  type: str
  sample: host
feature_gates:
  description: The NUMA-relevant feature gates the checks assumed, the release defaults merged with the configured C(featureGates).
  returned: always
  type: dict
  sample: {"CPUManagerPolicyAlphaOptions": false, "CPUManagerPolicyBetaOptions": true}
locations:
  description: The kubelet config file, drop-in directory and root directory used.
  returned: always
  type: dict
  sample: {"config": "/var/lib/kubelet/config.yaml", "config_dir": "/etc/kubernetes/kubelet.conf.d", "root_dir": "/var/lib/kubelet"}
errors:
  description: Every validation error (the module fails when there is one).
  returned: on validation failure
  type: list
  elements: str
  sample: ["cpuManagerPolicy: 'Static' is not a valid policy name; names are case-sensitive, use 'static'"]
"""

import hashlib
import os
import tempfile

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_bytes

from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.backup import path_problem
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import KubeletConfigError, nesting_exceeds
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.plan import (
    DEFAULT_CONFIG_DIR,
    plan_change,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.settings import MANAGED_FIELDS, SettingsError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import (
    KubeletAssumption, VersionError, host_kubelet_version)

try:
    from ansible_collections.numaguard.kubelet.plugins.module_utils._host.kubelet_paths import locate_kubelet
    from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import SysfsError, read_topology
    from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import InvalidTopology, Topology
    from ansible_collections.numaguard.kubelet.plugins.module_utils._reservation.reservation import validate_reservation
    HAS_HOST_UTILS = True
    HOST_UTILS_ERROR = ""
except ImportError as exc:  # pragma: no cover - all ship with the collection
    HAS_HOST_UTILS = False
    HOST_UTILS_ERROR = str(exc)


#: A KubeletConfiguration's managed fields nest at most a few levels (reservedMemory: 4).
MAX_SETTINGS_DEPTH = 16


def reservation_validator(effective, topology, kubelet=None):
    """Adapter to the reserved-memory validation (docs/reserved-memory.md) and the Node
    Allocatable capacity check."""
    if topology is None:
        return [], []
    result = validate_reservation(
        topology,
        kube_reserved=effective.get("kubeReserved") or {},
        system_reserved=effective.get("systemReserved") or {},
        eviction_hard=effective.get("evictionHard"),
        reserved_memory=effective.get("reservedMemory") or [],
        memory_manager_policy=effective.get("memoryManagerPolicy", "None"),
        merge_default_eviction_settings=bool(effective.get("mergeDefaultEvictionSettings")),
        reserved_cpus=effective.get("reservedSystemCPUs") or None,
        kubelet=kubelet,
    )

    def field(finding):
        return "kubeReserved/systemReserved/evictionHard" if finding.rule == "node-allocatable-capacity" else "reservedMemory"

    return (["%s: %s" % (field(f), f) for f in result.errors],
            ["%s: %s" % (field(f), f) for f in result.warnings])


def found_running_without_config_dir(found):
    """True when the located kubelet runs (flags read from /proc) but has no --config-dir."""
    return bool(found) and found.get("running") and found.get("source") == "cmdline" and not found.get("config_dir")


def detect_kubelet_version(module):
    """``kubelet --version`` output of the host, or None."""
    return host_kubelet_version(module)


def write_atomically(module, path, text, mode_bits):
    """Write ``text`` to ``path`` through a temp file in the same directory and a rename."""
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, tmp = tempfile.mkstemp(prefix=".%s." % os.path.basename(path), dir=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(to_bytes(text))
            handle.flush()
            os.fsync(handle.fileno())
        if not os.path.exists(path):
            os.chmod(tmp, int(mode_bits, 8))
        module.atomic_move(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def main():
    module = AnsibleModule(
        argument_spec=dict(
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
        ),
        supports_check_mode=True,
    )
    p = module.params
    if not HAS_HOST_UTILS:
        module.fail_json(msg="numaguard.kubelet module_utils are incomplete: %s" % HOST_UTILS_ERROR)
    try:
        int(p["mode_bits"], 8)
    except ValueError:
        module.fail_json(msg="mode_bits: %r is not an octal permission such as 0644" % p["mode_bits"])

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

    config, config_dir, root_dir = p["config"], p["config_dir"], p["root_dir"]
    try:
        found = locate_kubelet("/")
    except Exception as exc:  # a broken /proc entry must not hide the real task
        module.warn("could not locate the running kubelet: %s" % exc)
        found = {}
    overriding = sorted(set(found.get("flags") or {}) & set(f[0][2:] for f in MANAGED_FIELDS.values()))
    if overriding:
        module.warn("the running kubelet (pid %s) sets --%s on its command line; flags override the configuration files, "
                    "so move them into the configuration (see the flags return value) or change them in the unit"
                    % (found.get("pid"), ", --".join(overriding)))
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

    try:
        kubelet_version = KubeletAssumption.resolve(
            p["kubelet_version"], None if p["kubelet_version"] else detect_kubelet_version(module))
    except VersionError as exc:
        module.fail_json(msg=str(exc), errors=[str(exc)], locations=locations)

    topology = None
    if p["validate_host"]:
        try:
            if p["topology"]:
                topology = Topology.from_facts(p["topology"])
            else:
                topology = read_topology(p["sysfs_root"])
        except (SysfsError, InvalidTopology) as exc:
            module.fail_json(msg="cannot read the host's NUMA topology for validation: %s "
                                 "(set validate_host: false to skip the host checks)" % exc, locations=locations)

    try:
        plan = plan_change(
            p["settings"], mode=p["mode"], path=p["path"], config=config, config_dir=config_dir,
            root_dir=root_dir, kubelet_version=kubelet_version, topology=topology,
            reservation_validator=lambda effective, topo: reservation_validator(effective, topo, kubelet_version),
        )
    except SettingsError as exc:
        module.fail_json(msg="invalid kubelet settings: %s" % "; ".join(exc.errors), errors=exc.errors,
                         locations=locations, **kubelet_version.result())
    except KubeletConfigError as exc:
        module.fail_json(msg=str(exc), errors=[str(exc)], locations=locations)

    for warning in plan["warnings"]:
        module.warn(warning)
    result = dict(
        changed=plan["changed"],
        needs_write=plan["changed"],
        path=plan["path"],
        config_mode=plan["mode"],
        content=plan["content"],
        effective=plan["effective"],
        previous=plan["previous"],
        effective_changed=plan["effective_changed"],
        flags=plan["flags"],
        flags_string=" ".join(plan["flags"]),
        reset=plan["reset"],
        intended_sha256=hashlib.sha256(to_bytes(plan["after"])).hexdigest(),
        state_files=plan["state_files"],
        locations=locations,
    )
    result.update(kubelet_version.with_gates(plan["effective"].get("featureGates")).result())
    if module._diff:
        result["diff"] = dict(before=plan["before"] or "", after=plan["after"],
                              before_header=plan["path"] if plan["before"] is not None else "%s (absent)" % plan["path"],
                              after_header=plan["path"])
    if plan["changed"] and not module.check_mode:
        if p["backup"] and plan["before"] is not None:
            result["backup_file"] = module.backup_local(plan["path"])
        try:
            write_atomically(module, plan["path"], plan["after"], p["mode_bits"])
        except (IOError, OSError) as exc:
            module.fail_json(msg="cannot write %s: %s" % (plan["path"], exc.strerror or exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
