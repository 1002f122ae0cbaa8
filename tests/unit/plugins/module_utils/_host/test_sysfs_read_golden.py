# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Differential test of the sysfs reader (issue 12): every tree gives the recorded answer.

``fixtures/sysfs_read_golden.json`` was recorded from the reader as it was before the issue 12
speed-up (exists() before every open, text helpers per file); the faster reader must give,
for every bundled topology, every quirk class and every mutated tree of the sysfs unit tests
(fallbacks, masks instead of lists, offline CPUs, sparse ids, missing cache files, files that
are directories, dangling links, ...), the same ``Topology``, the same warnings in the same
order, the same system memory, or the same ``SysfsError`` message (the tree root shown as
``<root>``).

Re-record (only when a change of the answer is intended, and say so in the commit):
``.venv/bin/python tests/unit/plugins/module_utils/_host/test_sysfs_read_golden.py --record``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

if __name__ == "__main__":  # --record: make the collection importable like the root conftest does
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 5))
    import conftest  # noqa: F401  pylint: disable=unused-import

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import SysfsError, read_system_memory, read_topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology
from ansible_collections.numaguard.kubelet.tests.fleet import quirks, topologies

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "sysfs_read_golden.json")
CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), *[".."] * 4, "output", ".cache", "topologies")

NODE = "sys/devices/system/node"
CPU = "sys/devices/system/cpu"

#: the tiny machine of test_sysfs.py (1 socket, 2 nodes x 2 cores x 2 threads, CPU 7 offline)
TINY = topologies.tiny_machine("tiny-golden")

_SIBLINGS = ("thread_siblings_list", "core_cpus_list", "thread_siblings", "core_cpus")
_PACKAGES = ("physical_package_id", "package_cpus_list", "core_siblings_list", "package_cpus", "core_siblings")


def _cpu_topo(cpu, name):
    return "%s/cpu%d/topology/%s" % (CPU, cpu, name)


def _all_cpus(name, cpus=range(0, 7)):
    return [("remove", _cpu_topo(c, name), None) for c in cpus]


