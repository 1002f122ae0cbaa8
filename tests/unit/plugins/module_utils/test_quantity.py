"""Quantity semantics, checked against apimachinery's own test tables (resource/quantity_test.go)."""

import operator
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.numaguard.kubelet.plugins.module_utils._k8s.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    InvalidQuantity,
    Quantity,
    format_bytes,
    parse_quantity,
    quantity_bytes,
)


def exact(q):
    num, den = q.as_fraction()
    return Fraction(num, den)


# input, exact value, format (apimachinery TestQuantityParse)
PARSE = [
    ("0", 0, DECIMAL_SI), ("0n", 0, DECIMAL_SI), ("0Ki", 0, BINARY_SI), ("0T", 0, DECIMAL_SI),
    ("1", 1, DECIMAL_SI), ("1Ki", 1024, BINARY_SI), ("7Mi", 7 << 20, BINARY_SI),
    ("6Gi", 6 << 30, BINARY_SI), ("5Ti", 5 << 40, BINARY_SI), ("4Pi", 4 << 50, BINARY_SI),
    ("3Ei", 3 << 60, BINARY_SI), ("5n", Fraction(5, 10 ** 9), DECIMAL_SI),
    ("4u", Fraction(4, 10 ** 6), DECIMAL_SI), ("3m", Fraction(3, 1000), DECIMAL_SI),
    ("50k", 50000, DECIMAL_SI), ("7M", 7 * 10 ** 6, DECIMAL_SI), ("300T", 3 * 10 ** 14, DECIMAL_SI),
    ("1E", 10 ** 18, DECIMAL_SI), ("1E-3", Fraction(1, 1000), DECIMAL_EXPONENT),
    ("1e3", 1000, DECIMAL_EXPONENT), ("1E18", 10 ** 18, DECIMAL_EXPONENT),
    ("100.035k", 100035, DECIMAL_SI), ("0.0005k", Fraction(1, 2), DECIMAL_SI),
    ("0.5e-2", Fraction(5, 1000), DECIMAL_EXPONENT), ("1.3E+6", 1300000, DECIMAL_EXPONENT),
    ("6.987654321G", 6987654321, DECIMAL_SI), ("1.01E", 101 * 10 ** 16, DECIMAL_SI),
    # things that saturate or round (away from zero, to 1n)
    ("3.001n", Fraction(4, 10 ** 9), DECIMAL_SI), ("1.1E-9", Fraction(2, 10 ** 9), DECIMAL_EXPONENT),
    ("0.0000000001", Fraction(1, 10 ** 9), DECIMAL_SI), ("0.9n", Fraction(1, 10 ** 9), DECIMAL_SI),
    ("0.00000012345", Fraction(124, 10 ** 9), DECIMAL_SI),
    ("9Ei", (1 << 63) - 1, BINARY_SI), ("9223372036854775807Ki", (1 << 63) - 1, BINARY_SI),
    ("12E", 12 * 10 ** 18, DECIMAL_SI),
    ("100.035Ki", Fraction(10243584, 100), BINARY_SI), ("0.5Mi", 1 << 19, BINARY_SI),
    ("0.05Gi", Fraction(536870912, 10), BINARY_SI),
    # things written by trolls
    ("0.000000000001Ki", Fraction(2, 10 ** 9), DECIMAL_SI), (".001", Fraction(1, 1000), DECIMAL_SI),
    ("1.", 1, DECIMAL_SI), ("1.G", 10 ** 9, DECIMAL_SI), (".", 0, DECIMAL_SI), ("-.", 0, DECIMAL_SI),
    (5, 5, DECIMAL_SI), (1.5, Fraction(3, 2), DECIMAL_SI),
]


@pytest.mark.parametrize("text, value, fmt", PARSE)
def test_parse_table(text, value, fmt):
    q = parse_quantity(text)
    assert exact(q) == Fraction(value)
    assert q.format == fmt
    if isinstance(text, str) and text not in (".", "-.") and not text.startswith("9"):
        neg = parse_quantity("-" + text)
        assert exact(neg) == -Fraction(value)
        assert exact(parse_quantity("+" + text)) == Fraction(value)


