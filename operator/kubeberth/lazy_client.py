"""kubernetes_asyncio's packages, loaded by the piece for `kubeberth run`.

`import kubernetes_asyncio.client` runs a package `__init__` that imports every API class and
every model (about 1,700 modules with the dynamic client, yaml, jsonschema...): more than half a
second of a start that kube-scheduler makes in 0.4 s, and kopf triggers it whenever the package is
installed (`kopf/_cogs/helpers/thirdparty.py` takes two model classes for its type checks).
kubeberth's run path needs a few names of it (`Configuration`, `ApiClient`, `ApiException`, the
kubeconfig loaders); its own client (`operator/rest.py`) makes the requests.

`install()` puts stand-ins for the packages `kubernetes_asyncio`, `kubernetes_asyncio.client` and
`kubernetes_asyncio.client.models` in `sys.modules`, whose submodules import as usual (their
`__path__` is the real one) and whose attributes load on first use: a submodule by its name, a
model class from its own module (`V1ObjectMeta` from `models/v1_object_meta.py`), the client's
`Configuration`, `ApiClient` and `ApiException` from theirs. Any other name runs the package's
real `__init__` into the stand-in, once, and is then what it always was: a plugin that uses the
full client still gets it, at the price it always had.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

ROOT = "kubernetes_asyncio"
CLIENT = f"{ROOT}.client"
MODELS = f"{CLIENT}.models"
# The client package's names that have a module of their own.
CLIENT_NAMES = {"Configuration": "configuration", "ApiClient": "api_client", "ApiException": "exceptions",
                "ApiValueError": "exceptions", "ApiTypeError": "exceptions", "ApiKeyError": "exceptions",
                "OpenApiException": "exceptions"}

# What the real `__init__`s define among the dunder names (`__all__`: a star import sees all).
PACKAGE_DUNDERS = {"__version__", "__project__", "__all__"}

_WORD_BOUNDARIES = (re.compile(r"([A-Z]+)([A-Z][a-z])"), re.compile(r"([a-z\d])([A-Z])"))


def model_module(class_name: str) -> str:
    """The module a generated model class lives in: `V1ObjectMeta` -> `v1_object_meta`."""
    name = class_name
    for pattern in _WORD_BOUNDARIES:
        name = pattern.sub(r"\1_\2", name)
    return name.lower()


class LazyPackage(types.ModuleType):
    """A package whose `__init__` has not run: submodules import from its real directory, names
    resolve through `resolve` or, failing that, by running the real `__init__` (once)."""

    def __init__(self, name: str, init_path: Path, resolve: Callable[[str], Any | None]) -> None:
        super().__init__(name)
        self.__file__ = str(init_path)
        self.__path__ = [str(init_path.parent)]
        self.__package__ = name
        self.__spec__ = importlib.util.spec_from_file_location(name, init_path,
                                                              submodule_search_locations=self.__path__)
        self._lazy_resolve: Callable[[str], Any | None] | None = resolve

    def __getattr__(self, attr: str) -> Any:
        if (attr.startswith("__") and attr not in PACKAGE_DUNDERS) or self.__dict__.get("_lazy_resolve") is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")
        submodule = f"{self.__name__}.{attr}"
        if submodule in sys.modules or importlib.util.find_spec(submodule) is not None:
            return importlib.import_module(submodule)
        resolve = self.__dict__["_lazy_resolve"]
        found = resolve(attr)
        if found is not None:
            return found
        self.load()
        try:
            return self.__dict__[attr]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}") from None

    def load(self) -> None:
        """Run the package's real `__init__` in this module (what `import` would have done)."""
        if self.__dict__.get("_lazy_resolve") is None:
            return
        self._lazy_resolve = None
        spec = self.__spec__
        assert spec is not None and spec.loader is not None
        spec.loader.exec_module(self)


def _from_module(package: str, modules: Mapping[str, str]) -> Callable[[str], Any | None]:
    def resolve(attr: str) -> Any | None:
        module = modules.get(attr)
        return getattr(importlib.import_module(f"{package}.{module}"), attr) if module else None
    return resolve


def _model(attr: str) -> Any | None:
    if not attr[:1].isupper():
        return None
    module = f"{MODELS}.{model_module(attr)}"
    if importlib.util.find_spec(module) is None:
        return None
    return getattr(importlib.import_module(module), attr, None)


def _client(attr: str) -> Any | None:
    return _from_module(CLIENT, CLIENT_NAMES)(attr) or _model(attr)


def install() -> bool:
    """The stand-ins, unless kubernetes_asyncio is imported already or not installed. True when
    they were installed."""
    if ROOT in sys.modules:
        return False
    spec = importlib.util.find_spec(ROOT)
    if spec is None or spec.origin is None:
        return False
    root_dir = Path(spec.origin).parent
    packages = [LazyPackage(ROOT, root_dir / "__init__.py", lambda attr: None),
                LazyPackage(CLIENT, root_dir / "client" / "__init__.py", _client),
                LazyPackage(MODELS, root_dir / "client" / "models" / "__init__.py", _model)]
    for package in packages:
        sys.modules[package.__name__] = package
    return True
