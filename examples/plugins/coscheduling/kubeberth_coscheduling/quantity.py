"""Kubernetes quantities as Go's resource.Quantity holds them, for the one message that shows
their insides: PreFilter's `resource gap: map[...]`, which scheduler-plugins formats with `%v`
of a ResourceList (Quantity's String method has a pointer receiver, so a map value prints as
its struct: `{{value scale} {<nil>} cached-string Format}`).

Only what that message needs: parsing (ParseQuantity's int64 fast path, else an exact
decimal), subtraction with Go's scale rules, the sign, and the `%v` rendering. Values that
Go keeps as an inf.Dec print a pointer there; we print the decimal in its place.
"""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal, localcontext

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

_MAX_INT64 = 2**63 - 1
_MAX_INT64_FACTORS = 18
_NANO = -9

_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SYNTAX = re.compile(r"^([+-]?)(\d*)(?:\.(\d*))?(.*)$")
_EXPONENT = re.compile(r"^[eE]([+-]?\d+)$")


class QuantityError(ValueError):
    pass


class GoQuantity:
    """A resource.Quantity: an int64 amount (value * 10^scale) or, failing that, a decimal."""

    __slots__ = ("dec", "fmt", "s", "scale", "value")

    def __init__(self, value: int = 0, scale: int = 0, fmt: str = "", s: str = "",
                 dec: Decimal | None = None) -> None:
        self.value = value
        self.scale = scale
        self.fmt = fmt
        self.s = s
        self.dec = dec

    @classmethod
    def milli(cls, milli: int, fmt: str = DECIMAL_SI) -> GoQuantity:
        return cls(milli, -3, fmt)

    @classmethod
    def of(cls, value: int, fmt: str = DECIMAL_SI) -> GoQuantity:
        return cls(value, 0, fmt)

    def as_decimal(self) -> Decimal:
        return self.dec if self.dec is not None else Decimal(self.value).scaleb(self.scale)

    def is_zero(self) -> bool:
        return self.as_decimal() == 0

    def sign(self) -> int:
        d = self.as_decimal()
        return (d > 0) - (d < 0)

    def sub(self, y: GoQuantity) -> None:
        """q.Sub(y): the int64 path when both are int64 amounts and nothing overflows."""
        self.s = ""
        if self.is_zero():
            self.fmt = y.fmt
        if self.dec is None and y.dec is None:
            got = _int64_add(self.value, self.scale, -y.value, y.scale)
            if got is not None:
                self.value, self.scale = got
                return
        self.dec = self.as_decimal() - y.as_decimal()
        self.value, self.scale = 0, 0

    def go_struct(self) -> str:
        """`%v` of the Quantity value."""
        inner = "<nil>" if self.dec is None else _plain(self.dec)
        value, scale = (self.value, self.scale) if self.dec is None else (0, 0)
        return f"{{{{{value} {scale}}} {{{inner}}} {self.s} {self.fmt}}}"

    def __repr__(self) -> str:
        return f"GoQuantity({self.go_struct()})"


def _plain(d: Decimal) -> str:
    return format(d.normalize(), "f") if d != 0 else "0"


def _scale_up(value: int, by: int) -> int | None:
    """value * 10^by, None on int64 overflow (positiveScaleInt64)."""
    out = value * 10**by
    return out if -_MAX_INT64 - 1 <= out <= _MAX_INT64 else None


def _int64_add(av: int, ascale: int, bv: int, bscale: int) -> tuple[int, int] | None:
    """int64Amount.Add: the sum at the smaller scale; None when it overflows."""
    if bv == 0:
        return av, ascale
    if av == 0:
        return bv, bscale
    if ascale == bscale:
        c = av + bv
        scale = ascale
    elif ascale > bscale:
        up = _scale_up(av, ascale - bscale)
        if up is None:
            return None
        c, scale = up + bv, bscale
    else:
        up = _scale_up(bv, bscale - ascale)
        if up is None:
            return None
        c, scale = av + up, ascale
    if not -_MAX_INT64 - 1 <= c <= _MAX_INT64:
        return None
    return c, scale


def parse(raw: object) -> GoQuantity:
    """resource.ParseQuantity of a ResourceList value as JSON gives it (a string or a number)."""
    if isinstance(raw, bool) or not isinstance(raw, str | int | float):
        raise QuantityError(f"quantity {raw!r} is neither a string nor a number")
    text = str(raw).strip()
    if not text:
        raise QuantityError("quantity is empty")
    if text == "0":
        return GoQuantity(0, 0, DECIMAL_SI, "0")
    m = _SYNTAX.match(text)
    if m is None:
        raise QuantityError(f"quantity {text!r} does not match the expected format")
    sign, whole, frac, suffix = m.group(1), m.group(2), m.group(3), m.group(4)
    if not whole and not frac:
        raise QuantityError(f"quantity {text!r} does not match the expected format")
    num = whole.lstrip("0") or "0"
    denom = frac or ""
    positive = sign != "-"
    if suffix in _DECIMAL_SUFFIXES:
        base, exponent, fmt = 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    elif suffix in _BINARY_SUFFIXES:
        base, exponent, fmt = 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    elif (e := _EXPONENT.match(suffix)) is not None:
        base, exponent, fmt = 10, int(e.group(1)), DECIMAL_EXPONENT
    else:
        raise QuantityError(f"quantity {text!r} has an unknown suffix {suffix!r}")
    mantissa = 1
    if fmt == BINARY_SI:
        scale = 0
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    if precision >= 0:
        scale -= len(denom)
        if scale >= _NANO:
            shifted = num + denom
            value = int(shifted)
            result = value * mantissa
            if result <= _MAX_INT64:
                result = result if positive else -result
                canonical = (exponent % 10 == 0 and (value & 0x07) != 0) if fmt == BINARY_SI else (
                    scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0")
                return GoQuantity(result, scale, fmt, text if canonical else "")
    # The inf.Dec path: exact value, rounded up to nano units.
    with localcontext() as ctx:
        ctx.prec = 200
        amount = Decimal(f"{whole or '0'}.{denom or '0'}")
        amount = amount.scaleb(exponent) if base == 10 else amount * (Decimal(2) ** exponent)
        if amount != 0:
            amount = amount.quantize(Decimal("1e-9"), rounding=ROUND_CEILING)
        if fmt == BINARY_SI and 0 < amount < 1:
            fmt = DECIMAL_SI
        return GoQuantity(dec=amount if positive else -amount, fmt=fmt)


def render_resource_list(resources: dict[str, GoQuantity]) -> str:
    """`%v` of a map[ResourceName]Quantity: keys in byte order."""
    parts = [f"{name}:{q.go_struct()}" for name, q in sorted(resources.items(), key=lambda kv: kv[0].encode())]
    return f"map[{' '.join(parts)}]"
