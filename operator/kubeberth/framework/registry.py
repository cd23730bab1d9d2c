"""Plugin registry: name -> how to build the plugin and validate its args."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from .interfaces import Plugin


class RegistryError(ValueError):
    pass


@dataclass(frozen=True)
class Alias:
    """An older (policy API) name for a plugin, possibly with preset args."""

    name: str
    target: str
    args: dict[str, Any] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class PluginSpec:
    name: str
    cls: type[Plugin]
    args_model: type[BaseModel] | None = None
    factory: Callable[[Any, Any], Plugin] | None = None

    def build(self, args: Any, handle: Any) -> Plugin:
        if self.factory is not None:
            return self.factory(args, handle)
        return self.cls(args, handle)  # type: ignore[call-arg]

    def points(self) -> list[str]:
        from .interfaces import EXTENSION_POINTS

        return [p for p, base in EXTENSION_POINTS.items() if issubclass(self.cls, base)]


class Registry:
    def __init__(self, specs: Iterable[PluginSpec] = ()) -> None:
        self._specs: dict[str, PluginSpec] = {}
        self._aliases: dict[str, Alias] = {}
        for s in specs:
            self.register(s)

    def register(self, spec: PluginSpec | type[Plugin]) -> None:
        if isinstance(spec, type):
            spec = PluginSpec(spec.name, spec, getattr(spec, "args_model", None))
        if not spec.name:
            raise RegistryError(f"plugin class {spec.cls.__name__} has no name")
        if spec.name in self._specs:
            raise RegistryError(f"a plugin named {spec.name!r} already exists")
        self._specs[spec.name] = spec

    def unregister(self, name: str) -> None:
        if name not in self._specs:
            raise RegistryError(f"no plugin named {name!r} exists")
        del self._specs[name]

    def merge(self, other: Registry) -> None:
        for spec in other._specs.values():
            self.register(spec)
        for alias in other._aliases.values():
            self.add_alias(alias)

    def add_alias(self, alias: Alias) -> None:
        if alias.name in self._aliases or alias.name in self._specs:
            raise RegistryError(f"name {alias.name!r} is already taken")
        self._aliases[alias.name] = alias

    def alias(self, name: str) -> Alias | None:
        return self._aliases.get(name)

    def get(self, name: str) -> PluginSpec | None:
        return self._specs.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._specs

    def names(self) -> list[str]:
        return list(self._specs)

    def copy(self) -> Registry:
        r = Registry(self._specs.values())
        for a in self._aliases.values():
            r.add_alias(a)
        return r
