"""End-to-end mode: the real operator (kopf, watches, the API client) against the API emulator.

The emulator (tests/operator/emulator.py, on kmock) serves HTTP on 127.0.0.1 from a child
process, as an API server would run beside the scheduler (in one process they would fight over
the GIL); the operator runs in a thread of this process with its own event loop, as the
integration tests run it. Nodes and pods are created in the emulator's store directly (as
another API client would), so the operator sees them through its watches, schedules them and
binds them through the pods/binding subresource; a pod counts once its binding reached the
emulator.

Where the time goes: the CPU time of the operator's thread and of the emulator's process, the
requests made, and (on a second, profiled run) the operator thread's time by layer (scheduling
cycles, watch-event handling, the API client's HTTP, kopf) and the emulator's.
"""

from __future__ import annotations

import asyncio
import contextlib
import cProfile
import os
import pstats
import threading
import time
from typing import Any

from . import workloads as wl

# A directory to keep the profiled run's cProfile data in (operator.prof, emulator.prof).
PROFILE_DIR_ENV = "KUBEBERTH_E2E_PROFILE_DIR"


class _OperatorThread:
    """The operator, run until stop() in a thread of its own (profiled with cProfile)."""

    def __init__(self, config: Any) -> None:
        from kubeberth.operator.app import OperatorApp

        self.app = OperatorApp(config)
        self.ready = threading.Event()
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        self.profile = cProfile.Profile()
        self.with_profile = True
        self.profiling = False
        self.cpu_s = 0.0
        self._cpu_mark: float | None = None
        self._thread = threading.Thread(target=self._main, name="operator", daemon=True)

    def _main(self) -> None:
        async def main() -> int:
            stop = asyncio.Event()
            ready = asyncio.Event()
            loop = asyncio.get_running_loop()

            async def relay() -> None:
                await ready.wait()
                self.ready.set()

            async def profile_switch() -> None:
                # Start/stop the profiler from inside this thread when asked to.
                while True:
                    await asyncio.sleep(0.01)
                    if self.profiling and self._cpu_mark is None:
                        self._cpu_mark = time.thread_time()
                        if self.with_profile:
                            self.profile.enable()
                    elif not self.profiling and self._cpu_mark is not None:
                        if self.with_profile:
                            self.profile.disable()
                        self.cpu_s += time.thread_time() - self._cpu_mark
                        self._cpu_mark = None

            def watch_stop() -> None:
                self.stopping.wait()
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(stop.set)

            tasks = [loop.create_task(relay()), loop.create_task(profile_switch())]
            threading.Thread(target=watch_stop, daemon=True).start()
            try:
                return await self.app.run(stop_flag=stop, ready_flag=ready)
            finally:
                for t in tasks:
                    t.cancel()

        try:
            asyncio.run(main())
        except BaseException as exc:
            self.error = exc
        finally:
            self.ready.set()

    def start(self, timeout: float = 30.0) -> None:
        self._thread.start()
        if not self.ready.wait(timeout):
            raise TimeoutError("the operator did not get ready")
        if self.error is not None:
            raise self.error

    def stop(self, timeout: float = 30.0) -> None:
        self.stopping.set()
        self._thread.join(timeout)


# Operator-thread time by layer: (label, functions whose cumulative time counts).
_OPERATOR_LAYERS = [
    ("scheduling cycles (Scheduler.schedule_popped)", ("scheduler/schedule_one.py", "schedule_popped")),
    ("  of which filter+score (schedule_pod)", ("scheduler/algorithm.py", "schedule_pod")),
    ("binding calls (API client bind)", ("scheduler/schedule_one.py", "_bind")),
    ("watch events -> cache/queue (ingest handlers)", ("ingest.py", None)),
    ("  of which Pod parsing (Pod.__init__)", ("pod.py", "__init__")),
    ("HTTP client (aiohttp)", ("aiohttp", None)),
    ("JSON decoding", ("json/decoder.py", "decode")),
    ("kopf (watch streams, handler dispatch)", ("kopf", None)),
]

_EMULATOR_LAYERS = [
    ("request handling (Emulator._handle)", ("emulator.py", "_handle")),
    ("watch streams (Emulator._watch)", ("emulator.py", "_watch")),
    ("JSON encoding", ("json/encoder.py", "encode")),
    ("deep copies", ("copy.py", "deepcopy")),
]


def _layer_times(stats: pstats.Stats, layers: list[tuple[str, tuple[str, str | None]]]) -> dict[str, float]:
    """Per layer, the largest cumulative time of a matching function (for a file match: of
    the file's functions, which over-counts nothing since nested calls are included once)."""
    raw: Any = stats.stats  # type: ignore[attr-defined]
    out: dict[str, float] = {}
    for label, (file_part, func) in layers:
        best = 0.0
        for (filename, _line, name), (_cc, _nc, _tt, ct, _callers) in raw.items():
            if file_part in filename and (func is None or name == func):
                best = max(best, ct)
        out[label] = round(best, 3)
    return out


