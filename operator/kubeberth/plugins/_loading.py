"""Plugins of one's own: loaded from installed distributions' entry points (group
`kubeberth.plugins`) and from `--plugins` paths or modules, checked, and merged into the
in-tree registry by upstream's Merge rule (a name is taken once; a second one is an error
naming both origins).

A plugin that cannot be loaded (its import raised, its class is malformed, its constructor cannot
be called as `cls(args, handle)`, or it wants another API version) is not fatal: it is recorded
as unavailable with its origin and the error, and a profile naming it is refused with that
reason. A broken entry point (or a distribution whose entry points cannot be read) fails alone:
the names it leaves unavailable are only those no other source brings. A clash of names, or a
`--plugins` argument that names no file, directory or module, is fatal (`PluginLoadError`), as
upstream's Merge error stops kube-scheduler. A `--plugins` module is looked for on the Python path
and then, as `python -m` would find it, in the current directory.
"""

from __future__ import annotations

import ast
import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import inspect
import os
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version
from pydantic import BaseModel

from ..framework import API_VERSION, EXTENSION_POINTS, ObjectKind, Plugin, PluginSpec, Registry, RegistryError
from ..framework.vector import VECTOR_API_VERSION

ENTRY_POINT_GROUP = "kubeberth.plugins"


class PluginLoadError(Exception):
    """Plugins cannot be merged (a name taken twice) or a source names nothing."""


@dataclass(frozen=True)
class LoadFailure:
    origin: str
    error: str
    names: tuple[str, ...] = ()  # the plugin names it would have brought, where known

    def __str__(self) -> str:
        return f"{self.origin}: {self.error}"


@dataclass
class Loaded:
    registry: Registry
    failures: list[LoadFailure] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)  # the modules imported (for their kopf handlers)
    # The package of each module that brings plugins -> the names of the plugins it brings (loaded or
    # not): kopf handlers defined in that package belong to those plugins (operator/handlers.py).
    provides: dict[str, frozenset[str]] = field(default_factory=dict)

    def unavailable_names(self, failure: LoadFailure) -> list[str]:
        """The names `failure` would have brought that no other source brings (a failure's names
        are partly guesses: its entry point's name, the names its module's source declares)."""
        return [n for n in failure.names if n not in self.registry]


def _distribution_key(dist: importlib.metadata.Distribution) -> str:
    """The distribution's normalised name, from its .dist-info/.egg-info directory's name when it
    has one (as importlib.metadata dedupes), else from its METADATA."""
    key = getattr(dist, "_normalized_name", None)
    if isinstance(key, str) and key:
        return canonicalize_name(key)
    try:
        name = dist.metadata["Name"]
    except Exception:
        return ""
    return canonicalize_name(name) if isinstance(name, str) else ""


def _error_text(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def check_plugin_class(cls: Any) -> str | None:
    """Why `cls` cannot be a plugin (None: it can)."""
    if not isinstance(cls, type) or not issubclass(cls, Plugin):
        return f"{cls!r} is not a subclass of kubeberth.framework.Plugin"
    name = getattr(cls, "name", "")
    if not isinstance(name, str) or not name:
        return f"plugin class {cls.__qualname__} has no name (set name = \"...\")"
    if not any(issubclass(cls, base) for base in EXTENSION_POINTS.values()):
        return f"plugin {name!r} extends no extension point (subclass FilterPlugin, ScorePlugin, ...)"
    model = cls.args_model
    if model is not None and not (isinstance(model, type) and issubclass(model, BaseModel)):
        return f"plugin {name!r}: args_model must be a pydantic BaseModel subclass or None, not {model!r}"
    reads = cls.reads
    if not isinstance(reads, tuple) or not all(isinstance(k, ObjectKind) for k in reads):
        return f"plugin {name!r}: reads must be a tuple of kubeberth.framework.ObjectKind"
    why = _constructor_problem(cls, name)
    if why is not None:
        return why
    for attr, package, version in (("requires_api", "kubeberth.framework", API_VERSION),
                                   ("requires_vector_api", "kubeberth.framework.vector", VECTOR_API_VERSION)):
        wanted = getattr(cls, attr, None)
        if wanted is None:
            continue
        try:
            fits = SpecifierSet(wanted).contains(Version(version))
        except InvalidSpecifier:
            return f"plugin {name!r}: {attr} {wanted!r} is not a version specifier (e.g. \">=1.0,<2\")"
        if not fits:
            return f"plugin {name!r} requires {package} API {wanted} but this kubeberth has API {version}"
    return None


def _constructor_problem(cls: type, name: str) -> str | None:
    """Why the framework could not build `cls` as `cls(args, handle)` (None: it can)."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return None  # no signature to read (a constructor in C): building it will tell
    try:
        signature.bind(None, None)
    except TypeError as exc:
        return (f"plugin {name!r}: its constructor {cls.__qualname__}{signature} cannot be called as "
                f"{cls.__qualname__}(args, handle) ({exc}): write __init__(self, args, handle), or no "
                f"__init__ at all (kubeberth.framework.Plugin's keeps them as self.args and self.handle)")
    return None


def _declared_names(source: str) -> tuple[str, ...]:
    """The `name = "..."` of the classes of a module's source (to say which plugins a module
    whose import failed would have brought)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return ()
    names: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for stmt in node.body:
            target = value = None
            if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target, value = stmt.targets[0], stmt.value
            elif isinstance(stmt, ast.AnnAssign):
                target, value = stmt.target, stmt.value
            if (isinstance(target, ast.Name) and target.id == "name" and isinstance(value, ast.Constant)
                    and isinstance(value.value, str) and value.value):
                names.append(value.value)
    return tuple(names)


