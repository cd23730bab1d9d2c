"""The dry-run service on the secure port (operator/dryrun_endpoint.py, dryrun/worker.py): HTTPS,
delegated authentication, a SubjectAccessReview on `dryruns.kubeberth.io` in the path's
namespace, 400s naming the field, 429 when overloaded, answers from a forked copy, and nothing
in the scheduler changed by a dry run. The API server is the double of the secure-port tests."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio

from kubeberth.dryrun import DryRunClient, DryRunError
from kubeberth.dryrun.service import DryRunService
from kubeberth.dryrun.worker import DryRunWorkers
from kubeberth.metrics import SchedulerMetrics
from kubeberth.operator.dryrun_endpoint import DryRunEndpoint
from kubeberth.operator.secure_serving import ComponentServer, make_server
from kubeberth.operator.serving_options import ServingOptions
from kubeberth.scheduler import Scheduler
from tests.dryrun.cluster import cluster, new_pod

from .test_delegated_auth import PROM, ApiServer
from .test_secure_serving import TENANT, insecure_client

CALLER = {"username": "system:serviceaccount:team-a:autoscaler", "groups": ["system:serviceaccounts"]}
PATH = "/apis/kubeberth.io/v1alpha1/namespaces/team-a/dryruns"


class Service:
    def __init__(self, server: ComponentServer, api: ApiServer, sched: Scheduler, workers: DryRunWorkers) -> None:
        self.server, self.api, self.sched, self.workers = server, api, sched, workers

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.server.port}"

    async def post(self, body: Any, token: str | None = "caller", path: str = PATH) -> tuple[int, Any, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        async with aiohttp.ClientSession() as s, s.post(self.url + path, data=data, headers=headers,
                                                        ssl=insecure_client()) as r:
            return r.status, json.loads(await r.text()), r.headers


async def serve(sched: Scheduler, metrics: SchedulerMetrics, max_queue: int = 8) -> tuple[ComponentServer, ApiServer,
                                                                                            DryRunWorkers]:
    api = ApiServer(tokens={"caller": CALLER, "tenant": TENANT, "prom": PROM},
                    allowed={(CALLER["username"], "create", "dryruns.kubeberth.io/team-a")})
    workers = DryRunWorkers(lambda: sched, refresh=60.0, max_queue=max_queue)
    endpoint = DryRunEndpoint(DryRunService(lambda: sched, workers), lambda ns: ("counts", ["team-a", "team-b"]))
    server = await make_server(ServingOptions(authentication_skip_lookup=True), metrics, 0, "127.0.0.1",
                               post=api.post, get=None, resource_routes=endpoint.routes())
    await server.start()
    return server, api, workers


@pytest_asyncio.fixture
async def service() -> AsyncIterator[Service]:
    sched = cluster()
    server, api, workers = await serve(sched, SchedulerMetrics())
    try:
        yield Service(server, api, sched, workers)
    finally:
        await server.stop()
        await workers.close()


def dry_run(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "kubeberth.io/v1alpha1", "kind": "DryRun", "spec": spec}


@pytest.mark.parametrize("token, path, status, reason", [
    (None, PATH, 403, "Forbidden"),
    ("garbage", PATH, 401, "Unauthorized"),
    ("tenant", PATH, 403, "Forbidden"),  # a tenant without the verb
    ("caller", PATH.replace("team-a", "team-b"), 403, "Forbidden"),  # allowed in team-a only
    ("prom", PATH, 403, "Forbidden"),  # may read /metrics, may not dry-run
], ids=["anonymous", "garbage", "tenant", "other-namespace", "metrics-reader"])
async def test_who_may_dry_run(service, token, path, status, reason):
    got, body, _ = await service.post(dry_run({"pod": new_pod("a")}), token, path)
    assert (got, body["reason"]) == (status, reason)
    if status == 403 and token != "garbage":
        ns = path.split("/")[5]
        user = {"tenant": TENANT, "caller": CALLER, "prom": PROM}.get(token or "", {}).get("username",
                                                                                         "system:anonymous")
        assert body["message"] == (f'dryruns.kubeberth.io is forbidden: User "{user}" cannot create resource '
                                   f'"dryruns" in API group "kubeberth.io" in the namespace "{ns}"')


async def test_the_review_is_on_our_resource_in_the_path_namespace(service):
    status, body, _ = await service.post(dry_run({"pod": new_pod("a")}))
    assert status == 201, body
    reviews = [b["spec"] for p, b in service.api.calls if p.endswith("subjectaccessreviews")]
    assert reviews == [{"resourceAttributes": {"namespace": "team-a", "verb": "create", "group": "kubeberth.io",
                                               "resource": "dryruns", "version": "v1alpha1"},
                        "user": CALLER["username"], "groups": [*CALLER["groups"], "system:authenticated"]}]
    assert body["status"]["pods"][0] | {"message": ""} == {"namespace": "team-a", "name": "a", "status": "Scheduled",
                                                           "node": "n0", "message": ""}


@pytest.mark.parametrize("body, field", [
    (b"{not json", "the body is not JSON"),
    ([1, 2], "the body is not a DryRun object"),
    ({"apiVersion": "kubeberth.io/v1alpha1", "kind": "DryRun"}, "spec: Field required"),
    (dry_run({"pod": {"kind": "Deployment"}}), "spec.pod.kind: Value error, expected kind Pod"),
    (dry_run({"pod": new_pod("a"), "copies": 0}), "spec.copies: Input should be greater than or equal to 1"),
    (dry_run({"pod": new_pod("a"), "pods": [new_pod("b")]}), "spec: Value error, give exactly one of"),
    (dry_run({"pod": new_pod("a"), "bogus": 1}), "spec.bogus: Extra inputs are not permitted"),
    (dry_run({"pod": new_pod("a", "team-b")}), "spec.pod.metadata.namespace: 'team-b' is not the path's"),
    (dry_run({"pods": [new_pod("a"), new_pod("b", "team-b")]}), "spec.pods[1].metadata.namespace"),
    (dry_run({"pod": new_pod("a", cpu="lots")}), "pods[0]: "),
    ({**dry_run({"pod": new_pod("a")}), "apiVersion": "v1"}, "apiVersion: Value error"),
], ids=["not-json", "not-object", "no-spec", "not-a-pod", "zero-copies", "pod-and-pods", "unknown-field",
        "pod-of-another-namespace", "gang-member-of-another-namespace", "bad-quantity", "wrong-api-version"])
async def test_a_malformed_body_is_400_naming_the_field(service, body, field):
    status, got, _ = await service.post(body)
    assert (status, got["reason"]) == (400, "BadRequest")
    assert got["message"].startswith(field), got["message"]


async def test_copies_are_placed_one_after_another(service):
    status, body, _ = await service.post(dry_run({"pod": new_pod("web", cpu="1500m"), "copies": 4}))
    assert status == 201
    got = body["status"]
    assert [(p["name"], p.get("node")) for p in got["pods"]] == [
        ("web-0", "n0"), ("web-1", "n1"), ("web-2", "n0"), ("web-3", None)]
    assert got["pods"][3]["message"].startswith("0/3 nodes are available: 3 Insufficient cpu.")
    assert (got["schedulable"], got["scheduled"], got["snapshot"]["nodes"]) == (False, 3, 3)


def observe(sched: Scheduler, metrics: SchedulerMetrics) -> tuple[Any, ...]:
    """Everything a dry run must leave alone."""
    sched.flush_plugin_metrics()  # what the frameworks counted (plugin evaluations) to the registry
    q = sched.queue
    snap = sched.snapshot
    return ({n: sched.cache.get_node(n).generation for n in sched.cache.node_names()}, sched.cache.pod_count(),
            sched.cache.assumed_count(), [id(ni) for ni in snap.node_infos], snap.generation,
            [sorted(p.key for p in ni.pods) for ni in snap.node_infos], sched.ctx.next_start_node_index,
            sched.ctx.rng.getstate(), q.scheduling_cycle,
            {k: sorted(p.key for p in v) for k, v in q.pending_pods().items()},
            sched.nominator.nominated_node_names(),
            {k: (r.status, r.node, r.message, r.attempts) for k, r in sched.outcomes.items()}, metrics.render())


async def test_nothing_in_the_scheduler_changes():
    metrics = SchedulerMetrics()
    sched = cluster(full=True, metrics=metrics)
    sched.on_pod_add(new_pod("waiting", "team-b", cpu="3"))  # pending: in the queue after one attempt
    await sched.run_until_idle()
    sched.cache.update_snapshot(sched.snapshot)  # what a dry run in the loop does first, as the next cycle
    server, _, workers = await serve(sched, metrics)
    svc = Service(server, ApiServer(), sched, workers)
    try:
        before = observe(sched, metrics)
        served = []
        for spec in ({"pod": new_pod("a", high=True), "explain": True}, {"pod": new_pod("b"), "copies": 3},
                     {"pods": [new_pod("g0"), new_pod("g1")]}, {"pod": new_pod("c", high=True)}):
            status, body, _ = await svc.post(dry_run(spec))
            assert status == 201, body
            served.append(body["status"]["servedBy"])
        assert observe(sched, metrics) == before
        assert served == ["worker", "scheduler", "scheduler", "scheduler"]  # an explanation goes to the worker
        assert workers.forks == 1  # one copy served it
    finally:
        await server.stop()
        await workers.close()
    assert workers.current is None and not workers._retired  # the worker is gone, reaped


async def test_too_many_waiting_is_429():
    sched = cluster()
    server, _, workers = await serve(sched, SchedulerMetrics(), max_queue=0)
    try:
        spec = {"pod": new_pod("a"), "explain": True}  # for the worker
        status, body, headers = await Service(server, ApiServer(), sched, workers).post(dry_run(spec))
        assert (status, body["reason"], headers["Retry-After"]) == (429, "TooManyRequests", "1")
    finally:
        await server.stop()
        await workers.close()


async def test_the_client(service):
    async with DryRunClient(service.url, token="caller", insecure=True) as client:
        got = await client.schedule(new_pod("web", cpu="1500m"), copies=2)
        assert [p.node for p in got.pods] == ["n0", "n1"] and got.schedulable
        gang = await client.schedule_gang(None, [new_pod("g0", cpu="3"), new_pod("g1", cpu="3")], explain=True)
        assert [p.status for p in gang.pods] == ["Scheduled", "Unschedulable"] and not gang.schedulable
        assert gang.pods[1].explanation is not None and gang.pods[1].explanation["scope"]["namespace"] == "team-a"
    async with DryRunClient(service.url, token="tenant", insecure=True) as client:
        with pytest.raises(DryRunError) as refused:
            await client.schedule(new_pod("web"))
    assert refused.value.status == 403


async def test_the_worker_and_the_loop_give_the_same_answer(service):
    """An explanation sends the dry run to the forked worker: its placements are the loop's."""
    spec = {"pod": new_pod("web", cpu="1500m"), "copies": 4}
    _, in_loop, _ = await service.post(dry_run(spec))
    _, by_worker, _ = await service.post(dry_run({**spec, "explain": True}))
    assert (in_loop["status"]["servedBy"], by_worker["status"]["servedBy"]) == ("scheduler", "worker")
    strip = [{k: v for k, v in p.items() if k != "explanation"} for p in by_worker["status"]["pods"]]
    assert strip == in_loop["status"]["pods"]
    assert all(p["explanation"]["scope"] == {"namespace": "team-a", "detail": "counts"}
               for p in by_worker["status"]["pods"])


@pytest.mark.parametrize("argv, refresh, queue", [
    ([], 2.0, 32),  # 1 s cost the scheduler 12% of its CPU at 5,000 nodes (docs/guides/dry-run.md)
    (["--dry-run-refresh=0.5", "--dry-run-max-queue=4"], 0.5, 4),
    (["--dry-run-refresh=0"], 0.0, 32),  # no dry runs
])
def test_the_flags(argv, refresh, queue):
    import argparse

    from kubeberth.operator.options import add_run_arguments, config_from_args

    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    cfg = config_from_args(parser.parse_args(["--metrics-port=0", *argv]))
    assert (cfg.dry_run_refresh, cfg.dry_run_max_queue) == (refresh, queue)
