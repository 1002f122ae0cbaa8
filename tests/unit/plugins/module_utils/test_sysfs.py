# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""sysfs reader: every bundled topology round-trips exactly; each kernel quirk; exact errors."""

from __future__ import annotations

import json
import os
import pathlib
import shutil

import pytest

from ansible_collections.numaguard.kubelet.plugins.module_utils._host import sysfs
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.sysfs import SysfsError, read_system_memory, read_topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology
from ansible_collections.numaguard.kubelet.tests.fleet import topologies

TINY = topologies.tiny_machine("tiny-2n")

NODE = "sys/devices/system/node"
CPU = "sys/devices/system/cpu"


CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "output", ".cache", "topologies")


class _Trees:
    """``trees / name`` -> the cached read-only tree of a bundled topology (hostname h01)."""

    def __truediv__(self, name):
        return pathlib.Path(topologies.cached_tree(name, CACHE, hostname="h01"))


@pytest.fixture(scope="module")
def trees():
    return _Trees()


def _tree(tmp_path, name, **kwargs):
    root = tmp_path / getattr(name, "name", name)
    topologies.write_tree(name, str(root), hostname="h01", **kwargs)
    return root


def _write(path, content):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content)


def _actual_nodes(topo):
    return dict((n.id, {
        "cpus": list(n.cpus),
        "memory_total_bytes": n.memory_total_bytes,
        "memory_free_bytes": n.memory_free_bytes,
        "hugepages": dict((k, v.to_facts()) for k, v in n.hugepages.items()),
        "distances": dict(n.distances),
    }) for n in topo.nodes)


