# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The recommendation (issue 27): workload checks, candidates, start-up drops, the fill, the
ranking, and the files it writes (valid for validate.yml, identical on a second run)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os

import pytest
import yaml

from ansible_collections.numaguard.kubelet.plugins.filter.reserved_memory_check import reserved_memory_check
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.facts import gather
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import Topology
from ansible_collections.numaguard.kubelet.plugins.module_utils._recommend.candidates import (
    DOCUMENTED_RESERVATION,
    generate,
    reserved_cpus,
    sized_reservation,
    startup_errors,
)
from ansible_collections.numaguard.kubelet.plugins.module_utils._recommend.fill import fill_node, is_aligned
from ansible_collections.numaguard.kubelet.plugins.module_utils._recommend.recommend import kubelet_assumption, recommend
from ansible_collections.numaguard.kubelet.plugins.module_utils._recommend.workload import WorkloadError, parse_workload
from ansible_collections.numaguard.kubelet.plugins.module_utils._report.classes import hardware_class
from ansible_collections.numaguard.kubelet.plugins.plugin_utils.recommend_files import load_workload, outputs, render_group_vars
from ansible_collections.numaguard.kubelet.tests.fleet import topologies

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
WORKLOAD = os.path.join(REPO, "playbooks", "examples", "recommend", "workload.yml")
DOCUMENTED = os.path.join(REPO, "playbooks", "examples", "classes", "group_vars")
KUBELET = kubelet_assumption("1.34")


def guaranteed(cpu, memory, name="p"):
    resources = {"cpu": cpu, "memory": memory}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": resources, "limits": resources}}]}}


@pytest.fixture(scope="module")
def facts_of(tmp_path_factory):
    cache = {}

    def get(name):
        if name not in cache:
            root = str(tmp_path_factory.mktemp("recommend-" + name))
            topologies.write_tree(name, root, hostname="h")
            cache[name] = gather(root)
        return cache[name]
    return get


def documented(facts):
    with open(os.path.join(DOCUMENTED, hardware_class(facts)["group"] + ".yml")) as handle:
        return yaml.safe_load(handle)["kubelet_numa_settings"]


# ---- workload ------------------------------------------------------------------------------------

@pytest.mark.parametrize("data, message", [
    ([], "the workload must be a mapping"),
    ({"pods": []}, "pods must be a non-empty list"),
    ({"pods": [{"name": "a", "replicas": 1}]}, r"pods\[0\]: give template"),
    ({"pods": [{"name": "a", "replicas": 0, "template": guaranteed("1", "1Gi")}]}, r"pods\[0\].replicas must be"),
    ({"pods": [{"name": "a", "replicas": True, "template": guaranteed("1", "1Gi")}]}, r"replicas must be a whole number"),
    ({"pods": [{"name": "a", "template": guaranteed("1", "1Gi")}, {"name": "a", "template": guaranteed("1", "1Gi")}]},
     "name 'a' is used twice"),
    ({"pods": [{"name": "a", "template": {"kind": "Service", "spec": {}}}]}, "kind 'Service' has no pod"),
    ({"pods": [{"name": "a", "template": guaranteed("1", "1Gi"), "size": 2}]}, r"unknown key\(s\) size"),
    ({"pods": [{"name": "a", "template": guaranteed("1", "1Gi")}], "objective": "fast"}, "objective must be one of"),
    ({"pods": [{"name": "a", "template": guaranteed("1", "1Gi")}], "candidates": {"cpuManagerPolicy": ["dynamic"]}},
     r"candidates.cpuManagerPolicy: 'dynamic' is not one of none, static"),
    ({"pods": [{"name": "a", "template": guaranteed("1", "1Gi")}], "candidates": {"hugepages": ["1Gi"]}},
     "candidates.hugepages is not a dimension"),
    ({"pods": [{"name": "a", "template": guaranteed("1", "1Gi")}], "extra": 1}, r"unknown key\(s\) extra"),
])
def test_workload_errors_name_the_field(data, message):
    with pytest.raises(WorkloadError, match=message):
        parse_workload(data, "w.yml")


def test_example_workload_has_four_shapes_and_reads_template_file():
    workload = load_workload(WORKLOAD)
    assert [(s["name"], s["replicas"]) for s in workload.shapes] == [("db", 4), ("api", 12), ("batch", 8), ("web", 20)]
    assert workload.shapes[1]["template"]["metadata"]["name"] == "api"  # from api-pod.yml
    assert workload.shapes[2]["template"]["kind"] == "Pod"  # the Job's pod template
    assert workload.objective == "aligned" and workload.kubelet_version == "1.34"


def test_template_file_errors(tmp_path):
    path = tmp_path / "w.yml"
    path.write_text("pods:\n  - {name: a, template_file: missing.yml}\n")
    with pytest.raises(WorkloadError, match=r"pods\[0\].template_file: cannot read .*missing.yml"):
        load_workload(str(path))


def test_invalid_pod_template_is_named(facts_of):
    workload = parse_workload({"pods": [{"name": "bad", "template": guaranteed("-1", "1Gi")}]})
    with pytest.raises(WorkloadError, match=r"pods\[bad\].template"):
        recommend({"x": facts_of("vm-single")}, workload)


