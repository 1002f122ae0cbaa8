# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""admission_check's options are declared once: the backend's spec serves the module and the action plugin."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib

import yaml

from ansible_collections.numaguard.kubelet.plugins.action.admission_check import ActionModule
from ansible_collections.numaguard.kubelet.plugins.module_utils._backends.admission_check_options import INTERNAL_OPTIONS, argument_spec
from ansible_collections.numaguard.kubelet.plugins.modules import admission_check


def test_action_plugin_accepts_exactly_the_public_options():
    assert ActionModule._VALID_ARGS == frozenset(argument_spec()) - INTERNAL_OPTIONS
    assert "pod_file_content" not in ActionModule._VALID_ARGS


def _documented_options(doc_text):
    """The module's own options plus those of its numaguard.kubelet doc fragments."""
    doc = yaml.safe_load(doc_text)
    options = dict(doc.get("options") or {})
    for name in doc.get("extends_documentation_fragment") or []:
        collection, _dot, fragment = name.rpartition(".")
        assert collection == "numaguard.kubelet", name
        fragment_doc = importlib.import_module(
            "ansible_collections.numaguard.kubelet.plugins.doc_fragments." + fragment).ModuleDocFragment.DOCUMENTATION
        options.update(yaml.safe_load(fragment_doc)["options"])
    return options


def test_documented_options_are_the_spec():
    """ansible-test's validate-modules wants the internal option documented too."""
    assert set(_documented_options(admission_check.DOCUMENTATION)) == set(argument_spec())