# ---- the emulator, in a process of its own ---------------------------------------------------

def _emulator_main(conn: Any, workload_id: str, sizes: tuple[int, int, int]) -> None:
    """Child process: serve the emulator; create objects and report when told (over `conn`)."""
    asyncio.run(_emulator_serve(conn, workload_id, sizes))


async def _emulator_serve(conn: Any, workload_id: str, sizes: tuple[int, int, int]) -> None:
    import kmock
    from tests.operator.emulator import Emulator

    w = wl.find(workload_id).resized(nodes=sizes[0], init_pods=sizes[1], measure_pods=sizes[2])
    emulator = Emulator()
    profile = cProfile.Profile()
    cpu0 = 0.0
    log0 = 0
    counted = 0  # bindings counted so far: the parent asks every 50 ms, each answer must be O(new)
    bound_by_prefix: dict[str, int] = {}
    async with emulator, kmock.Server(emulator) as server:
        for ns in ("default", "kube-system", *w.all_namespaces()):
            emulator.create("namespaces", {"metadata": {"name": ns, "labels": {
                **dict(w.namespace_labels), "kubernetes.io/metadata.name": ns}}})
        for node in w.node_objects():
            emulator.create("nodes", node)
        conn.send(str(server.url).rstrip("/"))
        loop = asyncio.get_running_loop()
        # Woken by the pipe itself (no polling thread competing with the emulator for its core).
        readable = asyncio.Event()
        loop.add_reader(conn.fileno(), readable.set)
        while True:
            if not conn.poll():
                readable.clear()
                await readable.wait()
                continue
            cmd, arg = conn.recv()
            if cmd == "create":
                if arg == "init":
                    for i in range(w.init_pods):
                        emulator.create("pods", w.init_template(f"init-{i:06d}", w.init_namespace_of(i)))
                else:
                    log0 = len(emulator.log)
                    if arg == "measure-profiled":
                        profile.enable()
                    cpu0 = time.process_time()
                    for i in range(w.measure_pods):
                        emulator.create("pods", w.measure_template(f"pod-{i:06d}", w.measure_namespace))
                conn.send(None)
            elif cmd == "bound":
                for key, _, _ in emulator.bindings[counted:]:
                    prefix = key.split("/", 1)[1].split("-", 1)[0] + "-"
                    bound_by_prefix[prefix] = bound_by_prefix.get(prefix, 0) + 1
                counted = len(emulator.bindings)
                conn.send(bound_by_prefix.get(arg, 0))
            elif cmd == "report":
                profile.disable()
                by_request: dict[str, int] = {}
                for r in emulator.log[log0:]:
                    key = (f"{r.method} {r.plural}{'/' + r.subresource if r.subresource else ''}"
                           f"{' (watch)' if r.watch else ''}")
                    by_request[key] = by_request.get(key, 0) + 1
                layers = _layer_times(pstats.Stats(profile), _EMULATOR_LAYERS) if arg else {}
                if arg and os.environ.get(PROFILE_DIR_ENV):
                    profile.dump_stats(os.path.join(os.environ[PROFILE_DIR_ENV], "emulator.prof"))
                conn.send({"cpu_s": time.process_time() - cpu0, "requests": by_request, "layers": layers})
            elif cmd == "stop":
                emulator.close()
                conn.send(None)
                return


async def _wait_bound(ask: Any, prefix: str, count: int, timeout: float) -> int:
    deadline = time.monotonic() + timeout
    seen = 0
    while time.monotonic() < deadline:
        seen = await ask("bound", prefix)
        if seen >= count:
            break
        # Often enough to time a run of seconds to within 1%, rarely enough not to compete with the
        # operator thread of this process for the GIL.
        await asyncio.sleep(0.05)
    return int(seen)