# ---- candidates ----------------------------------------------------------------------------------

def test_sized_reservation_tiers():
    assert sized_reservation(1, 4 << 30) == {"kubeReserved": {"cpu": "60m", "memory": "1024Mi"}}
    # 4 CPUs: 60 + 10 + 2 x 5 millicores; 16 GiB: 1Gi + 0.8Gi + 0.8Gi
    assert sized_reservation(4, 16 << 30) == {"kubeReserved": {"cpu": "80m", "memory": "2663Mi"}}
    # 96 CPUs: 80m + 92 x 2.5m = 310m; 384 GiB: 2.6Gi + 6% of 112Gi + 2% of 256Gi
    assert sized_reservation(96, 384 << 30)["kubeReserved"]["cpu"] == "310m"


@pytest.mark.parametrize("name", sorted(topologies.TOPOLOGIES))
def test_every_bundled_class_gets_at_least_50_candidates_that_start(facts_of, name):
    facts = facts_of(name)
    topology = Topology.from_facts(facts)
    candidates, dropped = generate(topology, facts["system"]["memory_total_bytes"], {}, KUBELET)
    assert len(candidates) >= 50, (name, len(candidates), dropped[:2])
    assert len(set(repr(sorted(c["settings"].items())) for c in candidates)) == len(candidates)
    for candidate in candidates[::17]:
        assert startup_errors(candidate["settings"], topology, KUBELET) == []


def test_candidates_the_kubelet_refuses_are_dropped_with_its_reason(facts_of):
    facts = facts_of("gpu-sriov")
    topology = Topology.from_facts(facts)
    narrowed = {"topologyManagerPolicy": ["single-numa-node", "restricted"], "topologyManagerScope": ["pod"],
                "cpuManagerPolicy": ["static"], "cpuManagerPolicyOptions": [{}, {"align-by-socket": "true"}],
                "reservedSystemCPUs": ["first_core"], "memoryManagerPolicy": ["None"]}
    candidates, dropped = generate(topology, facts["system"]["memory_total_bytes"], narrowed, KUBELET)
    assert [c["settings"]["topologyManagerPolicy"] for c in candidates] == ["single-numa-node", "restricted"]
    assert [c["id"] for c in candidates] == ["c001", "c002"]
    assert len(dropped) == 2 and all(d["knobs"]["cpuManagerPolicyOptions"] == {"align-by-socket": "true"} for d in dropped)
    # the kubelet's words: an alpha option without its gate; and single-numa-node with align-by-socket
    assert all('Alpha-level Options not enabled, but option "align-by-socket" provided' in d["errors"][0] for d in dropped)
    assert "Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket" in dropped[0]["errors"][1]


def test_more_than_eight_nodes_get_max_allowable_numa_nodes(facts_of):
    facts = facts_of("big16")
    topology = Topology.from_facts(facts)
    narrowed = {"topologyManagerPolicy": ["restricted"], "topologyManagerScope": ["pod"], "cpuManagerPolicy": ["none"],
                "memoryManagerPolicy": ["None"]}
    candidates, dropped = generate(topology, facts["system"]["memory_total_bytes"], narrowed, KUBELET)
    assert dropped == [] and candidates[0]["settings"]["topologyManagerPolicyOptions"] == {"max-allowable-numa-nodes": "16"}
    # the documented default of this class sets it (issue 26); without it the kubelet would not start
    assert startup_errors(documented(facts), topology, KUBELET) == []
    bare = copy.deepcopy(documented(facts))
    bare.pop("topologyManagerPolicyOptions", None)
    errors = startup_errors(bare, topology, KUBELET)
    assert errors and "unsupported on machines with more than 8 NUMA Nodes (this host has 16)" in errors[0]


@pytest.mark.parametrize("name", ["gpu-sriov", "vm-single"])
def test_documented_reservation_is_the_documented_per_class_one(facts_of, name):
    settings = documented(facts_of(name))
    assert dict((k, settings[k]) for k in DOCUMENTED_RESERVATION) == DOCUMENTED_RESERVATION


def test_reserved_cpu_strategies(facts_of):
    topology = Topology.from_facts(facts_of("gpu-sriov"))  # 2 x 8 cores HT: core 0 = CPUs 0,16; node 1 starts at 8
    assert reserved_cpus(topology, "kubelet") == ""
    assert reserved_cpus(topology, "first_core") == "0,16"
    assert reserved_cpus(topology, "core_per_node") == "0,8,16,24"


# ---- fill ----------------------------------------------------------------------------------------

