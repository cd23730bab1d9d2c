"""The REST client's cost per request against the real kube-apiserver, beside aiohttp's session.

    python -m benchmarks.http_client [--requests 3000] [--concurrency 64] [--rounds 3]

A fresh control plane (tests/cluster/control_plane.py); each round creates `--requests`
events.k8s.io Events (the scheduler's most frequent write with the binding) with `--concurrency`
in flight, first through `RestClient.request` (operator/http1.py: kept-alive HTTP/1.1 connections,
answers parsed by httptools), then through an aiohttp ClientSession with the same TLS context,
headers and body (what `RestClient.request` used before), in turn. Reports the client process'
CPU microseconds per request (user + system, `time.process_time`: what competes with the API
server for the machine's cores), requests per second and connections made. Both warm their
connections first; the API server's own cost is the same for both.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
import orjson
from kubernetes_asyncio.client import Configuration
from tests.cluster.control_plane import ADMIN_TOKEN, ControlPlane

from benchmarks.record import machine
from kubeberth.operator.rest import JSON, RestClient, ssl_context

PATH = "/apis/events.k8s.io/v1/namespaces/default/events"


def event(i: int) -> dict[str, Any]:
    return {"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": f"pod-{i}.{i:016x}", "namespace": "default"},
            "eventTime": "2026-11-28T10:00:00.000000Z", "reportingController": "default-scheduler",
            "reportingInstance": "default-scheduler-bench", "action": "Binding", "reason": "Scheduled",
            "type": "Normal", "note": f"Successfully assigned default/pod-{i} to node-{i % 500}",
            "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": "default", "name": f"pod-{i}"}}


async def timed(send: Callable[[int], Awaitable[Any]], first: int, count: int, concurrency: int) -> tuple[float, float]:
    """CPU µs per request and requests per second for `count` sends, `concurrency` at a time."""
    slots = asyncio.Semaphore(concurrency)

    async def one(i: int) -> None:
        async with slots:
            await send(i)

    cpu0, t0 = time.process_time(), time.monotonic()
    await asyncio.gather(*(one(first + i) for i in range(count)))
    cpu1, t1 = time.process_time(), time.monotonic()
    return (cpu1 - cpu0) / count * 1e6, count / (t1 - t0)


async def rest_client_round(cfg: Configuration, first: int, count: int, concurrency: int) -> tuple[float, float, int]:
    client = RestClient(cfg, pool_size=concurrency)
    try:
        await timed(lambda i: client.request("POST", PATH, body=event(i)), first, concurrency, concurrency)
        us, rate = await timed(lambda i: client.request("POST", PATH, body=event(i)),
                               first + concurrency, count, concurrency)
        return us, rate, client.connections_made
    finally:
        await client.close()


async def aiohttp_round(cfg: Configuration, first: int, count: int, concurrency: int) -> tuple[float, float, int]:
    made = 0

    async def on_connection(*_: Any) -> None:
        nonlocal made
        made += 1

    trace = aiohttp.TraceConfig()
    trace.on_connection_create_end.append(on_connection)
    connector = aiohttp.TCPConnector(limit=concurrency, ssl=ssl_context(cfg), keepalive_timeout=60)
    headers = {"Accept": JSON, "User-Agent": "kubeberth", "Content-Type": JSON,
               "Authorization": f"Bearer {ADMIN_TOKEN}"}
    async with aiohttp.ClientSession(connector=connector, trace_configs=[trace]) as session:
        async def send(i: int) -> Any:
            async with session.request("POST", str(cfg.host) + PATH, data=orjson.dumps(event(i)), headers=headers,
                                       timeout=aiohttp.ClientTimeout(total=10)) as resp:
                raw = await resp.read()
                if resp.status >= 300:
                    raise RuntimeError(f"HTTP {resp.status}: {raw[:200]!r}")
                return orjson.loads(raw)

        await timed(send, first, concurrency, concurrency)
        us, rate = await timed(send, first + concurrency, count, concurrency)
    return us, rate, made


async def main_async(args: argparse.Namespace) -> None:
    m = machine()
    print(f"REST client vs aiohttp session: {m['cpu']}, {m['nproc']} cpu, "
          f"Python {platform.python_version()}; {args.requests} Event creates per round, "
          f"{args.concurrency} in flight")
    with ControlPlane() as plane:
        cfg = Configuration(host=plane.url, api_key={"BearerToken": ADMIN_TOKEN},
                            api_key_prefix={"BearerToken": "Bearer"})
        cfg.ssl_ca_cert = str(plane.ca_path)
        results: dict[str, list[float]] = {"RestClient": [], "aiohttp": []}
        first = 0
        for rnd in range(1, args.rounds + 1):
            for name, run in (("RestClient", rest_client_round), ("aiohttp", aiohttp_round)):
                us, rate, made = await run(cfg, first, args.requests, args.concurrency)
                first += args.requests + args.concurrency
                results[name].append(us)
                print(f"round {rnd}  {name:<10} {us:7.1f} µs CPU per request  {rate:7.0f} requests/s  "
                      f"{made} connections")
        ours, theirs = statistics.median(results["RestClient"]), statistics.median(results["aiohttp"])
        print(f"median: RestClient {ours:.1f} µs, aiohttp {theirs:.1f} µs per request ({ours / theirs:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
