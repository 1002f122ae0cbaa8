# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the e2e tests and the benchmarks share to run a playbook on the simulated fleet: the sample
pods, the ansible environment, a collection tree pointing at a checkout, a timed run and its line count.

    python tests/fleet/playbook_runs.py pod db > pod.yaml           # a sample pod manifest
    python tests/fleet/playbook_runs.py collections WORK [TREE]     # WORK/collections -> TREE (default this checkout)
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

#: name -> (namespace, container, image, requests = limits); a Guaranteed pod each.
SAMPLE_PODS = {
    # 8 exclusive CPUs, 40Gi and 4 x 1Gi hugepages: admitted on the larger hosts only
    "db": ("shop", "postgres", "postgres:16", (("cpu", '"8"'), ("memory", "40Gi"), ("hugepages-1Gi", "4Gi"))),
    # small, admitted everywhere
    "web": ("shop", "nginx", "nginx", (("cpu", '"1"'), ("memory", "1Gi"))),
    # 2 exclusive CPUs: an admission every host answers quickly
    "bench": ("default", "c", "x", (("cpu", '"2"'), ("memory", "1Gi"))),
}


def pod_manifest(name: str) -> str:
    """The YAML text of the sample pod ``name``."""
    namespace, container, image, resources = SAMPLE_PODS[name]
    amounts = "{%s}" % ", ".join("%s: %s" % pair for pair in resources)
    return ("apiVersion: v1\nkind: Pod\nmetadata: {name: %s, namespace: %s}\nspec:\n  containers:\n"
            "    - name: %s\n      image: %s\n      resources:\n        requests: %s\n        limits: %s\n"
            % (name, namespace, container, image, amounts, amounts))


def write_pod(path: str, name: str) -> str:
    with open(path, "w") as handle:
        handle.write(pod_manifest(name))
    return path


def ansible_env(extra: Optional[Dict[str, str]] = None, bindir: Optional[str] = None) -> Dict[str, str]:
    """Environment for ansible commands against the fleet: pipelining, forks 10, no colour, no retry files."""
    env = dict(os.environ)
    env.update({
        "ANSIBLE_PIPELINING": "1", "ANSIBLE_FORKS": "10", "ANSIBLE_NOCOLOR": "1", "ANSIBLE_FORCE_COLOR": "0",
        "ANSIBLE_HOST_KEY_CHECKING": "0", "ANSIBLE_RETRY_FILES_ENABLED": "0", "ANSIBLE_DEPRECATION_WARNINGS": "0",
        "PATH": (bindir or os.path.dirname(sys.executable)) + os.pathsep + env.get("PATH", ""),
    })
    if extra:
        env.update(extra)
    return env


def collection_tree(work: str, tree: str = REPO, name: str = "collections") -> str:
    """``WORK/NAME/ansible_collections/numaguard/kubelet`` -> ``tree``; returns the ANSIBLE_COLLECTIONS_PATH."""
    path = os.path.join(work, name)
    os.makedirs(os.path.join(path, "ansible_collections", "numaguard"))
    os.symlink(os.path.abspath(tree), os.path.join(path, "ansible_collections", "numaguard", "kubelet"))
    return path


def run(argv: Sequence[str], env: Dict[str, str], cwd: str = REPO,
        timeout: Optional[float] = None) -> Tuple[subprocess.CompletedProcess, float]:
    """Run a command (stdout and stderr together, as text); the process and its wall time in seconds."""
    began = time.monotonic()
    proc = subprocess.run(list(argv), cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout, check=False)
    return proc, time.monotonic() - began


def lines(proc: subprocess.CompletedProcess) -> List[str]:
    """The output's lines, as an operator scrolls through them."""
    return proc.stdout.splitlines()


def main(argv: Sequence[str]) -> int:
    if len(argv) == 2 and argv[0] == "pod":
        sys.stdout.write(pod_manifest(argv[1]))
        return 0
    if len(argv) in (2, 3) and argv[0] == "collections":
        print(collection_tree(*argv[1:]))
        return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