# input, canonical string (TestQuantityString, TestQuantityParseEmit and kubelet-typical values)
CANONICAL = [
    ("1Gi", "1Gi"), ("1024Mi", "1Gi"), ("307200Ki", "300Mi"), ("1025024Mi", "1001Gi"), ("5", "5"),
    ("1000M", "1G"), ("0.001T", "1G"), ("1000u", "1m"), ("1.08", "1080m"), ("1080000000n", "1080m"),
    (".001e12", "1e9"), ("0.001e0", "1e-3"), ("1000e-12", "1e-9"), ("80e-3", "80e-3"), ("00", "0"),
    (".001Ki", "1024m"), (".000001Ki", "1024u"), (".000000001Ki", "1024n"), (".000000000001Ki", "2n"),
    ("1.5Gi", "1536Mi"), ("5220Mi", "5220Mi"), ("2148Mi", "2148Mi"), ("1536", "1536"),
    ("0.5", "500m"), ("1025", "1025"), ("1234567M", "1234567M"), ("-1Gi", "-1Gi"), ("-0", "0"),
    ("1e30", "1e30"), ("1000E", "1e21"), ("0.1m", "100u"), ("0.5Ki", "512"), ("1.5Ki", "1536"),
]


@pytest.mark.parametrize("text, canonical", CANONICAL)
def test_canonical(text, canonical):
    assert str(parse_quantity(text)) == canonical


@pytest.mark.parametrize("text", [
    "1.1.M", "1+1.0M", "0.1mi", "0.1am", "aoeu", ".5i", "1i", "-3.01i", "-3.01e-", " 1", "1 ",
    "", "1K", "1_000", "NaN", "1.5.5", "e", "1KiB", "1kb", "1e", "++1", "1Gi ", "0x10", "１",
])
def test_rejected(text):
    with pytest.raises(InvalidQuantity) as err:
        parse_quantity(text)
    assert repr(text) in str(err.value)


def test_rejected_messages():
    with pytest.raises(InvalidQuantity, match=r"quantity '1K' has an unknown suffix 'K'"):
        parse_quantity("1K")
    with pytest.raises(InvalidQuantity, match=r"quantity '' is empty"):
        parse_quantity("")
    with pytest.raises(InvalidQuantity, match=r"leading or trailing whitespace"):
        parse_quantity(" 1")
    with pytest.raises(InvalidQuantity, match=r"must be a string or a number, got True"):
        parse_quantity(True)
    with pytest.raises(InvalidQuantity, match=r"not a finite number"):
        parse_quantity(float("nan"))
    with pytest.raises(InvalidQuantity, match=r"exponent outside the supported range"):
        parse_quantity("1e999999")


@pytest.mark.parametrize("text, value, milli", [
    ("1Gi", 1 << 30, 1000 << 30), ("1.5", 2, 1500), ("-1.5", -2, -1500), ("100m", 1, 100),
    ("0.1m", 1, 1), ("1n", 1, 1), ("0", 0, 0), ("5220Mi", 5473566720, 5473566720000),
])
def test_value_rounds_away_from_zero(text, value, milli):
    q = parse_quantity(text)
    assert q.value() == value
    assert q.milli_value() == milli


def test_arithmetic_and_format_inheritance():
    total = parse_quantity("4Gi") + parse_quantity("1Gi") + parse_quantity("100Mi")
    assert str(total) == "5220Mi" and total.value() == 5473566720
    assert str(parse_quantity("0") + parse_quantity("100m")) == "100m"  # zero takes the other's format
    assert str(parse_quantity("1Gi") - parse_quantity("0")) == "1Gi"
    assert str(parse_quantity("0") - parse_quantity("1Gi")) == "-1Gi"
    assert (parse_quantity("10") - parse_quantity("1")).format == DECIMAL_SI
    assert (parse_quantity("10Ki") - parse_quantity("1")).format == BINARY_SI
    assert str(operator.neg(parse_quantity("9.01"))) == "-9010m"


def test_comparisons():
    assert parse_quantity("10000T") > parse_quantity("100Gi")
    assert parse_quantity("1Gi") == parse_quantity("1024Mi")
    assert parse_quantity("1G") != parse_quantity("1Gi")
    assert parse_quantity("50m").cmp(parse_quantity("100m")) == -1
    assert len({parse_quantity("1Gi"), parse_quantity("1024Mi")}) == 1
    assert parse_quantity("1Gi").__eq__("1Gi") is NotImplemented


