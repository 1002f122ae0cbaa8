# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 21: each of the twelve rules that lived in two or three homes has exactly one definition
under plugins/. A rule is found by what defines it (an assignment, a ``def``, a message only the
rule's home may write); a second home makes its test fail and names both places."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

PLUGINS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "plugins")


def _sources():
    for folder, _dirs, files in os.walk(PLUGINS):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as handle:
                    yield os.path.relpath(path, PLUGINS), handle.read()


SOURCES = dict(_sources())


def sites(pattern, flags=re.M):
    """``file:line`` of every match of ``pattern`` in plugins/."""
    found = []
    for path, text in sorted(SOURCES.items()):
        for match in re.finditer(pattern, text, flags):
            found.append("%s:%d" % (path, text.count("\n", 0, match.start()) + 1))
    return found


def files(pattern, flags=re.M):
    return sorted(set(site.split(":")[0] for site in sites(pattern, flags)))


#: (rule, finder, how many sites the one home has): a second home raises the count
RULES = [
    # 1. max-allowable-numa-nodes is an integer >= 8: the minimum and its message, in one file
    ("max-allowable-numa-nodes minimum",
     lambda: files(r"^\s*[A-Z_]*MAX[A-Z_]*NUMA_NODES\s*=\s*8\b|should not be less than"), 1),
    # 2. a policy-option value is a Go bool (strconv.ParseBool's words)
    ("Go ParseBool", lambda: sites(r"\"TRUE\"\s*:\s*True"), 1),
    # 3. an option value as the string the kubelet reads
    ("option value text", lambda: sites(r"^def _?option_text\("), 1),
    # 4. align-by-socket vs single-numa-node
    ("align-by-socket vs single-numa-node", lambda: sites(r"policy is incompatible with CPUManager"), 1),
    # 5. prefer-closest-numa-nodes needs distances (one file raises it)
    ("prefer-closest needs distances", lambda: files(r"error getting NUMA distances from cadvisor"), 1),
    # 6. policy and scope names: each name assigned once, no literal tuple of names
    ("memory policy Static", lambda: sites(r"^[A-Z_]+\s*=\s*\"Static\""), 1),
    ("cpu policy static", lambda: sites(r"^[A-Z_]+\s*=\s*\"static\""), 1),
    ("topology policy single-numa-node", lambda: sites(r"^[A-Z_]+\s*=\s*\"single-numa-node\""), 1),
    ("topology scope container", lambda: sites(r"^[A-Z_]+\s*=\s*\"container\""), 1),
    ("no literal tuple of policy names", lambda: sites(r"^[A-Z_]*(POLICIES|SCOPES)\s*=\s*\(\s*\""), 0),
    # 7. Go Atoi: its syntax and its messages, in one file
    ("Go Atoi", lambda: files(r"strconv\.Atoi: parsing %|\[\+-\]\?\[0-9\]\+(\$|\\Z)\""), 1),
    # 8. resource names: four names, in _k8s/resources.py only
    ("resource names", lambda: files(r"^(CPU|MEMORY|PODS|EPHEMERAL_STORAGE)\s*=\s*\""), 1),
    # 9. numa_report's valid options: the backend's spec, no hand-kept list in the action plugin
    ("numa_report options", lambda: sites(r"_VALID_ARGS\s*=\s*frozenset\(\("), 0),
    # 10. one JUnit writer for the reports
    ("JUnit writer", lambda: sites(r"^def render_junit\("), 1),
    # 11. bytes for humans: one formatter (a unit fixed by its argument); one text for a hugepage
    # size; one page-size parser (the kubelet's own quantity text is format_bytes, rule of _k8s)
    ("bytes for humans", lambda: sites(r"^def (human_bytes|gib|_gib)\(|\"%d\.%d [GMK]iB\""), 1),
    ("hugepage size text", lambda: sites(r"^def (_short_size|hugepage_size)\("), 1),
    ("hugepage page size in bytes", lambda: sites(r"^def (hugepage_size_bytes|page_bytes|_size)\(|^_UNITS\s*="), 1),
    # 12. when to probe the host's kubelet version: one call, behind one condition, one resolution order
    ("kubelet version probing", lambda: sites(r"host_kubelet_version\(module\)"), 1),
    ("kubelet version probe condition", lambda: files(r"^def (reads_live_host|probe_host_kubelet)\(|\[.root.\]\)? == \"/\"|or \"/\"\) == \"/\""), 1),
    ("kubelet version resolution", lambda: sites(r"^    def resolve\(cls, option_value"), 1),
]


@pytest.mark.parametrize("name, find, count", RULES, ids=[r[0] for r in RULES])
def test_one_definition(name, find, count):
    found = find()
    assert len(found) == count, "%s: %d sites, want %d: %s" % (name, len(found), count, ", ".join(found))
