# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Fresh-process cost (issue 12): what an admission imports, and the stand-ins that avoid heavy
standard-library modules giving the same values as the modules they replace."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._engine import pod as pod_module


@settings(max_examples=200)
@given(st.text())
def test_uuid5_hex_is_uuid5(name):
    assert pod_module._uuid5_hex(name) == uuid.uuid5(uuid.NAMESPACE_URL, name).hex


@settings(max_examples=100)
@given(st.text(min_size=1), st.text(min_size=1))
def test_default_uid_is_uuid5_text(namespace, name):
    expected = str(uuid.uuid5(uuid.NAMESPACE_URL, "numaguard.kubelet/pod/%s/%s" % (namespace, name)))
    assert pod_module._default_uid(namespace, name) == expected


def test_generate_name_suffix():
    manifest = {"apiVersion": "v1", "kind": "Pod", "metadata": {"generateName": "web-", "namespace": "prod"},
                "spec": {"containers": [{"name": "c"}]}}
    pod = pod_module.Pod.from_manifest(manifest)
    assert pod.name == "web-" + uuid.uuid5(uuid.NAMESPACE_URL, "web-").hex[:5]


_ADMISSION = """
import sys
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator
from ansible_collections.numaguard.kubelet.plugins.module_utils._host.topology import CPU, NumaNode, Topology
n = 16
nodes = tuple(NumaNode(id=i, cpus=(2 * i, 2 * i + 1), memory_total_bytes=16 << 30, memory_free_bytes=16 << 30,
                       distances=dict((j, 10 if i == j else 20) for j in range(n))) for i in range(n))
cpus = tuple(CPU(id=c, node=c // 2, core=c, socket=0, die=0, online=True, siblings=(c,), cache_id=c // 2)
             for c in range(2 * n))
config = {"cpuManagerPolicy": "static", "memoryManagerPolicy": "Static", "topologyManagerPolicy": "restricted",
          "topologyManagerScope": "pod", "topologyManagerPolicyOptions": {"max-allowable-numa-nodes": "16"},
          "reservedSystemCPUs": "0", "systemReserved": {"memory": "1Gi"},
          "evictionHard": {"memory.available": "100Mi"},
          "reservedMemory": [{"numaNode": 0, "limits": {"memory": "1124Mi"}}]}
simulator = AdmissionSimulator(Topology(nodes=nodes, cpus=cpus), config)
pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
       "spec": {"containers": [{"name": "c", "image": "x", "resources": {
           "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]}}
result = simulator.admit(simulator.pod_from_manifest(pod))
engine = sorted(sys.modules)
from ansible_collections.numaguard.kubelet.plugins.module_utils._backends import admission_check  # noqa: F401
import json
print(json.dumps({"admitted": result["admitted"], "engine": engine, "backend": sorted(sys.modules)}))
"""

_ENGINE = "ansible_collections.numaguard.kubelet.plugins.module_utils._engine."

#: modules a plain 16-node admission (restricted, pod scope, no devices, no percentage eviction
#: threshold) must not load: each costs a fresh process compile and execution time (issue 12)
_NOT_NEEDED = (
    "uuid", "platform", "hashlib", "json", "fractions", "statistics", "shutil", "tempfile", "random",
    _ENGINE + "cpumanager.mask_table",
    _ENGINE + "cpumanager.cpu_assignment_distributed",
    _ENGINE + "devicemanager",
    _ENGINE + "readmit",
    _ENGINE + "topologymanager.policy_best_effort",
    _ENGINE + "topologymanager.policy_single_numa_node",
    _ENGINE + "topologymanager.scope_container",
)


def test_fresh_admission_imports_only_what_it_uses():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", _ADMISSION], capture_output=True, env=env, check=False)
    assert done.returncode == 0, done.stderr.decode()
    out = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert out["admitted"] is True
    engine = set(out["engine"])
    assert [name for name in _NOT_NEEDED if name in engine] == []
    # the admission_check backend leaves the re-admission code to runs that ask for it, and
    # the checkpoint code to runs with a state file to read
    backend = set(out["backend"])
    assert [name for name in backend if name.endswith((".readmit", ".checkpoint", ".gojson"))] == []


