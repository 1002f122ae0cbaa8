# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The issue-28 rows change nothing but what they name (property tests over random pod sequences).

* 1.29 and 1.31 have no admission row between them: every pod sequence, sidecars included, is
  decided alike (verdicts, reasons, messages, CPUs, memory blocks).
* 1.28 and 1.29 differ only for restartable init containers and in the CPU shortage text: a
  sequence without sidecars is decided alike once ``: requested=N, available=M`` is dropped.

Machine and configuration: test_kubelet_1_28_to_1_32.py (two NUMA nodes of four CPUs and 4Gi),
under each Topology Manager policy and scope.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.tests.unit.plugins.module_utils.engine.test_kubelet_1_28_to_1_32 import (
    container,
    pod,
    run,
)

_COUNTS = re.compile(r": requested=\d+, available=\d+")


def _container(name, restartable):
    return st.builds(lambda cpu, memory: container(name, str(cpu), "%dMi" % memory, restartable=restartable),
                     st.integers(1, 5), st.sampled_from([256, 1024, 2048, 3072, 5120]))


@st.composite
def pods(draw, sidecars):
    count = draw(st.integers(1, 4))
    out = []
    for index in range(count):
        init = []
        for number in range(draw(st.integers(0, 2))):
            init.append(draw(_container("init-%d" % number, sidecars and draw(st.booleans()))))
        apps = [draw(_container("app-%d" % number, False)) for number in range(draw(st.integers(1, 2)))]
        out.append(pod("p%d" % index, apps, init=init))
    return out


SETTINGS = st.fixed_dictionaries({"topologyManagerPolicy": st.sampled_from(["none", "best-effort", "restricted",
                                                                            "single-numa-node"]),
                                  "topologyManagerScope": st.sampled_from(["container", "pod"])})


def decided(release, manifests, changes, counts=True):
    _simulator, results = run(release, manifests, {"SidecarContainers": True}, **changes)
    out = []
    for result in results:
        message = result["message"] if counts else _COUNTS.sub("", result["message"] or "")
        out.append((result["name"], result["verdict"], result["reason"], message, result["numa_nodes"],
                    [(c["name"], c["cpus"], c["memory_blocks"]) for c in result["containers"]]))
    return out


@settings(max_examples=40)
@given(pods(sidecars=True), SETTINGS)
def test_1_29_and_1_31_decide_alike(manifests, changes):
    assert decided("1.29", manifests, changes) == decided("1.31", manifests, changes)


@settings(max_examples=40)
@given(pods(sidecars=False), SETTINGS)
def test_1_28_and_1_29_decide_alike_without_sidecars(manifests, changes):
    assert decided("1.28", manifests, changes, counts=False) == decided("1.29", manifests, changes, counts=False)
