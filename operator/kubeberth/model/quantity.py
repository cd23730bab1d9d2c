"""Kubernetes resource quantities ("100m", "1Gi", "1e3", "0.5").

Quantities are parsed exactly (Decimal) and rounded the way the API
machinery rounds them: `value` rounds up to a whole unit, `milli_value`
rounds up to a whole thousandth.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation, localcontext
from functools import lru_cache

from .errors import ModelError

_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
}
_PATTERN = re.compile(
    r"^(?P<num>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?$"
)


class QuantityError(ModelError):
    """A resource quantity that cannot be parsed (parse_quantity, quantity_value, milli_value)."""


@lru_cache(maxsize=4096)
def _parse_str(text: str) -> Decimal:
    match = _PATTERN.match(text.strip())
    if not match:
        raise QuantityError(f"invalid quantity {text!r}: expected a number with an optional suffix "
                            "(m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or an exponent like e3)")
    suffix = match["suffix"] or ""
    with localcontext() as ctx:
        ctx.prec = 60
        number = Decimal(match["num"])
        if suffix in _BINARY:
            return number * _BINARY[suffix]
        if len(suffix) > 1 and suffix[0] in ("e", "E"):  # "E" alone is exa
            try:
                return number.scaleb(int(suffix[1:]))
            except (InvalidOperation, OverflowError) as exc:
                raise QuantityError(f"invalid quantity {text!r}: exponent out of range") from exc
        return number * _DECIMAL[suffix]


def parse_quantity(value: object) -> Decimal:
    """Parse a quantity as it appears in YAML: a string, an int or a float."""
    if isinstance(value, bool) or value is None:
        raise QuantityError(f"invalid quantity {value!r}")
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value))
    if isinstance(value, str):
        return _parse_str(value)
    raise QuantityError(f"invalid quantity {value!r}: not a string or number")


def _ceil(d: Decimal) -> int:
    whole = int(d)
    return whole + 1 if d > whole else whole


def value(q: object) -> int:
    """The quantity in whole units, rounded up (Quantity.Value)."""
    if type(q) is str:
        return _value_str(q)
    return _ceil(parse_quantity(q))


def milli_value(q: object) -> int:
    """The quantity in thousandths, rounded up (Quantity.MilliValue)."""
    if type(q) is str:
        return _milli_value_str(q)
    return _milli(parse_quantity(q))


# The same few strings ("100m", "500Mi", "4", "32Gi") come with every pod and node of a cluster.
@lru_cache(maxsize=4096)
def _value_str(text: str) -> int:
    return _ceil(_parse_str(text))


@lru_cache(maxsize=4096)
def _milli_value_str(text: str) -> int:
    return _milli(_parse_str(text))


def _milli(d: Decimal) -> int:
    with localcontext() as ctx:
        ctx.prec = 60
        return _ceil(d.scaleb(3))


def format_milli_cpu(milli: int) -> str:
    return f"{milli // 1000}" if milli % 1000 == 0 else f"{milli}m"
