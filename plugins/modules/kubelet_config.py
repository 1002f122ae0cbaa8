#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

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
    rollout can move them aside first; see the
    R(numaguard.kubelet.kubelet_numa, ansible_collections.numaguard.kubelet.kubelet_numa_role) role.
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
  description:
    - The document written (managed settings normalised; in merge mode the whole file).
    - Credentials (C(staticPodURLHeader) and any header, token, password or secret field) are masked as C(********);
      their values are also hidden from every other returned field, the diff included.
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
inputs:
  description:
    - What the plan read - C(files) (path to sha256, null when missing) and C(dirs) (the drop-in directory to its file
      names). Give it to M(numaguard.kubelet.kubelet_rollout) as O(numaguard.kubelet.kubelet_rollout#module:plan_inputs)
      to learn whether the plan is still current.
  returned: on success
  type: dict
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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.numaguard.kubelet.plugins.module_utils._zip_compile import compile_each_module_once


def main():
    compile_each_module_once()  # first: the backend's imports then compile once (see _zip_compile.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.kubelet_config import module_kwargs, run

    run(AnsibleModule(**module_kwargs()))


if __name__ == "__main__":
    main()
