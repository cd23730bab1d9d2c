"""`kubeberth plugins`: every plugin of the process's registry with its origin, extension
points, vectorised hooks and args schema; and the plugins that could not be loaded."""

from __future__ import annotations

import json
from typing import Any

from ..framework import FilterPlugin, PluginSpec, ScorePlugin
from ._loading import Loaded

# The vectorised hooks (framework/vector/): overriding one is having it.
_HOOKS: tuple[tuple[type, str], ...] = (
    (FilterPlugin, "filter_all"), (FilterPlugin, "filter_statuses"),
    (ScorePlugin, "score_all"), (ScorePlugin, "normalize_all"),
)


def vectorised_hooks(cls: type) -> list[str]:
    return [hook for base, hook in _HOOKS
            if issubclass(cls, base) and getattr(cls, hook) is not getattr(base, hook)]


def plugin_entry(spec: PluginSpec) -> dict[str, Any]:
    cls = spec.cls
    model = spec.args_model
    return {
        "name": spec.name,
        "origin": spec.origin,
        "extensionPoints": spec.points(),
        "vectorisedHooks": vectorised_hooks(cls),
        "argsSchema": model.model_json_schema() if model is not None else None,
        "reads": [{"group": k.group, "version": k.version, "resource": k.resource, "kind": k.kind,
                   "namespaced": k.namespaced} for k in cls.reads],
        "requiresApi": cls.requires_api,
    }


def listing(loaded: Loaded) -> dict[str, Any]:
    """The plugins, and the load failures with the names they leave unavailable (a name that
    another source brings is not: a broken entry point affects only its own entries)."""
    return {
        "plugins": [plugin_entry(s) for s in sorted(loaded.registry.specs(), key=lambda s: s.name)],
        "unavailable": [{"origin": f.origin, "error": f.error, "names": loaded.unavailable_names(f)}
                        for f in loaded.failures],
    }


def render_json(loaded: Loaded) -> str:
    return json.dumps(listing(loaded), indent=2)


def render_table(loaded: Loaded) -> str:
    data = listing(loaded)
    rows = [("NAME", "ORIGIN", "EXTENSION POINTS", "VECTORISED", "ARGS")]
    for p in data["plugins"]:
        schema = p["argsSchema"]
        args = ", ".join(schema.get("properties") or {}) if schema else "-"
        rows.append((p["name"], p["origin"], ",".join(p["extensionPoints"]),
                     ",".join(p["vectorisedHooks"]) or "no", args or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]) - 1)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)) + "  " + r[-1] for r in rows]
    lines = [line.rstrip() for line in lines]
    for f in data["unavailable"]:
        names = f" ({', '.join(f['names'])})" if f["names"] else ""
        lines.append(f"unavailable{names}: {f['origin']}: {f['error']}")
    lines.append("(args schemas in full: kubeberth plugins -o json)")
    return "\n".join(lines)
