"""In-tree plugins, and the process's registry (in-tree plus plugins of one's own).

Each in-tree module lists its plugin classes in `PLUGINS` and may list older policy names in
`ALIASES`; they are discovered here, so adding a plugin never means editing a central table.

Plugins of one's own come from installed distributions' entry points (group
`kubeberth.plugins`), from `use_plugins(sources)` (the command line's `--plugins`) and from
`register(cls)`; `plugin_registry()` is what the scheduler, simulate and the operator build
profiles from (see _loading.py).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Sequence
from functools import lru_cache

from ..framework import Plugin, Registry
from ._loading import (
    ENTRY_POINT_GROUP,
    Loaded,
    Loader,
    LoadFailure,
    PluginLoadError,
    check_plugin_class,
    load,
)

__all__ = [
    "ENTRY_POINT_GROUP", "LoadFailure", "Loaded", "PluginLoadError", "in_tree_registry", "loaded",
    "plugin_registry", "register", "use_plugins",
]


@lru_cache(maxsize=1)
def _in_tree() -> Registry:
    registry = Registry()
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{__name__}.{info.name}")
        for cls in getattr(module, "PLUGINS", ()):
            registry.register(cls)
        for alias in getattr(module, "ALIASES", ()):
            registry.add_alias(alias)
    return registry


def in_tree_registry() -> Registry:
    """A fresh copy of the in-tree plugins alone. Changing the copy changes nothing else: to add a
    plugin to what the scheduler uses, see `register`, `use_plugins` and the entry points."""
    return _in_tree().copy()


_sources: tuple[str, ...] = ()
_registered: list[tuple[type[Plugin], str]] = []
_loaded: Loaded | None = None


def use_plugins(sources: Sequence[str] = (), *, entry_points: bool = True) -> Loaded:
    """Load the plugins of `sources` (`.py` files, directories of them, dotted module names) and
    of the installed distributions' entry points, for `plugin_registry()` from now on. Returns
    what was loaded, with the failures (to report once). Raises PluginLoadError on a clash."""
    global _sources, _loaded
    result = load(_in_tree(), sources, entry_points=entry_points, registered=_registered)
    _sources, _loaded = tuple(sources), result
    return result


def loaded() -> Loaded:
    """What `use_plugins` loaded (the entry points alone until it is called)."""
    global _loaded
    if _loaded is None:
        _loaded = load(_in_tree(), _sources, registered=_registered)
    return _loaded


def plugin_registry() -> Registry:
    """A copy of the process's registry: in-tree, entry points, `--plugins`, `register`."""
    return loaded().registry.copy()


def register(cls: type[Plugin], origin: str | None = None) -> None:
    """Add a plugin class to the process's registry (for programs that drive kubeberth from
    Python: call it before `kubeberth.cli.main(...)`). Raises ValueError if the class cannot be a
    plugin, PluginLoadError if its name is taken."""
    origin = origin or f"registered by {getattr(cls, '__module__', '?')}"
    why = check_plugin_class(cls)
    if why is not None:
        raise ValueError(f"{origin}: {why}")
    current = loaded()
    loader = Loader(current.registry)
    loader.add([cls], origin, module=cls.__module__)
    for package, names in loader.provides.items():
        current.provides[package] = current.provides.get(package, frozenset()) | names
    _registered.append((cls, origin))
