# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The engine has one default kubelet release: the newest released one (``NEWEST_RELEASED``,
1.37: kubernetes/kubernetes CHANGELOG-1.38.md lists "Changelog since v1.37.0" and only 1.38
alphas). The Topology, CPU and Memory Managers used to differ (the memory manager took the newest
*known* release, 1.38, whose rows come from KEPs not released yet)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import inspect
import os

from ansible_collections.numaguard.kubelet.plugins.module_utils import _engine
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import NEWEST_KNOWN, NEWEST_RELEASED, KubeletAssumption


def _engine_modules():
    root = list(_engine.__path__)[0]
    for base, _dirs, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(".py") and name != "__init__.py":
                relative = os.path.relpath(os.path.join(base, name[:-3]), root).replace(os.sep, ".")
                yield importlib.import_module(_engine.__name__ + "." + relative)


def _version_defaults():
    """(where, default) of every parameter named ``version`` with a default, in every function and
    method the engine defines, except a state file's format version (``checkpoint.py``, ``to_checkpoint``)."""
    found = []
    for module in _engine_modules():
        for name, value in vars(module).items():
            functions = [(name, value)] if inspect.isfunction(value) else []
            if inspect.isclass(value) and value.__module__ == module.__name__:
                functions += [("%s.%s" % (name, n), f) for n, f in vars(value).items() if inspect.isfunction(f)]
                functions += [("%s.%s" % (name, n), f.__func__) for n, f in vars(value).items() if isinstance(f, classmethod)]
            for where, function in functions:
                if getattr(function, "__module__", None) != module.__name__:
                    continue
                parameter = inspect.signature(function).parameters.get("version")
                if "checkpoint" in module.__name__.rsplit(".", 1)[1] + where.lower():
                    continue
                if parameter is not None and parameter.default is not inspect.Parameter.empty:
                    found.append(("%s.%s" % (module.__name__.rsplit("._engine.", 1)[1], where), parameter.default))
    return found


def test_every_engine_default_release_is_the_newest_released():
    defaults = _version_defaults()
    names = [where for where, _default in defaults]
    # the three managers, their policies and option parsers all have one
    for expected in ("memorymanager.memory_manager.new_memory_manager", "memorymanager.static_policy.MemoryManagerStatic.__init__",
                     "memorymanager.memory_drift.drift_tolerance", "cpumanager.cpu_manager.new_cpu_manager",
                     "topologymanager.topology_manager.topology_manager_from_config",
                     "topologymanager.policy_options.PolicyOptions.parse"):
        assert expected in names, expected
    assert [(w, d) for w, d in defaults if d != NEWEST_RELEASED] == []


def test_no_engine_file_defaults_to_the_newest_known():
    root = list(_engine.__path__)[0]
    users = []
    for base, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(base, name)) as handle:
                    if "NEWEST_KNOWN" in handle.read():
                        users.append(name)
    assert users == []


def test_the_resolved_default_is_the_same_release():
    assert NEWEST_RELEASED < NEWEST_KNOWN
    assert KubeletAssumption.resolve(None, None).version[:2] == NEWEST_RELEASED