def _module_source(module: str) -> str:
    try:
        spec = importlib.util.find_spec(module)
    except Exception:  # finding a submodule imports its package, which may raise anything
        return ""
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return ""
    try:
        return Path(spec.origin).read_text()
    except OSError:
        return ""


def package_of(module: str) -> str:
    """The package a plugin module is part of: itself when it is a package, else its parent (a
    top-level module is its own)."""
    found = sys.modules.get(module)
    if found is not None and hasattr(found, "__path__"):
        return module
    return module.rpartition(".")[0] or module


def plugins_of_module(module: ModuleType) -> list[Any]:
    """`PLUGINS = [...]` if the module has it, else the plugin classes it defines."""
    listed = getattr(module, "PLUGINS", None)
    if listed is not None:
        return list(listed)
    found: list[Any] = []
    for obj in vars(module).values():
        if isinstance(obj, type) and issubclass(obj, Plugin) and obj.__module__ == module.__name__ and obj.name:
            found.append(obj)
    return found


class Loader:
    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.failures: list[LoadFailure] = []
        self.modules: list[str] = []
        self.provides: dict[str, frozenset[str]] = {}

    def _provided(self, module: str, names: Iterable[str]) -> None:
        names = frozenset(n for n in names if n)
        if names:
            package = package_of(module)
            self.provides[package] = self.provides.get(package, frozenset()) | names

    def fail(self, origin: str, error: str, names: Iterable[str] = (), module: str = "") -> None:
        failure = LoadFailure(origin, error, tuple(names))
        if module:
            self._provided(module, failure.names)
        self.failures.append(failure)
        for name in failure.names:
            if name not in self.registry:
                self.registry.unavailable.setdefault(name, f"{origin}: {error}")
        if not failure.names:
            self.registry.load_failures.append(str(failure))

    def add(self, candidates: Iterable[Any], origin: str, module: str = "") -> None:
        candidates = list(candidates)
        if module:
            self._provided(module, (getattr(c, "name", "") for c in candidates
                                    if isinstance(getattr(c, "name", ""), str)))
        for cls in candidates:
            why = check_plugin_class(cls)
            if why is not None:
                name = getattr(cls, "name", "")
                self.fail(origin, why, [name] if isinstance(name, str) and name else [])
                continue
            taken = self.registry.get(cls.name)
            if taken is not None and taken.cls is cls:
                continue  # the same class reached twice (an entry point and --plugins)
            try:
                self.registry.register(PluginSpec(cls.name, cls, cls.args_model, origin=origin))
            except RegistryError as exc:
                raise PluginLoadError(str(exc)) from None
            self.registry.unavailable.pop(cls.name, None)

    # --- the sources ---

    def entry_points(self) -> None:
        """Each installed distribution's `kubeberth.plugins` entry points. A distribution whose
        entry points cannot be read, or an entry point that is malformed or cannot be loaded,
        fails alone: the other distributions' plugins load as if it were not there."""
        found: list[tuple[importlib.metadata.EntryPoint, str]] = []
        seen: set[str] = set()
        for dist in importlib.metadata.distributions():
            key = _distribution_key(dist)
            if not key or key in seen:
                continue  # as importlib.metadata.entry_points: the first one found on sys.path
            seen.add(key)
            # Only a distribution that declares the group has its METADATA read (an email parse each:
            # tens of milliseconds of every start for a venv of a hundred distributions).
            text = dist.read_text("entry_points.txt") or ""
            if f"[{ENTRY_POINT_GROUP}]" not in text:
                continue
            try:
                name, version = dist.metadata["Name"], dist.metadata["Version"]
            except Exception:  # unreadable metadata: not a distribution we can name
                continue
            where = f"distribution {name} {version}"
            try:
                entries = [ep for ep in dist.entry_points if ep.group == ENTRY_POINT_GROUP]
            except Exception as exc:  # a malformed entry_points.txt
                self.fail(where, f"its entry_points.txt cannot be read: {_error_text(exc)}")
                continue
            found += [(ep, where) for ep in entries]
        for ep, where in sorted(found, key=lambda f: f[0].name):
            self._entry_point(ep, f"{where} (entry point {ep.name} = {ep.value})")

    def _entry_point(self, ep: importlib.metadata.EntryPoint, origin: str) -> None:
        if ep.pattern.match(ep.value) is None:
            self.fail(origin, "not an entry point: the value must be module or module:attribute", [ep.name])
            return
        try:
            obj = ep.load()
        except Exception as exc:
            names = {ep.name, *_declared_names(_module_source(ep.module))}
            self.fail(origin, f"import failed: {_error_text(exc)}", sorted(names), module=ep.module)
            return
        if isinstance(obj, ModuleType):
            self.modules.append(obj.__name__)
            self.add(plugins_of_module(obj), origin, module=obj.__name__)
        else:
            self.modules.append(ep.module)
            self.add([obj], origin, module=ep.module)

    def source(self, text: str) -> None:
        path = Path(text)
        if text.endswith(".py") or path.exists() or "/" in text or "\\" in text:
            if path.is_dir():
                files = sorted(p for p in path.glob("*.py") if not p.name.startswith("_"))
                for f in files:
                    self.file(f)
                return
            if not path.is_file():
                raise PluginLoadError(f"--plugins {text}: no such file or directory")
            self.file(path)
            return
        self.module(text)

    def file(self, path: Path) -> None:
        path = path.resolve()
        origin = f"path {path}"
        # As Python does for a script: its directory is importable (helpers, a base plugin next to
        # it), appended so that it shadows nothing installed.
        if str(path.parent) not in sys.path:
            sys.path.append(str(path.parent))
        name = path.stem
        known = sys.modules.get(name)
        if known is not None:
            if getattr(known, "__file__", None) == str(path):
                self.add(plugins_of_module(known), origin, module=name)
                return
            name = f"kubeberth_plugin_{abs(hash(str(path))):x}_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise PluginLoadError(f"--plugins {path}: not a Python file")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except Exception as exc:
            del sys.modules[name]
            try:
                source = path.read_text()
            except OSError:
                source = ""
            self.fail(origin, f"import failed: {_error_text(exc)}", _declared_names(source), module=name)
            return
        self.modules.append(name)
        self.add(plugins_of_module(module), origin, module=name)

    def module(self, name: str) -> None:
        """A dotted module name, found on the Python path or, as `python -m` finds modules, in the
        current directory (appended to the path, so that it shadows nothing installed)."""
        origin = f"module {name}"
        try:
            found = _find_module(name)
            if found is None and _in_current_directory(name):
                sys.path.append(os.getcwd())
                importlib.invalidate_caches()
                found = _find_module(name)
        except Exception as exc:
            self.fail(origin, f"import failed: {_error_text(exc)}", _declared_names(_module_source(name)),
                      module=name)
            return
        if found is None:
            raise PluginLoadError(f"--plugins {name}: no such file, directory or module (looked on the Python "
                                  f"path and in the current directory, {os.getcwd()})")
        try:
            module = importlib.import_module(name)
        except Exception as exc:
            self.fail(origin, f"import failed: {_error_text(exc)}", _declared_names(_module_source(name)),
                      module=name)
            return
        self.modules.append(name)
        self.add(plugins_of_module(module), origin, module=name)


