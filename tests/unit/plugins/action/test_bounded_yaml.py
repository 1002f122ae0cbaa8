# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Controller-side YAML bounds (plugin_utils/bounded_yaml.py, used for admission_check's pod_file)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import subprocess
import sys

import pytest

from ansible_collections.numaguard.kubelet.plugins.plugin_utils.bounded_yaml import BoundedYAMLError, load_all

BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    "%s: &%s [%s]\n" % (chr(98 + i), chr(98 + i), ",".join(["*" + chr(97 + i)] * 9)) for i in range(8))


#: The bomb is loaded in a fresh interpreter, which prints its peak RSS (``VmHWM``) before and
#: after: in this process the peak is the xdist worker's, already far above what the bomb could
#: add, so a bomb that expanded would not show (and ``ru_maxrss`` is inherited over fork and exec).
BOMB_PROBE = """
import sys, time
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.bounded_yaml import BoundedYAMLError, load_all

def peak_kb():
    with open("/proc/self/status") as status:
        return int([line.split()[1] for line in status if line.startswith("VmHWM:")][0])

before, started = peak_kb(), time.process_time()
try:
    load_all(sys.argv[1], "bomb.yaml")
except BoundedYAMLError as err:
    print("%d %.3f %s" % (peak_kb() - before, time.process_time() - started, err))
else:
    print("accepted")
"""


def test_alias_bomb_fails_fast_with_bounded_memory():
    assert len(BOMB) < 1024
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path for path in sys.path if path))
    proc = subprocess.run([sys.executable, "-c", BOMB_PROBE, BOMB], env=env, capture_output=True, text=True, timeout=60,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    grown_kb, cpu_s, message = proc.stdout.strip().split(" ", 2)
    assert message == "bomb.yaml expands to more than 200000 nodes (aliases included); refusing it"
    assert float(cpu_s) < 2
    assert int(grown_kb) < 100 * 1024  # KiB: under 100 MB more than the interpreter with PyYAML loaded


def test_recursive_alias_deep_nesting_and_size():
    with pytest.raises(BoundedYAMLError) as err:
        load_all("a: &a [*a]\n", "r.yaml")
    assert "recursive alias" in str(err.value)
    with pytest.raises(BoundedYAMLError) as err:
        load_all("a: " + "[" * 100 + "]" * 100 + "\n", "d.yaml")
    assert str(err.value) == "d.yaml nests deeper than 64 levels; refusing it"
    with pytest.raises(BoundedYAMLError) as err:
        load_all("a: " + "[" * 5000 + "]" * 5000 + "\n", "d.yaml")
    assert "nests deeper than 64 levels" in str(err.value)
    with pytest.raises(BoundedYAMLError) as err:
        load_all("x" * (5 << 20), "big.yaml")
    assert "is larger than" in str(err.value)
    with pytest.raises(BoundedYAMLError) as err:
        load_all("a: [", "bad.yaml")
    assert str(err.value).startswith("bad.yaml is not valid YAML")


def test_ordinary_manifests_with_small_aliases_load():
    text = ("kind: Pod\nmetadata: {name: a}\nspec:\n  containers:\n  - name: c\n    resources: &r {limits: {cpu: 2}}\n"
            "  - name: d\n    resources: *r\n---\nkind: Pod\nmetadata: {name: b}\n")
    docs = load_all(text, "pods.yaml")
    assert [d["metadata"]["name"] for d in docs] == ["a", "b"]
    assert docs[0]["spec"]["containers"][1]["resources"] == {"limits": {"cpu": 2}}
