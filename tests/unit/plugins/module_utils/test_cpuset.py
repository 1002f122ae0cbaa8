import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.cpuset import InvalidCPUSet, format_cpuset, parse_cpuset


@pytest.mark.parametrize("text, cpus", [
    ("", set()),
    ("\n", set()),
    ("0", {0}),
    ("0-3,8-11\n", {0, 1, 2, 3, 8, 9, 10, 11}),
    (" 1,3 , 5-6 ", {1, 3, 5, 6}),
    ("4-4", {4}),
])
def test_parse(text, cpus):
    assert parse_cpuset(text) == frozenset(cpus)


@pytest.mark.parametrize("cpus, text", [
    (set(), ""), ({0, 1}, "0-1"), ({0, 1, 2, 5}, "0-2,5"), ({7, 3, 4}, "3-4,7"),
])
def test_format(cpus, text):
    assert format_cpuset(cpus) == text


@pytest.mark.parametrize("text, fragment", [
    ("3-1", "range '3-1' is reversed (3 > 1)"),
    ("0,,2", "cannot parse ''"),
    ("a-b", "cannot parse 'a-b'"),
    ("-1", "cannot parse '-1'"),
    ("1-", "cannot parse '1-'"),
])
def test_parse_errors(text, fragment):
    with pytest.raises(InvalidCPUSet) as err:
        parse_cpuset(text)
    assert fragment in str(err.value)
    assert repr(text) in str(err.value)


@given(st.sets(st.integers(min_value=0, max_value=1023)))
def test_round_trip(cpus):
    assert parse_cpuset(format_cpuset(cpus)) == frozenset(cpus)
    assert format_cpuset(parse_cpuset(format_cpuset(cpus))) == format_cpuset(cpus)
