"""Upstream's KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) to SchedulingProfiles
and back.

Every profile of the file becomes one SchedulingProfile spec. The scheduler-wide fields that
have a per-profile counterpart here (percentageOfNodesToScore, the backoff seconds, extenders)
are copied into each profile (a profile's own percentageOfNodesToScore wins, as upstream);
fields with no meaning for kubeberth are named in one warning each; unknown fields are errors,
as upstream's strict decoding makes them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from .errors import ConfigError, from_validation_error
from .models import ExtenderConfig, PluginConfig, Plugins, SchedulingProfileSpec
from .profile import GROUP, KIND, VERSION

KSC_GROUP = "kubescheduler.config.k8s.io"
KSC_VERSION = "v1"
KSC_API_VERSION = f"{KSC_GROUP}/{KSC_VERSION}"
KSC_KIND = "KubeSchedulerConfiguration"

# Scheduler-wide fields kubeberth does not take from the file, and what to use instead.
NOT_APPLIED: dict[str, str] = {
    "parallelism": "kubeberth runs plugins in one process without a worker pool",
    "leaderElection": "use kubeberth run's --leader-elect flags",
    "clientConnection": "use kubeberth run's --kubeconfig, --context or --server",
    "healthzBindAddress": "use kubeberth run's --liveness",
    "metricsBindAddress": "use kubeberth run's --metrics-host and --metrics-port",
    "enableProfiling": "not served by kubeberth",
    "enableContentionProfiling": "not served by kubeberth",
    "delayCacheUntilActive": "kubeberth's standbys always keep a warm cache",
}
APPLIED = {"apiVersion", "kind", "percentageOfNodesToScore", "podInitialBackoffSeconds", "podMaxBackoffSeconds",
           "profiles", "extenders"}
PROFILE_FIELDS = {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"}


@dataclass
class ImportedConfig:
    """The profiles of one KubeSchedulerConfiguration, as SchedulingProfile objects."""
    profiles: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    percentage_of_nodes_to_score: int | None = None


def is_kube_scheduler_configuration(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == KSC_KIND


def resource_name(scheduler_name: str) -> str:
    """A DNS-1123 name for the SchedulingProfile serving `scheduler_name`."""
    name = re.sub(r"[^a-z0-9.-]+", "-", scheduler_name.lower()).strip("-.")
    return name[:253] or "profile"


def _check_keys(obj: Mapping[str, Any], allowed: set[str], where: str) -> None:
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise ConfigError(f"{where}{unknown[0]}", "unknown field")


def import_config(doc: Any, source: str = "") -> ImportedConfig:
    """SchedulingProfile objects for the profiles of a KubeSchedulerConfiguration document.
    Raises ConfigError naming the field for an invalid document."""
    prefix = f"{source}: " if source else ""
    try:
        return _import(doc)
    except ConfigError as exc:
        raise ConfigError(f"{prefix}{exc.path}", exc.detail) from None


def _import(doc: Any) -> ImportedConfig:
    if not isinstance(doc, Mapping):
        raise ConfigError("", "a KubeSchedulerConfiguration must be a mapping")
    if doc.get("kind") != KSC_KIND:
        raise ConfigError("kind", f"want {KSC_KIND}, got {doc.get('kind')!r}")
    if doc.get("apiVersion") != KSC_API_VERSION:
        raise ConfigError("apiVersion", f"want {KSC_API_VERSION}, got {doc.get('apiVersion')!r}")
    _check_keys(doc, APPLIED | set(NOT_APPLIED), "")
    out = ImportedConfig()
    for key, instead in NOT_APPLIED.items():
        if key in doc:
            out.warnings.append(f"{key} does not apply to kubeberth and is ignored ({instead})")
    shared: dict[str, Any] = {}
    for key in ("podInitialBackoffSeconds", "podMaxBackoffSeconds"):
        if doc.get(key) is not None:
            shared[key] = doc[key]
    extenders = doc.get("extenders") or []
    if not isinstance(extenders, list):
        raise ConfigError("extenders", "must be a list")
    for i, ext in enumerate(extenders):
        try:
            ExtenderConfig.model_validate(ext)
        except ValidationError as exc:
            raise from_validation_error(exc, f"extenders[{i}]") from None
    if extenders:
        shared["extenders"] = list(extenders)
    global_pct = doc.get("percentageOfNodesToScore")
    if global_pct is not None:
        if not isinstance(global_pct, int) or isinstance(global_pct, bool) or not 0 <= global_pct <= 100:
            raise ConfigError("percentageOfNodesToScore", f"must be a whole number from 0 to 100, not {global_pct!r}")
        out.percentage_of_nodes_to_score = global_pct
    profiles = doc.get("profiles")
    if profiles is None:
        profiles = [{}]  # upstream's default: one default-scheduler profile
    if not isinstance(profiles, list) or not profiles:
        raise ConfigError("profiles", "must be a non-empty list")
    seen: set[str] = set()
    for i, prof in enumerate(profiles):
        where = f"profiles[{i}]"
        if not isinstance(prof, Mapping):
            raise ConfigError(where, "must be a mapping")
        _check_keys(prof, PROFILE_FIELDS, f"{where}.")
        spec: dict[str, Any] = {**shared, **{k: v for k, v in prof.items() if v is not None}}
        if "percentageOfNodesToScore" not in spec and global_pct is not None:
            spec["percentageOfNodesToScore"] = global_pct
        try:
            parsed = SchedulingProfileSpec.model_validate(spec)
        except ValidationError as exc:
            raise from_validation_error(exc, where) from None
        if parsed.schedulerName in seen:
            raise ConfigError(f"{where}.schedulerName", f"{parsed.schedulerName!r} is served by an earlier profile")
        seen.add(parsed.schedulerName)
        out.profiles.append({"apiVersion": f"{GROUP}/{VERSION}", "kind": KIND,
                             "metadata": {"name": resource_name(parsed.schedulerName)},
                             "spec": _spec_dict(parsed)})
    return out


def _spec_dict(spec: SchedulingProfileSpec) -> dict[str, Any]:
    """The spec as a SchedulingProfile's YAML holds it: defaults and empty sets left out."""
    return spec.model_dump(mode="json", exclude_defaults=True)


