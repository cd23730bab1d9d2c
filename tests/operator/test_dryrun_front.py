"""The dry-run front (operator/dryrun_front.py, dryrun_supervisor.py): a process of its own serving the
dry runs with the secure port's TLS and delegated authentication (401, 403 for the anonymous and a
tenant without the verb), 400 naming the field, 429 and 503 with Retry-After, answers from workers
forked from the scheduler's process equal to the engine's on the same scheduler (and to what the
scheduler then does), restarted when killed, stopped with the operator; the scheduler's process
does nothing per request (one fork per refresh) and its secure port serves no dry run. The API
server is the double of the secure-port tests, served over HTTP for the front to reach."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
from aiohttp import web

from kubeberth.dryrun.worker import Overloaded, answer, fork_worker, kill
from kubeberth.operator.dryrun_front import Copies, FrontConfig
from kubeberth.operator.dryrun_supervisor import DryRunFront
from kubeberth.operator.serving_options import ServingOptions
from kubeberth.scheduler import SCHEDULED, Scheduler
from tests.dryrun.cluster import cluster, new_pod
from tests.dryrun.test_engine import CASES, really

from .conftest import free_port
from .test_delegated_auth import PROM, ApiServer
from .test_dryrun_endpoint import CALLER, PATH, dry_run
from .test_secure_serving import TENANT, insecure_client

NAMESPACES = ["team-a", "team-b"]


class HttpApi:
    """The ApiServer double over HTTP on loopback (the front is another process)."""

    def __init__(self, api: ApiServer) -> None:
        self.api = api
        self.runner: web.AppRunner | None = None

    async def start(self) -> str:
        async def post(request: web.Request) -> web.Response:
            return web.json_response(await self.api.post(request.path, await request.json()), status=201)

        app = web.Application()
        app.router.add_post("/{path:.*}", post)
        self.runner = web.AppRunner(app, access_log=None)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0).start()
        return f"http://127.0.0.1:{self.runner.addresses[0][1]}"

    async def stop(self) -> None:
        if self.runner is not None:
            await self.runner.cleanup()


class Front:
    def __init__(self, front: DryRunFront, api: ApiServer, sched: Scheduler) -> None:
        self.front, self.api, self.sched = front, api, sched

    async def post(self, body: Any, token: str | None = "caller", path: str = PATH) -> tuple[int, Any, Any]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        url = f"https://127.0.0.1:{self.front.port}{path}"
        async with aiohttp.ClientSession() as s, s.post(url, data=data, headers=headers, ssl=insecure_client()) as r:
            return r.status, json.loads(await r.text()), r.headers


async def no_backoff(_: float) -> None:
    await asyncio.sleep(0)


StartFront = Callable[..., Awaitable[Front]]


@pytest_asyncio.fixture
async def start_front() -> AsyncIterator[StartFront]:
    """Start fronts on a scheduler of tests/dryrun/cluster.py (`await start_front(**FrontConfig fields)`);
    each is stopped at the end, its process and workers gone."""
    started: list[tuple[DryRunFront, HttpApi]] = []

    async def start(sched: Scheduler | None = None, synced: asyncio.Event | None = None, **fields: Any) -> Front:
        sched = sched or cluster()
        api = ApiServer(tokens={"caller": CALLER, "tenant": TENANT, "prom": PROM},
                        allowed={(CALLER["username"], "create", "dryruns.kubeberth.io/team-a")})
        http = HttpApi(api)
        serving = ServingOptions(authentication_skip_lookup=True)
        config = FrontConfig(**{"host": "127.0.0.1", "port": 0, "serving": serving, "refresh": 60.0,
                                "connection": {"server": await http.start(), "request_timeout": 5.0}, **fields})
        front = DryRunFront(lambda: sched, config, synced=synced, scope_of=lambda ns: ("counts", NAMESPACES),
                            sleep=no_backoff)
        started.append((front, http))
        await front.start()
        return Front(front, api, sched)

    yield start
    for front, http in started:
        process = front.process
        await front.stop()
        await http.stop()
        assert process is None or process.returncode is not None  # the front has exited
        assert not front.workers  # every worker reaped


@pytest_asyncio.fixture
async def front(start_front: StartFront) -> Front:
    return await start_front()


@pytest.mark.parametrize("token, path, status, user", [
    (None, PATH, 403, "system:anonymous"),
    ("garbage", PATH, 401, None),
    ("tenant", PATH, 403, TENANT["username"]),  # a tenant without the verb
    ("caller", PATH.replace("team-a", "team-b"), 403, CALLER["username"]),  # allowed in team-a only
    ("prom", PATH, 403, PROM["username"]),  # may read /metrics, may not dry-run
], ids=["anonymous", "garbage", "tenant-without-the-verb", "other-namespace", "metrics-reader"])
async def test_who_may_dry_run(front, token, path, status, user):
    got, body, headers = await front.post(dry_run({"pod": new_pod("a")}), token, path)
    assert (got, body["reason"]) == (status, "Unauthorized" if status == 401 else "Forbidden")
    if user is not None:
        ns = path.split("/")[5]
        assert body["message"] == (f'dryruns.kubeberth.io is forbidden: User "{user}" cannot create resource '
                                   f'"dryruns" in API group "kubeberth.io" in the namespace "{ns}"')
        assert headers["X-Content-Type-Options"] == "nosniff"
    assert front.front.forks == 0  # refused before any copy of the scheduler is asked for


@pytest.mark.parametrize("body, field", [
    (b"{not json", "the body is not JSON"),
    (dry_run({"pod": new_pod("a"), "copies": 0}), "spec.copies: Input should be greater than or equal to 1"),
    (dry_run({"pod": new_pod("a"), "bogus": 1}), "spec.bogus: Extra inputs are not permitted"),
    (dry_run({"pod": new_pod("a", "team-b")}), "spec.pod.metadata.namespace: 'team-b' is not the path's"),
    (dry_run({"pod": new_pod("a", cpu="lots")}), "pods[0]: "),  # found by the worker, on its copy
    ({**dry_run({"pod": new_pod("a")}), "apiVersion": "v1"}, "apiVersion: Value error"),
], ids=["not-json", "zero-copies", "unknown-field", "pod-of-another-namespace", "bad-quantity", "wrong-api-version"])
async def test_a_malformed_body_is_400_naming_the_field(front, body, field):
    status, got, _ = await front.post(body)
    assert (status, got["reason"]) == (400, "BadRequest")
    assert got["message"].startswith(field), got["message"]


async def test_the_answers_are_the_engines_on_the_same_scheduler_and_what_it_then_does(front):
    """Every case of tests/dryrun/test_engine.py through the front (a worker forked from this
    process), against the engine run here on the same scheduler, then against what the scheduler
    does with the first case's pods."""
    for _, _, pods in CASES:
        status, body, _ = await front.post(dry_run({"pods": pods, "explain": False}))
        assert status == 201, body
        got = body["status"]
        here = answer(front.sched, {"namespace": "team-a", "pods": pods, "detail": "counts",
                                    "namespaces": NAMESPACES}, time.monotonic())
        assert got["pods"] == here["pods"] and got["scheduled"] == here["scheduled"]
        assert got["servedBy"] == "worker" and got["snapshot"]["nodes"] == 3
    pods = CASES[2][2]  # copies placed one after another
    _, body, _ = await front.post(dry_run({"pods": pods}))
    records = await really(front.sched, pods)
    assert [(p["status"], p.get("node")) for p in body["status"]["pods"]] == [
        ("Scheduled", r.node) if r.status == SCHEDULED else ("Unschedulable", None) for r in records]
    assert front.front.forks == 1  # one copy answered them all (--dry-run-refresh 60 s)


