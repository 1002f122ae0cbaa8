# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Discovery fallbacks per kernel/platform class, refused values, and fuzzed trees."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import SysfsError, read_system_memory, read_topology
from ansible_collections.numaguard.kubelet.tests.fleet import quirks, topologies

NODE = "sys/devices/system/node"
CPU = "sys/devices/system/cpu"

TINY = topologies.tiny_machine("tiny-fuzz")


def _facts(root, warnings=None):
    return json.loads(json.dumps(read_topology(str(root), warnings).to_facts()))


def _base(tmp_path, name):
    root = tmp_path / ("base-" + name)
    topologies.write_tree(name, str(root), hostname="h01")
    return _facts(root)


#: quirk -> (fragments every one of which some warning must contain, facts identical to the base?)
EXPECTED = {
    "masks-only": (["/node0/cpulist: does not exist; used cpumap (hex mask)",
                    "/topology/thread_siblings_list: does not exist; used thread_siblings for the SMT siblings"], True),
    "links-only": (["/node1/cpulist: does not exist (nor cpumap); used the node's cpuN links"], True),
    "empty-online": (["/sys/devices/system/cpu/online: empty (cadvisor would count no CPU online); used the "
                      "per-CPU cpuN/online files instead"], True),
    "cpu-in-no-node": (["/sys/devices/system/cpu/cpu7/node1: online CPU 7 is in no node's CPU list; "
                        "used this link (node 1)"], True),
    "offline-node0": (["/sys/devices/system/node/node1/distance: 2 distances for 1 node directories; the row "
                       "matches node/possible (0-1), used the columns of the existing nodes"], False),
    "hmat": ([], True),
    "no-meminfo": ([], True),
}


@pytest.mark.parametrize("name", sorted(quirks.QUIRKS))
def test_each_quirk_class_answers_with_warnings(tmp_path, name):
    assert set(EXPECTED) == set(quirks.QUIRKS)
    root = tmp_path / name
    quirks.write_quirk_tree(name, str(root))
    warnings = []
    facts = _facts(root, warnings)
    fragments, identical = EXPECTED[name]
    for fragment in fragments:
        assert any(fragment in w for w in warnings), (fragment, warnings)
    if not fragments:
        assert warnings == []
    if identical:
        assert facts == _base(tmp_path, quirks.QUIRKS[name].base)
    # warnings name host paths, never the snapshot root
    assert not any(str(tmp_path) in w for w in warnings)


def test_masks_only_reads_packages_from_core_siblings(tmp_path):
    root = tmp_path / "m"
    quirks.write_quirk_tree("masks-only", str(root))
    for cpu_dir in (root / CPU).glob("cpu[0-9]*"):
        for name in ("physical_package_id", "package_cpus"):
            if (cpu_dir / "topology" / name).exists():
                os.remove(str(cpu_dir / "topology" / name))
    warnings = []
    topo = read_topology(str(root), warnings)
    assert topo.cpu(9).socket == 0 and topo.cpu(0).socket == 0  # smallest CPU of the package
    assert topo.socket_ids() == (0,)
    assert any("physical_package_id: does not exist; used the smallest CPU id of core_siblings" in w for w in warnings)


def test_missing_core_id_and_siblings_fall_back(tmp_path):
    root = tmp_path / "t"
    topologies.write_tree(TINY, str(root), hostname="h01")
    for name in ("core_id", "thread_siblings_list", "core_cpus_list", "thread_siblings", "core_cpus"):
        os.remove(str(root / CPU / "cpu5" / "topology" / name))
    warnings = []
    topo = read_topology(str(root), warnings)
    assert (topo.cpu(5).core, topo.cpu(5).siblings) == (5, (5,))
    assert "/%s/cpu{5}/topology/core_id: does not exist; used the smallest SMT sibling id as core id" % CPU in warnings


def test_no_meminfo_capacity_is_sum_of_nodes(tmp_path):
    root = tmp_path / "n"
    quirks.write_quirk_tree("no-meminfo", str(root))
    warnings = []
    system = read_system_memory(str(root), warnings)
    want = topologies.expected("offline-cpus", "h01")
    assert system["memory_total_bytes"] == want["memory_total_bytes"]
    assert system["memory_available_bytes"] is None
    assert warnings == ["/proc/meminfo: does not exist; node capacity is the sum of the nodes' MemTotal "
                        "(%d bytes), which is slightly below the kernel's MemTotal on a real machine"
                        % want["memory_total_bytes"]]


def test_offline_node0_topology(tmp_path):
    root = tmp_path / "o"
    quirks.write_quirk_tree("offline-node0", str(root))
    topo = read_topology(str(root))
    assert topo.node_ids() == (1,)
    assert topo.node(1).distances == {1: 10}
    assert topo.offline_cpus() == (0, 1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15)


def test_no_topology_at_all_is_refused_naming_files(tmp_path):
    root = tmp_path / "x"
    topologies.write_tree(TINY, str(root), hostname="h01")
    with open(str(root / CPU / "online"), "w") as handle:
        handle.write("\n")
    for cpu in range(1, 8):
        with open(str(root / CPU / ("cpu%d" % cpu) / "online"), "w") as handle:
            handle.write("0\n")
    os.rename(str(root / CPU / "cpu0"), str(root / CPU / "cpux"))
    with pytest.raises(SysfsError) as info:
        read_topology(str(root))
    assert str(info.value) == "%s/%s: no online CPU (tried %s/%s/online and the per-CPU cpuN/online files)" % (
        root, CPU, root, CPU)


