#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: numa_recommend
short_description: Recommend kubelet NUMA settings per hardware class for a workload
version_added: 0.2.0
description:
  - Runs on the controller (action plugin), once for the play. Takes the play's hosts' C(numa_topology) facts, one
    host per hardware class (the class C(discover.yml) groups hosts by), and the workload of O(workload_file).
  - For each class it generates candidate settings (Topology Manager policy, scope and options; CPU Manager policy,
    options and C(reservedSystemCPUs); Memory Manager policy and C(reservedMemory) split strategy; kube-reserved from
    the class's size), drops those the kubelet would refuse to start (the checks of the rollout's preflight), fills one
    fresh node of the class with the workload in order through the kubelet's admission (the collection's admission
    engine), and ranks them by the workload's C(objective).
  - Writes O(recommend_dir)C(/group_vars/<class>.yml) with the winner's C(kubelet_numa_settings) (what C(validate.yml)
    and C(apply.yml) read), O(recommend_dir)C(/classes.yml) (an inventory snippet, one group per class with its hosts;
    C(-i) it and the C(group_vars) next to it apply), O(recommend_dir)C(/recommend.json) (every candidate's figures) and
    O(recommend_dir)C(/recommend.html) (a table per class and per-NUMA fill pictures of the winner). Files are written
    whole (temporary file and rename); the same input gives the same files. In check mode nothing is written.
  - See C(docs/recommend.md) for the workload file, the candidates and how they are ranked.
options:
  workload_file:
    description:
      - The workload, a YAML file on the controller - C(pods) (a list of C({name, replicas, template}) or
        C({name, replicas, template_file}); C(template_file) relative to the workload file), optional C(candidates)
        (narrows the search), C(objective) (C(aligned), the default, or C(admitted)) and C(kubelet_version).
      - Relative to the current directory of C(ansible-playbook).
    type: path
    required: true
  recommend_dir:
    description: Directory for the outputs (created), relative to the current directory of C(ansible-playbook).
    type: path
    required: true
  hosts:
    description: Hosts whose topologies are used, in order (the first host of each class stands for it). Default
      C(ansible_play_hosts).
    type: list
    elements: str
  topologies:
    description: Host name to C(numa_topology) fact dict. Default each host's C(numa_topology).
    type: dict
  baseline_dir:
    description:
      - A directory of C(<class>.yml) files with C(kubelet_numa_settings) to fill a node with too, for comparison
        (for example the settings rolled out today). Default the collection's documented per-class defaults,
        C(playbooks/examples/classes/group_vars), when the collection has them.
    type: path
attributes:
  check_mode:
    support: full
    description: In check mode the recommendation is computed and returned but no file is written.
  diff_mode:
    support: none
    description: No diff.
author:
  - numaguard.kubelet contributors (@numaguard)
"""

EXAMPLES = r"""
- name: Recommend per class, once for the play
  numaguard.kubelet.numa_recommend:
    workload_file: workload.yml
    recommend_dir: recommend/
  register: recommendation
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
lines:
  description: One line per class - the winner, its figures, how the runner-up differs, and the baseline's figures.
  returned: success
  type: list
  elements: str
classes:
  description: Per class the winner's C(id), C(summary), C(settings) and figures (C(admitted), C(aligned),
    C(offered), C(rejected)), C(evaluated) and C(dropped) counts.
  returned: success
  type: dict
files:
  description: Absolute paths of the files written (or that would be, in check mode).
  returned: success
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.numaguard.kubelet.plugins.module_utils._zip_compile import compile_each_module_once


def main():
    compile_each_module_once()  # first: the backend's imports then compile once (see _zip_compile.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.numa_recommend import module_kwargs, run

    run(AnsibleModule(**module_kwargs()))


if __name__ == "__main__":
    main()