def _plugins_dict(plugins: Plugins) -> dict[str, Any]:
    return plugins.model_dump(mode="json", exclude_defaults=True)


def _plugin_config_dict(pc: PluginConfig) -> dict[str, Any]:
    args = {"apiVersion": KSC_API_VERSION, "kind": f"{pc.name}Args", **pc.args}
    return {"name": pc.name, "args": args}


def export_config(specs: Sequence[SchedulingProfileSpec]) -> dict[str, Any]:
    """A KubeSchedulerConfiguration holding `specs` as its profiles. Upstream keeps the backoff
    seconds and the extenders scheduler-wide: profiles that differ there cannot be written as one
    file, which is a ConfigError naming the field."""
    if not specs:
        raise ConfigError("profiles", "no SchedulingProfile to export")
    doc: dict[str, Any] = {"apiVersion": KSC_API_VERSION, "kind": KSC_KIND}
    first = specs[0]
    for key in ("podInitialBackoffSeconds", "podMaxBackoffSeconds", "extenders"):
        values = [getattr(s, key) for s in specs]
        if any(v != values[0] for v in values[1:]):
            raise ConfigError(key, "differs between the profiles; a KubeSchedulerConfiguration has one "
                                   "scheduler-wide value: export them to separate files")
    if first.podInitialBackoffSeconds != 1:
        doc["podInitialBackoffSeconds"] = first.podInitialBackoffSeconds
    if first.podMaxBackoffSeconds != 10:
        doc["podMaxBackoffSeconds"] = first.podMaxBackoffSeconds
    if first.extenders:
        doc["extenders"] = [e.model_dump(mode="json", exclude_defaults=True) for e in first.extenders]
    profiles = []
    names: set[str] = set()
    for spec in specs:
        if spec.mode != "Active":
            raise ConfigError("mode", f"the {spec.mode} profile for {spec.schedulerName} has no "
                                      "KubeSchedulerConfiguration form: kube-scheduler binds every pod it schedules")
        if spec.schedulerName in names:
            raise ConfigError("schedulerName", f"two profiles serve {spec.schedulerName!r}")
        names.add(spec.schedulerName)
        prof: dict[str, Any] = {"schedulerName": spec.schedulerName}
        if spec.percentageOfNodesToScore is not None:
            prof["percentageOfNodesToScore"] = spec.percentageOfNodesToScore
        plugins = _plugins_dict(spec.plugins)
        if plugins:
            prof["plugins"] = plugins
        if spec.pluginConfig:
            prof["pluginConfig"] = [_plugin_config_dict(pc) for pc in spec.pluginConfig]
        profiles.append(prof)
    doc["profiles"] = profiles
    return doc