def test_fill_counts_the_replicas_a_full_node_rejects(facts_of):
    topology = Topology.from_facts(facts_of("vm-single"))  # 4 CPUs
    settings = {"cpuManagerPolicy": "static", "reservedSystemCPUs": "0", "topologyManagerPolicy": "none",
                "memoryManagerPolicy": "None"}
    shapes = [{"name": "two", "replicas": 5, "template": guaranteed("1", "1Gi")}]
    result = fill_node(topology, settings, shapes, KUBELET)
    assert (result["offered"], result["admitted"], result["rejected"]) == (5, 3, 2)
    # the CPU manager cannot pin a fourth CPU: its Allocate fails inside the Topology Manager admit handler
    assert result["rejected_by_reason"] == {"UnexpectedAdmissionError": 2}
    assert "not enough cpus available" in result["shapes"][0]["first_rejection"]
    assert result["aligned"] == 0  # topologyManagerPolicy none aligns nothing
    assert result["stranded"]["per_node"]["0"]["cpus"] == 0
    assert result["stranded"]["per_node"]["0"]["memory"] is None  # Memory Manager None: not tracked per node


def test_is_aligned_needs_a_preferred_merge_and_each_container_on_one_set():
    admitted = {"admitted": True, "qos_class": "Guaranteed", "merges": [{"merged_hint": {"preferred": True}}],
                "containers": [{"cpu_numa_nodes": [1], "memory_blocks": [{"numa_affinity": [1]}], "device_numa_nodes": {}}]}
    alignment = {"aligned": [{"resource": "cpu", "numa_nodes": [1]}, {"resource": "memory", "numa_nodes": [1]}],
                 "not_aligned": []}
    assert is_aligned(admitted, alignment)
    split = copy.deepcopy(admitted)
    split["containers"][0]["memory_blocks"][0]["numa_affinity"] = [0, 1]
    assert not is_aligned(split, alignment)
    not_preferred = copy.deepcopy(admitted)
    not_preferred["merges"][0]["merged_hint"]["preferred"] = False  # best-effort admitted a wider set
    assert not is_aligned(not_preferred, alignment)
    assert not is_aligned(admitted, dict(alignment, not_aligned=[{"resource": "claim gpu", "why": "DRA"}]))
    assert not is_aligned(dict(admitted, qos_class="Burstable"), alignment)


# ---- recommendation ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def gpu_report(facts_of):
    facts = facts_of("gpu-sriov")
    group = hardware_class(facts)["group"]
    return recommend({group: facts}, load_workload(WORKLOAD), baselines={group: documented(facts)})


def test_winner_admits_more_aligned_pods_than_the_documented_defaults(gpu_report):
    model = gpu_report["classes"][0]
    winner, baseline = model["winner"]["result"], model["baseline"]["result"]
    # gpu-sriov (2 x 8 cores HT, 2 x 64 GiB) with the example workload (db x4, api x12, batch x8, web x20):
    # the documented defaults (restricted/container, static, Static) admit 7 pods, 5 of them aligned
    assert (baseline["admitted"], baseline["aligned"]) == (7, 5)
    assert winner["aligned"] == 8 and winner["aligned"] > baseline["aligned"]
    assert model["counts"]["evaluated"] >= 50
    assert "documented defaults: 7 admitted, 5 aligned" in model["line"]
    assert model["line"].startswith(model["class"] + ": %d candidate(s)" % model["counts"]["evaluated"])


def test_ranking_is_by_aligned_then_admitted(gpu_report):
    results = [c["result"] for c in gpu_report["classes"][0]["candidates"]]
    keys = [(-r["aligned"], -r["admitted"]) for r in results]
    assert keys == sorted(keys)


def test_written_group_vars_pass_validate_and_the_startup_checks(gpu_report, facts_of):
    facts = facts_of("gpu-sriov")
    model = gpu_report["classes"][0]
    text = render_group_vars(model, "workload.yml")
    settings = yaml.safe_load(text)["kubelet_numa_settings"]
    assert settings == model["winner"]["settings"]
    result = reserved_memory_check(facts, kubelet_config=settings, errors="report", kubelet_version="1.34")
    assert result["valid"], result["errors"]
    assert startup_errors(settings, Topology.from_facts(facts), KUBELET) == []


def test_same_input_same_files(gpu_report, facts_of):
    facts = facts_of("gpu-sriov")
    group = hardware_class(facts)["group"]
    again = recommend({group: facts}, load_workload(WORKLOAD), baselines={group: documented(facts)})
    first, second = outputs(gpu_report, "workload.yml"), outputs(again, "workload.yml")
    assert sorted(first) == ["classes.yml", "group_vars/%s.yml" % group, "recommend.html", "recommend.json"]
    assert first == second
    assert "<table>" in first["recommend.html"] and "free for exclusive use" in first["recommend.html"]


def test_objective_admitted_ranks_admitted_first(facts_of):
    workload = parse_workload({"objective": "admitted", "kubelet_version": "1.34",
                               "candidates": {"reservation": ["documented"], "memoryManagerPolicy": ["None"]},
                               "pods": [{"name": "g", "replicas": 3, "template": guaranteed("1", "1Gi")},
                                        {"name": "b", "replicas": 4, "template": {"spec": {"containers": [
                                            {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}]}}}]})
    report = recommend({"vm": facts_of("vm-single")}, workload)
    results = [c["result"] for c in report["classes"][0]["candidates"]]
    keys = [(-r["admitted"], -r["aligned"]) for r in results]
    assert keys == sorted(keys)
    assert report["lines"][0].startswith("vm: ")
