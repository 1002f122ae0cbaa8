# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Controller-side YAML bounds (plugin_utils/bounded_yaml.py, used for admission_check's pod_file)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import resource
import time

import pytest

from ansible_collections.numaguard.kubelet.plugins.plugin_utils.bounded_yaml import BoundedYAMLError, load_all

BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    "%s: &%s [%s]\n" % (chr(98 + i), chr(98 + i), ",".join(["*" + chr(97 + i)] * 9)) for i in range(8))


def test_alias_bomb_fails_fast_with_bounded_memory():
    assert len(BOMB) < 1024
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.time()
    with pytest.raises(BoundedYAMLError) as err:
        load_all(BOMB, "bomb.yaml")
    assert time.time() - started < 2
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 100 * 1024  # KiB: under 100 MB more
    assert str(err.value) == "bomb.yaml expands to more than 200000 nodes (aliases included); refusing it"


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
