# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# Apache License 2.0 (see LICENSE)
"""tests/sanity/ignore-2.X.txt: one per tested ansible-core, each covering every module.

ansible-test reads only the file of the core version it runs under, so a module added with its
licence ignore in one file fails sanity on the other cores; this says so at pytest time.

galaxy-importer warns once per ignore file whatever it holds (``_check_ansible_test_ignore_files``
in galaxy_importer/loaders/collection.py), so scripts/galaxy-importer accepts exactly those
warnings, and only because every line is the licence ignore, with its reason; the last test here
keeps it that way.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
LICENCE = "validate-modules:missing-gplv3-license"
# The one form scripts/galaxy-importer accepts: a module or callback plugin (validate-modules checks both), the
# licence check, a reason.
LICENCE_LINE = re.compile(r"^plugins/(modules|callback)/[a-z0-9_]+\.py validate-modules:missing-gplv3-license # \S.*$")


def _tested_cores():
    """2.19 (the main venv) plus every older core with a pin file in .ci/cores/."""
    if not os.path.isdir(os.path.join(REPO, ".ci", "cores")):
        pytest.skip("not a checkout: the built collection has no .ci/")
    cores = {"2.19"}
    cores.update(os.path.basename(p)[:-4] for p in glob.glob(os.path.join(REPO, ".ci", "cores", "*.txt")))
    return sorted(cores, key=lambda v: tuple(int(x) for x in v.split(".")))


def _entries(core):
    path = os.path.join(REPO, "tests", "sanity", "ignore-%s.txt" % core)
    assert os.path.isfile(path), "no %s for tested ansible-core %s" % (os.path.relpath(path, REPO), core)
    with open(path, encoding="utf-8") as handle:
        return [line.split(" #", 1)[0].strip() for line in handle if line.strip() and not line.startswith("#")]


def test_every_tested_core_has_an_ignore_file_and_the_lowest_is_claimed():
    cores = _tested_cores()
    with open(os.path.join(REPO, "meta", "runtime.yml"), encoding="utf-8") as handle:
        claimed = re.search(r'requires_ansible:\s*"?>=\s*(\d+\.\d+)', handle.read()).group(1)
    assert cores[0] == claimed, "meta/runtime.yml claims >= %s but CI tests %s" % (claimed, ", ".join(cores))
    for core in cores:
        _entries(core)


def test_every_module_has_its_licence_ignore_on_every_core():
    modules = sorted(os.path.relpath(p, REPO) for kind in ("modules", "callback")
                     for p in glob.glob(os.path.join(REPO, "plugins", kind, "*.py")))
    for core in _tested_cores():
        entries = set(_entries(core))
        missing = ["%s %s" % (m, LICENCE) for m in modules if "%s %s" % (m, LICENCE) not in entries]
        assert not missing, "tests/sanity/ignore-%s.txt lacks:\n%s" % (core, "\n".join(missing))


def test_ignore_files_agree_across_cores():
    cores = _tested_cores()
    first = set(_entries(cores[0]))
    for core in cores[1:]:
        assert set(_entries(core)) == first, "ignore-%s.txt and ignore-%s.txt differ" % (cores[0], core)


def test_ignore_files_hold_only_licence_ignores_with_a_reason():
    for path in sorted(glob.glob(os.path.join(REPO, "tests", "sanity", "ignore-*.txt"))):
        with open(path, encoding="utf-8") as handle:
            bad = [line.rstrip("\n") for line in handle if not LICENCE_LINE.match(line.rstrip("\n"))]
        assert not bad, "%s: only '<module or callback> %s # <reason>' lines belong here:\n%s" % (
            os.path.relpath(path, REPO), LICENCE, "\n".join(bad))
