# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which ansible-test sanity tests can answer differently on an older ansible-core than on 2.19.

scripts/test runs every sanity test under 2.19; an older core runs only these (scripts/sanity-per-core):
- the tests that check the collection against ansible-core itself (its plugin loaders, module_utils,
  documentation schema, deprecations, runtime metadata): always;
- a test 2.19 does not have (2.16's no-dict-iteritems, ...): always;
- any other test (a file check with its own pinned tool: pep8, yamllint, shebang, ...): when
  ansible-test's own files for it differ from 2.19's (its command, its script and configuration,
  its pinned requirements), compared by what they do (syntax trees, non-blank lines).

Usage: python scripts/sanity_differing.py OLD_ANSIBLE_TEST_DIR NEW_ANSIBLE_TEST_DIR TEST...
prints one line per test: "run <test> <why>" or "skip <test> <why>".
"""

from __future__ import annotations

import ast
import hashlib
import os
import sys
from typing import List, Optional, Tuple

#: Tests whose answer depends on the ansible-core they run under, whatever their own files say.
AGAINST_CORE = ("action-plugin-docs", "ansible-doc", "import", "pylint", "runtime-metadata", "validate-modules")


def test_files(ansible_test: str, test: str) -> List[str]:
    """ansible-test's files for one sanity test: every file whose path names it (- or _)."""
    names = {test, test.replace("-", "_")}
    found = []
    for directory, dirs, files in os.walk(ansible_test):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            path = os.path.join(directory, name)
            rel = os.path.relpath(path, ansible_test)
            stem = os.path.splitext(name)[0]
            parts = rel.split(os.sep)
            if stem in names or stem.split(".")[-1] in names or any(p in names for p in parts[:-1]):
                found.append(rel)
    return found


def _meaning(path: str) -> bytes:
    """A file's content as it behaves: Python by its syntax tree (comments, blank lines and
    ``from __future__`` imports left out), other files by their non-blank lines."""
    with open(path, "rb") as handle:
        data = handle.read()
    if path.endswith(".py"):
        try:
            tree = ast.parse(data)
        except SyntaxError:
            return data
        tree.body = [n for n in tree.body if not (isinstance(n, ast.ImportFrom) and n.module == "__future__")]
        return ast.dump(tree).encode()
    return b"\n".join(line.rstrip() for line in data.splitlines() if line.strip())


def fingerprint(ansible_test: str, test: str) -> Optional[str]:
    files = test_files(ansible_test, test)
    if not files:
        return None
    digest = hashlib.sha256()
    for rel in files:
        digest.update(rel.encode() + b"\0")
        digest.update(_meaning(os.path.join(ansible_test, rel)) + b"\0")
    return digest.hexdigest()


def decide(old: str, new: str, test: str) -> Tuple[bool, str]:
    if test in AGAINST_CORE:
        return True, "checks the collection against ansible-core itself"
    new_print = fingerprint(new, test)
    if new_print is None:
        return True, "ansible-core 2.19 has no such test"
    old_print = fingerprint(old, test)
    if old_print != new_print:
        return True, "ansible-test's files for it differ from 2.19's"
    return False, "same files as 2.19's (%d), which ran it" % len(test_files(new, test))


def main(argv: List[str]) -> int:
    if len(argv) < 3:
        sys.stderr.write(__doc__.split("Usage: ")[1])
        return 2
    old, new, tests = argv[0], argv[1], argv[2:]
    for test in tests:
        run, why = decide(old, new, test)
        sys.stdout.write("%s %s %s\n" % ("run" if run else "skip", test, why))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
