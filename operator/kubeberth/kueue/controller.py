"""The admission check controller, kopf-free: what to do on an AdmissionCheck or a Workload event.

Its I/O goes through `KueueApi` (GET and server-side apply of a status subresource) and a
`DryRunner` (kubeberth.dryrun's service: the live scheduler's dry run); kubeberth.operator.kueue_check
binds both and calls it from kopf handlers on the leader.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from .api import CONTROLLER_NAME, key, path
from .decide import (
    READY,
    Verdict,
    admission_check_active_apply,
    error_verdict,
    verdict,
    waiting_checks,
    workload_status_apply,
)
from .podsets import WorkloadError, expand, flavor_names

logger = logging.getLogger(__name__)

# (namespace, pods) -> the DryRun's status as a dict (kubeberth.dryrun's DryRunStatus; "error": a refused pod)
DryRunner = Callable[[str, list[dict[str, Any]]], Awaitable[dict[str, Any]]]
# the pods that do not fit -> a suggestion in words, or None (the what-if tools make it; optional)
Suggester = Callable[[list[dict[str, Any]]], Awaitable[str | None]]


class NotFound(Exception):
    """The object asked for does not exist."""


class Stale(Exception):
    """The object changed since the version written against (a 409 Conflict)."""


class KueueApi(Protocol):
    """The API calls the controller makes."""

    async def get(self, path: str) -> dict[str, Any]:
        """The object at `path`; NotFound when there is none."""
        ...

    async def apply_status(self, path: str, body: dict[str, Any]) -> None:
        """Server-side apply of `body` on the status subresource at `path`, as our field manager; Stale
        when the body's metadata.resourceVersion is no longer the object's."""
        ...


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class AdmissionCheckController:
    """Answers our AdmissionChecks (controllerName CONTROLLER_NAME) for the Workloads waiting on them."""

    def __init__(self, api: KueueApi, dry_run: DryRunner, *, suggester: Suggester | None = None,
                 controller_name: str = CONTROLLER_NAME, now: Callable[[], str] = now_rfc3339) -> None:
        self.api = api
        self.dry_run = dry_run
        self.suggester = suggester
        self.controller_name = controller_name
        self.now = now
        self.controllers: dict[str, str] = {}  # AdmissionCheck name -> its controllerName
        self.answered = 0

    async def on_admission_check(self, check: Mapping[str, Any]) -> bool:
        """An AdmissionCheck was seen: remember whose it is, mark ours Active. True when it is ours."""
        name = str((check.get("metadata") or {}).get("name"))
        controller = str((check.get("spec") or {}).get("controllerName") or "")
        self.controllers[name] = controller
        if controller != self.controller_name:
            return False
        body = admission_check_active_apply(check, self.now())
        if body is not None:
            await self.api.apply_status(path("admissionchecks", name, status=True), body)
            logger.info("AdmissionCheck %s (controllerName %s) is Active", name, controller)
        return True

    def forget_admission_check(self, name: str) -> None:
        self.controllers.pop(name, None)

    async def _ours(self, names: list[str]) -> set[str]:
        """Which of these AdmissionCheck names are ours (one not seen yet is read)."""
        out = set()
        for name in names:
            if name not in self.controllers:
                try:
                    check = await self.api.get(path("admissionchecks", name))
                except NotFound:
                    continue
                self.controllers[name] = str((check.get("spec") or {}).get("controllerName") or "")
            if self.controllers[name] == self.controller_name:
                out.add(name)
        return out

    async def on_workload(self, workload: Mapping[str, Any]) -> dict[str, Verdict]:
        """A Workload was seen: if it waits on our checks, dry run it and set their state. Returns
        what was set (empty: nothing to do)."""
        listed = [str(c.get("name")) for c in (workload.get("status") or {}).get("admissionChecks") or ()]
        if not listed:
            return {}
        names = waiting_checks(workload, await self._ours(listed))
        if not names:
            return {}
        found = await self.decide(workload)
        answers = {name: found for name in names}
        meta = workload.get("metadata") or {}
        try:
            await self.api.apply_status(path("workloads", str(meta.get("name")), str(meta.get("namespace")),
                                             status=True), workload_status_apply(workload, answers, self.now()))
        except Stale:  # Kueue changed it meanwhile: its next event is answered on its own
            logger.info("Workload %s changed during its dry run: answered on its next event", key(workload))
            return {}
        self.answered += 1
        log = logger.info if found.state == READY else logger.warning
        log("Workload %s: admission check(s) %s %s: %s", key(workload), ", ".join(names), found.state, found.message)
        return answers

    async def decide(self, workload: Mapping[str, Any]) -> Verdict:
        """The verdict for `workload`'s pods now (no API write)."""
        namespace = str((workload.get("metadata") or {}).get("namespace") or "default")
        try:
            pods = expand(workload, await self._flavors(workload))
        except WorkloadError as exc:
            return error_verdict(str(exc))
        answer = await self.dry_run(namespace, pods)
        if "error" in answer:
            return error_verdict(str(answer["error"]))
        suggestion = None
        found = verdict(answer)
        if found.state != READY and self.suggester is not None:
            try:
                suggestion = await self.suggester(pods)
            except Exception as exc:  # a suggestion is a bonus: the verdict stands without it
                logger.warning("Workload %s: no suggestion: %s", key(workload), exc)
            if suggestion:
                found = verdict(answer, suggestion)
        return found

    async def _flavors(self, workload: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
        admission = (workload.get("status") or {}).get("admission") or {}
        names = {n for a in admission.get("podSetAssignments") or () for n in flavor_names(a)}
        out = {}
        for name in sorted(names):
            try:
                out[name] = await self.api.get(path("resourceflavors", name))
            except NotFound:
                pass  # expand() names it
        return out
