"""Quantities: every suffix, exponents, rounding (Quantity.Value / MilliValue)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from kubeberth.model import QuantityError, milli_value, parse_quantity, value
from kubeberth.model.quantity import format_milli_cpu

# (text, value rounded up, milli value rounded up)
CASES = [
    ("0", 0, 0),
    ("1", 1, 1000),
    ("100m", 1, 100),
    ("1500m", 2, 1500),
    ("0.5", 1, 500),
    ("1.5", 2, 1500),
    (".5", 1, 500),
    ("5.", 5, 5000),
    ("+3", 3, 3000),
    ("1n", 1, 1),
    ("1000000000n", 1, 1000),
    ("1u", 1, 1),
    ("1000u", 1, 1),
    ("1001u", 1, 2),
    ("1k", 1000, 1_000_000),
    ("1M", 10**6, 10**9),
    ("1G", 10**9, 10**12),
    ("1T", 10**12, 10**15),
    ("1P", 10**15, 10**18),
    ("1E", 10**18, 10**21),
    ("1Ki", 1024, 1024_000),
    ("1Mi", 2**20, 2**20 * 1000),
    ("1Gi", 2**30, 2**30 * 1000),
    ("1Ti", 2**40, 2**40 * 1000),
    ("1Pi", 2**50, 2**50 * 1000),
    ("1Ei", 2**60, 2**60 * 1000),
    ("1.5Gi", 1610612736, 1610612736000),
    ("0.1Ki", 103, 102400),
    ("1e3", 1000, 1_000_000),
    ("1E3", 1000, 1_000_000),
    ("1e+3", 1000, 1_000_000),
    ("1.5e3", 1500, 1_500_000),
    ("1e-3", 1, 1),
    ("12e-1", 2, 1200),
    ("1e0", 1, 1000),
    ("1.0001", 2, 1001),
    ("0.0001", 1, 1),
    ("1.0005m", 1, 2),
    ("123456789012345678901234567890", 123456789012345678901234567890,
     123456789012345678901234567890000),
    ("123456789012345678901234567890.0001", 123456789012345678901234567891,
     123456789012345678901234567890001),
]


@pytest.mark.parametrize(("text", "want_value", "want_milli"), CASES, ids=[c[0] for c in CASES])
def test_value_and_milli_value(text: str, want_value: int, want_milli: int) -> None:
    assert value(text) == want_value
    assert milli_value(text) == want_milli


@pytest.mark.parametrize(("raw", "want"), [
    (2, Decimal(2)),
    (0.25, Decimal("0.25")),
    (Decimal("1.5"), Decimal("1.5")),
    ("2Ki", Decimal(2048)),
], ids=["int", "float", "decimal", "str"])
def test_parse_yaml_scalars(raw: object, want: Decimal) -> None:
    assert parse_quantity(raw) == want


@pytest.mark.parametrize("bad", [
    "", "abc", "1Kb", "1K", "1kk", "1k1", "1e", "1e1.5", "1.2.3", "Ki", "1 Ki", "m", "--1", "1ki",
    "1Ki1", None, True, [1], {"a": 1},
])
def test_invalid_quantities(bad: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(bad)


def test_exponent_out_of_range_is_an_error() -> None:
    with pytest.raises(QuantityError):
        value("1e99999999999999999999")


def test_format_milli_cpu() -> None:
    assert format_milli_cpu(2000) == "2"
    assert format_milli_cpu(1500) == "1500m"