REFUSED = [
    (CPU + "/cpu5/topology/core_id", b"12345678901234567890123\n",
     "{p}: expected an integer between 0 and 2147483647, got '12345678901234567890123\\n'"),
    (NODE + "/has_cpu", b"\xff\xfe0-1\n", "{p}: not ASCII text: b'\\xff\\xfe0-1\\n'"),
    (CPU + "/cpu5/online", b"\xff\xfe", "{p}: not ASCII text: b'\\xff\\xfe'"),
    (CPU + "/cpu5/online", b"2\n", "{p}: expected an integer between 0 and 1, got '2\\n'"),
    (CPU + "/online", b"0-9000\n", "{p}: CPU id beyond the kernel limit (8191) in '0-9000\\n'"),
    (CPU + "/kernel_max", b"100000\n", "{p}: expected an integer between 0 and 8191, got '100000\\n'"),
    (NODE + "/possible", b"0-1024\n", "{p}: node id beyond the kernel limit (1023) in '0-1024\\n'"),
    (NODE + "/node0/distance", b"10 300\n", "{p}: distance above 255 in '10 300\\n'"),
    (NODE + "/node0/cpumap", b"zz\n", None),   # not read while cpulist exists
    (CPU + "/cpu1/topology/physical_package_id", b"4294967296\n",
     "{p}: expected an integer between -1 and 2147483647, got '4294967296\\n'"),
    (CPU + "/cpu1/cache/index3/id", b"99999999999\n",
     "{p}: expected an integer between 0 and 4294967295, got '99999999999\\n'"),
]


@pytest.mark.parametrize("rel,content,message", REFUSED)
def test_out_of_range_and_non_ascii_are_refused_with_file_and_content(tmp_path, rel, content, message):
    root = tmp_path / "r"
    topologies.write_tree(TINY, str(root), hostname="h01")
    target = root / rel
    target.write_bytes(content)
    if message is None:
        read_topology(str(root))
        return
    with pytest.raises(SysfsError) as info:
        read_topology(str(root))
    assert str(info.value) == message.format(p=target)


def test_23_digit_core_id_is_refused_even_padded(tmp_path):
    root = tmp_path / "r"
    topologies.write_tree(TINY, str(root), hostname="h01")
    (root / CPU / "cpu2" / "topology" / "core_id").write_bytes(b"1" * 23 + b"\x00\n")
    with pytest.raises(SysfsError, match="core_id: expected an integer between 0 and 2147483647"):
        read_topology(str(root))


def test_node_directory_beyond_max_numnodes(tmp_path):
    root = tmp_path / "r"
    topologies.write_tree(TINY, str(root), hostname="h01")
    (root / NODE / "node4096").mkdir()
    with pytest.raises(SysfsError) as info:
        read_topology(str(root))
    assert str(info.value) == "%s/%s: entry 'node4096' is beyond the kernel limit (ids below 1024)" % (root, NODE)


# -- fuzzing ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fuzz_tree(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz") / "tree"
    topologies.write_tree(TINY, str(root), hostname="h01")
    files = sorted(os.path.relpath(os.path.join(d, f), str(root))
                   for d, _dirs, names in os.walk(str(root)) for f in names
                   if not os.path.islink(os.path.join(d, f)) and (d.find("/sys/") >= 0 or d.endswith("proc")))
    return root, files, _facts(root)


_BAD = st.one_of(
    st.binary(min_size=1, max_size=12).map(lambda b: b + b"\xff\xfe"),                # non-ASCII
    st.integers(10 ** 20, 10 ** 23).map(lambda n: b"%d\n" % n),                        # 21-24 digits
    st.integers(-10 ** 6, -2).map(lambda n: b"%d\n" % n),                              # negative
    st.text("abcxyzQ -", min_size=1, max_size=10).filter(lambda t: any(c.isalpha() for c in t))
    .map(lambda t: t.encode("ascii")),                                                 # words
    st.integers(2 ** 32, 2 ** 40).map(lambda n: b"0-%d\n" % n),                        # huge range
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(data=st.data())
def test_corrupted_trees_are_refused_or_warned_never_silently_accepted(fuzz_tree, data):
    root, files, pristine = fuzz_tree
    rel = data.draw(st.sampled_from(files), label="file")
    bad = data.draw(_BAD, label="content")
    path = os.path.join(str(root), rel)
    with open(path, "rb") as handle:
        original = handle.read()
    with open(path, "wb") as handle:
        handle.write(bad)
    try:
        warnings = []
        try:
            facts = _facts(root, warnings)
        except SysfsError as exc:
            assert str(exc).startswith(str(root)), exc  # names the file
            return
        system_warnings = []
        try:
            read_system_memory(str(root), system_warnings)
        except SysfsError:
            return
        # an answer: either the file was not one discovery relies on, or a warning says why
        assert facts == pristine or warnings, (rel, bad, warnings)
    finally:
        with open(path, "wb") as handle:
            handle.write(original)


def test_fuzz_tree_is_restored(fuzz_tree):
    root, _files, pristine = fuzz_tree
    assert _facts(root) == pristine
    shutil.rmtree(str(root))


@pytest.mark.parametrize("mask,message", [
    ("," .join(["ffffffff"] * 300), "CPU mask wider than the kernel limit (8192)"),
    ("00000001," + "00000000," * 255 + "00000000", "CPU id beyond the kernel limit (8191)"),
    ("0000000g", "expected a CPU mask like '0000ffff,00000000'"),
])
def test_bad_masks_are_refused_before_expanding(tmp_path, mask, message):
    root = tmp_path / "m"
    topologies.write_tree(TINY, str(root), hostname="h01")
    os.remove(str(root / NODE / "node0" / "cpulist"))
    (root / NODE / "node0" / "cpumap").write_text(mask + "\n")
    with pytest.raises(SysfsError) as info:
        read_topology(str(root))
    assert str(info.value).startswith("%s: %s" % (root / NODE / "node0" / "cpumap", message))