_CONFIG = """
import sys
from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import parse_yaml
start = "yaml" in sys.modules
assert parse_yaml("kind: KubeletConfiguration\\nmaxPods: 10\\n") == {"kind": "KubeletConfiguration", "maxPods": 10}
plain = "yaml" in sys.modules
assert parse_yaml("a: &x 1\\nb: *x\\n") == {"a": 1, "b": 1}  # an alias: the built-in reader refuses it
refused = "yaml" in sys.modules
print(start, plain, refused)
"""


def test_pyyaml_only_for_what_the_builtin_reader_refuses():
    pytest.importorskip("yaml")  # the PyYAML path needs it
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", _CONFIG], capture_output=True, env=env, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().split() == ["False", "False", "True"]


#: what an admission under the default policies (CPU none, memory None, Topology Manager none) must
#: not compile: the static policies, the merges and the state model (issue 12: the usual check_pod
#: fleet host runs the defaults)
_NOT_NEEDED_UNDER_DEFAULTS = (
    "yaml",
    _ENGINE + "cpumanager.policy_static",
    _ENGINE + "cpumanager.policy_options",
    _ENGINE + "memorymanager.static_policy",
    _ENGINE + "memorymanager.validate_state",
    _ENGINE + "memorymanager.machine_state",
    _ENGINE + "memorymanager.reserved",
    _ENGINE + "topologymanager.merge",
    _ENGINE + "topologymanager.hint_sets",
    _ENGINE + "allocation",
    "ansible_collections.numaguard.kubelet.plugins.module_utils._host.resize",
)


def test_default_policies_compile_no_static_policy_and_no_merge():
    script = _ADMISSION.replace("Topology(nodes=nodes, cpus=cpus), config)", "Topology(nodes=nodes, cpus=cpus), {})")
    assert script != _ADMISSION
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env, check=False)
    assert done.returncode == 0, done.stderr.decode()
    out = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert out["admitted"] is True
    assert [name for name in _NOT_NEEDED_UNDER_DEFAULTS if name in set(out["backend"])] == []


#: a start-up verdict (kubelet_rollout's preflight, kubelet_config's plan, reserved_memory) on the
#: same node: the managers are built, no pod is admitted (issue 24)
_STARTUP = _ADMISSION.split("simulator = ", 1)[0].replace(
    "from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.admission import AdmissionSimulator\n", "") + """
from ansible_collections.numaguard.kubelet.plugins.module_utils._engine.startup import startup_verdict
from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.versions import NEWEST_RELEASED, KubeletAssumption
config["topologyManagerPolicy"] = "POLICY"
verdict = startup_verdict(Topology(nodes=nodes, cpus=cpus), config, KubeletAssumption(NEWEST_RELEASED, "test"))
import json
print(json.dumps({"verdict": verdict["verdict"], "modules": sorted(sys.modules)}))
"""


def test_startup_verdict_compiles_no_merge_and_no_pod_model():
    assert "AdmissionSimulator" not in _STARTUP  # no admission code but what the start-up itself needs
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    for policy in ("restricted", "best-effort", "single-numa-node"):
        done = subprocess.run([sys.executable, "-c", _STARTUP.replace("POLICY", policy)], capture_output=True, env=env, check=False)
        assert done.returncode == 0, done.stderr.decode()
        out = json.loads(done.stdout.decode().strip().splitlines()[-1])
        assert out["verdict"] == "starts", policy
        modules = set(out["modules"])
        assert _ENGINE + "topologymanager.policy_" + policy.replace("-", "_") in modules  # the policy was built
        assert [m for m in (_ENGINE + "topologymanager.merge", _ENGINE + "pod") if m in modules] == [], policy
