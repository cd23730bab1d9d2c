"""Build a profile's extenders from its spec, validating what upstream validates."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable, Sequence

from ..config.errors import ConfigError
from ..config.models import ExtenderConfig, SchedulingProfileSpec
from ..framework.extender import Extender
from .client import HTTPExtender, NodeInfoLister

_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_REQUESTS_PREFIX = "requests."
_DEFAULT_NAMESPACE_PREFIX = "kubernetes.io/"


def _qualified_name_errors(value: str) -> list[str]:
    """validation.IsQualifiedName: an optional DNS subdomain prefix and '/', then a name."""
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
        if len(prefix) > 253:
            return ["prefix part must be no more than 253 characters"]
        if not _DNS1123_SUBDOMAIN.match(prefix):
            return ["prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                    "characters, '-' or '.', and must start and end with an alphanumeric character"]
    else:
        return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start "
                "and end with an alphanumeric character with an optional DNS subdomain prefix and '/' "
                "(e.g. 'example.com/MyName')"]
    if not name:
        return ["name part must be non-empty"]
    if len(name) > 63:
        return ["name part must be no more than 63 characters"]
    if not _NAME.match(name):
        return ["name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character"]
    return []


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: namespaced, outside kubernetes.io, usable in a quota."""
    if "/" not in name or _DEFAULT_NAMESPACE_PREFIX in name or name.startswith(_REQUESTS_PREFIX):
        return False
    return not _qualified_name_errors(_REQUESTS_PREFIX + name)


def validate_extenders(configs: Sequence[ExtenderConfig], prefix: str = "spec.extenders") -> None:
    """Raises ConfigError naming the first invalid field (spec.extenders[i].<field>)."""
    binders = 0
    managed: set[str] = set()
    for i, cfg in enumerate(configs):
        path = f"{prefix}[{i}]"
        if cfg.prioritizeVerb and cfg.weight <= 0:
            raise ConfigError(f"{path}.weight", f"must have a positive weight applied to it, got {cfg.weight}")
        if cfg.bindVerb:
            binders += 1
        for j, res in enumerate(cfg.managedResources):
            rpath = f"{path}.managedResources[{j}].name"
            errors = _qualified_name_errors(res.name)
            if errors:
                raise ConfigError(rpath, f"{res.name!r}: {errors[0]}")
            if not is_extended_resource_name(res.name):
                raise ConfigError(rpath, f"{res.name!r} is an invalid extended resource name")
            if res.name in managed:
                raise ConfigError(rpath, f"{res.name!r}: duplicate extender managed resource name")
            managed.add(res.name)
    if binders > 1:
        raise ConfigError(prefix, f"found {binders} extenders implementing bind: only one extender can "
                                  f"implement bind")


def build_extenders(spec: SchedulingProfileSpec | Sequence[ExtenderConfig], *,
                    node_infos: Callable[[], NodeInfoLister] | None = None,
                    prefix: str = "spec.extenders") -> list[HTTPExtender]:
    """The profile's HTTPExtenders, in configured order. Raises ConfigError naming the field.

    `node_infos` returns the current snapshot (e.g. `lambda: fw.snapshot`), used to find the
    victims a preempting extender names by UID. Nothing connects here: each extender opens
    its session on first use.
    """
    configs = spec.extenders if isinstance(spec, SchedulingProfileSpec) else list(spec)
    validate_extenders(configs, prefix)
    return [HTTPExtender(cfg, path=f"{prefix}[{i}]", node_infos=node_infos) for i, cfg in enumerate(configs)]


async def close_extenders(extenders: Iterable[Extender]) -> None:
    """Close every extender's session (when its profile is replaced or the scheduler stops)."""
    await asyncio.gather(*(e.close() for e in extenders), return_exceptions=True)