#: variant -> (base: a bundled name, "quirk:<name>" or "tiny", [(action, path under the root, content)])
VARIANTS = dict(
    [("bundled:" + name, (name, [])) for name in sorted(topologies.TOPOLOGIES)]
    + [("quirk:" + name, ("quirk:" + name, [])) for name in sorted(quirks.QUIRKS)]
    + [
        ("tiny", ("tiny", [])),
        # test_sysfs.py's trees
        ("offline-in-node-cpulist", ("offline-cpus", [("write", NODE + "/node1/cpulist", b"4-7,12-15\n")])),
        ("no-global-online", ("offline-cpus", [("remove", CPU + "/online", None)])),
        ("no-online-file-anywhere", ("vm-single", [("remove", CPU + "/online", None)]
                                     + [("remove", "%s/cpu%d/online" % (CPU, c), None) for c in (1, 2, 3)])),
        ("empty-node-dir", ("vm-single", [("rmtree", NODE, None), ("mkdir", NODE, None)])),
        ("no-hugepage-dirs", ("tiny", [("rmtree", NODE + "/node1/hugepages", None),
                                       ("rmtree", "sys/kernel/mm/hugepages", None)])),
        ("no-distance", ("tiny", [("remove", NODE + "/node0/distance", None)])),
        ("padded", ("tiny", [("write", NODE + "/node0/cpulist", b"  0-1,4-5  \n\n"),
                             ("write", _cpu_topo(3, "core_id"), b"3 \x00\n"),
                             ("write", NODE + "/node1/distance", b"11   10 \n"),
                             ("write", NODE + "/node1/hugepages/hugepages-2048kB/nr_hugepages", b"16\n\n")])),
        ("siblings-from-core-cpus-list", ("tiny", [("remove", _cpu_topo(0, "thread_siblings_list"), None)])),
        ("free-above-total", ("tiny", [("write", NODE + "/node0/hugepages/hugepages-2048kB/free_hugepages",
                                        b"20\n")])),
        ("cpu-in-no-node", ("tiny", [("write", NODE + "/node1/cpulist", b"2\n"),
                                     ("remove", CPU + "/cpu3/node1", None), ("remove", CPU + "/cpu6/node1", None)])),
        ("cpu-in-two-nodes", ("tiny", [("write", NODE + "/node1/cpulist", b"0,2-3,6\n")])),
        ("no-cpu-dirs", ("tiny", [("rmtree", CPU, None), ("mkdir", CPU, None)])),
        ("no-sysfs", ("tiny", [("rmtree", "sys", None)])),
        # test_sysfs_fallbacks.py's trees
        ("packages-from-core-siblings", ("quirk:masks-only", [("remove", _cpu_topo(c, n), None)
                                                              for c in range(16) if c not in (12, 13, 14, 15)
                                                              for n in ("physical_package_id", "package_cpus")])),
        ("no-core-id-no-siblings", ("tiny", [("remove", _cpu_topo(5, n), None) for n in ("core_id",) + _SIBLINGS])),
        ("nothing-online", ("tiny", [("write", CPU + "/online", b"\n")]
                            + [("write", "%s/cpu%d/online" % (CPU, c), b"0\n") for c in range(1, 8)]
                            + [("rename", CPU + "/cpu0", CPU + "/cpux")])),
        ("node-beyond-max", ("tiny", [("mkdir", NODE + "/node4096", None)])),
        ("cpumap-too-wide", ("tiny", [("remove", NODE + "/node0/cpulist", None),
                                      ("write", NODE + "/node0/cpumap", b",".join([b"ffffffff"] * 300) + b"\n")])),
        ("cpumap-beyond-limit", ("tiny", [("remove", NODE + "/node0/cpulist", None),
                                          ("write", NODE + "/node0/cpumap",
                                           b"00000001," + b"00000000," * 255 + b"00000000\n")])),
        ("cpumap-not-hex", ("tiny", [("remove", NODE + "/node0/cpulist", None),
                                     ("write", NODE + "/node0/cpumap", b"0000000g\n")])),
        # each fallback of the per-CPU files, one CPU or all
        ("siblings-masks", ("tiny", [("remove", _cpu_topo(2, n), None) for n in _SIBLINGS[:2]])),
        ("siblings-core-cpus-mask", ("tiny", [("remove", _cpu_topo(2, n), None) for n in _SIBLINGS[:3]])),
        ("siblings-without-self", ("tiny", [("write", _cpu_topo(1, "thread_siblings_list"), b"5\n")])),
        ("no-core-id-anywhere", ("tiny", _all_cpus("core_id"))),
        ("package-fallbacks", ("tiny", [("remove", _cpu_topo(c, n), None)
                                        for c in range(0, 7) for n in _PACKAGES[:c % 5 + 1]])),
        ("package-unknown", ("tiny", [("remove", _cpu_topo(c, n), None) for c in range(0, 7) for n in _PACKAGES])),
        ("package-minus-one", ("tiny", [("write", _cpu_topo(4, "physical_package_id"), b"-1\n")])),
        ("no-die-id", ("tiny", _all_cpus("die_id", (1, 3)))),
        ("no-topology-dir", ("tiny", [("rmtree", "%s/cpu%d/topology" % (CPU, c), None) for c in (2, 6)])),
        ("topology-is-a-file", ("tiny", [("rmtree", CPU + "/cpu2/topology", None),
                                         ("write", CPU + "/cpu2/topology", b"x\n")])),
        ("dangling-core-id", ("tiny", [("remove", _cpu_topo(3, "core_id"), None),
                                       ("symlink", _cpu_topo(3, "core_id"), b"/nonexistent/core_id")])),
        ("dangling-siblings", ("tiny", [("remove", _cpu_topo(3, "thread_siblings_list"), None),
                                        ("symlink", _cpu_topo(3, "thread_siblings_list"), b"missing")])),
        ("core-id-is-a-dir", ("tiny", [("dir", _cpu_topo(3, "core_id"), None)])),
        ("siblings-list-is-a-dir", ("tiny", [("dir", _cpu_topo(3, "thread_siblings_list"), None)])),
        ("die-id-is-a-dir", ("tiny", [("dir", _cpu_topo(3, "die_id"), None)])),
        ("cpu-online-is-a-dir", ("tiny", [("dir", CPU + "/cpu3/online", None)])),
        ("cpu-online-dangling", ("tiny", [("remove", CPU + "/cpu3/online", None),
                                          ("symlink", CPU + "/cpu3/online", b"gone")])),
        ("cpu-online-disagrees", ("tiny", [("write", CPU + "/cpu7/online", b"1\n"),
                                           ("write", CPU + "/cpu2/online", b"0\n")])),
        ("online-lists-missing-cpu", ("tiny", [("write", CPU + "/online", b"0-6,9\n")])),
        ("kernel-max-small", ("tiny", [("write", CPU + "/kernel_max", b"5\n")])),
        ("no-kernel-max", ("tiny", [("remove", CPU + "/kernel_max", None)])),
        ("kernel-max-is-a-dir", ("tiny", [("dir", CPU + "/kernel_max", None)])),
        ("online-is-a-dir", ("tiny", [("dir", CPU + "/online", None)])),
        ("cpu-dir-is-a-file", ("tiny", [("rmtree", CPU + "/cpu3", None), ("write", CPU + "/cpu3", b"x\n")])),
        ("offline-cpu-dir-is-a-file", ("tiny", [("rmtree", CPU + "/cpu7", None), ("write", CPU + "/cpu7", b"x\n")])),
        ("cpu-dir-link-loop", ("tiny", [("rmtree", CPU + "/cpu3", None), ("symlink", CPU + "/cpu3", b"cpu3")])),
        ("offline-cpu-dir-link-loop", ("tiny", [("rmtree", CPU + "/cpu7", None), ("symlink", CPU + "/cpu7", b"cpu7")])),
        ("offline-cpu-dir-dangling", ("tiny", [("rmtree", CPU + "/cpu7", None), ("symlink", CPU + "/cpu7", b"gone")])),
        ("cpu-dirs-are-links", ("tiny", [("rename", CPU + "/cpu%d" % c, CPU + "/real%d" % c) for c in (3, 7)]
                                + [("symlink", CPU + "/cpu%d" % c, b"real%d" % c) for c in (3, 7)])),
        ("cpu-non-dir-entries", ("tiny", [("write", CPU + "/cpuidle", b"x\n"), ("mkdir", CPU + "/cpufreq", None),
                                          ("write", CPU + "/cpu", b"x\n")])),
        ("offline-cpu-two-links", ("tiny", [("symlink", CPU + "/cpu7/node0", b"../../node/node0")])),
        # last-level cache
        ("no-cache-dir", ("tiny", [("rmtree", CPU + "/cpu1/cache", None)])),
        ("cache-is-a-file", ("tiny", [("rmtree", CPU + "/cpu1/cache", None), ("write", CPU + "/cpu1/cache", b"x\n")])),
        ("empty-cache-dir", ("tiny", [("rmtree", CPU + "/cpu1/cache", None), ("mkdir", CPU + "/cpu1/cache", None)])),
        ("cache-without-l3-level", ("tiny", [("remove", CPU + "/cpu1/cache/index3/level", None)])),
        ("cache-without-l3-id", ("tiny", [("remove", CPU + "/cpu1/cache/index3/id", None)])),
        ("cache-id-is-a-dir", ("tiny", [("dir", CPU + "/cpu1/cache/index3/id", None)])),
        ("cache-level-is-a-dir", ("tiny", [("dir", CPU + "/cpu1/cache/index0/level", None)])),
        ("cache-index-is-a-file", ("tiny", [("rmtree", CPU + "/cpu1/cache/index2", None),
                                            ("write", CPU + "/cpu1/cache/index2", b"x\n")])),
        ("cache-other-entries", ("tiny", [("write", CPU + "/cpu1/cache/uevent", b"\n"),
                                          ("mkdir", CPU + "/cpu1/cache/power", None)])),
        ("cache-index10-sorts-first", ("tiny", [("mkdir", CPU + "/cpu1/cache/index10", None),
                                                ("write", CPU + "/cpu1/cache/index10/level", b"3\n"),
                                                ("write", CPU + "/cpu1/cache/index10/id", b"77\n")])),
        ("cache-equal-levels-first-wins", ("tiny", [("write", CPU + "/cpu1/cache/index2/level", b"3\n"),
                                                    ("write", CPU + "/cpu1/cache/index2/id", b"55\n")])),
        ("cache-levels-unordered", ("tiny", [("write", CPU + "/cpu1/cache/index0/level", b"4\n")])),
        ("cache-level-bad", ("tiny", [("write", CPU + "/cpu1/cache/index0/level", b"17\n")])),
        ("cache-level-padded", ("tiny", [("write", CPU + "/cpu1/cache/index3/level", b" 3\x00\n")])),
        ("cache-id-bad-on-lower-level", ("tiny", [("write", CPU + "/cpu1/cache/index0/id", b"zz\n")])),
        # nodes
        ("node-cpumap-only", ("tiny", [("remove", NODE + "/node1/cpulist", None)])),
        ("node-links-only", ("tiny", [("remove", NODE + "/node1/cpulist", None), ("remove", NODE + "/node1/cpumap", None)])),
        ("node-cpulist-is-a-dir", ("tiny", [("dir", NODE + "/node1/cpulist", None)])),
        ("node-cpulist-dangling", ("tiny", [("remove", NODE + "/node1/cpulist", None),
                                            ("symlink", NODE + "/node1/cpulist", b"gone")])),
        ("node-lists-missing", ("tiny", [("remove", NODE + "/" + n, None)
                                         for n in ("possible", "online", "has_cpu", "has_memory", "has_normal_memory")])),
        ("node-lists-disagree", ("tiny", [("write", NODE + "/online", b"0-2\n"), ("write", NODE + "/has_cpu", b"1\n"),
                                          ("write", NODE + "/has_memory", b"0\n")])),
        ("node-list-bad", ("tiny", [("write", NODE + "/has_normal_memory", b"0-x\n")])),
        ("node-possible-is-a-dir", ("tiny", [("dir", NODE + "/possible", None)])),
        ("distance-is-a-dir", ("tiny", [("dir", NODE + "/node1/distance", None)])),
        ("distance-row-of-possible", ("tiny", [("write", NODE + "/possible", b"0-2\n"),
                                               ("write", NODE + "/node1/distance", b"11 10 20\n")])),
        ("meminfo-missing-memfree", ("tiny", [("write", NODE + "/node1/meminfo", b"Node 1 MemTotal: 100 kB\n")])),
        ("meminfo-free-above-total", ("tiny", [("write", NODE + "/node1/meminfo",
                                                b"Node 1 MemTotal: 100 kB\nNode 1 MemFree: 200 kB\n")])),
        ("hugepages-is-a-file", ("tiny", [("rmtree", NODE + "/node1/hugepages", None),
                                          ("write", NODE + "/node1/hugepages", b"x\n")])),
        ("hugepages-two-sizes", ("tiny", [("mkdir", NODE + "/node1/hugepages/hugepages-1048576kB", None),
                                          ("write", NODE + "/node1/hugepages/hugepages-1048576kB/nr_hugepages", b"2\n"),
                                          ("write", NODE + "/node1/hugepages/hugepages-1048576kB/free_hugepages",
                                           b"1\n")])),
        ("hugepages-not-a-size", ("tiny", [("mkdir", NODE + "/node1/hugepages/hugepages-3000kB", None)])),
        ("hugepages-too-many", ("tiny", [("write", NODE + "/node1/hugepages/hugepages-2048kB/nr_hugepages",
                                          b"18446744073709551615\n")])),
        ("hugepage-pool-is-a-file", ("tiny", [("rmtree", NODE + "/node1/hugepages/hugepages-2048kB", None),
                                              ("write", NODE + "/node1/hugepages/hugepages-2048kB", b"x\n")])),
        ("node-dir-is-a-file", ("tiny", [("rmtree", NODE + "/node1", None), ("write", NODE + "/node1", b"x\n")])),
        ("node-meminfo-dangling", ("tiny", [("remove", NODE + "/node1/meminfo", None),
                                            ("symlink", NODE + "/node1/meminfo", b"gone")])),
        ("no-numa-no-meminfo", ("vm-nonuma", [("remove", "proc/meminfo", None)])),
        ("no-numa-bad-meminfo", ("vm-nonuma", [("write", "proc/meminfo", b"MemFree: 1 kB\n")])),
        ("no-numa-global-hugepages-missing", ("vm-nonuma", [("rmtree", "sys/kernel/mm/hugepages", None)])),
        ("no-proc-meminfo-numa", ("tiny", [("remove", "proc/meminfo", None)])),
    ]
    # test_sysfs.py ERROR_CASES and test_sysfs_fallbacks.py REFUSED (the error messages)
    + [("error:%02d:%s" % (index, rel), ("tiny", [(action, rel, content)])) for index, (action, rel, content) in enumerate([
        ("write", NODE + "/node0/meminfo", b"Node 0 MemFree: 5 kB\n"),
        ("write", NODE + "/node0/meminfo", b"Node 0 MemTotal: lots kB\n"),
        ("write", NODE + "/node1/meminfo", b"Node 0 MemTotal: 5 kB\n"),
        ("remove", NODE + "/node1/meminfo", None),
        ("dir", NODE + "/node0/meminfo", None),
        ("write", NODE + "/node0/cpulist", b"5-1\n"),
        ("write", CPU + "/online", b"0-6,\n"),
        ("write", CPU + "/cpu5/topology/core_id", b"seven\n"),
        ("write", CPU + "/cpu5/topology/physical_package_id", b"-2\n"),
        ("write", CPU + "/cpu5/cache/index3/level", b"\xff\n"),
        ("write", NODE + "/node0/distance", b"10\n"),
        ("write", NODE + "/node0/distance", b"10 x\n"),
        ("write", NODE + "/node0/hugepages/hugepages-2048kB/nr_hugepages", b"-1\n"),
        ("remove", NODE + "/node0/hugepages/hugepages-2048kB/free_hugepages", None),
        ("mkdir", NODE + "/node0/hugepages/bogus", None),
        ("write", CPU + "/cpu5/topology/core_id", b"12345678901234567890123\n"),
        ("write", CPU + "/cpu2/topology/core_id", b"1" * 23 + b"\x00\n"),
        ("write", NODE + "/has_cpu", b"\xff\xfe0-1\n"),
        ("write", CPU + "/cpu5/online", b"\xff\xfe"),
        ("write", CPU + "/cpu5/online", b"2\n"),
        ("write", CPU + "/online", b"0-9000\n"),
        ("write", CPU + "/kernel_max", b"100000\n"),
        ("write", NODE + "/possible", b"0-1024\n"),
        ("write", NODE + "/node0/distance", b"10 300\n"),
        ("write", NODE + "/node0/cpumap", b"zz\n"),
        ("write", CPU + "/cpu1/topology/physical_package_id", b"4294967296\n"),
        ("write", CPU + "/cpu1/cache/index3/id", b"99999999999\n"),
        ("write", NODE + "/node0/cpulist", b"x" * 500),
        ("write", NODE + "/node0/cpulist", b"0-3,x\n"),
    ])]
)