async def _run(w: wl.Workload, seed: int, profile: bool) -> dict[str, Any]:
    import multiprocessing

    from kubeberth.operator.options import OperatorConfig

    ctx = multiprocessing.get_context("spawn")
    conn, child_conn = ctx.Pipe()
    child = ctx.Process(target=_emulator_main, args=(child_conn, wl.find(w.id).id if "custom" not in w.tags
                                                     else _original_id(w), (w.nodes, w.init_pods, w.measure_pods)),
                        daemon=True)
    child.start()
    lock = asyncio.Lock()

    async def ask(cmd: str, arg: Any = None) -> Any:
        async with lock:
            conn.send((cmd, arg))
            return await asyncio.to_thread(conn.recv)

    out: dict[str, Any] = {}
    try:
        url = await asyncio.to_thread(conn.recv)
        config = OperatorConfig(server=url, metrics_port=0, dry_run_port=None, request_timeout=30.0, seed=seed,
                                extra_settings={"networking.error_backoffs": [0.1, 0.2, 0.5],
                                                "watching.reconnect_backoff": 0.05})
        op = _OperatorThread(config)
        op.with_profile = profile
        await asyncio.to_thread(op.start)
        latencies: list[float] = []
        try:
            await ask("create", "init")
            init_timeout = max(60.0, w.init_pods / 20)
            init_bound = await _wait_bound(ask, "init-", w.init_pods, init_timeout)
            if init_bound < w.init_pods:
                raise TimeoutError(f"only {init_bound}/{w.init_pods} init pods bound after {init_timeout:.0f}s "
                                   "(the operator had not synced its cache)")
            metrics = op.app.metrics
            original = metrics.schedule_attempt

            def record(result: str, profile_name: str, seconds: float) -> None:
                latencies.append(seconds)
                original(result, profile_name, seconds)

            metrics.schedule_attempt = record  # type: ignore[method-assign]
            op.profiling = True
            await asyncio.sleep(0.05)
            t0 = time.perf_counter()
            await ask("create", "measure-profiled" if profile else "measure")
            bound = await _wait_bound(ask, "pod-", w.measure_pods, max(120.0, w.measure_pods / 10))
            elapsed = time.perf_counter() - t0
            op.profiling = False
            await asyncio.sleep(0.05)
            report = await ask("report", profile)
        finally:
            await asyncio.to_thread(op.stop)
        from .record import percentile

        lat = sorted(latencies)
        timing: dict[str, Any] = {
            "wall_s": round(elapsed, 3),
            "operator_thread_cpu_s": round(op.cpu_s, 3),
            "emulator_process_cpu_s": round(report["cpu_s"], 3),
            "requests": dict(sorted(report["requests"].items(), key=lambda kv: -kv[1])),
        }
        if profile:
            timing["operator_thread"] = _layer_times(pstats.Stats(op.profile), _OPERATOR_LAYERS)
            if os.environ.get(PROFILE_DIR_ENV):
                op.profile.dump_stats(os.path.join(os.environ[PROFILE_DIR_ENV], "operator.prof"))
            timing["emulator"] = report["layers"]
        out.update({
            "scheduled": bound,
            "init_scheduled": init_bound,
            "elapsed_s": round(elapsed, 3),
            "pods_per_s": round(bound / elapsed, 1) if elapsed > 0 else 0.0,
            "latency_ms": {f"p{q}": round(percentile(lat, q) * 1000, 3) for q in (50, 90, 99)},
            "where_the_time_goes": timing,
        })
    finally:
        with contextlib.suppress(Exception):
            await ask("stop")
        child.join(10)
        if child.is_alive():
            child.terminate()
    return out


def _original_id(w: wl.Workload) -> str:
    return next(x for x in [*wl.WORKLOADS, *wl.scale_workloads()] if x.name == w.name).id


def run_e2e(w: wl.Workload, seed: int = 0) -> dict[str, Any]:
    """The workload end to end, twice: unprofiled for the figures, then under cProfile for the
    breakdown of where the time goes (`profiled`). The emulator runs in a child process (as an
    API server would), the operator in a thread of this one."""
    from .record import describe, peak_rss_mib

    out = describe(w)
    out["mode"] = "e2e"
    out["target"] = out["rss_target_mib"] = None  # the targets are for the in-process mode
    try:
        out.update(asyncio.run(_run(w, seed, profile=False)))
        profiled = asyncio.run(_run(w, seed, profile=True))
        out["profiled"] = {"pods_per_s": profiled["pods_per_s"], **profiled["where_the_time_goes"]}
    except Exception as exc:  # report, do not crash the other workloads
        out["error"] = f"{type(exc).__name__}: {exc}"
    out["peak_rss_mib"] = round(peak_rss_mib(), 1)
    return out


def describe_time(r: dict[str, Any]) -> str:
    """A few lines on where an e2e run's time went."""
    t = r.get("where_the_time_goes")
    if not t:
        return ""
    lines = [f"{r['workload']}: wall {t['wall_s']:.2f}s, CPU {t['operator_thread_cpu_s']:.2f}s in the operator "
             f"thread, {t['emulator_process_cpu_s']:.2f}s in the emulator's process"]
    p = r.get("profiled") or {}
    if p.get("operator_thread"):
        lines.append(f"  under cProfile ({p['pods_per_s']} pods/s), cumulative seconds:")
        for label, s in p["operator_thread"].items():
            lines.append(f"    operator  {label:<50} {s:8.2f}")
        for label, s in p["emulator"].items():
            lines.append(f"    emulator  {label:<50} {s:8.2f}")
    reqs = ", ".join(f"{k}: {v}" for k, v in list(t["requests"].items())[:6])
    lines.append(f"  requests during the measured phase: {reqs}")
    return "\n".join(lines)
