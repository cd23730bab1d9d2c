"""SchedulingProfile resources applied live to the running scheduler.

Each profile resource serves one schedulerName. Applying a spec builds a new framework
between scheduling cycles (bindings in flight finish with the one they started with).
An invalid spec is refused with `Accepted=False` naming the field, and the last good
version of that profile keeps running. Two resources cannot serve one schedulerName:
the later one is refused until the first goes away. Deleting the resource that served
default-scheduler brings upstream's default profile back (unless disabled).

Status (observedGeneration and the Accepted condition) is written to the status
subresource, only when it would change.

The manager also says what the profiles need (`on_demand` hears when that changes): the
plugins in force (their kopf handlers run only then) and the plugins wanted, those in force
plus those of profiles that wait for the kinds their plugins read or are refused because one
cannot be read (their kinds are watched only then). A profile whose plugins read a kind not
listed yet waits, without a verdict, until it is (`set_kind_synced`) or cannot be
(`set_kind_problem`); the previous version stays in force meanwhile.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ..config import DEFAULT_SCHEDULER_NAME, ConfigError, SchedulingProfileSpec, default_spec, parse_spec
from ..config.models import SHADOW
from ..framework.registry import Registry
from ..profile import KindsNotSynced, KindUnavailable, PluginUnavailable, enabled_plugins
from ..scheduler import Scheduler
from .shadow import ShadowEvaluator

logger = logging.getLogger(__name__)

ACCEPTED = "Accepted"


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    reason: str
    message: str

    def condition(self, generation: int | None, previous: Mapping[str, Any] | None, now: str) -> dict[str, Any]:
        status = "True" if self.accepted else "False"
        transition = now
        if previous is not None and previous.get("status") == status and previous.get("lastTransitionTime"):
            transition = str(previous["lastTransitionTime"])
        cond: dict[str, Any] = {"type": ACCEPTED, "status": status, "reason": self.reason,
                                "message": self.message, "lastTransitionTime": transition}
        if generation is not None:
            cond["observedGeneration"] = generation
        return cond


VALID = Verdict(True, "Valid", "")
WAITING = Verdict(False, "Waiting", "")  # not a verdict: judged once the kinds its plugins read are listed

StatusWriter = Callable[[str, dict[str, Any]], Awaitable[None]]


class ProfileManager:
    def __init__(self, scheduler: Scheduler, registry: Registry, *, default_profile: bool = True,
                 shadow: ShadowEvaluator | None = None) -> None:
        self.scheduler = scheduler
        self.shadow = shadow  # where Shadow-mode profiles run; None: they are refused
        self.registry = registry
        self.default_profile = default_profile
        self.running: dict[str, SchedulingProfileSpec] = {}  # resource name -> spec in force
        self.owners: dict[str, str] = {}  # schedulerName -> resource name
        self.objects: dict[str, Mapping[str, Any]] = {}  # resource name -> latest object seen
        self.verdicts: dict[str, Verdict] = {}
        # resource name -> (spec, verdict) last logged: the object comes back with each status
        # write (and with each relist) unchanged, and is not announced again.
        self.announced: dict[str, tuple[Any, Verdict]] = {}
        self.dirty: set[str] = set()  # resources whose status needs writing
        self.fixed: dict[str, Mapping[str, Any]] = {}  # --config profiles: name -> object
        self.enabled: dict[str, frozenset[str]] = {}  # resource name -> the plugins of its spec in force
        self.wanting: dict[str, frozenset[str]] = {}  # resource name -> plugins of a spec waiting for kinds
        self.waiting: set[str] = set()  # resources whose spec waits for kinds to be listed
        self.on_demand: Callable[[], None] | None = None
        self._demand: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())
        if default_profile:
            self._install_default()

    def _install_default(self) -> None:
        self.scheduler.add_profile_spec(default_spec(), self.registry, profile_name=DEFAULT_SCHEDULER_NAME)

    # --- events ---

    # --- what the profiles need ---

    def plugins_in_force(self) -> frozenset[str]:
        """The plugins some profile in force runs."""
        return frozenset().union(*self.enabled.values())

    def plugins_wanted(self) -> frozenset[str]:
        """The plugins in force, and those of profiles waiting for (or refused for) the kinds they read."""
        return self.plugins_in_force().union(*self.wanting.values())

    def _demand_changed(self) -> None:
        demand = (self.plugins_in_force(), self.plugins_wanted())
        if demand != self._demand:
            self._demand = demand
            if self.on_demand is not None:
                self.on_demand()

    def _plugins_of(self, spec: SchedulingProfileSpec) -> frozenset[str]:
        try:
            return frozenset(enabled_plugins(spec, self.registry))
        except ConfigError:
            return frozenset()

    def _in_force(self, name: str, spec: SchedulingProfileSpec) -> None:
        self.running[name] = spec
        self.enabled[name] = self._plugins_of(spec)
        self.waiting.discard(name)
        self.wanting.pop(name, None)

    def _wait(self, name: str, spec: SchedulingProfileSpec, exc: KindsNotSynced) -> Verdict:
        self.waiting.add(name)
        self.wanting[name] = self._plugins_of(spec)
        logger.info("SchedulingProfile %s waits until %s %s listed", name, ", ".join(exc.kinds),
                    "is" if len(exc.kinds) == 1 else "are")
        return WAITING

    def set_kind_synced(self, kind: str, synced: bool) -> None:
        """A kind plugins read has been listed (`synced`), or is no longer watched: profiles waiting
        for it are judged; a kind no longer watched is unsynced again and its problem forgotten."""
        if not synced:
            self.registry.kinds_unsynced.add(kind)
            self.registry.kind_problems.pop(kind, None)
            return
        self.registry.kinds_unsynced.discard(kind)
        for name in sorted(self.waiting):
            self._rejudge(name)
        self._demand_changed()

    def _rejudge(self, name: str) -> None:
        fixed = self.fixed.get(name)
        if fixed is None:
            obj = self.objects.get(name)
            if obj is not None:
                self.apply(name, obj)
            return
        verdict = self._apply_spec(name, fixed.get("spec"))
        if not verdict.accepted and verdict is not WAITING:
            logger.error("--config profile %s cannot run: %s", name, verdict.message)

    # --- events ---

    def apply(self, name: str, obj: Mapping[str, Any] | None) -> None:
        """A profile resource was listed/added/changed (`obj`) or deleted (None)."""
        if obj is None:
            self._delete(name)
            self._demand_changed()
            return
        self.objects[name] = obj
        verdict = self._apply_spec(name, obj.get("spec"))
        self._demand_changed()
        if verdict is WAITING:
            return
        self.verdicts[name] = verdict
        self.dirty.add(name)
        if self.announced.get(name) == (obj.get("spec"), verdict):
            return
        self.announced[name] = (obj.get("spec"), verdict)
        if verdict.accepted:
            logger.info("SchedulingProfile %s is in force for %s", name, self.running[name].schedulerName)
        else:
            logger.warning("SchedulingProfile %s refused: %s", name, verdict.message)

    def _apply_spec(self, name: str, raw_spec: Any) -> Verdict:
        try:
            spec = parse_spec(raw_spec)
        except ConfigError as exc:
            return self._refused(name, exc)
        if spec.mode == SHADOW:
            return self._apply_shadow(name, spec)
        owner = self.owners.get(spec.schedulerName)
        if owner is not None and owner != name:
            self.waiting.discard(name)
            self.wanting.pop(name, None)
            return Verdict(False, "Conflict", f"spec.schedulerName: {spec.schedulerName} is already served by "
                                              f"SchedulingProfile {owner}")
        current = self.running.get(name)
        if current is not None and current == spec:
            self._in_force(name, spec)
            return VALID
        try:
            self.scheduler.add_profile_spec(spec, self.registry, profile_name=spec.schedulerName)
        except KindsNotSynced as exc:
            return self._wait(name, spec, exc)
        except ConfigError as exc:
            return self._refused(name, exc, spec)
        self._in_force(name, spec)
        self.owners[spec.schedulerName] = name
        if current is not None and current.mode == SHADOW and self.shadow is not None:
            self.shadow.remove_profile(name)
        elif current is not None and current.schedulerName != spec.schedulerName:
            self._release(current.schedulerName, name)
        return VALID

    def _apply_shadow(self, name: str, spec: SchedulingProfileSpec) -> Verdict:
        """A Shadow profile serves no schedulerName: it only watches the pods of others."""
        if self.shadow is None:
            return Verdict(False, "Invalid", "spec.mode: Shadow profiles are not available here")
        current = self.running.get(name)
        if current is not None and current == spec:
            self._in_force(name, spec)
            return VALID
        try:
            self.shadow.set_profile(name, spec, self.registry)
        except KindsNotSynced as exc:
            return self._wait(name, spec, exc)
        except ConfigError as exc:
            return self._refused(name, exc, spec)
        self._in_force(name, spec)
        if current is not None and current.mode != SHADOW:
            self._release(current.schedulerName, name)
        return VALID

    def set_kind_problem(self, kind: str, problem: str | None) -> None:
        """A kind that plugins read cannot be read (`problem`: its CRD is not installed, RBAC does not
        grant a verb) or can again (None). Profiles whose plugins read it are refused while it cannot;
        the refused profiles are judged again on every change (a profile in force stays in force)."""
        if self.registry.kind_problems.get(kind) == problem:
            return
        if problem is None:
            del self.registry.kind_problems[kind]
            logger.info("Plugins may read %s now", kind)
        else:
            self.registry.kind_problems[kind] = problem
            logger.warning("Plugins cannot read %s: %s", kind, problem)
        for name, obj in list(self.objects.items()):
            verdict = self.verdicts.get(name)
            if name in self.waiting or (verdict is not None and not verdict.accepted):
                self.apply(name, obj)
        for name in [n for n in self.fixed if n in self.waiting]:
            self._rejudge(name)
        self._demand_changed()

    def _refused(self, name: str, exc: ConfigError, spec: SchedulingProfileSpec | None = None) -> Verdict:
        self.waiting.discard(name)
        if isinstance(exc, KindUnavailable) and spec is not None:
            self.wanting[name] = self._plugins_of(spec)  # its kinds stay watched: they may become readable
        else:
            self.wanting.pop(name, None)
        message = f"{exc.path}: {exc.detail}" if exc.path else exc.detail
        running = self.running.get(name)
        if running is not None:
            message += " (the previous version stays in force)"
        return Verdict(False, "PluginUnavailable" if isinstance(exc, PluginUnavailable) else "Invalid", message)

    def _release(self, scheduler_name: str, name: str) -> None:
        """`name` no longer serves `scheduler_name`: the default comes back, or nobody serves it."""
        if self.owners.get(scheduler_name) == name:
            del self.owners[scheduler_name]
        if scheduler_name == DEFAULT_SCHEDULER_NAME and self.default_profile:
            self._install_default()
        else:
            self.scheduler.remove_profile(scheduler_name)
        # A resource refused for wanting this name may have it now.
        for other, obj in list(self.objects.items()):
            verdict = self.verdicts.get(other)
            if other != name and verdict is not None and verdict.reason == "Conflict":
                self.apply(other, obj)

    def _delete(self, name: str) -> None:
        self.objects.pop(name, None)
        self.verdicts.pop(name, None)
        self.announced.pop(name, None)
        self.dirty.discard(name)
        self.enabled.pop(name, None)
        self.wanting.pop(name, None)
        self.waiting.discard(name)
        spec = self.running.pop(name, None)
        if spec is not None and spec.mode == SHADOW:
            if self.shadow is not None:
                self.shadow.remove_profile(name)
            logger.info("Shadow SchedulingProfile %s deleted", name)
        elif spec is not None:
            logger.info("SchedulingProfile %s deleted; %s %s", name, spec.schedulerName,
                        "returns to the default profile" if spec.schedulerName == DEFAULT_SCHEDULER_NAME
                        and self.default_profile else "is no longer served")
            self._release(spec.schedulerName, name)

    def apply_fixed(self, obj: Mapping[str, Any]) -> None:
        """A profile of `kubeberth run --config`: in force like a resource's, without a status to
        write. Raises ConfigError when it cannot run."""
        name = "config:" + str((obj.get("metadata") or {}).get("name"))
        self.fixed[name] = obj
        verdict = self._apply_spec(name, obj.get("spec"))
        self._demand_changed()
        if not verdict.accepted and verdict is not WAITING:
            raise ConfigError(f"--config profile {(obj.get('spec') or {}).get('schedulerName')}", verdict.message)

    # --- status ---

    def pending_status(self) -> list[tuple[str, dict[str, Any]]]:
        """(name, status patch) for each resource whose status is not yet what it should be."""
        out = []
        for name in sorted(self.dirty):
            obj = self.objects.get(name)
            verdict = self.verdicts.get(name)
            self.dirty.discard(name)
            if obj is None or verdict is None:
                continue
            meta = obj.get("metadata") or {}
            generation = meta.get("generation")
            status = obj.get("status") or {}
            previous = next((c for c in status.get("conditions") or [] if c.get("type") == ACCEPTED), None)
            now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            cond = verdict.condition(generation, previous, now)
            if (status.get("observedGeneration") == generation and previous is not None
                    and all(previous.get(k) == v for k, v in cond.items() if k != "lastTransitionTime")):
                continue
            patch: dict[str, Any] = {"conditions": [cond]}
            if generation is not None:
                patch["observedGeneration"] = generation
            out.append((name, {"status": patch}))
        return out
