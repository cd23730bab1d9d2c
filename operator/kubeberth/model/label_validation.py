"""What metav1.LabelSelectorAsSelector rejects in a selector: label keys that are not qualified
names, values that are not label values. The messages follow upstream's validation."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .errors import ModelError

_NAME_PART = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
              "and must start and end with an alphanumeric character")


def qualified_name_errors(key: str) -> list[str]:
    """Upstream's IsQualifiedName: `[prefix/]name`, prefix a DNS subdomain, name up to 63 characters."""
    errs = []
    prefix, sep, name = key.rpartition("/")
    if sep and not prefix:
        errs.append("prefix part must be non-empty")
    elif sep:
        if len(prefix) > 253:
            errs.append("prefix part must be no more than 253 characters")
        if not _DNS_SUBDOMAIN.match(prefix):
            errs.append("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                        "characters, '-' or '.', and must start and end with an alphanumeric character")
    if not name:
        errs.append("name part must be non-empty")
    else:
        if len(name) > 63:
            errs.append("name part must be no more than 63 characters")
        if not _NAME_PART.match(name):
            errs.append("name part must consist of alphanumeric characters, '-', '_' or '.', and must "
                        "start and end with an alphanumeric character")
    return errs


def label_value_errors(value: str) -> list[str]:
    """Upstream's IsValidLabelValue: the problems of `value` as a label value ([] when valid)."""
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_VALUE.match(value):
        errs.append(_VALUE_MSG)
    return errs


def validate_selector(raw: Any) -> None:
    """What metav1.LabelSelectorAsSelector rejects: bad keys and values. Raises ModelError."""
    if raw is None:
        return
    if not isinstance(raw, Mapping):
        raise ModelError(f"label selector {raw!r} is not a mapping")
    for k, v in (raw.get("matchLabels") or {}).items():
        _check(str(k), [str(v)])
    for expr in raw.get("matchExpressions") or []:
        if isinstance(expr, Mapping):
            _check(str(expr.get("key") or ""), [str(v) for v in expr.get("values") or ()])


def _check(key: str, values: list[str]) -> None:
    errs = qualified_name_errors(key)
    if errs:
        raise ModelError(f"key: Invalid value: {key!r}: {'; '.join(errs)}")
    for i, v in enumerate(values):
        errs = label_value_errors(v)
        if errs:
            raise ModelError(f'values[{i}][{key}]: Invalid value: "{v}": {"; ".join(errs)}')
