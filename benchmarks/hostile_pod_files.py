# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Print the controller's CPU time and peak RSS for reading 4 MB hostile ``pod_file`` manifests
(and the largest pod file accepted).

Each file is read in a fresh process the way admission_check's action plugin reads a pod_file
(``_read_manifests``: the size check, UTF-8, ``bounded_yaml.load_all`` and the JSON-typed copy),
so the RSS is that file's alone. The bound (issue 23): at most 2 s of CPU and 200 MB per file.
Run from the repository root: ``.venv/bin/python benchmarks/hostile_pod_files.py [kind ...]``.
"""

from __future__ import absolute_import, division, print_function

import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZE = 4 << 20


def _pod(index):
    return ("---\napiVersion: v1\nkind: Pod\nmetadata: {name: pod-%d, namespace: default}\nspec:\n  containers:\n"
            "  - name: c\n    image: registry.example/app:1\n    resources:\n      limits: {cpu: '2', memory: 1Gi}\n"
            "      requests: {cpu: '2', memory: 1Gi}\n" % index)


#: kind -> text of about SIZE bytes (cut to SIZE)
KINDS = {
    "flow-list": lambda: "[" + "1," * (SIZE // 2),
    "block-list": lambda: "- 1\n" * (SIZE // 4),
    "flow-map": lambda: "{" + ",".join("k%d: 1" % i for i in range(SIZE // 8)) + "}",
    "empty-lists": lambda: "[" + "[]," * (SIZE // 3),
    "empty-documents": lambda: "---\n" * (SIZE // 4),
    "timestamps": lambda: "[" + "2001-12-14t21:59:43.10-05:00," * (SIZE // 29),
    "aliases": lambda: "a: &a [1]\nb: [" + ",".join(["*a"] * (SIZE // 3)) + "]\n",
    "merge-keys": lambda: "a: &a {x: 1, y: 2}\nb: [" + ",".join(["{<<: *a}"] * (SIZE // 9)) + "]\n",
    "deep-nesting": lambda: "[" * (SIZE // 2) + "]" * (SIZE // 2),
    "long-scalar": lambda: "kind: Pod\nmetadata: {name: " + "x" * (SIZE - 40) + "}\n",
    "long-key": lambda: "{" + "k" * (SIZE - 10) + ": 1}\n",
    "comments": lambda: "# " + "c" * 200 + "\n",
    "nul-at-end": lambda: "kind: Pod\n" + "# padding\n" * (SIZE // 10 - 2) + "a: \x00\n",
    "real-pods": lambda: "".join(_pod(i) for i in range(SIZE // len(_pod(0)) + 1)),
    # the most a file may hold: 2,750 such pods are 99,000 YAML nodes (accepted, so also constructed)
    "pods-at-limit": lambda: "".join(_pod(i) for i in range(2750)),
}


def _text(kind):
    text = KINDS[kind]()
    while len(text) < SIZE and kind == "comments":
        text += text
    return text[:SIZE]


def child(kind, path):
    """Read ``path`` as the action plugin does; print ``outcome``, CPU seconds and max RSS in MB."""
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    from _collection import importable

    importable()
    from ansible.errors import AnsibleError

    from ansible_collections.numaguard.kubelet.plugins.action.admission_check import ActionModule

    class _Loader:
        @staticmethod
        def get_real_file(source, decrypt=True):
            return source

    action = object.__new__(ActionModule)
    action._find_needle = lambda what, source: source
    action._loader = _Loader()
    started = time.process_time()
    try:
        manifests = action._read_manifests(path)["manifests"]
        outcome = "accepted (%d documents)" % len(manifests)
    except AnsibleError as exc:
        outcome = "refused: " + " ".join(str(exc).replace(path, "<file>").split())[:90]
    cpu = time.process_time() - started
    print("%.3f\t%d\t%s" % (cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024, outcome))


def main(argv):
    kinds = argv or sorted(KINDS)
    print("4 MB hostile pod files through admission_check's pod_file reader (one fresh process each;"
          " PYTHONDONTWRITEBYTECODE=%s)" % os.environ.get("PYTHONDONTWRITEBYTECODE", ""))
    print("%-16s %8s %8s  %s" % ("file", "CPU s", "RSS MB", "outcome"))
    worst_cpu = worst_rss = 0.0
    with tempfile.TemporaryDirectory(prefix="numaguard-hostile-") as tmp:
        for kind in kinds:
            path = os.path.join(tmp, kind + ".yaml")
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(_text(kind))
            out = subprocess.run([sys.executable, __file__, "--child", kind, path], capture_output=True, text=True, check=False)
            if out.returncode != 0:
                print("%-16s failed: %s" % (kind, out.stderr.strip().splitlines()[-1:]))
                continue
            cpu, rss, outcome = out.stdout.strip().splitlines()[-1].split("\t", 2)
            worst_cpu, worst_rss = max(worst_cpu, float(cpu)), max(worst_rss, float(rss))
            print("%-16s %8s %8s  %s" % (kind, cpu, rss, outcome))
    print("worst: %.3f s CPU, %d MB RSS (bound: 2 s, 200 MB)" % (worst_cpu, worst_rss))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3])
    else:
        main(sys.argv[1:])
