"""benchmarks/dryrun.py's HTTP side: the dry-run front started on a scheduler of the benchmark's,
an API server double for its authentication (--tls), and the caller process.

- `start_front(sched, refresh, tls)`: the front (kubeberth/operator/dryrun_supervisor.py's
  DryRunFront, a process of its own) serving the dry runs of `sched`: plain HTTP on loopback, or
  with `tls` HTTPS with its self-signed certificate, every request authenticated by a TokenReview
  and authorized by a SubjectAccessReview sent to `ApiDouble` (served here: the front caches
  both answers for 10 s, so this process answers one of each per 10 s);
- `CALLER`: the script of another process posting `rate` DryRuns a second to the front until its
  stdin closes, then printing what it got (JSON: counts and latency).
"""

from __future__ import annotations

import os
from typing import Any

TOKEN = "bench-token"
USER = {"username": "system:serviceaccount:default:bench", "groups": ["system:serviceaccounts"]}


class ApiDouble:
    """TokenReview (TOKEN is USER) and SubjectAccessReview (USER may) on loopback."""

    def __init__(self) -> None:
        self.reviews = 0
        self._runner: Any = None
        self.url = ""

    async def start(self) -> str:
        from aiohttp import web

        async def review(request: web.Request) -> web.Response:
            self.reviews += 1
            body = await request.json()
            if request.path.endswith("/tokenreviews"):
                ok = body["spec"]["token"] == TOKEN
                body["status"] = {"authenticated": True, "user": USER} if ok else {}
            else:
                body["status"] = {"allowed": body["spec"]["user"] == USER["username"]}
            return web.json_response(body, status=201)

        app = web.Application()
        app.router.add_post("/apis/authentication.k8s.io/v1/tokenreviews", review)
        app.router.add_post("/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}"
        return self.url

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


async def start_front(sched: Any, refresh: float, tls: bool) -> tuple[Any, ApiDouble | None, str]:
    """The front serving `sched`'s dry runs, listening; (it, the API double or None, the URL to post to)."""
    from kubeberth.operator.dryrun_front import FrontConfig
    from kubeberth.operator.dryrun_supervisor import DryRunFront
    from kubeberth.operator.serving_options import ServingOptions

    api = ApiDouble() if tls else None
    if api is not None:
        config = FrontConfig(host="127.0.0.1", port=0, serving=ServingOptions(authentication_skip_lookup=True),
                             connection={"server": await api.start(), "request_timeout": 5.0}, refresh=refresh)
    else:
        config = FrontConfig(host="127.0.0.1", port=0, serving=ServingOptions(insecure=True), refresh=refresh)
    front = DryRunFront(lambda: sched, config, scope_of=lambda ns: ("counts", [ns]))
    port = await front.start()
    scheme = "https" if tls else "http"
    return front, api, f"{scheme}://127.0.0.1:{port}/apis/kubeberth.io/v1alpha1/namespaces/default/dryruns"


def cpu_seconds(pid: int | None) -> float:
    """The user + system CPU seconds of process `pid` so far (0 when it is gone)."""
    if pid is None:
        return 0.0
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# The caller: argv url rate token nice; posts until its stdin closes, prints {"sent", "answered", "refused",
# "failed", "latency_ms": {"p50", "p99", "max", "n"}} as JSON. It stands for a client on another machine: with a
# nice value (10 by default) it takes a CPU the scheduler wants only after the scheduler has had it.
CALLER = """
import asyncio, json, os, ssl, sys, time
import aiohttp
url, rate, token = sys.argv[1], float(sys.argv[2]), sys.argv[3]
os.nice(int(sys.argv[4]))
got = {"sent": 0, "answered": 0, "refused": 0, "failed": 0}
took = []
async def one(session, i):
    body = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "DryRun", "spec": {"pod": {
        "metadata": {"name": f"http-{i}"}, "spec": {"containers": [{"name": "pause", "image": "pause",
        "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}}}]}}}}
    t0 = time.perf_counter()
    async with session.post(url, json=body) as resp:
        await resp.read()
    key = {201: "answered", 429: "refused"}.get(resp.status, "failed")
    got[key] += 1
    if resp.status == 201:
        took.append(time.perf_counter() - t0)
async def main():
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    loop.add_reader(sys.stdin.fileno(), lambda: stop.set() if not sys.stdin.buffer.read1(1 << 16) else None)
    tasks = set()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with aiohttp.ClientSession(headers=headers, connector=aiohttp.TCPConnector(ssl=False)) as session:
        await one(session, -1)  # the connection (and its TLS handshake) made before the measure
        got.update(sent=0, answered=0, refused=0, failed=0); took.clear()
        print("ready", flush=True)
        next_at, i = time.perf_counter(), 0
        while not stop.is_set():
            next_at += 1.0 / rate
            t = loop.create_task(one(session, i)); tasks.add(t); t.add_done_callback(tasks.discard)
            got["sent"] += 1; i += 1
            try:
                await asyncio.wait_for(stop.wait(), max(0.0, next_at - time.perf_counter()))
            except asyncio.TimeoutError:
                pass
        for t in list(tasks):
            t.cancel()
    took.sort()
    n = len(took)
    got["latency_ms"] = {"p50": round(took[n // 2] * 1000, 3), "p99": round(took[int(n * .99)] * 1000, 3),
                         "max": round(took[-1] * 1000, 3), "n": n} if n else {}
    print(json.dumps(got))
asyncio.run(main())
"""
