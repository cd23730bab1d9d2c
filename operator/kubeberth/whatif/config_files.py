"""The what-if tools' configuration: `--config` files (KubeSchedulerConfiguration), such documents
found among the inputs, files of SchedulingProfiles (`--compare`'s sides, `kubeberth profile
export`), the warning for document kinds simulate does not read, and the validation every profile
passes before anything is simulated (a profile the operator would refuse is an error)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from ..config import DEFAULT_SCHEDULER_NAME, ConfigError, SchedulingProfileSpec, parse_profile_object
from ..config import KIND as PROFILE_KIND
from ..config.kube_config import KSC_KIND, ImportedConfig, export_config, import_config
from ..config.models import SHADOW
from ..framework.registry import Registry
from ..scheduler.watched import OBJECT_KINDS
from .inputs import InputError, Origins, iter_objects

READ_KINDS = frozenset(OBJECT_KINDS | {"Pod", "Node", PROFILE_KIND})


@dataclass
class SimInput:
    """The objects to simulate, with the profiles of any configuration expanded."""
    objects: list[dict[str, Any]] = field(default_factory=list)
    percentage_of_nodes_to_score: int | None = None  # the configuration's scheduler-wide value
    origins: Origins | None = None  # where each object was read (for the errors about one)


def _import(doc: dict[str, Any], source: str, warn: TextIO) -> ImportedConfig:
    try:
        imported = import_config(doc, source)
    except ConfigError as exc:
        raise InputError(str(exc)) from None
    for line in imported.warnings:
        warn.write(f"{source}: {line}\n")
    return imported


def load_config(path: str | Path, warn: TextIO, registry: Registry | None = None) -> ImportedConfig:
    """A --config file: one KubeSchedulerConfiguration document, each profile able to run."""
    p = Path(path)
    try:
        docs = [d for d in yaml.safe_load_all(p.read_text()) if d is not None]
    except OSError as exc:
        raise InputError(f"{p}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise InputError(f"{p}: invalid YAML: {exc}") from exc
    if len(docs) != 1 or not isinstance(docs[0], dict) or docs[0].get("kind") != KSC_KIND:
        raise InputError(f"{p}: want exactly one {KSC_KIND} document")
    return config_document(docs[0], str(p), warn, registry)


def config_document(doc: dict[str, Any], source: str, warn: TextIO, registry: Registry | None = None) -> ImportedConfig:
    """A KubeSchedulerConfiguration document (not a file), each profile able to run."""
    imported = _import(doc, source, warn)
    check_profiles(imported, source, registry)
    return imported


def _registry(registry: Registry | None) -> Registry:
    if registry is not None:
        return registry
    from ..plugins import plugin_registry

    return plugin_registry()


def check_profiles(imported: ImportedConfig, source: str, registry: Registry | None = None) -> None:
    """A configuration whose profile cannot run is refused, as kube-scheduler refuses to start:
    InputError naming `source` and the field as the file names it (profiles[i]...)."""
    from ..profile import check_config_profiles

    try:
        check_config_profiles(imported.profiles, _registry(registry))
    except ConfigError as exc:
        raise InputError(f"{source}: {exc.path}: {exc.detail}") from None


def profile_label(obj: Mapping[str, Any]) -> str:
    name = (obj.get("metadata") or {}).get("name")
    return f"{PROFILE_KIND} {name}" if name else PROFILE_KIND


def _prefix(where: str | None) -> str:
    return f"{where}: " if where else ""


@dataclass
class CheckedProfile:
    """A SchedulingProfile object of the input, validated, and where it was read."""
    obj: dict[str, Any]
    spec: SchedulingProfileSpec
    where: str | None


def check_profile(obj: dict[str, Any], where: str | None, registry: Registry | None = None) -> CheckedProfile:
    """A SchedulingProfile validated as the operator validates it before putting it in force:
    parsed, then its framework built from the registry (unknown plugins, invalid args, plugins at
    an extension point they do not implement, no queue sort or bind plugin...). Raises InputError
    naming where it was read, the profile and the field."""
    from ..profile import check_buildable

    try:
        spec = parse_profile_object(obj)[1]
        check_buildable(spec, _registry(registry))
    except ConfigError as exc:
        raise InputError(f"{_prefix(where)}{profile_label(obj)}: {exc}") from None
    return CheckedProfile(obj, spec, where)


def check_served(profiles: Iterable[CheckedProfile]) -> None:
    """Two Active profiles cannot serve one schedulerName: the operator refuses the later one
    (Conflict), so its input would be ambiguous here. Shadow profiles serve no schedulerName."""
    served: dict[str, CheckedProfile] = {}
    for prof in profiles:
        if prof.spec.mode == SHADOW:
            continue
        first = served.setdefault(prof.spec.schedulerName, prof)
        if first is not prof:
            at = f" ({first.where})" if first.where else ""
            raise InputError(f"{_prefix(prof.where)}{profile_label(prof.obj)}: spec.schedulerName: "
                             f"{prof.spec.schedulerName} is already served by {profile_label(first.obj)}{at}")


def profile_config(path: str, origins: Origins | None = None, registry: Registry | None = None) -> ImportedConfig:
    """A file of SchedulingProfiles standing for a whole policy (simulate --compare's A or B):
    each able to run and Active, no two serving one schedulerName; they replace the input's
    profiles serving the same schedulerNames, as a --config file's do."""
    origins = origins if origins is not None else Origins()
    objects = load_profile_specs([path], origins)
    if not objects:
        raise InputError(f"{path}: no {PROFILE_KIND} in this file")
    checked = [check_profile(obj, origins.of(obj), registry) for obj in objects]
    for prof in checked:
        if prof.spec.mode == SHADOW:
            raise InputError(f"{_prefix(prof.where)}{profile_label(prof.obj)}: spec.mode: a Shadow profile "
                             "schedules nothing, so it has no outcome to compare; set mode: Active to compare "
                             "its policy")
    check_served(checked)
    return ImportedConfig(profiles=[p.obj for p in checked])


def is_shadow(obj: Mapping[str, Any]) -> bool:
    """Whether a SchedulingProfile is in Shadow mode (it schedules nothing in a simulation)."""
    return (obj.get("spec") or {}).get("mode") == SHADOW


def prepare(objects: Iterable[dict[str, Any]], warn: TextIO, config: ImportedConfig | None = None,
            source: str = "KubeSchedulerConfiguration in the input", *, origins: Origins | None = None,
            registry: Registry | None = None) -> SimInput:
    """Expand KubeSchedulerConfiguration documents into their profiles, add `config`'s profiles
    last (they replace a SchedulingProfile of the inputs serving the same schedulerName) and
    warn once per kind simulate does not read. Every profile is validated as the operator would
    (InputError naming the document, from `origins`, and the field): nothing is simulated under a
    profile the operator would refuse. A Shadow profile is noted: it schedules nothing."""
    from ..scheduler.watched import declared_kinds

    out = SimInput(origins=origins)
    declared = {(k.api_version, k.kind) for k in declared_kinds(_registry(registry))}
    ignored: dict[str, int] = {}
    configs: list[ImportedConfig] = []
    profiles: list[CheckedProfile] = []
    for obj in objects:
        kind = str(obj.get("kind"))
        where = origins.of(obj) if origins is not None else None
        if kind == KSC_KIND:
            configs.append(config_document(obj, where or source, warn, registry))
        elif kind == PROFILE_KIND:
            prof = check_profile(obj, where, registry)
            profiles.append(prof)
            out.objects.append(obj)
            if prof.spec.mode == SHADOW:
                warn.write(f"note: {_prefix(where)}{profile_label(obj)} is mode: Shadow: it schedules nothing, "
                           "here as in a cluster (set mode: Active to simulate its policy)\n")
        elif kind in READ_KINDS or (obj.get("apiVersion"), kind) in declared:
            out.objects.append(obj)
        else:
            ignored[kind] = ignored.get(kind, 0) + 1
    check_served(profiles)
    for kind, n in sorted(ignored.items()):
        warn.write(f"warning: {n} {kind} object{'s' if n > 1 else ''} ignored: simulate does not read {kind}\n")
    if config is not None:
        configs.append(config)
    for imported in configs:
        served = {scheduler_name(o): o for o in out.objects if o.get("kind") == PROFILE_KIND and not is_shadow(o)}
        for prof_obj in imported.profiles:
            name = scheduler_name(prof_obj)
            replaced = served.get(name)
            if replaced is not None:
                warn.write(f"warning: the configuration's profile {name} replaces SchedulingProfile "
                           f"{(replaced.get('metadata') or {}).get('name')}\n")
                out.objects = [o for o in out.objects if o is not replaced]
            out.objects.append(prof_obj)
        if imported.percentage_of_nodes_to_score is not None:
            out.percentage_of_nodes_to_score = imported.percentage_of_nodes_to_score
    return out


def scheduler_name(obj: Mapping[str, Any]) -> str:
    """A pod's or a SchedulingProfile's `spec.schedulerName`, defaulted as the API server and the
    operator do."""
    return str((obj.get("spec") or {}).get("schedulerName") or DEFAULT_SCHEDULER_NAME)


def load_profile_specs(paths: Iterable[str], origins: Origins | None = None) -> list[dict[str, Any]]:
    """SchedulingProfile objects from YAML files (other kinds are an error)."""
    objects: list[dict[str, Any]] = []
    for p in paths:
        path = Path(p)
        try:
            docs = list(yaml.safe_load_all(path.read_text()))
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise InputError(f"{path}: invalid YAML: {exc}") from exc
        for obj in iter_objects(docs, str(path), origins):
            if obj.get("kind") != PROFILE_KIND:
                raise InputError(f"{path}: a {obj.get('kind')} is not a {PROFILE_KIND}")
            objects.append(obj)
    return objects


def export_profiles(paths: Iterable[str]) -> dict[str, Any]:
    """`kubeberth profile export`: the SchedulingProfiles of `paths` as one KubeSchedulerConfiguration
    document, each validated as the operator validates a profile before it runs it (the framework
    built from the registry), so that what is exported is what kube-scheduler could run. Raises
    InputError (or ConfigError from the export) naming the profile and the field."""
    origins = Origins()
    checked = [check_profile(obj, origins.of(obj)) for obj in load_profile_specs(paths, origins)]
    for prof in checked:
        if prof.spec.mode == SHADOW:
            raise InputError(f"{prof.where}: {profile_label(prof.obj)}: spec.mode: a Shadow profile has "
                             "no KubeSchedulerConfiguration form (kube-scheduler binds every pod it "
                             "schedules)")
    check_served(checked)
    return export_config([p.spec for p in checked])
