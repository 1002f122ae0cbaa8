import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.numaguard.kubelet.plugins.filter.k8s_quantity import k8s_quantity
from ansible_collections.numaguard.kubelet.plugins.filter.k8s_quantity_bytes import k8s_quantity_bytes
from ansible_collections.numaguard.kubelet.plugins.filter.k8s_quantity_cmp import k8s_quantity_cmp
from ansible_collections.numaguard.kubelet.plugins.filter.k8s_quantity_sum import k8s_quantity_sum


def test_bytes():
    assert k8s_quantity_bytes("1Gi") == 1 << 30
    assert k8s_quantity_bytes(2048) == 2048
    assert k8s_quantity_bytes(2048.0) == 2048


@pytest.mark.parametrize("value, fmt, expected", [
    ("1024Mi", None, "1Gi"), (5473566720, None, "5220Mi"), ("1.5Gi", None, "1536Mi"),
    ("1000", "BinarySI", "1k"), ("1Gi", "DecimalSI", "1073741824"), ("1k", "DecimalExponent", "1e3"),
    ("0.5", None, "500m"),
])
def test_canonical(value, fmt, expected):
    assert k8s_quantity(value, fmt) == expected


def test_cmp_and_sum():
    assert k8s_quantity_cmp("1Gi", "1024Mi") == 0
    assert k8s_quantity_cmp("1G", "1Gi") == -1
    assert k8s_quantity_sum(["4Gi", "1Gi", "100Mi"]) == "5220Mi"
    assert k8s_quantity_sum([]) == "0"


@pytest.mark.parametrize("call, message", [
    (lambda: k8s_quantity_bytes("1K"), "numaguard.kubelet.k8s_quantity_bytes: input: quantity '1K' has an unknown suffix 'K'"),
    (lambda: k8s_quantity("1Gi", "Binary"), "numaguard.kubelet.k8s_quantity: format 'Binary' is not one of"),
    (lambda: k8s_quantity_cmp("1Gi", "x"), "numaguard.kubelet.k8s_quantity_cmp: other: quantity 'x'"),
    (lambda: k8s_quantity_sum(["1Gi", "1_000"]), "numaguard.kubelet.k8s_quantity_sum: item 1: quantity '1_000'"),
    (lambda: k8s_quantity_sum("1Gi"), "input must be a list"),
    (lambda: k8s_quantity_bytes(1.5), "is a float"),
])
def test_errors(call, message):
    with pytest.raises(AnsibleFilterError) as err:
        call()
    assert message in str(err.value)
