"""Plugin registry: name -> how to build the plugin and validate its args."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from .interfaces import Plugin


class RegistryError(ValueError):
    """A plugin that cannot be registered or found: no name, a name already taken, an unknown
    name or alias."""


@dataclass(frozen=True)
class Alias:
    """An older (policy API) name for a plugin, possibly with preset args."""

    name: str
    target: str
    args: dict[str, Any] = field(default_factory=dict)
    note: str = ""


IN_TREE = "in-tree"


@dataclass(frozen=True)
class PluginSpec:
    """A registered plugin: its `name`, class `cls`, `args_model`, an optional `factory`
    (args, handle) -> plugin used instead of the class, and `origin` (in-tree, a distribution,
    a path, a module); `build(args, handle)` makes one, `points()` names its extension points."""

    name: str
    cls: type[Plugin]
    args_model: type[BaseModel] | None = None
    factory: Callable[[Any, Any], Plugin] | None = None
    origin: str = IN_TREE  # where it came from: in-tree, a distribution, a path, a module

    def build(self, args: Any, handle: Any) -> Plugin:
        if self.factory is not None:
            return self.factory(args, handle)
        return self.cls(args, handle)

    def points(self) -> list[str]:
        from .interfaces import EXTENSION_POINTS

        return [p for p, base in EXTENSION_POINTS.items() if issubclass(self.cls, base)]


class Registry:
    """Plugins by name (upstream's Registry: Register, Unregister, Merge; a name is taken once).

    It also remembers the plugins that could not be loaded (`unavailable`: name -> why) and the
    load failures whose plugin names are not known, so that a profile naming one is refused
    with the reason rather than with "does not exist"."""

    def __init__(self, specs: Iterable[PluginSpec] = ()) -> None:
        self._specs: dict[str, PluginSpec] = {}
        self._aliases: dict[str, Alias] = {}
        self.unavailable: dict[str, str] = {}
        self.load_failures: list[str] = []
        # A kind plugins declare they read (its `kind`) that cannot be read now -> why (the operator
        # sets it: a CRD not installed, a verb RBAC does not grant); plugins reading it cannot run.
        self.kind_problems: dict[str, str] = {}
        # Kinds plugins declare they read that the operator has not listed yet (it watches a kind only
        # while a profile needs it): a profile whose plugins read one waits until it is (WaitForCacheSync).
        self.kinds_unsynced: set[str] = set()
        for s in specs:
            self.register(s)

    def register(self, spec: PluginSpec | type[Plugin], origin: str = IN_TREE) -> None:
        if isinstance(spec, type):
            spec = PluginSpec(spec.name, spec, getattr(spec, "args_model", None), origin=origin)
        if not spec.name:
            raise RegistryError(f"plugin class {spec.cls.__name__} has no name")
        taken = self._specs.get(spec.name)
        if taken is not None:
            raise RegistryError(f"a plugin named {spec.name!r} already exists: {taken.origin} has it, "
                                f"{spec.origin} brings another")
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
        for name, why in other.unavailable.items():
            self.unavailable.setdefault(name, why)
        self.load_failures += [f for f in other.load_failures if f not in self.load_failures]

    def unknown(self, name: str) -> str:
        """Why a profile may not name `name` (not registered): unavailable, or does not exist."""
        why = self.unavailable.get(name)
        if why is not None:
            return f"plugin {name!r} is unavailable: {why}"
        if self.load_failures:
            return f"plugin {name!r} does not exist (plugins that failed to load: {'; '.join(self.load_failures)})"
        return f"plugin {name!r} does not exist"

    def specs(self) -> list[PluginSpec]:
        return list(self._specs.values())

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
        r.unavailable = dict(self.unavailable)
        r.load_failures = list(self.load_failures)
        r.kind_problems = dict(self.kind_problems)
        r.kinds_unsynced = set(self.kinds_unsynced)
        return r
