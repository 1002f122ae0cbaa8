#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: numa_facts
short_description: Discover a host's NUMA topology the way the kubelet sees it
version_added: 0.1.0
description:
  - Reads the NUMA nodes, logical CPUs, per-node memory and hugepages and the node distance matrix
    from sysfs, following what the kubelet's machine discovery (cadvisor) does with each quirk of
    real trees (sparse node ids, CPU-less memory-only nodes, offline CPUs, node directories without
    C(cpulist), hugepages only under C(/sys/kernel/mm/hugepages), padded file contents).
  - A kernel without NUMA support (no C(/sys/devices/system/node)) is reported as one node 0 holding
    every online CPU and the memory of C(/proc/meminfo), as the kubelet treats it.
  - Also locates the kubelet (config file, drop-in directory and root directory, taken from the
    running kubelet's command line when it runs) and summarises its C(cpu_manager_state) and
    C(memory_manager_state) files, including whether their checksums verify. The kubelet files and the
    running processes' C(proc/*/cmdline) are read below O(root) too.
  - Kernels and platforms without some files (hex masks only, node C(cpuN) links only, an empty C(online)
    file, distance rows over the possible nodes, no C(/proc/meminfo) in a snapshot) are read through
    documented fallbacks, each reported in RV(ansible_facts.numa_topology.warnings).
  - Also reports PCI devices (RV(ansible_facts.numa_topology.pci_devices)) and the kubelet's registered
    device-plugin devices mapped to NUMA nodes (RV(ansible_facts.numa_topology.device_plugins)).
  - Never changes anything on the host. A malformed sysfs file (or one no fallback can stand in for) fails
    the module with a message naming the file and its content.
author:
  - numaguard.kubelet contributors (@numaguard)
extends_documentation_fragment:
  - numaguard.kubelet.root
attributes:
  check_mode:
    support: full
    description: The module only reads; check mode returns the same facts.
  diff_mode:
    support: none
    description: Nothing is changed, so there is nothing to diff.
  facts:
    support: full
    description: Returns RV(ansible_facts.numa_topology).
notes:
  - Memory per node is the node C(meminfo) C(MemTotal), the value the kubelet's memory manager uses;
    C(memory_total_bytes) of RV(ansible_facts.numa_topology.system) is C(/proc/meminfo) C(MemTotal), the kubelet's
    node memory capacity.
    The two differ slightly on real machines.
  - The fingerprint only covers the topology's shape (node ids, CPUs per node, memory rounded to the
    MiB, hugepage totals, distances), so hosts of one machine class share it while their free memory
    differs.
  - See C(docs/discovery.md) in the collection for where this module differs from cadvisor.
seealso:
  - name: Kubernetes Memory Manager
    description: How the kubelet uses per-NUMA memory and hugepages.
    link: https://kubernetes.io/docs/tasks/administer-cluster/memory-manager/
  - name: Kubernetes Topology Manager
    description: How the kubelet aligns CPUs, memory and devices on NUMA nodes.
    link: https://kubernetes.io/docs/tasks/administer-cluster/topology-manager/
"""

EXAMPLES = r"""
---
- name: Gather NUMA facts
  numaguard.kubelet.numa_facts:

- name: Show the CPUs of each NUMA node
  ansible.builtin.debug:
    msg: "node {{ item.id }}: CPUs {{ item.cpulist or '-' }}, {{ item.memory_total_bytes | numaguard.kubelet.k8s_quantity }} memory"
  loop: "{{ ansible_facts.numa_topology.nodes }}"

- name: Read a sysfs snapshot captured from another host
  numaguard.kubelet.numa_facts:
    root: /srv/snapshots/worker-17

