# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Imports in plugins/module_utils point one way: value types <- engine <- product code <- backends.

Every import statement of every module_utils file is read (function-level ones included, since
Ansible ships those too); an import towards a higher layer, an import cycle between files, or an
import outside the standard library and this collection's module_utils fails with the file,
the line and the rule. See docs/development.md ("Layers").
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
PREFIX = "ansible_collections.numaguard.kubelet.plugins.module_utils."

#: Layer of each top-level name under module_utils; a file may import its own layer or lower.
LAYERS = {
    "_errors": 0, "_io": 0, "_k8s": 0,          # value types, errors, durable I/O
    "_zip_compile": 0,                          # called by the modules before they import their backend
    "_engine": 1,                               # the kubelet's pkg/kubelet/cm, offline
    "_host": 2, "_kubelet_config": 2, "_reservation": 2, "_report": 2, "_recommend": 2,  # product code by concern
    "_backends": 3,                             # one per module
}

#: Edges against the direction that are known and owned elsewhere: (importer, imported) module
#: paths relative to module_utils, with the reason. Keep this list short and named.
ALLOWED: set = set()  # empty: the reserved-memory model, the eviction thresholds and the Node
# Allocatable reservation live in the engine (_engine/memorymanager/reserved.py, _engine/eviction.py,
# _engine/node_allocatable.py) since issue 9, so the engine imports nothing above it.

#: Import cycles (through function-level imports) that are known and owned elsewhere. Empty since
#: boot_drift moved above the memory manager (memorymanager/boot_drift.py) and the node readers
#: shared by admission_check and readmit moved to _backends/node_inputs.py.
ALLOWED_CYCLES: list = []

#: Imports outside the standard library that are optional (guarded by ``except ImportError``, with
#: a standard-library fallback), per file.
OPTIONAL = {
    ("_kubelet_config.config", "yaml"),  # PyYAML when present; the stdlib YAML reader otherwise
}


def _module_files():
    for dirpath, dirnames, filenames in os.walk(MODULE_UTILS):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, MODULE_UTILS)[:-3].replace(os.sep, ".")
                if rel.endswith(".__init__"):
                    rel = rel[:-len(".__init__")]
                yield rel, path


_RELATIVE_NAMES = set(rel for rel, path in _module_files())


def _imports(path):
    """(line, imported module path relative to module_utils or None, absolute name) per import."""
    with open(path, "rb") as handle:
        tree = ast.parse(handle.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                yield node.lineno, "." * node.level + (node.module or "")
                continue
            for alias in node.names:
                # "from ...module_utils._k8s import gojson": the imported name is a module
                submodule = node.module + "." + alias.name
                if submodule.startswith(PREFIX) and submodule[len(PREFIX):] in _RELATIVE_NAMES:
                    yield node.lineno, submodule
                else:
                    yield node.lineno, node.module


FILES = dict(_module_files())
STDLIB = set(sys.stdlib_module_names) | {"__future__"}


def _edges():
    for rel, path in sorted(FILES.items()):
        for line, name in _imports(path):
            yield rel, path, line, name


def _layer(rel):
    return LAYERS.get(rel.split(".")[0])


def test_every_file_is_in_a_known_layer():
    unknown = sorted(rel for rel in FILES if _layer(rel) is None)
    assert not unknown, ("module_utils files outside the layers %s: %s (put them in a layer package, or add the "
                         "package to LAYERS with its rank)" % (sorted(LAYERS), unknown))


def test_module_utils_import_only_the_standard_library_and_module_utils():
    bad = []
    for rel, _path, line, name in _edges():
        if name.startswith("."):
            bad.append("%s:%d: relative import %s (use the full collection path)" % (rel, line, name))
        elif name.startswith(PREFIX):
            continue
        elif name.split(".")[0] not in STDLIB and (rel, name) not in OPTIONAL:
            bad.append("%s:%d: imports %s (module_utils run on hosts: standard library only)" % (rel, line, name))
    assert not bad, "\n".join(bad)


def test_imports_point_down_the_layers():
    bad = []
    for rel, _path, line, name in _edges():
        if not name.startswith(PREFIX):
            continue
        target = name[len(PREFIX):]
        if target not in FILES:
            bad.append("%s:%d: imports %s, which is not a module_utils file" % (rel, line, name))
            continue
        if _layer(target) > _layer(rel) and (rel, target) not in ALLOWED:
            bad.append("%s:%d: %s (layer %d) imports %s (layer %d)"
                       % (rel, line, rel, _layer(rel), target, _layer(target)))
    assert not bad, "imports against the layer direction:\n" + "\n".join(bad)


def test_allowed_exceptions_are_still_needed():
    seen = set((rel, name[len(PREFIX):]) for rel, path, line, name in _edges() if name.startswith(PREFIX))
    stale = sorted(ALLOWED - seen)
    assert not stale, "ALLOWED lists edges that no longer exist; delete them: %s" % stale


def test_no_import_cycles_between_files():
    graph = dict((rel, set()) for rel in FILES)
    for rel, _path, _line, name in _edges():
        if name.startswith(PREFIX) and name[len(PREFIX):] in FILES:
            graph[rel].add(name[len(PREFIX):])
    cycles = [sorted(c) for c in _strongly_connected(graph) if len(c) > 1 and sorted(c) not in ALLOWED_CYCLES]
    assert not cycles, "files that import each other (directly or through others): %s" % cycles


def _strongly_connected(graph):
    """Tarjan's algorithm, iterative (the graph is small but recursion depth is not our concern)."""
    index, low, on_stack, stack, result, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        item = stack.pop()
                        on_stack.discard(item)
                        component.append(item)
                        if item == node:
                            break
                    result.append(component)
    return result


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"a"}, "c": set()}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, [["a", "b", "c"]]),
    ({"a": {"b"}, "b": set()}, []),
])
def test_cycle_finder_finds_cycles(graph, expected):
    """The checker itself can fail: it finds a known cycle."""
    assert sorted(sorted(c) for c in _strongly_connected(graph) if len(c) > 1) == expected
