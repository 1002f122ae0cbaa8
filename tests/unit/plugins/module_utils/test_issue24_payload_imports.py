# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What a run compiles, pinned in a fresh process (issue 24: the cost of a playbook beyond ping).

* ``numa_facts`` (discover.yml's one task on the hosts) on a host without a device-plugin
  checkpoint does not compile the checkpoint parser (``_engine/devicemanager_inputs.py``);
  a host with one still parses it.
* ``numa_report`` (run once per play on the controller) compiles the HTML renderer only when
  ``html_file`` is asked for, and the pod wording (``_report/admission.py`` with the engine's
  ``alignment.py``) only for a check_pod report with pods in it.
"""

# core-unit-targets: same on every core: it counts the collection's own files a fresh interpreter compiles, which no ansible-core changes
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

from ansible_collections.numaguard.kubelet.plugins.module_utils._host import devices

ROOT = devices.__file__.split(os.sep + "ansible_collections" + os.sep, maxsplit=1)[0]
PREFIX = "ansible_collections.numaguard.kubelet.plugins."
CHECKPOINT = "var/lib/kubelet/device-plugins/kubelet_internal_checkpoint"


def _fresh(code):
    """Run ``code`` in a fresh interpreter; its last output line, as JSON."""
    env = dict(os.environ, PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


_GATHER = """
import json, sys
from ansible_collections.numaguard.kubelet.tests.fleet import topologies
from ansible_collections.numaguard.kubelet.plugins.module_utils._backends import numa_facts  # noqa: F401
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.facts import gather
topologies.write_tree(TOPOLOGY, ROOT, hostname="h")
facts = gather(ROOT)
print(json.dumps({"plugins": facts["device_plugins"], "modules": sorted(sys.modules)}))
"""


def _gather(tmp_path, topology):
    return _fresh(_GATHER.replace("ROOT", repr(str(tmp_path / "root"))).replace("TOPOLOGY", repr(topology)))


def test_discovery_without_a_device_checkpoint_does_not_compile_its_parser(tmp_path):
    out = _gather(tmp_path, "big16")  # no device plugins
    assert out["plugins"]["present"] is False
    assert [m for m in out["modules"] if m.startswith(PREFIX + "module_utils._engine")] == []


def test_discovery_with_a_device_checkpoint_still_parses_it(tmp_path):
    out = _gather(tmp_path, "gpu-sriov")  # GPUs and SR-IOV VFs registered by device plugins
    assert (tmp_path / "root" / CHECKPOINT).is_file()
    assert out["plugins"]["present"] is True and out["plugins"]["error"] is None
    assert out["plugins"]["resources"] and all(out["plugins"]["resources"].values())
    assert PREFIX + "module_utils._engine.devicemanager_inputs" in out["modules"]


_REPORT = """
import json, sys, tempfile
from ansible_collections.numaguard.kubelet.tests.fleet import topologies
from ansible_collections.numaguard.kubelet.plugins.action import numa_report
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.facts import gather
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.report import discover_report
root = tempfile.mkdtemp()
topologies.write_tree("big16", root, hostname="h1")
facts = gather(root)
report = discover_report({"h1": facts, "h2": facts}, {"h1": [], "h2": []}, ["h1", "h2"])
seen = {}
seen["discover"] = sorted(sys.modules)
numa_report._write_outputs({"html_file": root + "/r.html"}, report, False)
seen["html"] = sorted(sys.modules)
print(json.dumps(seen))
"""

_WORDING = (PREFIX + "module_utils._report.admission", PREFIX + "module_utils._engine.alignment",
            PREFIX + "module_utils._report.admission_table")


def test_a_discover_report_compiles_no_html_renderer_and_no_pod_wording():
    out = _fresh(_REPORT)
    html = PREFIX + "plugin_utils.report_html"
    assert [m for m in (html,) + _WORDING if m in out["discover"]] == []
    assert html in out["html"]  # asked for: rendered
    assert [m for m in _WORDING if m in out["html"]] == []


def test_the_rollout_backend_compiles_the_transaction_only_for_a_transaction():
    code = ("import json, sys\n"
            "from ansible_collections.numaguard.kubelet.plugins.module_utils._backends import kubelet_rollout\n"
            "from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config import rollout, transaction\n"
            "bound = transaction.release_bound(0, 0)\n"
            "rollout.HTTP_TIMEOUT += 1.0\n"
            "print(json.dumps({'same': transaction.release_bound(0, 0) - bound == 4.0, 'modules': sorted(sys.modules)}))\n")
    # the backend alone: what a status / begin / step / finish run compiles
    alone = _fresh(code.split("from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config import", 1)[0]
                   + "print(json.dumps({'modules': sorted(sys.modules)}))\n")
    assert PREFIX + "module_utils._kubelet_config.transaction" not in alone["modules"]
    assert PREFIX + "module_utils._kubelet_config.rollout" in alone["modules"]
    # one probe timeout: release_bound counts the probes' own (two GETs a probe, two health waits)
    assert _fresh(code)["same"] is True
