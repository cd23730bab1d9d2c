"""Turn a validated SchedulingProfile spec into a Framework (upstream's pkg/scheduler/profile):
plugins from the registry with their args, and the profile's extenders."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from .config.args import strict_args_model
from .config.defaults import merge_with_defaults, merged_origins
from .config.errors import ConfigError, from_validation_error
from .config.models import PluginRef, Plugins, PluginSet, SchedulingProfileSpec
from .config.profile import parse_profile_object
from .extender import build_extenders
from .framework.context import SchedulerContext
from .framework.interfaces import EXTENSION_POINTS
from .framework.registry import Registry
from .framework.runtime import Framework
from .framework.types import MAX_NODE_SCORE, MAX_TOTAL_SCORE


class PluginUnavailable(ConfigError):
    """The profile names a plugin that could not be loaded (its import failed, or it wants
    another API version): the reason is the loader's."""


class KindUnavailable(PluginUnavailable):
    """A plugin the profile enables reads a kind that cannot be read now (its CRD is not installed,
    RBAC does not grant a verb)."""


class KindsNotSynced(ConfigError):
    """Plugins the profile enables read kinds the operator has not listed yet (`kinds`, by
    `Kind.group`): the profile is judged once they are (or once they fail)."""

    def __init__(self, kinds: list[str]) -> None:
        super().__init__("", f"waiting for {', '.join(kinds)} to be listed")
        self.kinds = tuple(kinds)


def _unknown(path: str, registry: Registry, name: str) -> ConfigError:
    if name in registry.unavailable:
        return PluginUnavailable(path, registry.unknown(name))
    return ConfigError(path, registry.unknown(name))


_ATTR = {
    "preEnqueue": "pre_enqueue_plugins",
    "queueSort": "queue_sort_plugins",
    "preFilter": "pre_filter_plugins",
    "filter": "filter_plugins",
    "postFilter": "post_filter_plugins",
    "preScore": "pre_score_plugins",
    "score": "score_plugins",
    "reserve": "reserve_plugins",
    "permit": "permit_plugins",
    "preBind": "pre_bind_plugins",
    "bind": "bind_plugins",
    "postBind": "post_bind_plugins",
    "placementGenerate": "placement_generate_plugins",
    "placementScore": "placement_score_plugins",
}


def _resolve_aliases(plugins: Plugins, registry: Registry, alias_args: dict[str, dict[str, Any]]) -> Plugins:
    """Rewrite older policy names to today's plugins, remembering their preset args."""
    out: dict[str, PluginSet] = {}
    for point in Plugins.model_fields:
        ps: PluginSet = getattr(plugins, point)
        sets = {}
        for which in ("enabled", "disabled"):
            refs = []
            for i, ref in enumerate(getattr(ps, which)):
                alias = registry.alias(ref.name)
                if alias is None:
                    refs.append(ref)
                    continue
                if alias.args:
                    prior = alias_args.get(alias.target)
                    if prior is not None and prior != alias.args:
                        raise ConfigError(f"spec.plugins.{point}.{which}[{i}].name",
                                          f"{ref.name} conflicts with another name for {alias.target}")
                    alias_args[alias.target] = alias.args
                refs.append(PluginRef(name=alias.target, weight=ref.weight))
            sets[which] = refs
        out[point] = PluginSet(**sets)
    return Plugins(**out)


def _entry_path(point: str, i: int, origins: dict[str, list[int | None]]) -> str:
    """The field of entry `i` of the merged enabled list of `point`: the user's own entry, as
    `origins` (`merged_origins`) says; one of upstream's defaults is in no list of the spec."""
    j = origins[point][i]
    return f"spec.plugins.{point}" if j is None else f"spec.plugins.{point}.enabled[{j}].name"


def _origin_rank(origin: int | None) -> int:
    return -1 if origin is None else origin


