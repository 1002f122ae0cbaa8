# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Issue 21: no function under plugins/ outside the engine (``plugins/module_utils/_engine/``,
which mirrors the kubelet's own functions) is longer than 80 lines, decorators and docstring
included. A long function is split into named steps, not let in here."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os

PLUGINS = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "plugins"))
ENGINE = os.path.join(PLUGINS, "module_utils", "_engine")
MAX_LINES = 80


def function_lengths(source, path="<source>"):
    """(name, first line, lines) of every function and method in ``source``, nested ones included."""
    found = []
    for node in ast.walk(ast.parse(source, path)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            found.append((node.name, node.lineno, node.end_lineno - first + 1))
    return found


def _plugin_files():
    for folder, dirs, files in os.walk(PLUGINS):
        dirs[:] = sorted(d for d in dirs if os.path.join(folder, d) != ENGINE)
        for name in sorted(files):
            if name.endswith(".py"):
                yield os.path.join(folder, name)


def test_walk_finds_plugins_and_skips_the_engine():
    paths = list(_plugin_files())
    assert any(p.endswith(os.path.join("_backends", "admission_check.py")) for p in paths)
    assert not any(p.startswith(ENGINE + os.sep) for p in paths)


def test_function_lengths_counts_lines():
    source = "def short():\n    return 1\n\n\n@decorated\ndef long():\n" + "    x = 1\n" * 99 + "    return x\n"
    assert function_lengths(source) == [("short", 1, 2), ("long", 6, 102)]


def test_no_function_outside_the_engine_longer_than_80_lines():
    too_long = []
    for path in _plugin_files():
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        for name, line, lines in function_lengths(source, path):
            if lines > MAX_LINES:
                too_long.append("%s:%d %s: %d lines" % (os.path.relpath(path, PLUGINS), line, name, lines))
    assert not too_long, "functions longer than %d lines (split them into named steps): %s" % (MAX_LINES, "; ".join(too_long))
