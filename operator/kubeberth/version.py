"""`kubeberth --version`: kubeberth's own version, the plugin API's (`kubeberth.framework`'s
API_VERSION) and the kube-scheduler release whose behaviour it reproduces.

The console script answers `--version` before it loads anything else (entry.py), so this reads
the three without importing the framework (numpy, pydantic, every plugin) or the Kubernetes
client: the plugin API's version is read from the source of framework/plugin_api.py, where it is
defined, unless the framework is already loaded.
"""

from __future__ import annotations

import ast
import sys
from importlib import resources

from . import __version__
from .features import KUBE_SCHEDULER_VERSION


def plugin_api_version() -> str:
    """framework/plugin_api.py's API_VERSION, without importing the framework."""
    loaded = sys.modules.get("kubeberth.framework.plugin_api")
    if loaded is not None:
        return str(loaded.API_VERSION)
    source = resources.files(__package__).joinpath("framework", "plugin_api.py").read_text()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "API_VERSION"
                                                for t in node.targets):
            return str(ast.literal_eval(node.value))
    raise LookupError("framework/plugin_api.py defines no API_VERSION")


def version_text() -> str:
    """What `kubeberth --version` prints (kube-scheduler's own prints `Kubernetes v1.37.2`)."""
    return (f"kubeberth {__version__}\n"
            f"plugin API: {plugin_api_version()}\n"
            f"kube-scheduler: Kubernetes {KUBE_SCHEDULER_VERSION}")