def _apply(root, action, rel, content):
    path = os.path.join(root, rel)
    if action == "write":
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(content)
    elif action == "remove":
        os.remove(path)
    elif action == "rmtree":
        shutil.rmtree(path)
    elif action == "mkdir":
        os.mkdir(path)
    elif action == "dir":
        os.remove(path)
        os.mkdir(path)
    elif action == "symlink":
        os.symlink(content.decode("ascii"), path)
    elif action == "rename":
        os.rename(path, os.path.join(root, content))
    else:
        raise ValueError(action)


def _build(variant, scratch):
    """The root of ``variant``'s tree: the cached tree of an unchanged bundled topology, else written."""
    base, changes = VARIANTS[variant]
    if base in topologies.TOPOLOGIES and not changes:
        return topologies.cached_tree(base, CACHE, hostname="h01")
    root = os.path.join(scratch, "tree")
    if base.startswith("quirk:"):
        quirks.write_quirk_tree(base[len("quirk:"):], root)
    else:
        topologies.write_tree(TINY if base == "tiny" else base, root, hostname="h01")
    for action, rel, content in changes:
        _apply(root, action, rel, content)
    return root


def _answer(root):
    """What the reader says about ``root``: facts + warnings + system memory, or the error text."""
    warnings = []
    try:
        topo = read_topology(root, warnings)
    except SysfsError as exc:
        return {"error": str(exc).replace(root, "<root>")}
    answer = {"topology": json.loads(json.dumps(topo.to_facts())), "warnings": warnings}
    system_warnings = []
    try:
        answer["system_memory"] = read_system_memory(root, system_warnings)
        answer["system_warnings"] = system_warnings
    except SysfsError as exc:
        answer["system_memory_error"] = str(exc).replace(root, "<root>")
    return answer


