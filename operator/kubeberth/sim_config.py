"""simulate's configuration: `--config` files (KubeSchedulerConfiguration), such documents found
among the inputs, and the warning for document kinds simulate does not read."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import yaml

from .config import KIND as PROFILE_KIND
from .config import ConfigError
from .config.kube_config import KSC_KIND, ImportedConfig, import_config
from .scheduler.watched import OBJECT_KINDS
from .sim_io import InputError, iter_objects

READ_KINDS = frozenset(OBJECT_KINDS | {"Pod", "Node", PROFILE_KIND})


@dataclass
class SimInput:
    """The objects to simulate, with the profiles of any configuration expanded."""
    objects: list[dict[str, Any]] = field(default_factory=list)
    percentage_of_nodes_to_score: int | None = None  # the configuration's scheduler-wide value


def _import(doc: dict[str, Any], source: str, warn: TextIO) -> ImportedConfig:
    try:
        imported = import_config(doc, source)
    except ConfigError as exc:
        raise InputError(str(exc)) from None
    for line in imported.warnings:
        warn.write(f"{source}: {line}\n")
    return imported


def load_config(path: str | Path, warn: TextIO) -> ImportedConfig:
    """A --config file: one KubeSchedulerConfiguration document."""
    p = Path(path)
    try:
        docs = [d for d in yaml.safe_load_all(p.read_text()) if d is not None]
    except OSError as exc:
        raise InputError(f"{p}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise InputError(f"{p}: invalid YAML: {exc}") from exc
    if len(docs) != 1 or not isinstance(docs[0], dict) or docs[0].get("kind") != KSC_KIND:
        raise InputError(f"{p}: want exactly one {KSC_KIND} document")
    imported = _import(docs[0], str(p), warn)
    check_profiles(imported, str(p))
    return imported


def check_profiles(imported: ImportedConfig, source: str) -> None:
    """A configuration whose profile cannot run is refused, as kube-scheduler refuses to start."""
    from .config import parse_profile_object
    from .plugins import plugin_registry
    from .profile import check_buildable

    registry = plugin_registry()
    for obj in imported.profiles:
        spec = parse_profile_object(obj)[1]
        try:
            check_buildable(spec, registry)
        except ConfigError as exc:
            raise InputError(f"{source}: profile {spec.schedulerName}: {exc}") from None


def prepare(objects: Iterable[dict[str, Any]], warn: TextIO, config: ImportedConfig | None = None,
            source: str = "KubeSchedulerConfiguration in the input") -> SimInput:
    """Expand KubeSchedulerConfiguration documents into their profiles, add `config`'s profiles
    last (they win over a SchedulingProfile of the inputs serving the same schedulerName) and
    warn once per kind simulate does not read."""
    from .plugins import plugin_registry
    from .scheduler.watched import declared_kinds

    out = SimInput()
    declared = {(k.api_version, k.kind) for k in declared_kinds(plugin_registry())}
    ignored: dict[str, int] = {}
    configs: list[ImportedConfig] = []
    for obj in objects:
        kind = str(obj.get("kind"))
        if kind == KSC_KIND:
            imported = _import(obj, source, warn)
            check_profiles(imported, source)
            configs.append(imported)
        elif kind in READ_KINDS or (obj.get("apiVersion"), kind) in declared:
            out.objects.append(obj)
        else:
            ignored[kind] = ignored.get(kind, 0) + 1
    for kind, n in sorted(ignored.items()):
        warn.write(f"warning: {n} {kind} object{'s' if n > 1 else ''} ignored: simulate does not read {kind}\n")
    if config is not None:
        configs.append(config)
    for imported in configs:
        served = {_scheduler_name(o): o for o in out.objects if o.get("kind") == PROFILE_KIND}
        for prof in imported.profiles:
            name = _scheduler_name(prof)
            if name in served:
                warn.write(f"warning: the configuration's profile {name} replaces SchedulingProfile "
                           f"{(served[name].get('metadata') or {}).get('name')}\n")
            out.objects.append(prof)
        if imported.percentage_of_nodes_to_score is not None:
            out.percentage_of_nodes_to_score = imported.percentage_of_nodes_to_score
    return out


def _scheduler_name(obj: dict[str, Any]) -> str:
    return str((obj.get("spec") or {}).get("schedulerName") or "default-scheduler")


def load_profile_specs(paths: Iterable[str]) -> list[dict[str, Any]]:
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
        for obj in iter_objects(docs, str(path)):
            if obj.get("kind") != PROFILE_KIND:
                raise InputError(f"{path}: a {obj.get('kind')} is not a {PROFILE_KIND}")
            objects.append(obj)
    return objects
