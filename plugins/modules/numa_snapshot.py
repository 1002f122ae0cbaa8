#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: numa_snapshot
short_description: Write a content-copied snapshot of what NUMA discovery reads, for offline analysis
version_added: 0.2.0
description:
  - Copies the contents of the files M(numaguard.kubelet.numa_facts) reads (the sysfs and procfs subset,
    the kubelet config file and drop-in directory, its state files and device-plugin checkpoint) into a
    reproducible C(tar.gz) at O(dest) on the host. Extracted anywhere, M(numaguard.kubelet.numa_facts) with
    O(numaguard.kubelet.numa_facts#module:root) pointing at it returns the same facts.
  - Returns those facts, read back from the copy, so facts and archive always agree.
  - Used by the playbook C(numaguard.kubelet.capture), which fetches the archive and saves the facts.
author:
  - numaguard.kubelet contributors (@numaguard)
options:
  dest:
    description:
      - Path of the archive to write on the host (written atomically, mode 0600).
    type: path
    required: true
extends_documentation_fragment:
  - numaguard.kubelet.root
attributes:
  check_mode:
    support: full
    description: In check mode nothing is written; the facts are still returned.
  diff_mode:
    support: none
    description: The archive is binary.
notes:
  - No other process, no kubeconfig and no credentials are copied. A live C(/sys) cannot be copied with
    C(tar) or C(cp -r) (sysfs files claim 4096 bytes and link into the whole device tree); this module copies
    contents and keeps the links discovery reads as links.
seealso:
  - module: numaguard.kubelet.numa_facts
"""

EXAMPLES = r"""
---
- name: Snapshot a host for offline analysis
  numaguard.kubelet.numa_snapshot:
    dest: /tmp/numa-snapshot.tar.gz
  register: snapshot
"""

RETURN = r"""
---
numa_topology:
  description: The C(numa_topology) facts read back from the snapshot (see M(numaguard.kubelet.numa_facts)).
  returned: success
  type: dict
  sample: {"node_ids": [0, 1], "warnings": []}
files:
  description: Number of files and links in the archive.
  returned: success
  type: int
  sample: 2413
bytes:
  description: Size of the archive.
  returned: when not in check mode
  type: int
  sample: 61440
sha256:
  description: SHA-256 of the archive (the same host state gives the same archive).
  returned: when not in check mode
  type: str
  sample: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.numaguard.kubelet.plugins.module_utils._zip_compile import compile_each_module_once


def main():
    compile_each_module_once()  # first: the backend's imports then compile once (see _zip_compile.py)
    from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.numa_snapshot import module_kwargs, run

    run(AnsibleModule(**module_kwargs()))


if __name__ == "__main__":
    main()