@pytest.fixture(scope="module")
def golden():
    with open(GOLDEN) as handle:
        return json.load(handle)


def test_golden_covers_every_variant(golden):
    assert sorted(golden) == sorted(VARIANTS)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_reader_answer_equals_the_recorded_one(tmp_path, golden, variant):
    root = _build(variant, str(tmp_path))
    want = golden[variant]
    got = _answer(root)
    assert got == want
    if "topology" in want:
        # the fact dict is lossless: the same Topology value, not only the same JSON
        assert read_topology(root) == Topology.from_facts(want["topology"])


@pytest.mark.parametrize("variant", ["tiny", "packages-from-core-siblings", "no-topology-dir", "node-links-only"])
def test_root_spelling_does_not_change_the_answer(tmp_path, monkeypatch, golden, variant):
    """A root given with a trailing slash, or relative to the working directory, reads alike."""
    root = _build(variant, str(tmp_path))
    assert _answer(root + "/") == golden[variant]
    monkeypatch.chdir(os.path.dirname(root))
    assert _answer(os.path.basename(root)) == golden[variant]


def _refuse(monkeypatch, victim):
    """Every way of opening or listing ``victim`` fails with EACCES (as for a non-root reader)."""
    def refusing(real):
        def fake(path, *args, **kwargs):
            if path == victim:
                raise PermissionError(13, "Permission denied", path)
            return real(path, *args, **kwargs)
        return fake
    for name in ("open", "listdir", "scandir"):
        monkeypatch.setattr(os, name, refusing(getattr(os, name)))
    monkeypatch.setattr("builtins.open", refusing(open))