def expand_points(plugins: Plugins, registry: Registry,
                  origins: dict[str, list[int | None]]) -> dict[str, list[PluginRef]]:
    """Per extension point, the ordered plugins, with multiPoint expanded as upstream. `plugins` is
    merged with the defaults; `origins` (`merged_origins` of the user's plugins) lets errors name
    the user's entries rather than positions in the merged lists."""
    result: dict[str, list[PluginRef]] = {}
    for point, base in EXTENSION_POINTS.items():
        ps: PluginSet = getattr(plugins, point)
        for i, ref in enumerate(ps.enabled):
            spec = registry.get(ref.name)
            if spec is None:
                raise _unknown(_entry_path(point, i, origins), registry, ref.name)
            if not issubclass(spec.cls, base):
                raise ConfigError(_entry_path(point, i, origins),
                                  f"plugin {ref.name!r} does not extend {point} plugin")
        explicit = [r.name for r in ps.enabled]
        if len(set(explicit)) != len(explicit):
            dup = next(n for n in explicit if explicit.count(n) > 1)
            raise ConfigError(f"spec.plugins.{point}.enabled", f"plugin {dup!r} already registered as {point}")
        disabled = {r.name for r in ps.disabled}
        if "*" in disabled:
            result[point] = list(ps.enabled)
            continue
        overrides: list[str] = []
        multi: list[PluginRef] = []
        first: dict[str, int] = {}  # name -> its first entry in the merged multiPoint list
        for i, ref in enumerate(plugins.multiPoint.enabled):
            spec = registry.get(ref.name)
            if spec is None:
                raise _unknown(_entry_path("multiPoint", i, origins), registry, ref.name)
            if not issubclass(spec.cls, base) or ref.name in disabled:
                continue
            if ref.name in explicit:
                overrides.append(ref.name)
                continue
            if ref.name in first:
                # the merge put the user's last entry of a default plugin in its place: name the later entry
                later = max((first[ref.name], i), key=lambda k: _origin_rank(origins["multiPoint"][k]))
                raise ConfigError(_entry_path("multiPoint", later, origins),
                                  f"plugin {ref.name!r} already registered as {point}")
            first[ref.name] = i
            multi.append(ref)
        by_name = {r.name: r for r in ps.enabled}
        ordered = [by_name[n] for n in explicit if n in overrides]
        ordered += multi
        ordered += [by_name[n] for n in explicit if n not in overrides]
        result[point] = ordered
    return result


def _score_weights(plugins: Plugins, points: dict[str, list[PluginRef]], point: str = "score") -> dict[str, int]:
    """The weights of `point`'s plugins (score, or placementScore as upstream's
    getValidScoreWeights): the point's own entry first, then multiPoint's; 0 or none is 1."""
    weights: dict[str, int] = {}
    for ref in getattr(plugins, point).enabled:
        weights[ref.name] = ref.weight or 1
    for ref in plugins.multiPoint.enabled:
        weights.setdefault(ref.name, ref.weight or 1)
    return {r.name: weights.get(r.name, 1) for r in points[point]}


def _plugin_args(spec: SchedulingProfileSpec, registry: Registry, name: str,
                 alias_args: dict[str, dict[str, Any]]) -> Any:
    plugin_spec = registry.get(name)
    assert plugin_spec is not None
    raw: dict[str, Any] = dict(alias_args.get(name, {}))
    path = ""
    for i, pc in enumerate(spec.pluginConfig):
        if pc.name == name:
            raw.update(pc.args)
            path = f"spec.pluginConfig[{i}].args"
    model: type[BaseModel] | None = plugin_spec.args_model
    if model is None:
        if raw and path:
            raise ConfigError(path, f"plugin {name!r} takes no args")
        return None
    strict = strict_args_model(model)
    try:
        if strict is not model:  # a field the plugin's model would drop or keep is refused
            strict.model_validate(raw)
        return model.model_validate(raw)
    except ValidationError as exc:
        raise from_validation_error(exc, path or f"spec.pluginConfig[{name}].args") from None


def check_score_overflow(weights: dict[str, int], point: str = "score") -> None:
    total = 0
    for name, weight in weights.items():
        total += weight * MAX_NODE_SCORE
        if total > MAX_TOTAL_SCORE:
            raise ConfigError(f"spec.plugins.{point}", f"total score of Score plugins could overflow at {name}")


def _needed(points: dict[str, list[Any]]) -> list[str]:
    needed: list[str] = []
    for refs in points.values():
        for r in refs:
            if r.name not in needed:
                needed.append(r.name)
    return needed


def enabled_plugins(spec: SchedulingProfileSpec, registry: Registry) -> list[str]:
    """The plugins a profile's spec runs (upstream's defaults merged, multiPoint expanded, aliases
    resolved). Raises ConfigError as build_framework would for the plugin sets."""
    custom = _resolve_aliases(spec.plugins, registry, {})
    return _needed(expand_points(merge_with_defaults(custom), registry, merged_origins(custom)))


