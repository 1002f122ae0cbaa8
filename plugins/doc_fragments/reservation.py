# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment:
    """The reservation inputs shared by the reserved_memory module and the reserved_memory_check filter."""

    DOCUMENTATION = r"""
options:
  kube_reserved:
    description:
      - C(--kube-reserved) as a flag string (V(cpu=500m,memory=4Gi)), a list of such strings, or a dict.
      - Only C(cpu), C(memory), C(ephemeral-storage) and C(pid) are allowed, as in the kubelet.
      - Overrides C(kubeReserved) of O(kubelet_config).
    type: raw
  system_reserved:
    description:
      - C(--system-reserved), same forms as O(kube_reserved). Overrides C(systemReserved) of O(kubelet_config).
    type: raw
  eviction_hard:
    description:
      - C(--eviction-hard) as a flag string (V(memory.available<500Mi,nodefs.available<10%)), a list of such
        strings, or a dict of signal to threshold.
      - When neither this nor O(kubelet_config) sets it, the kubelet's defaults apply (C(memory.available<100Mi)
        plus disk signals). Setting some signals drops the other defaults unless O(merge_default_eviction_settings)
        is true, exactly as the kubelet does.
    type: raw
  merge_default_eviction_settings:
    description:
      - The kubelet's C(mergeDefaultEvictionSettings). Default - the value of O(kubelet_config), else false.
    type: bool
  reserved_memory:
    description:
      - The reservation to validate - a C(--reserved-memory) flag string (V(0:memory=3Gi;1:memory=2148Mi)),
        a list of flag strings (the flag repeated), or the KubeletConfiguration C(reservedMemory) list of
        C({numaNode, limits}) dicts.
      - Overrides C(reservedMemory) of O(kubelet_config). Mutually exclusive with a computing O(strategy).
    type: raw
  memory_manager_policy:
    description:
      - C(memoryManagerPolicy) - V(None) or V(Static) (case-sensitive, as in the kubelet; a wrong spelling is
        reported as the kubelet's C(unknown policy) error rather than refused by Ansible).
      - Default - the value of O(kubelet_config); else V(Static) when a computing O(strategy) is given, else
        V(None). With V(None) the Memory Manager ignores C(reservedMemory), so its rules become warnings.
    type: str
  strategy:
    description:
      - How to compute C(reservedMemory) when it is not given.
      - V(node0) - everything on the lowest NUMA node (what the kubelet docs and OpenShift do).
      - V(spread) - evenly over the nodes that have memory, byte-exact, remainder on the lowest node.
      - V(proportional) - in proportion to each node's memory.
      - V(reserved_cpus) - on the nodes holding O(reserved_cpus), weighted by how many of them each node holds.
      - V(explicit) - validate O(reserved_memory) as given (the same as omitting O(strategy)).
      - Nodes never get more than their memory minus their hugepages; V(spread), V(proportional) and
        V(reserved_cpus) move what does not fit to their other nodes.
    type: str
    choices: [node0, spread, proportional, reserved_cpus, explicit]
  reserved_cpus:
    description:
      - C(reservedSystemCPUs) for O(strategy=reserved_cpus), as a CPU list (V(0-1,32-33)). Default - the value
        of O(kubelet_config).
    type: str
  split_unit:
    description:
      - Granularity of computed per-node values; the total is split in whole units and the rest (if the total
        is not a multiple) goes to the lowest node, so sums stay byte-exact. V(1) splits to the byte.
    type: raw
    default: 1Mi
  memory_capacity:
    description:
      - Node memory capacity (C(/proc/meminfo) C(MemTotal)) used for percentage C(memory.available) thresholds,
        as a quantity or bytes.
      - Default - C(memory_total_bytes) of RV(numaguard.kubelet.numa_facts#module:ansible_facts.numa_topology.system)
        in the topology facts when present, else the sum of the NUMA nodes' memory.
    type: raw
  allocatable_ignore_eviction:
    description:
      - The kubelet's C(--experimental-allocatable-ignore-eviction); when true the hard eviction threshold is
        not part of Node Allocatable and therefore not of C(reservedMemory).
    type: bool
    default: false
"""
