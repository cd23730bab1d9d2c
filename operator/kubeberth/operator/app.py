"""One running operator: the scheduler, its API client, metrics and kopf, wired together.

`OperatorApp.run()` connects (kubeconfig, in-cluster or a fixed URL), builds the same
`Scheduler` that `simulate` drives (with the API-server `ClusterClient`), registers the
handlers on a registry of its own and runs `kopf.operator` cluster-wide until stopped.

The kinds the scheduler reads are listed and watched by reflectors (`reflector.py`) started
from kopf's startup handler; nothing is scheduled before every kind has been listed once.

High availability, as kube-scheduler: with `--leader-elect`, every replica lists, watches and
keeps its cache and queue current from start-up, and only the holder of the Lease
(`leader.py`) pops, binds, deletes and patches; a new leader schedules from its warm cache at
once. A leader that loses the Lease stops and the process exits non-zero
(EXIT_LOST_LEADERSHIP), so that Kubernetes restarts it as a fresh standby.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import socket
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import kopf
from kubernetes_asyncio.client import ApiClient, Configuration

from .. import __version__
from ..clock import RealClock
from ..config.profile import GROUP, PLURAL, VERSION
from ..metrics import SchedulerMetrics
from ..plugins import loaded, plugin_registry
from ..scheduler import Scheduler
from ..scheduler.watched import WatchedKind, declared_kinds, watched_kinds
from . import handlers
from .api_client import WARNING, KubernetesClusterClient, pod_path
from .background import cancel_and_wait
from .collector import collector_paused
from .connection import RetryForever, load_configuration, load_credentials, login
from .credentials import Credentials, Forbidden
from .explain_publisher import ExplainPublisher, SuggesterFactory
from .ingest import Ingest
from .leader import LeaderElector
from .options import OperatorConfig
from .plugin_operators import PluginOperators
from .profiles import ProfileManager
from .reflector import Informers
from .rest import RestClient
from .retained import RetainedCollector, app_counts
from .shadow import ShadowEvaluator

if TYPE_CHECKING:
    # The secure port (cryptography) is imported when it starts, after the initial lists have
    # gone out: its import overlaps the API server's answers.
    from .dryrun_supervisor import DryRunFront
    from .secure_serving import ComponentServer, HealthCheck

logger = logging.getLogger(__name__)

EXIT_LOST_LEADERSHIP = 75  # EX_TEMPFAIL: restart me


class OperatorApp:
    def __init__(self, config: OperatorConfig, suggester_factory: SuggesterFactory | None = None) -> None:
        self.config = config
        # What makes the suggestions of pods annotated kubeberth.io/suggest (the command line gives
        # whatif/suggest/live.py's LiveSuggester: the operator does not import the what-if tools).
        self.suggester_factory = suggester_factory
        self.metrics = SchedulerMetrics()
        self.identity = f"{socket.gethostname()}/{uuid.uuid4().hex[:12]}"
        self.exit_code = 0
        self.configuration: Configuration | None = None
        self.credentials: Credentials | None = None
        self.api_client: ApiClient | None = None
        self._client: KubernetesClusterClient | None = None
        self._scheduler: Scheduler | None = None
        self._profiles: ProfileManager | None = None
        self._ingest: Ingest | None = None
        self._rest: RestClient | None = None
        self._informers: Informers | None = None
        self._elector: LeaderElector | None = None
        self._plugin_operators: PluginOperators | None = None
        self._always_handlers: kopf.OperatorRegistry | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._stop: asyncio.Event | None = None
        self._loop_task: asyncio.Task[None] | None = None
        self._metrics_server: ComponentServer | None = None
        self._retained: RetainedCollector | None = None
        self.dry_run_front: DryRunFront | None = None  # the dry runs' process (dryrun_supervisor.py)
        self.sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep

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
    def informers(self) -> Informers:
        assert self._informers is not None, "the operator is not running"
        return self._informers

    @property
    def plugin_operators(self) -> PluginOperators:
        assert self._plugin_operators is not None, "the operator is not running"
        return self._plugin_operators

    @property
    def elector(self) -> LeaderElector | None:
        return self._elector

    @property
    def metrics_port(self) -> int | None:
        return self._metrics_server.port if self._metrics_server is not None else None

    def build(self, configuration: Configuration, credentials: Credentials | None = None) -> None:
        """The scheduler and its helpers, on `configuration` (no I/O yet)."""
        cfg = self.config
        self.configuration = configuration
        self.credentials = credentials if credentials is not None else Credentials(configuration)
        self.api_client = ApiClient(configuration)
        # Connections: the bindings' own, the event senders' (as many), plus room for the watches, status
        # writers, the Lease.
        self._rest = RestClient(configuration, request_timeout=cfg.request_timeout,
                                pool_size=2 * cfg.bind_concurrency + 64,
                                user_agent=f"kubeberth/{__version__} ({self.identity})",
                                credentials=self.credentials,
                                forbidden=Forbidden(subject=self.credentials.description,
                                                    count=self.metrics.api_forbidden))
        clock = RealClock()
        self._client = KubernetesClusterClient(self._rest, request_timeout=cfg.request_timeout, clock=clock,
                                               bind_concurrency=cfg.bind_concurrency)
        rng = random.Random(cfg.seed) if cfg.seed is not None else random.Random()
        # simulate reports the pods it evicted; a scheduler that runs for months drops the record of
        # each pod once it is deleted (what it keeps is counted: retained.py).
        self._scheduler = Scheduler(client=self._client, clock=clock, rng=rng, metrics=self.metrics,
                                    keep_deleted_records=False)
        self._scheduler.ctx.percentage_of_nodes_to_score = cfg.percentage_of_nodes_to_score
        self.explain_publisher = ExplainPublisher(self._client)  # pods annotated kubeberth.io/explain
        self.explain_publisher.install(self._scheduler)
        if self.suggester_factory is not None:  # pods annotated kubeberth.io/suggest: verified suggestions
            self.explain_publisher.suggester = self.suggester_factory(self._scheduler, clock)
        client = self._client
        self.shadow = ShadowEvaluator(self._scheduler, self.metrics.registry, annotate=self._annotate_pod,
                                      active=lambda: client.may_write())  # late-bound: set for leader election
        self._profiles = ProfileManager(self._scheduler, plugin_registry(), default_profile=cfg.default_profile,
                                        shadow=self.shadow)
        self._ingest = Ingest(self._scheduler, self._profiles.apply, on_pod=self.shadow.on_pod,
                              on_pod_delete=self._pod_deleted)
        if self._retained is None:  # kubeberth_retained_objects on /metrics (retained.py)
            self._retained = RetainedCollector(lambda: app_counts(self))
            self.metrics.registry.register(self._retained)
        # The table's kinds; those the plugins declare they read (a plugin's CRD) only while a profile
        # needs them (`_on_demand`): a profile whose plugins read one waits until it is listed, and one
        # that cannot be read refuses the profiles whose plugins read it (ProfileManager.set_kind_problem).
        self._profiles.registry.kinds_unsynced = {k.store_key for k in declared_kinds(self._profiles.registry)}
        self._informers = Informers(rest=self._rest, kinds=watched_kinds(), sink=self._ingest,
                                    on_batch=self._after_batch, on_problem=self._on_kind_problem)
        self._informers.on_listed = self._on_kind_listed
        self._informers.on_forgotten = self._on_kind_forgotten
        # The kopf handlers of plugins' modules: run while a profile in force enables their plugins.
        parts = handlers.partition(kopf.get_default_registry(), loaded().provides)
        self._always_handlers = parts.pop(frozenset(), None)
        self._plugin_operators = PluginOperators(
            parts, gate=self.leading, login=self.connection_info, configure=self.configure_settings,
            identity=self.identity, memo={"kubeberth_api_client": self.api_client}, on_signal=self._on_signal)
        for op in self._plugin_operators.operators:
            logger.info("%d kopf handler(s) of plugin(s) %s: they run while a profile in force enables one",
                        op.handlers, op.describe())
        self._profiles.on_demand = self._on_demand
        for obj in cfg.config_profiles:
            self._profiles.apply_fixed(obj)
        if cfg.leader_elect:
            self._elector = LeaderElector(rest=self._rest, identity=self.identity, config=cfg.lease())
            self._scheduler.may_write = self._client.may_write = lambda: (self._elector is not None
                                                                        and self._elector.is_leader)

    def _pod_deleted(self, raw: Mapping[str, Any]) -> None:
        """A pod is gone (after the scheduler forgot it): its helpers' state about it goes too."""
        uid = str((raw.get("metadata") or {}).get("uid") or "")
        self.shadow.on_pod_delete(raw)
        if uid:
            self.client.forget_pod(uid)
            self.explain_publisher.forget_pod(uid)

    async def run(self, *, stop_flag: asyncio.Event | None = None,
                  ready_flag: asyncio.Event | None = None) -> int:
        cfg = self.config
        configuration = await load_configuration(cfg)
        self.build(configuration, load_credentials(cfg, configuration))
        registry = kopf.OperatorRegistry()
        handlers.register(registry, self)
        # kopf handlers of modules that bring no plugin (README: kopf handlers of your own): always.
        if self._always_handlers is not None:
            adopted = handlers.adopt(registry, self._always_handlers, self.leading)
            if adopted:
                logger.info("Running %d kopf handler(s) of modules that bring no plugin", adopted)
        settings = kopf.OperatorSettings()
        self.configure_settings(settings)
        self._stop = stop_flag if stop_flag is not None else asyncio.Event()
        liveness, kopf_liveness = None, None
        if cfg.liveness:
            # Served here, the scheduler's answer made at each request (kopf's reporter caches its
            # probes for 10 s); kopf serves only the probes of modules' own handlers, if any.
            from .liveness import LivenessServer, loopback_endpoint

            if any(h.activity == "probe" for h in registry._activities.get_all_handlers()):
                kopf_liveness = loopback_endpoint()
            liveness = LivenessServer(cfg.liveness, self.health, kopf_endpoint=kopf_liveness)
        try:
            if liveness is not None:
                await liveness.start()
            await kopf.operator(
                registry=registry, settings=settings, clusterwide=True, standalone=True,
                identity=self.identity,  # type: ignore[arg-type]  # unique even for two operators in one process
                liveness_endpoint=kopf_liveness, stop_flag=self._stop, ready_flag=ready_flag)
        finally:
            if liveness is not None:
                await liveness.stop()
            if self.api_client is not None:
                await self.api_client.close()
            if self._rest is not None:
                await self._rest.close()
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
        # kopf is the frame only: no resource handler, so its watch of CRDs for resource discovery
        # (and of namespaces) serves nothing, and it ended the process when the API server failed
        # longer than kopf's retries. Off; the one discovery scan kopf makes at start-up is
        # retried for as long as the API server fails, as our reflectors are.
        settings.scanning.disabled = True
        settings.networking.error_backoffs = RetryForever()
        for path, value in self.config.extra_settings.items():
            target: Any = settings
            *parents, last = path.split(".")
            for part in parents:
                target = getattr(target, part)
            setattr(target, last, value)

    async def connection_info(self) -> kopf.ConnectionInfo:
        """kopf's login: `connection.login` with the scheduler's API client's credentials."""
        cfg, rest, credentials = self.configuration, self._rest, self.credentials
        assert cfg is not None and rest is not None and credentials is not None
        return await login(cfg, rest, credentials, request_timeout=self.config.request_timeout, sleep=self.sleep)

    # --- lifecycle (kopf startup / cleanup) ---

    async def start(self) -> None:
        # The initial lists go out first: the API server answers them while the secure port starts.
        await self.client.start()
        loop = asyncio.get_running_loop()
        self._loop_task = loop.create_task(self._schedule(), name="kubeberth scheduler")
        if self.config.metrics_port:
            from .secure_serving import PING, make_server

            rest = self._rest
            assert rest is not None

            async def post(path: str, body: dict[str, Any]) -> Any:
                return await rest.request("POST", path, body=body)

            async def get(path: str) -> Any:
                return await rest.request("GET", path)

            leader, alive, shutdown, synced = self._health_checks()
            self._metrics_server = await make_server(
                self.config.serving, self.metrics, self.config.metrics_port, self.config.metrics_host,
                post=post, get=get, healthz=[leader or PING, alive], livez=[PING, alive],
                readyz=[*([leader] if leader else []), shutdown, synced], resource_routes=self._dry_run_redirect())
            await self._metrics_server.start()
        if self._elector is not None:
            self._tasks.append(loop.create_task(self._elector.run(), name="kubeberth leader election"))
            self._tasks.append(loop.create_task(self._watch_leadership(self._elector), name="kubeberth lease loss"))
        self.plugin_operators.start()
        self._tasks.append(loop.create_task(self._start_dry_run_front(), name="kubeberth dry-run front"))

    def _dry_run_redirect(self) -> dict[str, Any]:
        """The secure port sends dry runs on to the front's port (dryrun_endpoint.redirect_routes)."""
        if not self.config.dry_run_port or not self.config.dry_run_refresh:
            return {}
        from .dryrun_endpoint import redirect_routes

        return redirect_routes(self.config.dry_run_port, lambda: self.dry_run_front is not None)

    async def _start_dry_run_front(self) -> None:
        """The dry runs' process (dryrun_supervisor.py), once the cache has synced: its start-up
        (a Python process importing what the operator imports, about a second) then competes with
        neither the initial lists nor the first bindings' cycles for the CPU."""
        await self.ingest.synced.wait()
        from .dryrun_supervisor import start_front

        self.dry_run_front = await start_front(self, self._metrics_server)

    async def _annotate_pod(self, namespace: str, name: str, annotations: dict[str, Any]) -> None:
        await self.client.api.call("PATCH", pod_path(namespace, name), what=f"shadow annotation of {namespace}/{name}",
                                   body={"metadata": {"annotations": annotations}},
                                   content_type="application/merge-patch+json")

    async def _schedule(self) -> None:
        with collector_paused():  # the initial lists: the cache's long-lived objects, allocated at once
            await self.informers.sync()
        self.ingest.synced.set()
        self._tasks.append(asyncio.get_running_loop().create_task(self.shadow.run(), name="kubeberth shadow"))
        if self._elector is not None:
            logger.info("Standing by as %s until it holds the Lease %s/%s", self.identity,
                        self._elector.config.namespace, self._elector.config.name)
            await self._elector.elected.wait()
        logger.info("Scheduling pods of %s", ", ".join(sorted(self.scheduler.profiles)) or "no profile yet")
        await self.scheduler.run()

    async def _watch_leadership(self, elector: LeaderElector) -> None:
        await elector.lost.wait()
        c = elector.config
        logger.error("Lost the Lease %s/%s: %s; stopping (as kube-scheduler does) so that this process restarts "
                     "as a standby", c.namespace, c.name, elector.lost_reason())
        self.exit_code = EXIT_LOST_LEADERSHIP
        self.scheduler.stop()
        if self._stop is not None:
            self._stop.set()

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
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._scheduler.wait_for_preemptions(), timeout)
        if self._plugin_operators is not None:
            await self._plugin_operators.close()
        if self._informers is not None:
            await self._informers.stop()
        await cancel_and_wait(self._tasks)
        self._tasks = []
        if self._elector is not None and not self._elector.lost.is_set():
            await self._elector.release()
        if self._client is not None:
            await self._client.close()
        if self._metrics_server is not None:
            await self._metrics_server.stop()
        if self.dry_run_front is not None:
            await self.dry_run_front.stop()

    async def leading(self) -> None:
        """Returns once this replica may act: at once without leader election, else once it holds
        the Lease (a leader that loses it exits). The plugins' kopf resource handlers wait on it."""
        if self._elector is not None:
            await self._elector.elected.wait()

    def _on_demand(self) -> None:
        """The profiles need other plugins now: watch the kinds the wanted ones read, run the kopf
        handlers of those in force."""
        profiles = self.profiles
        self.informers.follow(declared_kinds(profiles.registry, profiles.plugins_wanted()))
        self.plugin_operators.follow(profiles.plugins_in_force())

    def _on_kind_listed(self, kind: WatchedKind) -> None:
        """A kind plugins read is listed: the profiles waiting for it are judged."""
        self.profiles.set_kind_synced(kind.store_key, True)
        self._write_statuses(kind)

    def _on_kind_forgotten(self, kind: WatchedKind) -> None:
        self.profiles.set_kind_synced(kind.store_key, False)

    def _on_signal(self) -> None:
        logger.info("Signalled: stopping")
        if self._stop is not None:
            self._stop.set()

    def _write_statuses(self, kind: WatchedKind) -> None:
        if self.profiles.dirty and self.ingest.synced.is_set():
            task = asyncio.get_running_loop().create_task(self._after_batch(kind), name="kubeberth profile status")
            self._tasks.append(task)

    def _on_kind_problem(self, kind: WatchedKind, problem: str | None) -> None:
        """A kind plugins read cannot be read, or can again: judge the profiles again, write their status."""
        self.profiles.set_kind_problem(kind.store_key, problem)
        self._write_statuses(kind)

    def _health_checks(self) -> tuple[HealthCheck | None, HealthCheck, HealthCheck, HealthCheck]:
        """kube-scheduler's checks (leaderElection, shutdown, sched-handler-sync) and kubeberth's
        scheduling-loop (the loop task has not died)."""
        from .secure_serving import HealthCheck

        leader = None
        elector = self._elector
        if elector is not None:
            def lease() -> str | None:
                # upstream's watchdog: a leader that has not renewed for the lease duration + 20 s
                renewed = elector.renewed_at
                if renewed is None or elector.lost.is_set():
                    return None
                if elector.monotonic() - renewed > elector.config.lease_duration + 20.0:
                    return f"failed election to renew leadership on lease {elector.config.name}"
                return None
            leader = HealthCheck("leaderElection", lease)

        def loop() -> str | None:
            task = self._loop_task
            if task is not None and task.done() and not task.cancelled() and task.exception() is not None:
                return f"the scheduling loop died: {task.exception()!r}"
            return None

        def shutdown() -> str | None:
            return "process is shutting down" if self._stop is not None and self._stop.is_set() else None

        def synced() -> str | None:
            ok = self._ingest is not None and self._ingest.synced.is_set()
            return None if ok else "handlers are not fully synchronized"

        return (leader, HealthCheck("scheduling-loop", loop), HealthCheck("shutdown", shutdown),
                HealthCheck("sched-handler-sync", synced))

    # --- after every batch of events: profile statuses ---

    async def _after_batch(self, kind: WatchedKind) -> None:
        if not self.profiles.dirty or (self._elector is not None and not self._elector.is_leader):
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
            # False until the first sync, and again while a list or watch fails (an outage).
            "synced": bool(self._ingest is not None and self._ingest.synced.is_set()
                           and self._informers is not None and self._informers.connected),
            "leader": self._elector.is_leader if self._elector is not None else True,
            "profiles": sorted(scheduler.profiles) if scheduler is not None else [],
            "pending": scheduler.report_pending_pods() if scheduler is not None else {},
        }
