# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Print how long reading and writing the kubelet's state files takes (median of repeats).

Scenarios: an 8- and a 16-NUMA-node host (memory + two hugepage sizes per node), with 10, 110
and 500 Guaranteed pods of two containers each (memory + hugepages blocks; 1 to 4 exclusive CPUs).
Run from the repository root: ``.venv/bin/python benchmarks/checkpoint_io.py``.
"""

from __future__ import absolute_import, division, print_function

import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
__import__("conftest")  # the repository's conftest makes ansible_collections.numaguard.kubelet importable

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.cpumanager import checkpoint as cpu_ck  # noqa: E402
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.memorymanager import checkpoint as mem_ck  # noqa: E402

GIB = 1 << 30


def memory_state(nodes, pods):
    machine = {}
    for node in range(nodes):
        machine[node] = {"numberOfAssignments": 3, "cells": [node], "memoryMap": {
            name: {"total": 64 * GIB, "systemReserved": GIB, "allocatable": 63 * GIB, "reserved": 8 * GIB,
                   "free": 55 * GIB} for name in ("memory", "hugepages-2Mi", "hugepages-1Gi")}}
    entries = {}
    for pod in range(pods):
        uid = "%08x-0000-4000-8000-%012x" % (pod, pod)
        entries[uid] = dict(("container-%d" % c, [mem_ck.Block((pod % nodes,), "memory", GIB),
                                                  mem_ck.Block((pod % nodes,), "hugepages-2Mi", 512 << 20)])
                            for c in range(2))
    return mem_ck.MemoryManagerCheckpoint(policy_name="Static", machine_state=machine, entries=entries)


def cpu_state(pods):
    entries = {}
    cpu = 2
    for pod in range(pods):
        uid = "%08x-0000-4000-8000-%012x" % (pod, pod)
        entries[uid] = {}
        for c in range(2):
            width = 1 + (pod + c) % 4
            entries[uid]["container-%d" % c] = "%d-%d" % (cpu, cpu + width - 1)
            cpu += width
    return cpu_ck.CPUManagerCheckpoint(policy_name="static", default_cpu_set="0-1,%d-%d" % (cpu, cpu + 63),
                                       entries=entries)


def median_ms(func, repeat):
    samples = []
    for _index in range(repeat):
        start = time.perf_counter()
        func()
        samples.append((time.perf_counter() - start) * 1000.0)
    return statistics.median(samples)


def main():
    print("%-34s %9s %10s %10s %10s" % ("scenario", "bytes", "dump ms", "load ms", "legacy ms"))
    for nodes in (8, 16):
        for pods in (10, 110, 500):
            repeat = 20 if pods < 500 else 5
            mem = memory_state(nodes, pods)
            text = mem_ck.dump_memory_manager_state(mem, 3)
            legacy = mem_ck.dump_memory_manager_state(mem, 1)
            print("%-34s %9d %10.2f %10.2f %10.2f" % (
                "memory V3, %2d NUMA, %3d pods" % (nodes, pods), len(text),
                median_ms(lambda: mem_ck.dump_memory_manager_state(mem, 3), repeat),
                median_ms(lambda: mem_ck.load_memory_manager_state(text), repeat),
                median_ms(lambda: mem_ck.load_memory_manager_state(legacy), repeat)))
    for pods in (10, 110, 500):
        cpu = cpu_state(pods)
        text = cpu_ck.dump_cpu_manager_state(cpu, 4)
        legacy = cpu_ck.dump_cpu_manager_state(cpu, 2)
        print("%-34s %9d %10.2f %10.2f %10.2f" % (
            "cpu V4, %3d pods" % pods, len(text),
            median_ms(lambda: cpu_ck.dump_cpu_manager_state(cpu, 4), 20),
            median_ms(lambda: cpu_ck.load_cpu_manager_state(text), 20),
            median_ms(lambda: cpu_ck.load_cpu_manager_state(legacy), 20)))
    print("(legacy = reading the V1/V2 file of the same state: JSON decode + go-spew checksum)")


if __name__ == "__main__":
    main()