async def test_the_scheduler_process_does_nothing_per_request(front):
    for i in range(20):
        status, _, _ = await front.post(dry_run({"pod": new_pod(f"p{i}")}))
        assert status == 201
    # one message from the front (a fork wanted), one fork, for twenty dry runs; served by another process
    assert (front.front.asked, front.front.forks) == (1, 1)
    assert front.front.pid != os.getpid()


async def test_the_front_is_restarted_after_a_kill(front):
    status, _, _ = await front.post(dry_run({"pod": new_pod("before")}))
    assert status == 201
    killed, port = front.front.pid, front.front.port
    assert killed is not None
    os.kill(killed, signal.SIGKILL)
    deadline = time.monotonic() + 60
    while front.front.starts < 2 or front.front.channel is None:  # the supervisor starts it again
        assert time.monotonic() < deadline, "the front was not started again"
        await asyncio.sleep(0.05)
    assert front.front.pid != killed and front.front.port == port  # the same port
    status, body, _ = await front.post(dry_run({"pod": new_pod("after")}))
    assert status == 201 and body["status"]["pods"][0]["node"] == "n0"


async def test_503_before_the_scheduler_has_synced_then_429_when_too_many_wait(start_front):
    synced = asyncio.Event()
    front = await start_front(synced=synced, max_queue=0)
    status, body, headers = await front.post(dry_run({"pod": new_pod("a")}))
    assert (status, body["reason"], headers["Retry-After"]) == (503, "ServiceUnavailable", "1")
    synced.set()
    for _ in range(500):  # the front is told; then every dry run finds the worker's queue full (max 0)
        status, body, headers = await front.post(dry_run({"pod": new_pod("a")}))
        if status != 503:
            break
        await asyncio.sleep(0.01)
    assert (status, body["reason"], headers["Retry-After"]) == (429, "TooManyRequests", "1")


