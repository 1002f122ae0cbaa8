# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Loading one of this collection's filters must not import the collection's engine (issue 12).

Why: to find which file provides ``numaguard.kubelet.<name>``, ansible's filter loader imports
every file under ``plugins/filter/``, in every forked worker that templates the filter, so each
host's task paid for everything those files imported at module level (the engine, the host
model, the reservation and report code: ~140 modules, ~0.2 s per worker). The filter files
therefore import the collection's own code (module_utils, plugin_utils) inside the filter
functions that use it. This test loads a filter by FQCN through ansible's filter loader in a
fresh process, imports every other filter file too (whatever this ansible version's loader
does), and checks which collection modules came with them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
COLLECTION = "ansible_collections.numaguard.kubelet."

#: run in a fresh interpreter: argv[1] is a collections path holding numaguard.kubelet
_PROBE = r"""
import importlib, json, os, sys
from ansible.plugins.loader import filter_loader, init_plugin_loader
init_plugin_loader([sys.argv[1]])
before = set(sys.modules)
controller_path = filter_loader.get("numaguard.kubelet.controller_path")
for name in sorted(os.listdir(sys.argv[2])):
    if name.endswith(".py") and name != "__init__.py":
        importlib.import_module("ansible_collections.numaguard.kubelet.plugins.filter." + name[:-3])
loaded = sorted(set(sys.modules) - before)
# the imports moved into the filters still resolve through ansible's collection loader
k8s_quantity = filter_loader.get("numaguard.kubelet.k8s_quantity")
print(json.dumps({"loaded": loaded, "controller_path": controller_path.j2_function("/srv/x"),
                  "k8s_quantity": k8s_quantity.j2_function(1073741824)}))
"""


def _probe(tmp_path):
    collections = tmp_path / "collections"
    (collections / "ansible_collections" / "numaguard").mkdir(parents=True)
    os.symlink(ROOT, str(collections / "ansible_collections" / "numaguard" / "kubelet"))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections))
    proc = subprocess.run([sys.executable, "-c", _PROBE, str(collections), os.path.join(ROOT, "plugins", "filter")],
                          capture_output=True, text=True, env=env, cwd=str(tmp_path), check=False, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_loading_filters_imports_no_engine(tmp_path):
    result = _probe(tmp_path)
    assert result["controller_path"] == "/srv/x"
    assert result["k8s_quantity"] == "1Gi"
    ours = [m[len(COLLECTION):] for m in result["loaded"] if m.startswith(COLLECTION)]
    assert "plugins.filter.reserved_memory_check" in ours  # the probe did import the filter files
    heavy = [m for m in ours if m.startswith(("plugins.module_utils._engine", "plugins.module_utils._host",
                                              "plugins.module_utils._reservation", "plugins.module_utils._report",
                                              "plugins.plugin_utils.report"))]
    assert heavy == [], "a filter file imports these at module level; import them inside the filter: %s" % heavy
    # the rule for every filter file: the collection's own code is imported where a filter runs
    helpers = [m for m in ours if m.startswith(("plugins.module_utils.", "plugins.plugin_utils."))]
    assert helpers == [], "a filter file imports these at module level; import them inside the filter: %s" % helpers