def _find_module(name: str) -> importlib.machinery.ModuleSpec | None:
    """`name`'s spec; None when it or one of its packages does not exist. Raises what importing
    one of its packages raises otherwise."""
    try:
        return importlib.util.find_spec(name)
    except ValueError:
        return None
    except ModuleNotFoundError as exc:
        parts = name.split(".")
        if exc.name in {".".join(parts[:i]) for i in range(1, len(parts) + 1)}:
            return None
        raise


def _in_current_directory(name: str) -> bool:
    """Whether the top-level package of module `name` is in the current directory, which is not
    on the path (as it is for `python -m`, not for a console script)."""
    cwd = os.getcwd()
    if any(os.path.abspath(p or ".") == cwd for p in sys.path):
        return False
    top = name.partition(".")[0]
    return bool(top) and importlib.machinery.PathFinder.find_spec(top, [cwd]) is not None


def load(base: Registry, sources: Sequence[str] = (), *, entry_points: bool = True,
         registered: Iterable[tuple[type[Plugin], str]] = ()) -> Loaded:
    """`base` (the in-tree registry, copied) merged with the entry points' plugins, then the
    `sources`' (paths or modules, in order), then plugins registered in the process."""
    loader = Loader(base.copy())
    if entry_points:
        loader.entry_points()
    for text in sources:
        loader.source(text)
    for cls, origin in registered:
        loader.add([cls], origin, module=cls.__module__)
    return Loaded(loader.registry, loader.failures, loader.modules, loader.provides)
