"""One running operator: the scheduler, its API client, metrics and kopf, wired together.

`OperatorApp.run()` connects (kubeconfig, in-cluster or a fixed URL), builds the same
`Scheduler` that `simulate` drives (with the API-server `ClusterClient`), registers the
handlers on a registry of its own and runs `kopf.operator` cluster-wide until stopped.

High availability: with `--peering`, kopf keeps every replica but one paused. A standby
never ingests anything. Should the active replica ever be paused in favour of another
(kopf logs it), its cache can no longer be trusted (kopf does not replay deletions seen
while paused): like kube-scheduler when it loses its leader lease, it stops, and the
process exits non-zero so that Kubernetes restarts it as a fresh standby.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import os
import random
import socket
import threading
import uuid
from typing import Any

import kopf
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.client import ApiClient, Configuration

from ..clock import RealClock
from ..config.profile import GROUP, PLURAL, VERSION
from ..metrics import MetricsServer, SchedulerMetrics
from ..plugins import in_tree_registry
from ..scheduler import Scheduler
from . import handlers
from .api_client import WARNING, KubernetesClusterClient
from .ingest import Ingest
from .profiles import ProfileManager
from .run import OperatorConfig

logger = logging.getLogger(__name__)

PEERING_LOGGER = "kopf._core.engines.peering"
EXIT_LOST_PEERING = 75  # EX_TEMPFAIL: restart me


async def load_configuration(config: OperatorConfig) -> Configuration:
    """The kubernetes-asyncio configuration: --server, in-cluster, or a kubeconfig."""
    cfg = Configuration()
    if config.server:
        cfg.host = config.server.rstrip("/")
        return cfg
    in_cluster = config.in_cluster
    if in_cluster is None:
        in_cluster = config.kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ
    if in_cluster:
        k8s_config.load_incluster_config(client_configuration=cfg)
    else:
        await k8s_config.load_kube_config(config_file=config.kubeconfig, context=config.context,
                                          client_configuration=cfg)
    return cfg


class _PauseWatch(logging.Handler):
    """Notices kopf pausing this operator (it logs it from the peering engine)."""

    def __init__(self, app: OperatorApp, thread: int) -> None:
        super().__init__(logging.INFO)
        self.app = app
        self.thread = thread

    def emit(self, record: logging.LogRecord) -> None:
        if record.thread == self.thread and record.getMessage().startswith(("Pausing operations",
                                                                            "Pausing all operators")):
            self.app.paused()


class OperatorApp:
    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.metrics = SchedulerMetrics()
        self.identity = f"{socket.gethostname()}/{uuid.uuid4().hex[:12]}"
        self.exit_code = 0
        self.configuration: Configuration | None = None
        self.api_client: ApiClient | None = None
        self._client: KubernetesClusterClient | None = None
        self._scheduler: Scheduler | None = None
        self._profiles: ProfileManager | None = None
        self._ingest: Ingest | None = None
        self._stop: asyncio.Event | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self._metrics_server: MetricsServer | None = None

    # The parts exist once run() has connected.
    @property
    def client(self) -> KubernetesClusterClient:
        assert self._client is not None, "the operator is not running"
        return self._client

    @property
    def scheduler(self) -> Scheduler:
        assert self._scheduler is not None, "the operator is not running"
        return self._scheduler

    @property
    def profiles(self) -> ProfileManager:
        assert self._profiles is not None, "the operator is not running"
        return self._profiles

    @property
    def ingest(self) -> Ingest:
        assert self._ingest is not None, "the operator is not running"
        return self._ingest

    @property
    def metrics_port(self) -> int | None:
        return self._metrics_server.port if self._metrics_server is not None else None

    def build(self, configuration: Configuration) -> None:
        """The scheduler and its helpers, on `configuration` (no I/O yet)."""
        cfg = self.config
        self.configuration = configuration
        self.api_client = ApiClient(configuration)
        clock = RealClock()
        self._client = KubernetesClusterClient(self.api_client, request_timeout=cfg.request_timeout, clock=clock)
        rng = random.Random(cfg.seed) if cfg.seed is not None else random.Random()
        self._scheduler = Scheduler(client=self._client, clock=clock, rng=rng, metrics=self.metrics)
        self._profiles = ProfileManager(self._scheduler, in_tree_registry(), default_profile=cfg.default_profile)
        self._ingest = Ingest(self._scheduler, self._profiles.apply)

    async def run(self, *, stop_flag: asyncio.Event | None = None,
                  ready_flag: asyncio.Event | None = None) -> int:
        cfg = self.config
        self.build(await load_configuration(cfg))
        registry = kopf.OperatorRegistry()
        handlers.register(registry, self)
        settings = kopf.OperatorSettings()
        self.configure_settings(settings)
        self._stop = stop_flag if stop_flag is not None else asyncio.Event()
        watch = _PauseWatch(self, threading.get_ident())
        peering_logger = logging.getLogger(PEERING_LOGGER)
        peering_logger.addHandler(watch)
        if peering_logger.getEffectiveLevel() > logging.INFO:
            peering_logger.setLevel(logging.INFO)
        try:
            await kopf.operator(
                registry=registry, settings=settings, clusterwide=True,
                standalone=cfg.peering is None, peering_name=cfg.peering,
                priority=cfg.effective_priority() if cfg.peering else None,
                identity=self.identity,  # type: ignore[arg-type]  # unique even for two operators in one process
                liveness_endpoint=cfg.liveness, stop_flag=self._stop, ready_flag=ready_flag)
        finally:
            peering_logger.removeHandler(watch)
            if self.api_client is not None:
                await self.api_client.close()
        return self.exit_code

    def configure_settings(self, settings: kopf.OperatorSettings) -> None:
        # Nothing is ever written on watched objects; this is belt and braces should a
        # change-detecting handler be added one day: state goes to annotations of our own.
        settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=GROUP)
        settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(
            prefix=GROUP, key="last-handled-configuration")
        settings.persistence.finalizer = f"{GROUP}/finalizer"
        settings.posting.level = logging.WARNING
        settings.networking.request_timeout = max(self.config.request_timeout * 6, 60.0)
        settings.peering.mandatory = self.config.peering is not None
        for path, value in self.config.extra_settings.items():
            target: Any = settings
            *parents, last = path.split(".")
            for part in parents:
                target = getattr(target, part)
            setattr(target, last, value)

    async def connection_info(self) -> kopf.ConnectionInfo:
        """kopf logs in with the same credentials as the scheduler's API client."""
        cfg = self.configuration
        assert cfg is not None
        header = cfg.get_api_key_with_prefix("BearerToken")
        if inspect.isawaitable(header):  # kubernetes-asyncio >= 33.3 refreshes tokens asynchronously
            header = await header
        parts = header.split(" ", 1) if header else []
        scheme, token = ((None, None) if not parts else (None, parts[0]) if len(parts) == 1 else (parts[0], parts[1]))
        return kopf.ConnectionInfo(
            server=cfg.host, ca_path=cfg.ssl_ca_cert, insecure=not cfg.verify_ssl,
            username=cfg.username or None, password=cfg.password or None, scheme=scheme, token=token,
            certificate_path=cfg.cert_file, private_key_path=cfg.key_file, proxy_url=cfg.proxy,
            default_namespace="default")

    # --- lifecycle (kopf startup / cleanup) ---

    async def start(self) -> None:
        if self.config.metrics_port:
            self._metrics_server = MetricsServer(self.metrics, self.config.metrics_port, self.config.metrics_host)
            await self._metrics_server.start()
        await self.client.start()
        self._loop_task = asyncio.get_running_loop().create_task(self._schedule(), name="kubeberth scheduler")

    async def _schedule(self) -> None:
        await self.ingest.synced.wait()
        logger.info("Scheduling pods of %s", ", ".join(sorted(self.scheduler.profiles)) or "no profile yet")
        await self.scheduler.run()

    async def stop(self, timeout: float = 5.0) -> None:
        if self._stop is not None:
            self._stop.set()  # stopping anyway (e.g. on a signal): release kopf's wait on the flag
        if self._scheduler is not None:
            self._scheduler.stop()
        if self._loop_task is not None:
            with contextlib.suppress(asyncio.CancelledError, TimeoutError, Exception):
                await asyncio.wait_for(self._loop_task, timeout)
            self._loop_task = None
        if self._scheduler is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._scheduler.wait_for_bindings(), timeout)
        if self._client is not None:
            await self._client.close()
        if self._metrics_server is not None:
            await self._metrics_server.stop()

    def paused(self) -> None:
        """kopf paused this replica in favour of another one."""
        if self._ingest is not None and self._ingest.active and self._stop is not None:
            logger.error("Another replica took over scheduling; stopping so that this one restarts "
                         "as a standby with a fresh cache")
            self.exit_code = EXIT_LOST_PEERING
            self._stop.set()

    # --- after every event: profile statuses ---

    async def after_event(self) -> None:
        if not self.profiles.dirty:
            return
        for name, patch in self.profiles.pending_status():
            path = f"/apis/{GROUP}/{VERSION}/{PLURAL}/{name}/status"
            try:
                await self.client.api.call("PATCH", path, what=f"status of SchedulingProfile {name}", body=patch,
                                           content_type="application/merge-patch+json")
            except Exception as exc:
                logger.warning("Could not write the status of SchedulingProfile %s: %s", name, exc)
                continue
            cond = patch["status"]["conditions"][0]
            if cond["status"] == "False":
                self.client.events.record(
                    {"apiVersion": f"{GROUP}/{VERSION}", "kind": "SchedulingProfile",
                     "metadata": {"name": name, "uid": (self.profiles.objects.get(name, {}).get("metadata")
                                                        or {}).get("uid", "")}},
                    WARNING, "ProfileRefused", cond["message"], component="kubeberth")

    def health(self) -> dict[str, Any]:
        task = self._loop_task
        if task is not None and task.done() and not task.cancelled() and task.exception() is not None:
            raise RuntimeError(f"the scheduling loop died: {task.exception()!r}")
        scheduler = self._scheduler
        return {
            "synced": bool(self._ingest is not None and self._ingest.synced.is_set()),
            "profiles": sorted(scheduler.profiles) if scheduler is not None else [],
            "pending": scheduler.report_pending_pods() if scheduler is not None else {},
        }
