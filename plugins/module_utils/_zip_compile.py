# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Compile each module of a module run's payload once, not twice.

Why: a module run (an AnsiballZ payload) imports its module_utils from a zip file, and CPython's
``zipimport`` (pure Python since 3.8) compiles a module's source twice: once to tell the import
system the module's file name (``zipimporter.get_filename``, called while the module's spec is
built) and once more to run it (``get_code``). The first code object is thrown away, so half of
the compiling a run does is wasted: about 40 ms of a plain ``admission_check`` run on a
16-NUMA-node host, 80 ms with the static policies (issue 12; figures in
``benchmarks/module_run_cost.py``). Upstream: python/cpython#141276 (open, labelled 3.13-3.15:
the same double compile shows as duplicated SyntaxWarnings), fix proposed in python/cpython#153799.
Should a fixed ``zipimport`` compile once, this wrapper only keeps one code object per module.

:func:`compile_each_module_once` makes the second compile of the same file from the same source
bytes return the first one's code object. Nothing else changes: same source, same code, same
file names and errors. It is a call, not an import side effect: each module calls it first thing
in ``main()``, before it imports its backend. Where ``zipimport`` is not CPython's pure-Python
implementation with ``_compile_source`` (PyPy, or a future CPython), it does nothing.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

from typing import Any, Callable, Dict, Tuple

#: marks the wrapper, so that calling twice (unit tests run main() often) wraps once
_MARK = "_numaguard_compile_once"


def _once(compile_source: Callable[[str, bytes], Any]) -> Callable[[str, bytes], Any]:
    """``compile_source`` remembering its last code object per file until it is asked again."""
    pending: Dict[str, Tuple[bytes, Any]] = {}

    def compile_once(pathname: str, source: bytes) -> Any:
        earlier = pending.pop(pathname, None)
        if earlier is not None and earlier[0] == source:
            return earlier[1]
        code = compile_source(pathname, source)
        pending[pathname] = (source, code)
        return code

    setattr(compile_once, _MARK, True)
    return compile_once


def compile_each_module_once() -> bool:
    """Wrap ``zipimport``'s source compiler (see the module docstring); True when it is wrapped."""
    try:
        import zipimport  # pylint: disable=import-outside-toplevel
    except ImportError:  # pragma: no cover
        return False
    compile_source = getattr(zipimport, "_compile_source", None)
    if not callable(compile_source):
        return False
    if not getattr(compile_source, _MARK, False):
        zipimport._compile_source = _once(compile_source)  # type: ignore[attr-defined]
    return True
