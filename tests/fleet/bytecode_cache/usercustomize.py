# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Test fleets only: a bytecode cache for the module payloads the fleet's hosts run.

Why: every module run on a host imports its code from the AnsiballZ zip, and ``zipimport`` caches
no bytecode, so each run compiles ansible-core's module_utils and ours afresh: about 100 ms of a
``ping`` run's 250 ms CPU here, more for the collection's modules. The e2e suite makes hundreds
of such runs; what it tests is their answers, not their cost. A fleet brought up with
``NUMAGUARD_FLEET_BYTECODE_CACHE=DIR`` (scripts/test sets it) copies this file to ``DIR/site``
and gives its sshds ``PYTHONPATH=DIR/site`` and the cache directory, and Python's ``site`` imports
this file at start-up (``usercustomize``: the distribution's ``sitecustomize`` still runs).

The cache key is the interpreter's bytecode tag, the file's path inside the zip and the whole
source text, so a changed source is compiled afresh and two interpreters never share code. The
code objects are the compiler's own, marshalled. Benchmarks and ``make demo`` bring fleets up
without the variable: their hosts compile every run, as real hosts do.
"""

import hashlib
import marshal
import os
import sys
import zipimport

_DIRECTORY = os.environ.get("NUMAGUARD_FLEET_PYC", "")
_COMPILE = getattr(zipimport, "_compile_source", None)


def _cached_compile(pathname, source):
    """``zipimport._compile_source`` answered from, or added to, the cache directory."""
    inner = pathname.rsplit(".zip" + os.sep, 1)[-1]
    digest = hashlib.sha256()
    for part in (sys.implementation.cache_tag or "", inner):
        digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
    digest.update(source)
    path = os.path.join(_DIRECTORY, digest.hexdigest())
    try:
        with open(path, "rb") as handle:
            return marshal.loads(handle.read())
    except (OSError, ValueError, EOFError, TypeError):
        pass
    code = _COMPILE(pathname, source)
    partial = "%s.%d.tmp" % (path, os.getpid())
    try:
        with open(partial, "wb") as handle:
            handle.write(marshal.dumps(code))
        os.replace(partial, path)
    except OSError:
        pass
    return code


if _DIRECTORY and callable(_COMPILE) and os.path.isdir(_DIRECTORY):
    zipimport._compile_source = _cached_compile