async def test_the_operator_serves_dry_runs_from_the_front_only(start_operator):
    """kubeberth run: the front on --dry-run-port (plain HTTP here, as the secure port with
    --metrics-insecure), the secure port's dry-run path gone; the front stops with the operator."""
    port = free_port()
    op = await start_operator(dry_run_port=port)
    for _ in range(500):  # started once the cache has synced, after the start-up handler
        front = op.app.dry_run_front
        if front is not None:
            break
        await asyncio.sleep(0.02)
    assert front is not None and front.port == port and front.pid != os.getpid()
    body = json.dumps(dry_run({"pod": new_pod("a", "default")})).encode()
    path = PATH.replace("team-a", "default")
    async with aiohttp.ClientSession() as s:
        async with s.post(f"http://127.0.0.1:{op.app.metrics_port}{path}", data=body, allow_redirects=False) as r:
            # the scheduler's process serves no dry run: it sends them on to the front
            assert (r.status, r.headers["Location"]) == (307, f"http://127.0.0.1:{port}{path}")
        for _ in range(500):
            async with s.post(f"http://127.0.0.1:{port}{path}", data=body) as r:
                status, got = r.status, await r.json()
            if status != 503:  # until the front knows the scheduler has synced
                break
            await asyncio.sleep(0.02)
    assert status == 201 and got["status"]["servedBy"] == "worker", got
    async with aiohttp.ClientSession() as s:  # a client that posts to the secure port gets there too
        async with s.post(f"http://127.0.0.1:{op.app.metrics_port}{path}", data=body) as r:
            assert r.status == 201 and (await r.json())["status"]["servedBy"] == "worker"
    process = front.process
    await op.stop()
    assert process is not None and process.returncode is not None and not front.workers


# --- the front's answerer (in this process, its clock ours) ---

class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


async def test_a_copy_older_than_the_refresh_is_replaced_in_the_background():
    sched, clock, wanted = cluster(), Clock(), []
    copies = Copies(lambda: wanted.append(clock.t), refresh=1.0, max_queue=4, clock=clock)
    pids: set[int] = set()

    async def fork() -> None:
        pid, sock, _ = fork_worker(sched)
        pids.add(pid)
        await copies.arrived(sock, pid, clock.t)

    request = {"namespace": "team-a", "pods": [new_pod("a")]}
    try:
        first = asyncio.ensure_future(copies.ask(request))  # no copy yet: waits for one
        await asyncio.sleep(0)
        assert wanted == [0.0] and not first.done()
        await fork()
        assert (await first)["scheduled"] == 1
        clock.t = 1.5  # older than the refresh: a new one is asked for, the old one answers meanwhile
        assert (await copies.ask(request))["scheduled"] == 1
        assert (await copies.ask(request))["scheduled"] == 1
        assert wanted == [0.0, 1.5]  # once
        old = copies.current
        await fork()
        assert copies.current is not old and copies.workers == 2
        clock.t = 10.0  # older than 5 refreshes: not used, the request waits for the new copy
        waiting = asyncio.ensure_future(copies.ask(request))
        await asyncio.sleep(0)
        assert wanted == [0.0, 1.5, 10.0] and not waiting.done()
        await fork()
        assert (await waiting)["scheduled"] == 1
        copies.max_queue = 0
        with pytest.raises(Overloaded):
            await copies.ask(request)
    finally:
        await copies.close()
        kill(pids)


async def test_a_failed_fork_fails_the_waiting_requests():
    copies = Copies(lambda: None, refresh=1.0, max_queue=4)
    waiting = asyncio.ensure_future(copies.ask({"namespace": "team-a", "pods": []}))
    await asyncio.sleep(0)
    copies.failed("the operator could not fork: out of memory")
    with pytest.raises(RuntimeError, match="out of memory"):
        await waiting


def test_the_config_goes_over_the_channel_as_json():
    cfg = FrontConfig(host="0.0.0.0", port=10260, serving=ServingOptions(always_allow_groups=("system:masters", "x"),
                                                                         requestheader_allowed_names=("front",)),
                      connection={"server": "https://api:6443", "request_timeout": 3.0}, keypair=("CERT", "KEY"),
                      refresh=0.5, max_queue=7, verbose=True)
    assert FrontConfig.from_json(json.loads(json.dumps(cfg.to_json()))) == cfg


async def test_a_taken_port_is_an_error_at_start():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        front = DryRunFront(cluster, FrontConfig(host="127.0.0.1", port=taken.getsockname()[1],
                                                 serving=ServingOptions(insecure=True)))
        with pytest.raises(Exception, match=r"did not start: the dry-run port 127\.0\.0\.1:"):
            await front.start()
    assert front.process is None


@pytest.mark.parametrize(("up", "url", "status", "location"), [
    (False, "https://sched.example:10259", 503, None),
    (True, "https://sched.example:10259", 307, "https://sched.example:10260"),
    (True, "http://[::1]:10259", 307, "http://[::1]:10260"),
], ids=["front-starting", "https", "ipv6"])
async def test_the_secure_port_sends_dry_runs_on_to_the_front(up, url, status, location):
    from aiohttp.test_utils import make_mocked_request
    from yarl import URL

    from kubeberth.operator.delegated_auth import User
    from kubeberth.operator.dryrun_endpoint import ROUTE, redirect_routes

    serve = redirect_routes(10260, lambda: up)[ROUTE]
    base = URL(url)
    request = make_mocked_request("POST", PATH + "?dryRun=All", headers={"Host": base.raw_authority},
                                  sslcontext=object() if base.scheme == "https" else None)
    response = await serve(request, User.anonymous(), None)
    assert response.status == status
    assert response.headers.get("Location") == (f"{location}{PATH}?dryRun=All" if location else None)
    if status == 503:
        assert response.headers["Retry-After"] == "1"