@pytest.mark.parametrize("name", sorted(topologies.TOPOLOGIES))
def test_bundled_topology_round_trips(trees, name):
    topo = read_topology(str(trees / name))
    want = topologies.expected(name, "h01")
    assert list(topo.node_ids()) == want["node_ids"]
    assert _actual_nodes(topo) == want["nodes"]
    assert list(topo.online_cpus()) == want["online_cpus"]
    assert list(topo.offline_cpus()) == want["offline_cpus"]
    for cpu in topo.cpus:
        facts = cpu.to_facts()
        del facts["id"]
        assert facts == want["cpus"][cpu.id], "CPU %d" % cpu.id
    assert topo.memory_total_bytes() == want["memory_total_bytes"]
    # What numa_facts returns must load back as the same model (Ansible JSON turns keys to str).
    assert Topology.from_facts(json.loads(json.dumps(topo.to_facts()))) == topo
    system = read_system_memory(str(trees / name))
    assert system["memory_total_bytes"] == want["memory_total_bytes"]
    assert dict((v["page_size_bytes"] // 1024, v["total_pages"]) for v in system["hugepages"].values()) \
        == want["global_hugepages"]


def test_bundled_fingerprints_are_distinct_and_host_independent(tmp_path, trees):
    prints = {}
    for name in topologies.TOPOLOGIES:
        prints[name] = read_topology(str(trees / name)).fingerprint()
    assert len(set(prints.values())) == len(prints)
    topologies.write_tree("offline-cpus", str(tmp_path / "h02"), hostname="h02")
    a, b = read_topology(str(trees / "offline-cpus")), read_topology(str(tmp_path / "h02"))
    assert a.nodes[0].memory_free_bytes != b.nodes[0].memory_free_bytes
    assert a.fingerprint() == b.fingerprint() == prints["offline-cpus"]


def test_hugepage_drift_changes_fingerprint(tmp_path, trees):
    drifted = _tree(tmp_path, "offline-cpus", hugepages={2048: 512})
    topo = read_topology(str(drifted))
    assert topo.node(0).hugepages["hugepages-2Mi"].total_pages == 512
    assert topo.fingerprint() != read_topology(str(trees / "offline-cpus")).fingerprint()


def test_sparse_ids(trees):
    topo = read_topology(str(trees / "sparse-ids"))
    assert topo.node_ids() == (0, 1, 2, 33, 34)
    assert topo.node(33).distances == {0: 40, 1: 40, 2: 40, 33: 10, 34: 20}
    assert topo.node(34).cpus == tuple(range(64, 80))
    assert topo.hugepage_sizes() == ("hugepages-16Mi", "hugepages-16Gi")
    assert topo.threads_per_core() == 8
    assert topo.cpu(5).die == -1


def test_memory_only_nodes(trees):
    topo = read_topology(str(trees / "cxl-memory"))
    assert topo.node(1).cpus == ()
    assert topo.node(1).memory_total_bytes == (134217728 - 16384) * 1024
    assert topo.cpu_node_ids() == (0,)
    gpu = read_topology(str(trees / "gpu-superchip"))
    assert [n.id for n in gpu.nodes if n.memory_only] == list(range(1, 9))
    assert gpu.node(5).memory_total_bytes == 0
    assert gpu.cpu(3).cache_id is None


def test_offline_cpus(trees):
    topo = read_topology(str(trees / "offline-cpus"))
    assert topo.offline_cpus() == (12, 13, 14, 15)
    assert topo.node(1).cpus == (4, 5, 6, 7)
    off = topo.cpu(13)
    assert (off.online, off.node, off.core, off.socket, off.die, off.siblings, off.cache_id) == \
        (False, 1, None, None, None, (), None)
    assert topo.cpu(5).siblings == (5,)
    assert topo.cpu(1).siblings == (1, 9)


def test_offline_listed_in_node_cpulist_is_filtered(tmp_path):
    """Some architectures keep offline CPUs in the node's cpulist; cadvisor skips them."""
    root = _tree(tmp_path, "offline-cpus")
    _write(root / NODE / "node1" / "cpulist", "4-7,12-15\n")
    assert read_topology(str(root)).node(1).cpus == (4, 5, 6, 7)


def test_per_cpu_online_files_when_global_list_missing(tmp_path):
    root = _tree(tmp_path, "offline-cpus")
    os.remove(str(root / CPU / "online"))
    assert read_topology(str(root)).offline_cpus() == (12, 13, 14, 15)


def test_no_online_file_anywhere_means_all_online(tmp_path):
    root = _tree(tmp_path, "vm-single")
    os.remove(str(root / CPU / "online"))
    for cpu in range(1, 4):
        os.remove(str(root / CPU / ("cpu%d" % cpu) / "online"))
    assert read_topology(str(root)).online_cpus() == (0, 1, 2, 3)


def test_no_numa_kernel(trees):
    topo = read_topology(str(trees / "vm-nonuma"))
    assert topo.node_ids() == (0,)
    assert topo.node(0).cpus == (0, 1)
    assert topo.node(0).memory_total_bytes == 8129124 * 1024
    assert topo.node(0).hugepages["hugepages-2Mi"].total_pages == 64
    assert topo.node(0).distances == {0: 10}


def test_empty_node_directory_is_no_numa(tmp_path):
    root = _tree(tmp_path, "vm-single")
    shutil.rmtree(str(root / NODE))
    (root / NODE).mkdir()
    topo = read_topology(str(root))
    assert topo.node(0).cpus == (0, 1, 2, 3)
    assert topo.node(0).memory_total_bytes == 4 * 16370456 // 4 * 1024


def test_node_dir_without_cpulist_uses_cpu_links(trees):
    topo = read_topology(str(trees / "legacy-2s"))
    assert topo.node(0).cpus == tuple(range(0, 8)) + tuple(range(16, 24))
    assert topo.node(1).cpus == tuple(range(8, 16)) + tuple(range(24, 32))
    assert topo.cpu(0).die is None and topo.cpu(0).cache_id is None


def test_hugepages_only_global(trees):
    topo = read_topology(str(trees / "legacy-2s"))
    assert [n.hugepages for n in topo.nodes] == [{}, {}]
    assert topo.hugepage_sizes() == ()
    assert read_system_memory(str(trees / "legacy-2s"))["hugepages"]["hugepages-2Mi"]["total_pages"] == 1024


def test_missing_hugepage_directories(tmp_path):
    root = _tree(tmp_path, TINY)
    shutil.rmtree(str(root / NODE / "node1" / "hugepages"))
    shutil.rmtree(str(root / "sys/kernel/mm/hugepages"))
    topo = read_topology(str(root))
    assert sorted(topo.node(0).hugepages) == ["hugepages-2Mi"]
    assert topo.node(1).hugepages == {}
    assert read_system_memory(str(root))["hugepages"] == {}


def test_missing_distance_file_gives_no_distances(tmp_path):
    root = _tree(tmp_path, TINY)
    os.remove(str(root / NODE / "node0" / "distance"))
    assert read_topology(str(root)).node(0).distances == {}


def test_padded_and_odd_contents(tmp_path):
    root = _tree(tmp_path, TINY)
    _write(root / NODE / "node0" / "cpulist", "  0-1,4-5  \n\n")
    _write(root / CPU / "cpu3" / "topology" / "core_id", "3 \x00\n")
    _write(root / NODE / "node1" / "distance", "11   10 \n")
    _write(root / NODE / "node1" / "hugepages" / "hugepages-2048kB" / "nr_hugepages", "16\n\n")
    topo = read_topology(str(root))
    assert topo.node(0).cpus == (0, 1, 4, 5)
    assert topo.cpu(3).core == 3
    assert topo.node(1).distances == {0: 11, 1: 10}
    assert topo.node(1).hugepages["hugepages-2Mi"].total_pages == 16


def test_thread_siblings_fallback_to_core_cpus_list(tmp_path):
    root = _tree(tmp_path, TINY)
    os.remove(str(root / CPU / "cpu0" / "topology" / "thread_siblings_list"))
    assert read_topology(str(root)).cpu(0).siblings == (0, 4)


def test_free_hugepages_capped_at_total(tmp_path):
    root = _tree(tmp_path, TINY)
    _write(root / NODE / "node0" / "hugepages" / "hugepages-2048kB" / "free_hugepages", "20\n")
    assert read_topology(str(root)).node(0).hugepages["hugepages-2Mi"].free_pages == 16


def _err(root, rel):
    return str(root / rel)


ERROR_CASES = [
    # (topology, relative path, action, content, expected message with {p} = file path)
    (TINY, NODE + "/node0/meminfo", "write", "Node 0 MemFree: 5 kB\n",
     "{p}: no 'MemTotal: <n> kB' line in 'Node 0 MemFree: 5 kB\\n'"),
    (TINY, NODE + "/node0/meminfo", "write", "Node 0 MemTotal: lots kB\n",
     "{p}: line 1 is not 'Name: value [kB]': 'Node 0 MemTotal: lots kB'"),
    (TINY, NODE + "/node1/meminfo", "write", "Node 0 MemTotal: 5 kB\n",
     "{p}: line 1 is about node 0, expected node 1: 'Node 0 MemTotal: 5 kB'"),
    (TINY, NODE + "/node1/meminfo", "remove", None, "{p}: file does not exist"),
    (TINY, NODE + "/node0/meminfo", "dir", None, "{p}: cannot read: is a directory, expected a file"),
    (TINY, NODE + "/node0/cpulist", "write", "0-3,x\n",
     "{p}: expected a CPU list like '0-3,8', got '0-3,x\\n'"),
    (TINY, NODE + "/node0/cpulist", "write", "5-1\n",
     "{p}: expected a CPU list like '0-3,8', got '5-1\\n'"),
    (TINY, CPU + "/online", "write", "0-6,\n",
     "{p}: expected a CPU list like '0-3,8', got '0-6,\\n'"),
    (TINY, CPU + "/cpu5/topology/core_id", "write", "seven\n", "{p}: expected an integer, got 'seven\\n'"),
    (TINY, CPU + "/cpu5/topology/core_id", "write", "1" * 23,
     "{p}: expected an integer between 0 and 2147483647, got '%s'" % ("1" * 23)),
    (TINY, CPU + "/cpu5/topology/physical_package_id", "write", "-2\n",
     "{p}: expected an integer >= -1, got '-2\\n'"),
    (TINY, CPU + "/cpu5/cache/index3/level", "write", "\xff\n", None),
    (TINY, NODE + "/node0/distance", "write", "10\n", "{p}: 1 distances for 2 nodes (0,1): '10\\n'"),
    (TINY, NODE + "/node0/distance", "write", "10 x\n", "{p}: expected distances like '10 21', got '10 x\\n'"),
    (TINY, NODE + "/node0/hugepages/hugepages-2048kB/nr_hugepages", "write", "-1\n",
     "{p}: expected an integer >= 0, got '-1\\n'"),
    (TINY, NODE + "/node0/hugepages/hugepages-2048kB/free_hugepages", "remove", None, "{p}: file does not exist"),
    (TINY, NODE + "/node0/hugepages/bogus", "mkdir", None,
     "%s: unexpected entry 'bogus', expected hugepages-<size>kB" % (NODE + "/node0/hugepages")),
    ("vm-nonuma", "proc/meminfo", "remove", None, "{p}: file does not exist"),
    ("vm-nonuma", "proc/meminfo", "write", "MemFree: 1 kB\n", "{p}: no 'MemTotal: <n> kB' line in 'MemFree: 1 kB\\n'"),
]


@pytest.mark.parametrize("name,rel,action,content,message", ERROR_CASES)
def test_bad_files_fail_naming_file_and_content(tmp_path, name, rel, action, content, message):
    root = _tree(tmp_path, name)
    target = root / rel
    if action == "write":
        if content is not None and "\xff" in content:
            target.write_bytes(b"\xff\n")
        else:
            _write(target, content)
    elif action == "remove":
        os.remove(str(target))
    elif action == "dir":
        os.remove(str(target))
        target.mkdir()
    elif action == "mkdir":
        target.mkdir()
    with pytest.raises(SysfsError) as info:
        read_topology(str(root))
    if message is None:
        assert str(info.value) == "%s: not ASCII text: b'\\xff\\n'" % target
    elif message.startswith("{p}"):
        assert str(info.value) == message.format(p=target)
    else:
        assert str(info.value) == "%s/%s" % (root, message)


def test_unreadable_file_via_permission_error(tmp_path, monkeypatch):
    root = _tree(tmp_path, "vm-single")
    victim = str(root / NODE / "node0" / "meminfo")

    def refusing(real):
        def fake_open(path, *args, **kwargs):
            if path == victim:
                raise PermissionError(13, "Permission denied", path)
            return real(path, *args, **kwargs)
        return fake_open
    # the reader opens with os.open (issue 12); builtins.open too, whichever it uses
    monkeypatch.setattr("builtins.open", refusing(open))
    monkeypatch.setattr(os, "open", refusing(os.open))
    with pytest.raises(SysfsError) as info:
        read_topology(str(root))
    assert str(info.value) == "%s: cannot read: Permission denied" % victim


def test_long_content_is_shortened_in_message(tmp_path):
    root = _tree(tmp_path, "vm-single")
    _write(root / NODE / "node0" / "cpulist", "x" * 500)
    with pytest.raises(SysfsError) as info:
        read_topology(str(root))
    assert str(info.value).endswith("got '%s'... (500 characters)" % ("x" * 120))


def test_root_without_sysfs(tmp_path):
    with pytest.raises(SysfsError) as info:
        read_topology(str(tmp_path))
    assert str(info.value) == "%s/%s: directory does not exist (is %s a host root or a sysfs snapshot?)" % (
        tmp_path, CPU, tmp_path)


def test_no_cpu_directories(tmp_path):
    (tmp_path / CPU).mkdir(parents=True)
    with pytest.raises(SysfsError) as info:
        read_topology(str(tmp_path))
    assert str(info.value) == "%s/%s: no cpu<N> directories" % (tmp_path, CPU)


def test_online_cpu_in_no_node(tmp_path):
    """No node lists CPUs 3 and 6 and they have no node link: left out of every node, as
    cadvisor does (the kubelet cannot use them), with a warning."""
    root = _tree(tmp_path, TINY)
    _write(root / NODE / "node1" / "cpulist", "2\n")
    for cpu in (3, 6):
        os.remove(str(root / CPU / ("cpu%d" % cpu) / "node1"))
    warnings = []
    topo = read_topology(str(root), warnings)
    assert topo.node(1).cpus == (2,)
    assert (topo.cpu(3).online, topo.cpu(3).node) == (True, None)
    assert warnings == ["/%s: online CPU(s) 3,6 belong to no NUMA node (no node lists them, no cpuN/nodeM "
                        "link); left out of every node, as cadvisor does (the kubelet cannot use them)" % NODE]


def test_cpu_in_two_nodes(tmp_path):
    root = _tree(tmp_path, TINY)
    _write(root / NODE / "node1" / "cpulist", "0,2-3,6\n")
    with pytest.raises(SysfsError) as info:
        read_topology(str(root))
    assert str(info.value) == "%s/%s/node1: CPU 0 is also listed by node 0" % (root, NODE)


def test_parse_meminfo_units(tmp_path):
    path = tmp_path / "meminfo"
    path.write_text("MemTotal:  100 kB\nHugePages_Total:   7\nHugepagesize: 2048 kB\n")
    assert sysfs.parse_meminfo(str(path)) == {"MemTotal": 102400, "HugePages_Total": 7, "Hugepagesize": 2097152}
