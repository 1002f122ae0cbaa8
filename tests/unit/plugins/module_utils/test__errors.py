# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""One error base: every ValueError that module_utils define derives from _errors.NumaguardError."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import inspect
import os

from ansible_collections.numaguard.kubelet.plugins.module_utils._errors import NumaguardError

HERE = os.path.dirname(os.path.abspath(__file__))
MODULE_UTILS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "..", "plugins", "module_utils"))
PACKAGE = "ansible_collections.numaguard.kubelet.plugins.module_utils."


def _modules():
    for dirpath, dirnames, filenames in os.walk(MODULE_UTILS):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in filenames:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, name), MODULE_UTILS)[:-3].replace(os.sep, ".")
                yield importlib.import_module(PACKAGE + rel)


def test_every_value_error_has_the_one_base():
    stray = []
    for module in _modules():
        for name, obj in inspect.getmembers(module, inspect.isclass):
            if obj.__module__ == module.__name__ and issubclass(obj, ValueError) and not issubclass(obj, NumaguardError):
                stray.append("%s.%s" % (module.__name__[len(PACKAGE):], name))
    assert not stray, "derive these from _errors.NumaguardError: %s" % stray


def test_the_base_is_a_value_error():
    """Callers that catch ValueError (modules, filters) keep working."""
    assert issubclass(NumaguardError, ValueError)
