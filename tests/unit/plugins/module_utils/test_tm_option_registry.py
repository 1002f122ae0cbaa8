# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The Topology Manager's option registry (``_k8s/versions.py`` ``TOPOLOGY_MANAGER_OPTIONS``) is
the one place that lists option names: adding an option touches three code files
(docs/development.md, "Adding a Topology Manager policy option")."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os
import re

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager import policy_options
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.topologymanager.numa_info import TopologyManagerError
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s import versions
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import kubelet_defaults
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.settings import normalise_settings, validate_settings

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
REGISTRY = os.path.join("plugins", "module_utils", "_k8s", "versions.py")


def _python_files():
    for base, _dirs, files in os.walk(os.path.join(TOP, "plugins")):
        for name in files:
            if name.endswith(".py"):
                yield os.path.relpath(os.path.join(base, name), TOP)


def _string_literals(path):
    """Every string constant of the file's code that is not a docstring."""
    with open(os.path.join(TOP, path)) as handle:
        tree = ast.parse(handle.read())
    docstrings = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docstrings.add(id(first.value))
    return [n.value for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


def test_option_names_are_spelled_in_the_registry_only():
    """A string literal that is a Topology Manager option's name appears in versions.py only (once
    each); every other file (the parser, kubelet_config's checks, recommend's candidates) imports
    the name. Prose that mentions an option (messages, docs) is not a list of options."""
    names = set(versions.TOPOLOGY_MANAGER_OPTIONS)
    assert names == {versions.PREFER_CLOSEST_NUMA_NODES, versions.MAX_ALLOWABLE_NUMA_NODES}
    where = {}
    for path in _python_files():
        for literal in _string_literals(path):
            if literal in names:
                where.setdefault(literal, []).append(path)
    assert where == dict((name, [REGISTRY]) for name in names)


def test_the_parser_and_the_registry_agree():
    """Every registered option parses (bool or integer) and nothing else does: the parser has no
    list of its own."""
    assert policy_options.INTEGER_OPTIONS <= set(versions.TOPOLOGY_MANAGER_OPTIONS)
    for name in versions.TOPOLOGY_MANAGER_OPTIONS:
        value = "16" if name in policy_options.INTEGER_OPTIONS else "true"
        policy_options.PolicyOptions.parse({name: value}, version=versions.NEWEST_RELEASED)
    with pytest.raises(TopologyManagerError, match='unknown Topology Manager Policy option: "no-such-option"'):
        policy_options.PolicyOptions.parse({"no-such-option": "true"}, version=versions.NEWEST_RELEASED)


def _check(options, version):
    settings = {"topologyManagerPolicy": "restricted", "topologyManagerPolicyOptions": options}
    effective = kubelet_defaults()
    effective.update(normalise_settings(settings))
    return validate_settings(settings, effective, kubelet_version=version)


def test_a_new_option_needs_only_its_registry_row_and_its_parse(monkeypatch):
    """The worked example of docs/development.md: a boolean option ``foo-option`` registered GA in
    1.30 is accepted by kubelet_config's checks and parsed by the engine, with no other list to
    update; before 1.30 both refuse it with the kubelet's words."""
    table = dict(versions.TOPOLOGY_MANAGER_OPTIONS, **{"foo-option": ((30, versions.GA),)})
    monkeypatch.setattr(versions, "TOPOLOGY_MANAGER_OPTIONS", table)
    monkeypatch.setitem(versions._OPTION_TABLES, "topology", table)
    assert _check({"foo-option": "true"}, "1.31") == ([], [])
    policy_options.PolicyOptions.parse({"foo-option": "true"}, version=(1, 31))
    errors, _warnings = _check({"foo-option": "maybe"}, "1.31")
    assert errors == ['topologyManagerPolicyOptions.foo-option: bad value for option "foo-option": '
                      'strconv.ParseBool: parsing "maybe": invalid syntax; use true or false']
    errors, _warnings = _check({"foo-option": "true"}, "1.29")
    assert len(errors) == 1 and errors[0].startswith('topologyManagerPolicyOptions.foo-option: unknown Topology Manager '
                                                     'Policy option: "foo-option"'), errors
    assert "added in 1.30" in errors[0]
    assert "foo-option" in versions.known_options("topology", (1, 31))


def test_the_docs_table_is_the_registry():
    """docs/kubelet-config.md's table of options (TM rows) says what the registry says."""
    with open(os.path.join(TOP, "docs", "kubelet-config.md")) as handle:
        text = handle.read()
    rows = dict((m.group(1), (m.group(2).strip(), m.group(3).strip(), m.group(4).strip()))
                for m in re.finditer(r"^\s*\| `([a-z-]+)` \(TM\) \|([^|]*)\|([^|]*)\|([^|]*)\|", text, re.M))
    expected = {}
    for name, entries in versions.TOPOLOGY_MANAGER_OPTIONS.items():
        by_maturity = dict((maturity, "1.%d" % minor) for minor, maturity in entries)
        expected[name] = tuple(by_maturity.get(m, "") for m in (versions.ALPHA, versions.BETA, versions.GA))
    assert rows == expected
