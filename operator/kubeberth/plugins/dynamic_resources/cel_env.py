"""CEL selectors of DeviceClasses and claim requests, evaluated by common-expression-language.

The `device` variable is built as upstream's DRA CEL environment builds it: `driver`,
`allowMultipleAllocations`, `attributes[domain][id]` and `capacity[domain][id]` (names without a
domain belong to the driver's). A lookup of a domain the device does not have yields an empty
map, as upstream's. Quantities and semantic versions are maps tagged with one reserved key; the
Kubernetes functions DRA expressions use (`quantity`, `semver`, `compareTo`, `isGreaterThan`,
`isLessThan`, ...) are Python functions registered once. Each expression is compiled once per
process and the result of a selector on a device is memoised on the parsed device.

The library is imported on first use: its package also imports its command-line interface (typer,
rich, prompt_toolkit: some 300 modules), which only clusters with device selectors need. Imported
with the scheduler, they made every full garbage collection of a scheduling loop a third longer.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from functools import cache, lru_cache
from typing import Any

from ...model.quantity import QuantityError, parse_quantity

Q = "__quantity_milli__"
V = "__semver__"
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)"
                     r"(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
                     r"(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?$")
_DOMAIN_LOOKUP = re.compile(r"\b(attributes|capacity)\s*\[\s*[\"']([^\"']+)[\"']\s*\]")


class CelError(Exception):
    """A selector that does not compile, or fails on a device."""


def quantity_value(raw: object) -> dict[str, int]:
    return {Q: int((parse_quantity(raw) * 1000).to_integral_value())}


def _quantity(text: str) -> dict[str, int]:
    try:
        return quantity_value(text)
    except QuantityError as exc:
        raise ValueError(f"quantities must match the regular expression: {exc}") from exc


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
        return True
    except QuantityError:
        return False


def semver_value(text: str) -> dict[str, list[Any]]:
    m = _SEMVER.match(text)
    if m is None:
        raise ValueError(f"could not parse {text!r} as semver")
    pre = m.group(4) or ""
    return {V: [int(m.group(1)), int(m.group(2)), int(m.group(3)), pre]}


def _semver_key(v: Mapping[str, Any]) -> tuple[Any, ...]:
    major, minor, patch, pre = v[V]
    parts: list[tuple[int, int | str]] = []
    for p in pre.split(".") if pre else ():
        parts.append((0, int(p)) if p.isdigit() else (1, p))
    # A version without a pre-release sorts after every pre-release of it.
    return (major, minor, patch, 0 if pre else 1, parts)


def _cmp(a: Any, b: Any) -> int:
    if isinstance(a, Mapping) and Q in a and isinstance(b, Mapping) and Q in b:
        x, y = a[Q], b[Q]
    elif isinstance(a, Mapping) and V in a and isinstance(b, Mapping) and V in b:
        x, y = _semver_key(a), _semver_key(b)
    else:
        raise ValueError("no such overload: compareTo")
    return (x > y) - (x < y)


def _is_semver(text: str) -> bool:
    return _SEMVER.match(text) is not None


def _q(a: Any) -> int:
    if not (isinstance(a, Mapping) and Q in a):
        raise ValueError("no such overload: not a quantity")
    return int(a[Q])


def _add(a: Any, b: Any) -> dict[str, int]:
    return {Q: _q(a) + (b * 1000 if isinstance(b, int) else _q(b))}


def _sub(a: Any, b: Any) -> dict[str, int]:
    return {Q: _q(a) - (b * 1000 if isinstance(b, int) else _q(b))}


def _as_integer(a: Any) -> int:
    milli = _q(a)
    if milli % 1000:
        raise ValueError("cannot convert value to integer")
    return milli // 1000


def _version_part(i: int) -> Any:
    def part(v: Any) -> int:
        if not (isinstance(v, Mapping) and V in v):
            raise ValueError("no such overload: not a semver")
        return int(v[V][i])
    return part


FUNCTIONS = {
    "quantity": _quantity, "isQuantity": _is_quantity, "semver": semver_value, "isSemver": _is_semver,
    "compareTo": _cmp, "isGreaterThan": lambda a, b: _cmp(a, b) > 0, "isLessThan": lambda a, b: _cmp(a, b) < 0,
    "sign": lambda a: (_q(a) > 0) - (_q(a) < 0), "isInteger": lambda a: _q(a) % 1000 == 0,
    "asInteger": _as_integer, "asApproximateFloat": lambda a: float(Decimal(_q(a)) / 1000),
    "add": _add, "sub": _sub, "major": _version_part(0), "minor": _version_part(1), "patch": _version_part(2),
}


@cache
def _context() -> Any:
    """The evaluation context with FUNCTIONS registered (the library imported here, once)."""
    import cel

    return cel.Context(functions=FUNCTIONS)


def attribute_value(raw: Mapping[str, Any]) -> Any:
    """A DeviceAttribute as CEL sees it (exactly one of int, bool, string, version is set)."""
    if "int" in raw:
        return int(raw["int"])
    if "bool" in raw:
        return bool(raw["bool"])
    if "string" in raw:
        return str(raw["string"])
    if "version" in raw:
        return semver_value(str(raw["version"]))
    raise ValueError(f"unsupported attribute value {dict(raw)!r}")


def split_name(name: str, default_domain: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (default_domain, name)


def cel_device(driver: str, attributes: Mapping[str, Any], capacity: Mapping[str, Any],
               allow_multiple: bool) -> dict[str, Any]:
    attrs: dict[str, dict[str, Any]] = {}
    for name, raw in attributes.items():
        domain, ident = split_name(name, driver)
        attrs.setdefault(domain, {})[ident] = attribute_value(raw)
    caps: dict[str, dict[str, Any]] = {}
    for name, raw in capacity.items():
        domain, ident = split_name(name, driver)
        caps.setdefault(domain, {})[ident] = quantity_value((raw or {}).get("value", 0))
    return {"driver": driver, "allowMultipleAllocations": allow_multiple, "attributes": attrs, "capacity": caps}


class Selector:
    """One compiled expression and the domains it looks up (filled with empty maps when absent)."""

    __slots__ = ("domains", "expression", "program")

    def __init__(self, expression: str) -> None:
        self.expression = expression
        import cel

        try:
            self.program = cel.compile(expression)
        except Exception as exc:  # the library raises its own parse errors
            raise CelError(str(exc)) from exc
        self.domains = [(m.group(1), m.group(2)) for m in _DOMAIN_LOOKUP.finditer(expression)]

    def matches(self, device: dict[str, Any]) -> bool:
        for field, domain in self.domains:
            if domain not in device[field]:
                device = {**device, field: {**device[field], domain: {}}}
        context = _context()
        context.add_variable("device", device)
        try:
            out = self.program.execute(context)
        except KeyError as exc:
            raise CelError(f"no such key: {exc.args[0] if exc.args else exc}. consider using CEL optional chaining "
                           "(.? followed by orValue()) or guarding the check with has() for optional fields") from exc
        except Exception as exc:
            raise CelError(str(exc)) from exc
        if not isinstance(out, bool):
            raise CelError(f"expression must return a boolean, got {type(out).__name__}")
        return out


@lru_cache(maxsize=4096)
def compile_selector(expression: str) -> Selector | CelError:
    """Compiled once per expression (classes and claims repeat theirs for every device)."""
    try:
        return Selector(expression)
    except CelError as exc:
        return exc
