# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 23, case 3: check_pod's pod-file loader (plugin_utils/bounded_yaml.py) counts nodes while
composing and refuses hostile files within bounded memory.

Plain PyYAML and the collection's code, no ansible-core: the same answer on every core, so these
run once (pytest under 2.19), not per core (scripts/core-unit-targets); the action plugin's side
(every error names the file) is test_issue23_pod_file_loader.py.
(The CPU and RSS of the 4 MB hostile files are measured by benchmarks/hostile_pod_files.py.)
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess
import sys

import pytest

from ansible_collections.numaguard.kubelet.plugins.plugin_utils.bounded_yaml import BoundedYAMLError, load_all


def test_composing_stops_at_the_node_limit_before_the_end_of_the_file():
    # the document is broken at its very end: a loader that composed everything first would
    # report the syntax error; this one stops at the limit, long before
    text = "[" + "1," * 150000 + "1\n: ]]"
    with pytest.raises(BoundedYAMLError) as err:
        load_all(text, "flow.yaml")
    assert str(err.value) == "flow.yaml has more than 100000 YAML nodes; refusing it"


def test_many_small_documents_count_together():
    with pytest.raises(BoundedYAMLError) as err:
        load_all("---\n" * 150000, "docs.yaml")
    assert "docs.yaml has more than 100000 YAML nodes" in str(err.value)


#: Each 4 MB hostile file is read in a fresh interpreter, whose peak RSS (``VmHWM``: the
#: interpreter, PyYAML and the text included) is that file's alone: a stricter bound than the
#: Python allocations tracemalloc counted in this process, and without tracemalloc's hook on every
#: allocation (which made these three cases 15 s of CPU; now under 1 s each). Not ``ru_maxrss``:
#: Linux carries it over fork and exec, so a child of a 350 MB xdist worker reports 350 MB;
#: ``VmHWM`` belongs to the new process's own memory map.
HOSTILE = """
import sys
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.bounded_yaml import BoundedYAMLError, load_all
FOUR_MB = 4 << 20
TEXTS = {
    "flow-list": lambda: "[" + "1," * (FOUR_MB // 2 - 1) + "1]",
    "block-list": lambda: "- 1\\n" * (FOUR_MB // 4),
    "flow-map": lambda: "{" + ",".join("k%d: 1" % i for i in range(FOUR_MB // 10)) + "}",
}
text = TEXTS[sys.argv[1]]()[:FOUR_MB]
assert len(text) == FOUR_MB, len(text)
try:
    load_all(text, "hostile.yaml")
except BoundedYAMLError:
    with open("/proc/self/status") as status:
        print("refused " + [line.split()[1] for line in status if line.startswith("VmHWM:")][0])
else:
    print("accepted")
"""


@pytest.mark.parametrize("kind", ["flow-list", "block-list", "flow-map"])
def test_a_4mb_hostile_pod_file_is_refused_within_200mb(kind):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path for path in sys.path if path))
    proc = subprocess.run([sys.executable, "-c", HOSTILE, kind], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    outcome, _sep, max_rss_kb = proc.stdout.strip().partition(" ")
    assert outcome == "refused", proc.stdout
    assert int(max_rss_kb) << 10 < 200 << 20, max_rss_kb


@pytest.mark.parametrize("text", ["kind: Pod\nmetadata: {name: \x00}\n", "a: \x07\n", "\x00"])
def test_a_nul_or_control_byte_is_refused_naming_the_file(text):
    with pytest.raises(BoundedYAMLError) as err:
        load_all(text, "/play/pods/nul.yaml")
    assert str(err.value).startswith("/play/pods/nul.yaml is not valid YAML: ")


def test_aliases_still_count_expanded():
    text = "a: &a [" + ",".join(["x"] * 1000) + "]\nb: [" + ",".join(["*a"] * 300) + "]\n"
    with pytest.raises(BoundedYAMLError) as err:
        load_all(text, "alias.yaml")
    assert "alias.yaml expands to more than 200000 nodes" in str(err.value)
