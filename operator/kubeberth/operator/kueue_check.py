"""kubeberth as a Kueue admission check: kopf handlers on Kueue's AdmissionCheck and Workload.

With `--kueue-admission-check`, the operator watches Kueue's AdmissionChecks and Workloads
(kueue.x-k8s.io/v1beta2) and, on the leader only, answers the checks whose controllerName is
kubeberth's (kubeberth.kueue: what it answers and why; docs/guides/kueue.md). The handlers are
thin: the decisions are kubeberth.kueue.controller's, the dry runs the in-process service's
(kubeberth.dryrun.service, in the scheduler's loop or by its forked worker). Without Kueue's CRDs,
kopf finds no such resource at start-up and serves none: nothing else changes (install Kueue, then
restart kubeberth).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import kopf
from kubernetes_asyncio.client.exceptions import ApiException

from ..dryrun.worker import Overloaded
from ..kueue.api import FIELD_MANAGER, GROUP, VERSION
from ..kueue.controller import AdmissionCheckController, NotFound, Stale, Suggester

if TYPE_CHECKING:
    from ..dryrun.service import DryRunService
    from .api_retry import Api

logger = logging.getLogger(__name__)

APPLY_PATCH = "application/apply-patch+yaml"  # server-side apply (a JSON body is YAML)
OVERLOADED_TRIES = 30  # the dry-run service refused (its budget): tried again a second later, so often


class RestKueueApi:
    """kubeberth.kueue.controller's KueueApi over the operator's API client (retried as its calls are)."""

    def __init__(self, api: Api) -> None:
        self.api = api

    async def get(self, path: str) -> dict[str, Any]:
        try:
            return dict(await self.api.call("GET", path, what=f"GET {path}"))
        except ApiException as exc:
            if exc.status == 404:
                raise NotFound(path) from None
            raise

    async def apply_status(self, path: str, body: dict[str, Any]) -> None:
        try:
            await self.api.call("PATCH", path, what=f"status of {path}", body=body, content_type=APPLY_PATCH,
                                query={"fieldManager": FIELD_MANAGER, "force": "true"})
        except ApiException as exc:
            if exc.status == 409:
                raise Stale(path) from None
            raise


def service_dry_runner(service: Callable[[], DryRunService],
                       sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
                       ) -> Callable[[str, list[dict[str, Any]]], Awaitable[dict[str, Any]]]:
    """The controller's DryRunner on the dry-run service (waiting while it is over its budget)."""

    async def run(namespace: str, pods: list[dict[str, Any]]) -> dict[str, Any]:
        request = {"namespace": namespace, "pods": pods, "explain": False, "detail": "counts", "namespaces": (),
                   "pod_group": None, "min_count": None}
        for _ in range(OVERLOADED_TRIES - 1):
            try:
                return await service().ask(request)
            except Overloaded:
                await sleep(1.0)
        return await service().ask(request)
    return run


def register(registry: kopf.OperatorRegistry, controller: AdmissionCheckController,
             gate: Callable[[], Awaitable[None]]) -> None:
    """The handlers, on `registry`; each waits for `gate()` (this replica leads) first."""

    @kopf.on.event(GROUP, VERSION, "admissionchecks", registry=registry, id="kueue_admission_check")
    async def admission_check(*, type: str | None, name: str, body: kopf.Body, **_: Any) -> None:
        await gate()
        if type == "DELETED":
            controller.forget_admission_check(name)
            return
        await controller.on_admission_check(body)

    @kopf.on.event(GROUP, VERSION, "workloads", registry=registry, id="kueue_workload")
    async def workload(*, type: str | None, body: kopf.Body, **_: Any) -> None:
        if type == "DELETED":
            return
        await gate()
        await controller.on_workload(body)


class _Suggestions:
    """The live suggester's `for_pods` when the command line gave one (whatif/suggest/live.py), else none."""

    def __init__(self, source: Callable[[], Any]) -> None:
        self.source = source

    async def __call__(self, pods: list[dict[str, Any]]) -> str | None:
        for_pods = getattr(self.source(), "for_pods", None)
        return await for_pods(pods) if for_pods is not None else None


def install(registry: kopf.OperatorRegistry, app: Any) -> AdmissionCheckController:
    """The controller of the operator `app` (app.OperatorApp), its handlers on `registry`."""
    from ..dryrun.service import DryRunService
    from ..dryrun.worker import DryRunWorkers

    own: list[DryRunService] = []

    def service() -> DryRunService:
        if not own:
            own.append(DryRunService(lambda: app.scheduler, DryRunWorkers(lambda: app.scheduler)))
        return own[0]

    suggester: Suggester = _Suggestions(lambda: getattr(app.explain_publisher, "suggester", None))
    controller = AdmissionCheckController(RestKueueApi(app.client.api), service_dry_runner(service),
                                          suggester=suggester)
    async def gate() -> None:  # the leader, once it has listed the cluster (as the dry-run endpoint waits)
        await app.leading()
        await app.ingest.synced.wait()

    register(registry, controller, gate)
    logger.info("Kueue admission check: AdmissionChecks with controllerName %s are answered by dry runs",
                controller.controller_name)
    return controller
