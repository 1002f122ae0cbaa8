# -*- coding: utf-8 -*-
# Copyright: numaguard.kubelet contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The built-in YAML reader against PyYAML on kubelet configuration files as installers write them.

One configuration must read the same on every host: with PyYAML (when the target has it) and
with the standard-library fallback (when it does not). The rule: the fallback gives PyYAML's
value for everything it accepts and refuses the rest with a message that names the line.

The corpus below is written for these tests in the shapes the common installers produce (field
sets, comment styles, quoting and flow style as each tool emits them): kubeadm, kubespray, EKS
(AL2 JSON and AL2023 nodeadm YAML), GKE, OpenShift (MCO-rendered kubelet.conf), Talos, k3s-style
drop-ins; plus encodings (BOM, CRLF) and multi-document files.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._kubelet_config.config import (
    KubeletConfigError,
    parse_config_text,
    parse_yaml,
)

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")


def kubeadm_config():
    with open(os.path.join(FIXTURES, "kubeadm-kubelet-config.yaml"), encoding="utf-8") as handle:
        return handle.read()


#: ``kubeadm init`` output (/var/lib/kubelet/config.yaml); test_kubeletconfig.py reads it too.
KUBEADM = kubeadm_config()

KUBESPRAY = """\
---
# Ansible managed
kind: KubeletConfiguration
apiVersion: kubelet.config.k8s.io/v1beta1
nodeStatusUpdateFrequency: "10s"
failSwapOn: True
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: True
  x509:
    clientCAFile: /etc/kubernetes/ssl/ca.crt
authorization:
  mode: Webhook
staticPodPath: /etc/kubernetes/manifests
cgroupDriver: systemd
containerLogMaxFiles: 5
containerLogMaxSize: 10Mi
maxPods: 110
podPidsLimit: -1
address: 192.168.10.11
readOnlyPort: 0
healthzPort: 10248
healthzBindAddress: 127.0.0.1
kubeletCgroups: /system.slice/kubelet.service
clusterDomain: cluster.local
protectKernelDefaults: true
rotateCertificates: true
clusterDNS:
- 169.254.25.10
kubeReserved:
  cpu: "200m"
  memory: 512Mi
  ephemeral-storage: 1Gi
  pid: "1000"
systemReserved:
  cpu: 500m
  memory: 1Gi
resolvConf: "/run/systemd/resolve/resolv.conf"
eventRecordQPS: 50
shutdownGracePeriod: 60s
shutdownGracePeriodCriticalPods: 20s
cpuManagerPolicy: static
cpuManagerPolicyOptions:
  full-pcpus-only: "true"
reservedSystemCPUs: 0,1
topologyManagerPolicy: single-numa-node
topologyManagerScope: pod
memoryManagerPolicy: Static
reservedMemory:
  - numaNode: 0
    limits:
      memory: 1124Mi
  - numaNode: 1
    limits:
      memory: 500Mi
evictionHard:
  memory.available: 100Mi
  nodefs.available: 10%
  nodefs.inodesFree: 5%
  imagefs.available: 15%
featureGates:
  CPUManagerPolicyAlphaOptions: true
  MemoryQoS: false
tlsCipherSuites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]
"""

EKS_AL2_JSON = """\
{
  "kind": "KubeletConfiguration",
  "apiVersion": "kubelet.config.k8s.io/v1beta1",
  "address": "0.0.0.0",
  "authentication": {
    "anonymous": {"enabled": false},
    "webhook": {"cacheTTL": "2m0s", "enabled": true},
    "x509": {"clientCAFile": "/etc/kubernetes/pki/ca.crt"}
  },
  "authorization": {"mode": "Webhook", "webhook": {"cacheAuthorizedTTL": "5m0s", "cacheUnauthorizedTTL": "30s"}},
  "clusterDomain": "cluster.local",
  "hairpinMode": "hairpin-veth",
  "readOnlyPort": 0,
  "cgroupDriver": "systemd",
  "cgroupRoot": "/",
  "featureGates": {"RotateKubeletServerCertificate": true},
  "protectKernelDefaults": true,
  "serializeImagePulls": false,
  "serverTLSBootstrap": true,
  "tlsCipherSuites": ["TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "TLS_RSA_WITH_AES_256_GCM_SHA384"],
  "clusterDNS": ["172.20.0.10"],
  "maxPods": 58,
  "evictionHard": {"memory.available": "100Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%"},
  "kubeReserved": {"cpu": "90m", "ephemeral-storage": "1Gi", "memory": "893Mi"},
  "systemReservedCgroup": "/system",
  "kubeReservedCgroup": "/runtime",
  "cpuManagerPolicy": "static",
  "topologyManagerPolicy": "restricted"
}
"""