@pytest.mark.parametrize("rel,message", [
    # a file that exists but cannot be read is refused, never taken as absent (a fallback)
    (_cpu_topo(3, "core_id"), "cannot read: Permission denied"),
    (_cpu_topo(3, "thread_siblings_list"), "cannot read: Permission denied"),
    (_cpu_topo(3, "physical_package_id"), "cannot read: Permission denied"),
    (_cpu_topo(3, "die_id"), "cannot read: Permission denied"),
    (CPU + "/cpu3/online", "cannot read: Permission denied"),
    (CPU + "/online", "cannot read: Permission denied"),
    (CPU + "/kernel_max", "cannot read: Permission denied"),
    (CPU + "/cpu3/cache/index0/level", "cannot read: Permission denied"),
    (CPU + "/cpu3/cache/index3/id", "cannot read: Permission denied"),
    (NODE + "/node1/cpulist", "cannot read: Permission denied"),
    (NODE + "/node1/distance", "cannot read: Permission denied"),
    (NODE + "/has_memory", "cannot read: Permission denied"),
    (NODE + "/node1/meminfo", "cannot read: Permission denied"),
    (CPU + "/cpu3/cache", "cannot list directory: Permission denied"),
    (NODE + "/node1/hugepages", "cannot list directory: Permission denied"),
    (CPU, "cannot list directory: Permission denied"),
    (NODE, "cannot list directory: Permission denied"),
])
def test_unreadable_is_refused_naming_the_path(tmp_path, monkeypatch, rel, message):
    root = _build("tiny", str(tmp_path))
    victim = os.path.join(root, rel)
    _refuse(monkeypatch, victim)
    with pytest.raises(SysfsError) as info:
        read_topology(root)
    assert str(info.value) == "%s: %s" % (victim, message)


def _record():
    import tempfile

    answers = {}
    for variant in sorted(VARIANTS):
        scratch = tempfile.mkdtemp(prefix="sysfs-golden-")
        try:
            answers[variant] = _answer(_build(variant, scratch))
        finally:
            shutil.rmtree(scratch)
    with open(GOLDEN, "w") as handle:
        handle.write("{\n")
        handle.write(",\n".join("%s: %s" % (json.dumps(name), json.dumps(answers[name], sort_keys=True))
                                for name in sorted(answers)))
        handle.write("\n}\n")
    print("recorded %d variants in %s" % (len(answers), GOLDEN))


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    _record()
