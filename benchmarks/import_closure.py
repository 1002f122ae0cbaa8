# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which collection files one real module run imports (and so compiles), and how much of them it calls.

A module run (an AnsiballZ payload) compiles every module_utils file it imports from source (no
bytecode is cached on the hosts), about 0.25 ms of CPU per KB of code; what the payload ships but
the run does not import costs only the controller (building and sending the payload). This script
builds the payload of one of three runs the way Ansible does (``benchmarks/module_run_cost.py``),
runs it once under a profiling hook, and prints per imported collection file its size and the
bytes of its functions and methods the run never called (the candidates for a file imported only
on the path that needs them), then the totals, what compiling the imported files costs against
compiling them with every never-called function emptied (the floor of a payload split exactly by
this run's path: module-level code, classes and the called functions stay), and the files shipped
but not imported.

Runs (``--run``), on a bundled fleet topology (``--topology``, default ``big16``) under a scratch
directory, without state files:

* ``admission``: ``admission_check``, static CPU and Static memory policies, restricted, pod scope,
  a Guaranteed pod of 2 CPUs and 1Gi (module_run_cost.py's node and pod);
* ``discover``: ``numa_facts`` as discover.yml runs it;
* ``status``: ``kubelet_rollout operation=status`` with ``settings`` in check mode, as apply.yml's
  preflight (``apply.yml --check --diff``) runs it.

"Never called" is about this one run: a file read only when a state file exists, say, counts as
never called here. A script that prints figures, not a test.

    .venv/bin/python benchmarks/import_closure.py [--run admission|discover|status] [--topology big16] [--top 12]
"""

from __future__ import annotations

import argparse
import ast
import base64
import io
import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
PREFIX = "ansible_collections.numaguard.kubelet."
MARK = "numaguard/kubelet/"


def _trace(payload, out):
    """In the child: run ``payload`` with a profiling hook; write what it imported and called."""
    called = set()

    def hook(frame, event, _arg):
        if event == "call":
            code = frame.f_code
            if MARK in code.co_filename:
                called.add((code.co_filename.split(MARK, 1)[1], code.co_firstlineno))

    sys.argv = [payload]
    stdout = sys.stdout
    sys.stdout = io.StringIO()  # the module's JSON answer
    sys.setprofile(hook)
    try:
        runpy.run_path(payload, run_name="__main__")
    except SystemExit:
        pass
    finally:
        sys.setprofile(None)
        answer, sys.stdout = sys.stdout.getvalue(), stdout
    modules = sorted(m[len(PREFIX):] for m in sys.modules if m.startswith(PREFIX))
    with open(out, "w") as handle:
        json.dump({"called": sorted(called), "modules": modules, "failed": '"failed": true' in answer}, handle)


def _source(name):
    path = os.path.join(REPO, *name.split(".")) + ".py"
    return path if os.path.isfile(path) else None


def _never_called_functions(tree, called_lines):
    """(node, first line, qualified name) of every module-level function and method of ``tree``
    that the run never called (``called_lines``: the first lines of the code objects it called)."""
    found = []

    def visit(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
                if node.lineno not in called_lines and first not in called_lines:
                    found.append((node, first, prefix + node.name))
            elif isinstance(node, ast.ClassDef):
                visit(node.body, prefix + node.name + ".")

    visit(tree.body, "")
    return found


def _never_called(path, called_lines):
    """(bytes of the file, [(bytes, name)] of its functions and methods never called)."""
    with open(path) as handle:
        text = handle.read()
    lines = text.splitlines(True)
    return len(text), [(sum(len(x) for x in lines[first - 1:node.end_lineno]), name)
                       for node, first, name in _never_called_functions(ast.parse(text), called_lines)]


def _trimmed(path, called_lines):
    """The file's source with the body of every never-called function and method replaced by
    ``pass`` (signature and decorators kept): what a payload split exactly by this run's path
    would still have to compile of this file."""
    with open(path) as handle:
        tree = ast.parse(handle.read())
    for node, _first, _name in _never_called_functions(tree, called_lines):
        node.body = [ast.Pass()]
    return ast.unparse(tree)


def _compile_ms(sources):
    """Best of five: CPU ms to compile ``sources`` ([(path, text)]) in this process."""
    best = None
    for _round in range(5):
        began = time.process_time()
        for path, text in sources:
            compile(text, path, "exec", dont_inherit=True)
        spent = (time.process_time() - began) * 1000.0
        best = spent if best is None else min(best, spent)
    return best


def payload_entries(data):
    """The entries (``zipfile.ZipInfo``) of the zip an AnsiballZ file's bytes embed: ansible-core
    2.19 writes ``zip_data='...'``, 2.16-2.18 a triple-quoted ``ZIPDATA``. Empty when neither is found."""
    match = re.search(rb"zip_data='([^']*)'", data) or re.search(rb'ZIPDATA = """(.*?)"""', data, re.S)
    if not match:
        return []
    return zipfile.ZipFile(io.BytesIO(base64.b64decode(match.group(1)))).infolist()


def _shipped(payload):
    """Collection module names in the payload's zip."""
    with open(payload, "rb") as handle:
        names = [entry.filename for entry in payload_entries(handle.read())]
    prefix = PREFIX.replace(".", "/")
    return sorted(n[len(prefix):-3].replace("/", ".") for n in names
                  if n.startswith(prefix) and n.endswith(".py") and not n.endswith("__init__.py"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--run", choices=("admission", "discover", "status"), default="admission")
    parser.add_argument("--topology", default="big16", help="bundled fleet topology of the node (default big16)")
    parser.add_argument("--top", type=int, default=12, help="never-called functions listed per file (default 12)")
    parser.add_argument("--trace", nargs=2, metavar=("PAYLOAD", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.trace:
        _trace(*args.trace)
        return 0
    sys.path.insert(0, HERE)
    sys.path.insert(0, os.path.join(REPO, "tests", "fleet"))
    import module_run_cost as mrc  # noqa: E402 (benchmarks/module_run_cost.py builds the payload)
    import topologies  # noqa: E402 (the bundled fleet)

    work = tempfile.mkdtemp(prefix="numaguard-closure-")
    try:
        tree = os.path.join(work, "tree")
        topologies.write_tree(args.topology, tree, hostname="h01")
        module, module_args, extra = mrc.scenario(args.run, tree)
        payload = mrc._payload(work, "this", REPO, module, module_args, extra)
        out = os.path.join(work, "trace.json")
        subprocess.run([sys.executable, os.path.abspath(__file__), "--trace", payload, out], cwd=work, check=True)
        with open(out) as handle:
            trace = json.load(handle)
        called = {}
        for path, line in trace["called"]:
            called.setdefault(path, set()).add(line)
        rows, full, trimmed = [], [], []
        for name in trace["modules"]:
            path = _source(name)
            if path:
                lines = called.get(os.path.relpath(path, REPO), set())
                size, never = _never_called(path, lines)
                rows.append((sum(b for b, _n in never), size, name, sorted(never, reverse=True)))
                with open(path) as handle:
                    full.append((path, handle.read()))
                trimmed.append((path, _trimmed(path, lines)))
        rows.sort(reverse=True)
        total, unused = sum(r[1] for r in rows), sum(r[0] for r in rows)
        failed = " FAILED" if trace["failed"] else ""
        print("%s run (%s, %s)%s: %d collection files imported, %d KB of source; %d KB (%.0f%%) in functions and "
              "methods the run never called"
              % (args.run, module, args.topology, failed, len(rows), total // 1024, unused // 1024, 100.0 * unused / max(total, 1)))
        print("%7s %7s  %s" % ("unused", "bytes", "file: largest never-called functions (bytes)"))
        for never_bytes, size, name, never in rows:
            print("%7d %7d  %s: %s" % (never_bytes, size, name, ", ".join("%s(%d)" % (n, b) for b, n in never[:args.top])))
        print("compiling the imported files here: %.0f ms; with every never-called function's body emptied: %.0f ms "
              "(the floor of a payload split exactly by this run's path; best of 5, %s)"
              % (_compile_ms(full), _compile_ms(trimmed), sys.version.split()[0]))
        shipped = [n for n in _shipped(payload) if n not in trace["modules"] and _source(n)]
        sizes = [(os.path.getsize(_source(n)), n) for n in shipped]
        print("shipped, not imported by this run: %d files, %d KB: %s" % (
            len(sizes), sum(s for s, _n in sizes) // 1024, ", ".join("%s (%d)" % (n, s) for s, n in sorted(sizes, reverse=True))))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
