# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Every module is its documentation plus a call into its backend (module_utils/_backends/<name>.py).

The backend's argument_spec() is the one list of options: the module builds AnsibleModule from it,
the action plugins reuse it, and here it must equal what the DOCUMENTATION (with its doc fragments)
describes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import importlib
import os

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "plugins", "modules"))
NAMES = sorted(n[:-3] for n in os.listdir(MODULES) if n.endswith(".py") and not n.startswith("_"))
COLLECTION = "ansible_collections.numaguard.kubelet.plugins."
DOC_STRINGS = ("DOCUMENTATION", "EXAMPLES", "RETURN")
#: Non-blank code lines a module may have besides its documentation strings.
MAX_CODE_LINES = 12


def _documented_options(doc_text):
    doc = yaml.safe_load(doc_text)
    options = dict(doc.get("options") or {})
    for name in doc.get("extends_documentation_fragment") or []:
        collection, _dot, fragment = name.rpartition(".")
        if collection != "numaguard.kubelet":
            continue
        fragment_doc = importlib.import_module(COLLECTION + "doc_fragments." + fragment).ModuleDocFragment.DOCUMENTATION
        options.update(yaml.safe_load(fragment_doc)["options"])
    return options


def test_every_module_found():
    assert NAMES, MODULES


@pytest.mark.parametrize("name", NAMES)
def test_documented_options_are_the_backend_spec(name):
    module = importlib.import_module(COLLECTION + "modules." + name)
    backend = importlib.import_module(COLLECTION + "module_utils._backends." + name)
    assert set(_documented_options(module.DOCUMENTATION)) == set(backend.argument_spec())
    assert backend.module_kwargs()["argument_spec"] == backend.argument_spec()


@pytest.mark.parametrize("name", NAMES)
def test_module_imports_only_its_backend(name):
    with open(os.path.join(MODULES, name + ".py"), "rb") as handle:
        tree = ast.parse(handle.read())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            imported.add(node.module)
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert imported == {"ansible.module_utils.basic", COLLECTION + "module_utils._zip_compile",
                        COLLECTION + "module_utils._backends." + name}


@pytest.mark.parametrize("name", NAMES)
def test_module_compiles_once_before_importing_its_backend(name):
    """main() wraps zipimport's compiler first, then imports the backend (see _zip_compile.py)."""
    with open(os.path.join(MODULES, name + ".py"), "rb") as handle:
        tree = ast.parse(handle.read())
    main = [node for node in tree.body if isinstance(node, ast.FunctionDef) and node.name == "main"][0]
    first, second = main.body[0], main.body[1]
    assert isinstance(first, ast.Expr) and first.value.func.id == "compile_each_module_once"
    assert isinstance(second, ast.ImportFrom) and second.module == COLLECTION + "module_utils._backends." + name
    top_level = [node.module for node in tree.body if isinstance(node, ast.ImportFrom)]
    assert COLLECTION + "module_utils._backends." + name not in top_level


@pytest.mark.parametrize("name", NAMES)
def test_module_is_thin(name):
    """Outside DOCUMENTATION/EXAMPLES/RETURN a module has a few lines: imports and main()."""
    path = os.path.join(MODULES, name + ".py")
    with open(path) as handle:
        text = handle.read()
    tree = ast.parse(text)
    doc_lines = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) in DOC_STRINGS for t in node.targets):
            doc_lines.update(range(node.lineno, node.end_lineno + 1))
    code = [line for number, line in enumerate(text.splitlines(), 1)
            if number not in doc_lines and line.strip() and not line.lstrip().startswith("#")]
    boilerplate = ("from __future__ import", "__metaclass__ = type")
    code = [line for line in code if not line.startswith(boilerplate)]
    assert len(code) <= MAX_CODE_LINES, "%s has %d code lines:\n%s" % (name, len(code), "\n".join(code))