- name: Refuse hosts with more NUMA nodes than the topology manager accepts by default
  ansible.builtin.assert:
    that: ansible_facts.numa_topology.node_count <= 8
    fail_msg: "{{ inventory_hostname }} has {{ ansible_facts.numa_topology.node_count }} NUMA nodes"
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    numa_topology:
      description: The host's NUMA topology as the kubelet sees it.
      returned: always
      type: dict
      contains:
        nodes:
          description: NUMA nodes ordered by id. Ids can be sparse (0, 1, 2, 33, 34).
          returned: always
          type: list
          elements: dict
          contains:
            id:
              description: NUMA node id.
              type: int
              returned: always
              sample: 0
            cpus:
              description: Online logical CPU ids of the node; empty for memory-only nodes (CXL, GPU memory).
              type: list
              elements: int
              returned: always
              sample: [0, 1, 2, 3]
            cpulist:
              description: The same online CPUs in kubelet cpuset syntax.
              type: str
              returned: always
              sample: "0-3"
            memory_total_bytes:
              description: The node C(meminfo) C(MemTotal) in bytes.
              type: int
              returned: always
              sample: 201723228160
            memory_free_bytes:
              description: The node C(meminfo) C(MemFree) in bytes.
              type: int
              returned: always
              sample: 131324989440
            hugepages:
              description:
                - Hugepage pools of the node keyed by Kubernetes resource name (C(hugepages-2Mi), C(hugepages-1Gi), ...).
                - Each has C(page_size_bytes), C(total_pages) and C(free_pages).
                - Empty when the kernel has no per-node hugepage directories.
              type: dict
              returned: always
              sample: {"hugepages-2Mi": {"page_size_bytes": 2097152, "total_pages": 1024, "free_pages": 1000}}
            distances:
              description: Map of peer node id (as a string) to the SLIT distance; empty when the kernel has no C(distance) file.
              type: dict
              returned: always
              sample: {"0": 10, "1": 20}
        cpus:
          description:
            - Every logical CPU the kernel knows, ordered by id, online or not.
            - Keys C(id), C(node), C(core) (kernel core_id), C(socket) (physical package), C(die),
              C(online), C(siblings) (SMT siblings including the CPU itself) and C(cache_id)
              (id of its last-level cache, null where the kernel does not expose it).
            - Offline CPUs have null C(core), C(socket), C(die) and C(cache_id) because the kernel
              removes their topology directory.
          returned: always
          type: list
          elements: dict
          sample: [{"id": 0, "node": 0, "core": 0, "socket": 0, "die": 0, "online": true, "siblings": [0, 48], "cache_id": 0}]
        node_count:
          description: Number of NUMA nodes.
          returned: always
          type: int
          sample: 2
        node_ids:
          description: NUMA node ids.
          returned: always
          type: list
          elements: int
          sample: [0, 1]
        cpu_node_count:
          description: Number of nodes with online CPUs (what the kubelet counts as NUMA nodes for CPUs).
          returned: always
          type: int
          sample: 2
        memory_only_node_ids:
          description: Ids of nodes without online CPUs.
          returned: always
          type: list
          elements: int
          sample: []
        cpu_count:
          description: Number of online logical CPUs.
          returned: always
          type: int
          sample: 96
        online_cpus:
          description: Online CPUs in cpuset syntax.
          returned: always
          type: str
          sample: "0-95"
        offline_cpus:
          description: Offline CPUs in cpuset syntax (empty string when none).
          returned: always
          type: str
          sample: ""
        socket_count:
          description: Number of distinct physical packages among online CPUs.
          returned: always
          type: int
          sample: 2
        threads_per_core:
          description: Online CPUs divided by physical cores (integer division, as the kubelet's CPUsPerCore).
          returned: always
          type: int
          sample: 2
        memory_total_bytes:
          description: Sum of the nodes' C(memory_total_bytes).
          returned: always
          type: int
          sample: 405658390528
        hugepage_sizes:
          description: Resource names of every hugepage size any node has, smallest first.
          returned: always
          type: list
          elements: str
          sample: ["hugepages-2Mi", "hugepages-1Gi"]
        fingerprint:
          description: C(sha256:) digest of the topology's shape; identical machines share it.
          returned: always
          type: str
          sample: "sha256:f504513b56822..."
        system:
          description:
            - Machine-wide memory from C(/proc/meminfo) (C(memory_total_bytes), C(memory_free_bytes),
              C(memory_available_bytes)) and the global hugepage pools of C(/sys/kernel/mm/hugepages)
              (C(hugepages), keyed like the per-node pools). This is the kubelet's node capacity.
          returned: always
          type: dict
          sample: {"memory_total_bytes": 405658390528, "memory_free_bytes": 260000000000, "memory_available_bytes": 270000000000, "hugepages": {}}
        warnings:
          description:
            - Every fallback discovery took, one line each - the host path, a colon, what was missing and what
              was used instead (for example on a kernel without C(cpulist) files). Empty on a complete modern sysfs. Also emitted as
              module warnings. Host paths, so a snapshot read with O(root) gives the same list.
          returned: always
          type: list
          elements: str
          sample: ["/sys/devices/system/node/node0/cpulist: does not exist; used cpumap (hex mask)"]
        pci_devices:
          description:
            - Every PCI device of C(/sys/bus/pci/devices), by address, with C(vendor), C(device), C(class) (hex
              strings), C(numa_node) (null when the kernel reports -1 or has no NUMA), C(driver), C(physfn) (the PF
              address of an SR-IOV VF), C(sriov_totalvfs) (PFs) and C(iommu_group).
          returned: always
          type: list
          elements: dict
          sample: [{"address": "0000:d8:00.0", "vendor": "0x10de", "device": "0x2331", "class": "0x030200",
                    "numa_node": 1, "driver": "nvidia", "physfn": null, "sriov_totalvfs": null, "iommu_group": 90}]
        device_plugins:
          description:
            - The kubelet's registered device-plugin devices from C(<root_dir>/device-plugins/kubelet_internal_checkpoint)
              (C(checkpoint), C(present), C(error) when unreadable), C(resources) mapping each resource to its devices
              (C(id), C(numa_node), C(pci_address), C(via) = C(pci) for PCI-address ids, C(nvidia) for GPU UUIDs found in
              C(/proc/driver/nvidia/gpus/*/information), null when unmapped), and C(unmapped) (resource to ids).
          returned: always
          type: dict
          sample: {"checkpoint": "/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint", "present": true,
                   "error": null, "resources": {"nvidia.com/gpu": [{"id": "GPU-5c3e2a1b-7d4f-4e8a-9b0c-1d2e3f405162",
                   "numa_node": 1, "pci_address": "0000:d8:00.0", "via": "nvidia"}]}, "unmapped": {}}
        kubelet:
          description:
            - Where the kubelet's files are. C(config), C(config_dir) and C(root_dir) are host paths
              (not prefixed with O(root)); C(config_exists), C(config_dir_exists) and C(root_dir_exists) say
              whether they exist.
            - C(running), C(pid), C(pids), C(source) (C(cmdline) when the running kubelet's flags were
              read, else C(default)) and C(flags) (its NUMA-relevant command-line flags). Only a process
              running as root whose executable is a C(kubelet) binary is trusted; C(ignored) lists the
              other processes called C(kubelet) (C(pid), C(reason)). Trusted kubelets that disagree on
              their paths fail the module, naming them.
            - C(state_files) has one entry per state file (C(cpu_manager_state), C(memory_manager_state)),
              each with C(path), C(present), C(policy_name), C(version), C(checksum_ok) (null when the file is
              absent or verification is unavailable) and C(checksum_error).
          returned: always
          type: dict
          sample:
            config: /var/lib/kubelet/config.yaml
            config_exists: true
            config_dir: null
            config_dir_exists: false
            root_dir: /var/lib/kubelet
            root_dir_exists: true
            running: false
            pid: null
            pids: []
            ignored: []
            source: default
            flags: {}
            state_files:
              cpu_manager_state: {"path": "/var/lib/kubelet/cpu_manager_state", "present": true, "policy_name": "static",
                                  "version": "v2", "checksum_ok": true, "checksum_error": null}
              memory_manager_state: {"path": "/var/lib/kubelet/memory_manager_state", "present": false, "policy_name": null,
                                     "version": null, "checksum_ok": null, "checksum_error": null}
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.numaguard.kubelet.plugins.module_utils._zip_compile import compile_each_module_once


def main():
    compile_each_module_once()  # first: the backend's imports then compile once (see _zip_compile.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.numa_facts import module_kwargs, run

    run(AnsibleModule(**module_kwargs()))


if __name__ == "__main__":
    main()