def test_helpers():
    assert quantity_bytes("2148Mi") == 2252341248
    assert format_bytes(3 << 30) == "3Gi"
    assert format_bytes(2252341248) == "2148Mi"
    assert format_bytes(161061273600) == "150Gi"
    assert format_bytes(1000) == "1k"  # below 1024 a BinarySI value prints as DecimalSI
    assert str(Quantity.from_int(1000, DECIMAL_SI)) == "1k"
    with pytest.raises(InvalidQuantity):
        Quantity.from_int("1")
    q = parse_quantity("1Gi")
    with pytest.raises(AttributeError):
        q._mantissa = 3


mantissas = st.integers(min_value=-(10 ** 20), max_value=10 ** 20)
exponents = st.integers(min_value=-9, max_value=20)
formats = st.sampled_from([DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT])


@settings(max_examples=300)
@given(mantissas, exponents, formats)
def test_canonical_round_trip(mantissa, exponent, fmt):
    q = Quantity(mantissa, exponent, fmt)
    if fmt == BINARY_SI and abs(exact(q)) > (1 << 63) - 1:
        return  # parsing caps BinarySI at 2**63-1, as apimachinery does
    text = str(q)
    again = parse_quantity(text)
    assert again == q
    # A BinarySI value that is no multiple of 1024 prints in decimal and re-parses as DecimalSI
    # (as in apimachinery), so the canonical form is stable from the first re-parse on.
    assert str(parse_quantity(str(again))) == str(again)
    if fmt != BINARY_SI:
        assert str(again) == text


@settings(max_examples=300)
@given(st.integers(min_value=0, max_value=1 << 62))
def test_bytes_round_trip(n):
    assert quantity_bytes(format_bytes(n)) == n


@settings(max_examples=300)
@given(mantissas, exponents, mantissas, exponents)
def test_ordering_matches_exact_values(m1, e1, m2, e2):
    a, b = Quantity(m1, e1), Quantity(m2, e2)
    assert (a < b) == (exact(a) < exact(b))
    assert (a == b) == (exact(a) == exact(b))
    assert exact(a + b) == exact(a) + exact(b)
    assert exact(a - b) == exact(a) - exact(b)


@pytest.mark.parametrize("text, expected", [
    ("0", 0),
    ("1Gi", 1 << 30),
    ("-5", -5),
    ("1.5", None),           # not whole: AsInt64 refuses, Value() would round
    ("100m", None),
    # AsInt64 fails by representation (resource/quantity.go ParseQuantity + int64Amount.AsInt64):
    ("1000m", None),          # int64Amount{1000, -3}: a negative scale is refused
    ("1.0", None),            # int64Amount{10, -1}
    ("1073741824000m", None),
    ("1.5Gi", None),          # binary suffix with a fraction: inf.Dec (slow path)
    ("0.5Gi", None),
    ("1.0Gi", None),
    ("1024.0Mi", None),
    ("100Ti", None),          # binary precision estimate < 0: inf.Dec
    ("1Ti", 1 << 40),
    ("1.5G", 1500000000),     # int64Amount{15, 8}: positive scale is fine
    ("1.5e3", 1500),
    ("123456789012345678", 123456789012345678),   # 18 digits: fast path
    ("1234567890123456789", None),                # 19 significant digits: inf.Dec
    ("9223372036854775807", None),
    ("-9223372036854775808", None),
    ("9E", 9 * 10 ** 18),
    ("10E", None),            # positive scale overflowing int64
])
def test_as_int64_follows_apimachinery_representation(text, expected):
    assert Quantity.parse(text).as_int64() == expected


def test_sums_keep_go_int64_amounts_for_kubelet_messages():
    total = Quantity.parse("1Gi") + Quantity.parse("1G")
    assert total.go_struct() == "{{2073741824 0} {<nil>}  BinarySI}"
    assert (Quantity.parse("11Gi") - Quantity.parse("22Gi")).go_struct() == "{{-11811160064 0} {<nil>}  BinarySI}"
    assert (Quantity.parse("1.5Gi") + Quantity.parse("1Gi")).go_struct() is None
    assert Quantity.from_int(4).go_struct() == "{{4 0} {<nil>}  BinarySI}"