EKS_NODEADM = """\
# /etc/kubernetes/kubelet/config.json.d/40-nodeadm.conf as YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
maxPods: 110
cpuManagerPolicy: static
cpuManagerPolicyOptions: {full-pcpus-only: "true", distribute-cpus-across-numa: "true"}
reservedSystemCPUs: "0-1,32-33"
memoryManagerPolicy: Static
reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}, {numaNode: 1, limits: {memory: 1Gi}}]
systemReserved: {memory: 1Gi, cpu: 1000m}
kubeReserved: {memory: 893Mi, cpu: 90m, ephemeral-storage: 1Gi}
evictionHard: {memory.available: 100Mi}
registerWithTaints:
  - key: example.com/numa
    value: "true"
    effect: NoSchedule
shutdownGracePeriod: 45s
"""

GKE = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: '/etc/srv/kubernetes/pki/ca-certificates.crt'
authorization:
  mode: Webhook
cgroupRoot: /
clusterDNS:
  - 10.24.0.10
clusterDomain: cluster.local
enableDebuggingHandlers: true
evictionHard:
  memory.available: '100Mi'
  nodefs.available: '10%'
  nodefs.inodesFree: '5%'
  pid.available: '10%'
featureGates:
  DisableKubeletCloudCredentialProviders: true
  ExecProbeTimeout: false
  RotateKubeletServerCertificate: true
kernelMemcgNotification: true
kubeReserved:
  cpu: 1060m
  ephemeral-storage: 41Gi
  memory: 3270Mi
maxParallelImagePulls: 2
readOnlyPort: 10255
serializeImagePulls: false
serverTLSBootstrap: true
staticPodPath: /etc/kubernetes/manifests
cpuCFSQuota: true
cpuManagerPolicy: static
topologyManagerPolicy: best-effort
topologyManagerScope: container
podPidsLimit: 4096
"""

OPENSHIFT = """\
kind: KubeletConfiguration
apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  x509:
    clientCAFile: /etc/kubernetes/kubelet-ca.crt
  anonymous:
    enabled: false
cgroupDriver: systemd
cgroupRoot: /
clusterDNS:
  - 172.30.0.10
clusterDomain: cluster.local
containerLogMaxSize: 50Mi
enableSystemLogQuery: true
maxPods: 250
kubeAPIQPS: 50
kubeAPIBurst: 100
podPidsLimit: 4096
protectKernelDefaults: true
rotateCertificates: true
serializeImagePulls: false
staticPodPath: /etc/kubernetes/manifests
systemCgroups: /system.slice
nodeStatusUpdateFrequency: 10s
nodeStatusReportFrequency: 5m
featureGates:
  AlibabaPlatform: true
  CPUManagerPolicyAlphaOptions: false
  "MemoryManager": true
  RotateKubeletServerCertificate: true
serverTLSBootstrap: true
tlsMinVersion: VersionTLS12
tlsCipherSuites:
  - TLS_AES_128_GCM_SHA256
  - TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256
cpuManagerPolicy: static
cpuManagerReconcilePeriod: 5s
reservedSystemCPUs: 0-3
topologyManagerPolicy: single-numa-node
memoryManagerPolicy: Static
reservedMemory:
- limits:
    memory: 1100Mi
  numaNode: 0
- limits:
    memory: 0
  numaNode: 1
systemReserved:
  memory: 500Mi
  ephemeral-storage: 1Gi
kubeReserved:
  memory: 500Mi
evictionHard:
  imagefs.available: 15%
  memory.available: 100Mi
  nodefs.available: 10%
  nodefs.inodesFree: 5%
evictionPressureTransitionPeriod: 0s
shutdownGracePeriod: 0s
"""

TALOS = """\
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: /etc/kubernetes/manifests
staticPodURL: http://127.0.0.1:40463
address: 0.0.0.0
port: 10250
rotateCertificates: true
authentication:
    x509:
        clientCAFile: /etc/kubernetes/pki/ca.crt
    webhook:
        enabled: true
    anonymous:
        enabled: false
authorization:
    mode: Webhook
clusterDomain: cluster.local
clusterDNS:
    - 10.96.0.10
serializeImagePulls: false
failSwapOn: false
systemReserved:
    cpu: 50m
    ephemeral-storage: 256Mi
    memory: 512Mi
    pid: "100"
logging:
    format: json
shutdownGracePeriod: 30s
shutdownGracePeriodCriticalPods: 10s
streamingConnectionIdleTimeout: 5m0s
tlsMinVersion: VersionTLS13
cgroupRoot: /
protectKernelDefaults: true
seccompDefault: true
featureGates: {}
cpuManagerPolicy: static
reservedSystemCPUs: "0"
topologyManagerPolicy: restricted
topologyManagerPolicyOptions:
    prefer-closest-numa-nodes: "true"