def build_framework(spec: SchedulingProfileSpec, registry: Registry, ctx: SchedulerContext,
                    profile_name: str | None = None) -> Framework:
    """Raises ConfigError naming the field when the profile cannot run."""
    for i, pc in enumerate(spec.pluginConfig):
        if pc.name not in registry and registry.alias(pc.name) is None:
            raise _unknown(f"spec.pluginConfig[{i}].name", registry, pc.name)
    alias_args: dict[str, dict[str, Any]] = {}
    custom = _resolve_aliases(spec.plugins, registry, alias_args)
    for i, pc in enumerate(spec.pluginConfig):
        alias = registry.alias(pc.name)
        if alias is not None:
            spec = spec.model_copy(deep=True)
            spec.pluginConfig[i].name = alias.target
    merged = merge_with_defaults(custom)
    points = expand_points(merged, registry, merged_origins(custom))
    needed = _needed(points)
    unsynced: list[str] = []
    for name in needed:
        plugin_spec = registry.get(name)
        assert plugin_spec is not None
        for kind in plugin_spec.cls.reads:
            problem = registry.kind_problems.get(kind.group_kind)
            if problem is not None:
                raise KindUnavailable("", f"plugin {name!r} reads {kind.kind}: {problem}")
            if kind.group_kind in registry.kinds_unsynced and kind.group_kind not in unsynced:
                unsynced.append(kind.group_kind)
    if unsynced:
        raise KindsNotSynced(unsynced)
    fw = Framework(profile_name or spec.schedulerName, spec, ctx)
    fw.extenders = list(build_extenders(spec, node_infos=lambda: fw.snapshot))
    for name in needed:
        plugin_spec = registry.get(name)
        assert plugin_spec is not None
        args = _plugin_args(spec, registry, name, alias_args)
        try:
            fw.plugins[name] = plugin_spec.build(args, fw)
        except ConfigError:
            raise
        except ValueError as exc:
            raise ConfigError(f"spec.pluginConfig[{name}].args", str(exc)) from exc
        except Exception as exc:  # a plugin's own bug: its profile is refused, the scheduler goes on
            text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            raise PluginUnavailable("", f'initializing plugin "{name}": {text}') from exc
    for point, refs in points.items():
        setattr(fw, _ATTR[point], [fw.plugins[r.name] for r in refs])
    fw.score_weights = _score_weights(merged, points)
    check_score_overflow(fw.score_weights)
    fw.placement_score_weights = _score_weights(merged, points, "placementScore")
    check_score_overflow(fw.placement_score_weights, "placementScore")
    if len(fw.queue_sort_plugins) != 1:
        raise ConfigError("spec.plugins.queueSort",
                          f"exactly one queue sort plugin must be enabled, got {len(fw.queue_sort_plugins)}")
    if not fw.bind_plugins and not any(getattr(e, "is_binder", False) for e in fw.extenders):
        raise ConfigError("spec.plugins.bind", "at least one bind plugin is needed")
    return fw


def check_buildable(spec: SchedulingProfileSpec, registry: Registry) -> None:
    """Raise ConfigError if `spec` could not run (built once on a throwaway context)."""
    build_framework(spec, registry, SchedulerContext())


# KubeSchedulerConfiguration fields copied into each of its profiles (errors name them as the file does).
SCHEDULER_WIDE = frozenset({"extenders", "podInitialBackoffSeconds", "podMaxBackoffSeconds"})


def config_field(path: str, index: int) -> str:
    """A profile's field (spec.X) as the KubeSchedulerConfiguration names it: profiles[i].X, or the
    scheduler-wide field the profile took its value from."""
    if path == "spec":
        return f"profiles[{index}]"
    if not path.startswith("spec."):
        return path
    rest = path[len("spec."):]
    if rest.split(".")[0].split("[")[0] in SCHEDULER_WIDE:
        return rest
    return f"profiles[{index}].{rest}"


def check_config_profiles(profiles: Sequence[Mapping[str, Any]], registry: Registry) -> None:
    """The SchedulingProfile objects a KubeSchedulerConfiguration imports to (config/kube_config.py),
    each checked as kube-scheduler checks its profiles before it starts: ConfigError for the first
    that could not run, its `path` the field as the configuration names it (profiles[i]...)."""
    for i, obj in enumerate(profiles):
        try:
            check_buildable(parse_profile_object(obj)[1], registry)
        except ConfigError as exc:
            raise ConfigError(config_field(exc.path, i), exc.detail) from None