"""

K3S_DROPIN = """\
# /var/lib/rancher/k3s/agent/etc/kubelet.conf.d/10-numa.conf
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: "static"      # exclusive cores for Guaranteed pods
reservedSystemCPUs: '0,1'       # housekeeping
topologyManagerPolicy: single-numa-node
topologyManagerPolicyOptions:
  max-allowable-numa-nodes: "16"
featureGates:
  TopologyManagerPolicyBetaOptions: yes
  TopologyManagerPolicyAlphaOptions: no
imageGCHighThresholdPercent: 85
imageGCLowThresholdPercent: 80
...
"""

CORPUS = {
    "kubeadm": KUBEADM,
    "kubespray": KUBESPRAY,
    "eks-al2-json": EKS_AL2_JSON,
    "eks-nodeadm": EKS_NODEADM,
    "gke": GKE,
    "openshift": OPENSHIFT,
    "talos": TALOS,
    "k3s-dropin": K3S_DROPIN,
}
VARIANTS = {
    "as written": lambda text: text,
    "byte-order mark": lambda text: "\ufeff" + text,
    "CRLF line ends": lambda text: text.replace("\n", "\r\n"),
    "second document": lambda text: text + "---\napiVersion: v1\nkind: ConfigMap\n",
    "no final newline": lambda text: text.rstrip("\n"),
}


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_fallback_reads_every_corpus_file_as_pyyaml_does(name, variant):
    if name.endswith("json") and variant == "second document":
        pytest.skip("not JSON any more: a multi-line flow collection, refused by the fallback (see REFUSED)")
    text = VARIANTS[variant](CORPUS[name])
    expected = parse_yaml(text, use_pyyaml=True)
    assert parse_yaml(text, use_pyyaml=False) == expected
    assert expected["kind"] == "KubeletConfiguration"
    assert parse_config_text(text, name) == expected


def test_typing_in_the_corpus_follows_yaml_1_1():
    kubespray = parse_yaml(KUBESPRAY, use_pyyaml=False)
    assert kubespray["failSwapOn"] is True and kubespray["podPidsLimit"] == -1
    assert kubespray["reservedSystemCPUs"] == "0,1"
    assert kubespray["tlsCipherSuites"][1] == "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
    k3s = parse_yaml(K3S_DROPIN, use_pyyaml=False)
    assert k3s["featureGates"] == {"TopologyManagerPolicyBetaOptions": True, "TopologyManagerPolicyAlphaOptions": False}
    assert k3s["cpuManagerPolicy"] == "static" and k3s["reservedSystemCPUs"] == "0,1"
    openshift = parse_yaml(OPENSHIFT, use_pyyaml=False)
    assert openshift["reservedMemory"][1] == {"limits": {"memory": 0}, "numaNode": 1}


def test_only_the_first_document_counts_on_both_readers():
    # the kubelet decodes with sigs.k8s.io/yaml (go-yaml Unmarshal: the first document)
    text = "a: 1\n---\nb: [unterminated\n"
    assert parse_yaml(text, use_pyyaml=True) == parse_yaml(text, use_pyyaml=False) == {"a": 1}
    assert parse_yaml("\ufeff", use_pyyaml=False) is None


# ---- what the fallback refuses: PyYAML reads it (or fails), the fallback names the line -------

REFUSED = [
    ("a: |\n  x\n", "line 1: block scalars"),
    ("a: 'x\n  y'\n", "line 1: unterminated quoted string"),
    ("a: [1,\n  2]\n", "line 1: unterminated flow collection"),
    ("a: &x 1\nb: *x\n", "line 1: anchors, aliases and tags"),
    ("a: !!str 1\n", "line 1: anchors, aliases and tags"),
    ("? a\n: b\n", "line 1: the plain scalar '? a' cannot start with '?'"),
    ("--- a: 1\n", "line 1: content on the '---' line"),
    ("a:\t1\n", "line 1: tab characters outside quoted strings"),
    ("a: b: c\n", "line 1: mapping values are not allowed in the plain scalar 'b: c'"),
    ("a: 1:30\n", "line 1: '1:30' is a YAML 1.1 base-60 number"),
    ("a: 2001-12-14 21:59:43\n", "line 1: '2001-12-14 21:59:43' is a YAML 1.1 timestamp"),
    ("a: 2001-13-45\n", "line 1: '2001-13-45' is not a valid date"),
    ("a: =\n", "line 1: the plain scalar '=' has a special meaning"),
    ("<<: {a: 1}\n", "line 1: the plain scalar '<<' has a special meaning"),
    ("a: 0x_\n", "line 1: '0x_' looks like a number but has no digits"),
    ("a: '@x'\nb: @x\n", "line 2: the plain scalar '@x' cannot start with '@'; quote it"),
    (EKS_AL2_JSON + "---\n", "line 1: unterminated flow collection (multi-line flow collections are not supported)"),
    ("a: [x, , y]\n", "line 1: empty entry"),
    ("a: [x[1]]\n", "line 1: flow indicators inside the plain scalar"),
    ("a: x\x0cy\n", "line 1: the character '\\x0c' is not supported"),
    ("...\na: 1\n", "line 1: document end marker"),
    ("a: 1\na: 2\n", "line 2: duplicate key 'a'"),
]


@pytest.mark.parametrize("text, message", REFUSED)
def test_fallback_refuses_clearly_what_it_does_not_read(text, message):
    with pytest.raises(KubeletConfigError) as info:
        parse_yaml(text, "kubelet.conf", use_pyyaml=False)
    assert str(info.value).startswith("kubelet.conf: ")
    assert message in str(info.value)


@pytest.mark.parametrize("use_pyyaml", [True, False])
@pytest.mark.parametrize("text", ["a: 2001-13-45\n", "a: 0b_\n"])
def test_values_pyyaml_cannot_construct_are_refused_on_both_readers(text, use_pyyaml):
    # PyYAML's constructors raise ValueError there: reported as KubeletConfigError, no traceback
    with pytest.raises(KubeletConfigError):
        parse_yaml(text, "kubelet.conf", use_pyyaml=use_pyyaml)


def test_non_finite_number_keys_become_strings_on_both_readers():
    assert parse_yaml(".inf: 1\n-.inf: 2\n", use_pyyaml=True) == parse_yaml(".inf: 1\n-.inf: 2\n", use_pyyaml=False) \
        == {"inf": 1, "-inf": 2}


# ---- differential: random documents from kubelet-config-like pieces ----------------------------

_KEYS = ["cpuManagerPolicy", "a", "'quoted key'", '"dq"', "1", "yes", "~", "two words", "<<", "0x1F", "1.5",
         ".inf", "a:b", "- a", "? a", "&k a", "featureGates"]
_VALUES = ["", "1", "-1", "+2", "0o7", "017", "0x1f", "0b101", "1_000", "1:30", "1:30.5", "1.5", "-.5", ".5",
           "1e3", "1.5e+3", "._", "0b_", ".inf", "-.INF", ".nan", "yes", "No", "on", "y", "~", "null", "=",
           "@x", "`x", "%x", ",x", "]x", "|", ">", "- x", "? x", ": x", ":x", "-x", "-", "a: b", "a:", "x #c",
           "x#c", "'s''t'", "'open", '"\\u00e9"', '"\\q"', "[1, 2]", "[1, [2, 3]]", "{a: b, c}", "{a: {b: c}}",
           "[a, b", "2001-12-14", "2001-13-45", "2001-12-14 21:59:43.10 -5", "http://x:80/y", "100Mi", "10%",
           "&a 1", "*a", "!!str 1", "1\t", "a\tb", "'x' y", "[]", "{}", "[a,,b]", "{a: b: c}", "[a: b]",
           "0-3,8-11", "static", "single-numa-node"]


def _document(rng):
    lines = []
    for _line in range(rng.randint(1, 6)):
        indent = " " * rng.choice([0, 0, 2, 4])
        roll = rng.random()
        if roll < 0.15:
            lines.append(indent + "- " + rng.choice(_VALUES))
        elif roll < 0.2:
            lines.append(rng.choice(["---", "--- x", "...", "# comment", "", "- - 1"]))
        else:
            value = rng.choice(_VALUES)
            separator = rng.choice([": ", ":  ", ":\t", " : "]) if value else ":"
            lines.append(indent + rng.choice(_KEYS) + separator + value)
    text = "\n".join(lines) + rng.choice(["\n", "", "\r\n"])
    return ("\ufeff" + text) if rng.random() < 0.05 else text


def _read(text, use_pyyaml):
    try:
        return "ok", parse_yaml(text, use_pyyaml=use_pyyaml)
    except KubeletConfigError as exc:
        return "refused", str(exc)


@settings(max_examples=400)
@given(st.integers(min_value=0, max_value=2 ** 32))
def test_fallback_agrees_with_pyyaml_or_refuses(seed):
    text = _document(random.Random(seed))
    fallback = _read(text, False)   # anything but KubeletConfigError fails the test
    pyyaml = _read(text, True)
    if fallback[0] == "ok":
        assert pyyaml == fallback, text
