"""The kopf handlers of plugins' modules, run only while a profile in force enables the plugins.

kubeberth's own kopf operator serves the frame (login, probes, the liveness endpoint) and the
handlers of modules that bring no plugin. The handlers of a module that brings plugins
(`handlers.partition`) run in a kopf operator of their own, in this process and event loop,
started when the first profile in force enables one of those plugins and stopped when the last
one no longer does: a plugin that no profile enables costs no watch, no task, no memory.

kopf allows several operators in one loop, with three things to mind, handled here:

- `kopf.operator()`, once stopped, cancels every task created in the loop since it started
  (kopf cannot tell its own from others'): here it would cancel the scheduler's. So a plugin
  operator is `kopf.spawn_tasks` plus `kopf.run_tasks(..., ignored=...)`, `ignored` being every
  task that is not that operator's. Tasks are told apart by a context variable set in the task
  that runs the operator (and so inherited by every task it and its handlers create), read by a
  task factory when a task is created.
- `spawn_tasks` in the main thread takes SIGINT and SIGTERM for itself: they are given back to
  kubeberth's stop flag (the whole process stops, as before).
- kopf's "ultimate termination" SIGKILLs the thread of an operator cancelled without its stop
  flag: a plugin operator is always stopped through its flag, and the timeout is off.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import logging
import signal
import threading
import weakref
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping
from typing import Any

import kopf

from .handlers import Gate, adopt

logger = logging.getLogger(__name__)

_OWNER: contextvars.ContextVar[PluginOperator | None] = contextvars.ContextVar("kubeberth_plugin_operator",
                                                                              default=None)
_TASK_OWNERS: weakref.WeakKeyDictionary[asyncio.Task[Any], PluginOperator] = weakref.WeakKeyDictionary()


def _install_task_factory(loop: asyncio.AbstractEventLoop) -> None:
    """Tag each task created while a plugin operator's context is current with that operator."""
    previous = loop.get_task_factory()
    if getattr(previous, "kubeberth_tags_tasks", False):
        return

    def factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Future[Any]:
        task = (previous(loop, coro, **kwargs) if previous is not None
                else asyncio.Task(coro, loop=loop, **kwargs))
        context = kwargs.get("context")
        owner = context.get(_OWNER) if context is not None else _OWNER.get()
        if owner is not None and isinstance(task, asyncio.Task):
            _TASK_OWNERS[task] = owner
        return task

    factory.kubeberth_tags_tasks = True  # type: ignore[attr-defined]
    loop.set_task_factory(factory)


class _NotMine(Collection[asyncio.Task[Any]]):
    """kopf's `ignored` tasks of one plugin operator: every task that is not its own."""

    def __init__(self, owner: PluginOperator) -> None:
        self.owner = owner

    def __contains__(self, task: object) -> bool:
        return not isinstance(task, asyncio.Task) or _TASK_OWNERS.get(task) is not self.owner

    def __iter__(self) -> Iterator[asyncio.Task[Any]]:
        return iter(())

    def __len__(self) -> int:
        return 0


LoginFn = Callable[[], Awaitable[kopf.ConnectionInfo]]
SettingsFn = Callable[[kopf.OperatorSettings], None]


class PluginOperator:
    """The kopf operator of one set of plugins' handlers; start() and stop() as often as needed."""

    def __init__(self, plugins: frozenset[str], source: kopf.OperatorRegistry, *, gate: Gate, login: LoginFn,
                 configure: SettingsFn, identity: str, memo: Mapping[str, Any],
                 on_signal: Callable[[], None] | None = None) -> None:
        self.plugins = plugins
        self.registry = kopf.OperatorRegistry()
        self.handlers = adopt(self.registry, source, gate)

        @kopf.on.login(registry=self.registry, id="kubeberth_login")
        async def login_handler(**_: Any) -> kopf.ConnectionInfo:
            return await login()

        self.configure = configure
        self.identity = identity
        self.memo = memo
        self.on_signal = on_signal
        self.task: asyncio.Task[None] | None = None
        self.stop_flag: asyncio.Event | None = None
        self.ready = asyncio.Event()
        self.starts = 0

    @property
    def running(self) -> bool:
        return self.task is not None and not self.task.done()

    def describe(self) -> str:
        return ", ".join(sorted(self.plugins))

    def start(self) -> None:
        if self.running:
            return
        loop = asyncio.get_running_loop()
        _install_task_factory(loop)
        self.stop_flag = asyncio.Event()
        self.ready = asyncio.Event()
        self.starts += 1
        logger.info("Starting the %d kopf handler(s) of plugin(s) %s: a profile in force enables them",
                    self.handlers, self.describe())
        context = contextvars.copy_context()
        context.run(_OWNER.set, self)
        self.task = loop.create_task(self._run(self.stop_flag, self.ready), name=f"kopf of {self.describe()}",
                                     context=context)

    async def _run(self, stop_flag: asyncio.Event, ready: asyncio.Event) -> None:
        settings = kopf.OperatorSettings()
        self.configure(settings)
        settings.process.ultimate_exiting_timeout = None  # stopped by its flag only
        try:
            tasks = await kopf.spawn_tasks(
                registry=self.registry, settings=settings, clusterwide=True, standalone=True,
                identity=f"{self.identity}/{self.describe()}",  # type: ignore[arg-type]
                stop_flag=stop_flag, ready_flag=ready, memo=kopf.Memo(self.memo))
            self._give_back_signals()
            await kopf.run_tasks(tasks, ignored=_NotMine(self))
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("The kopf handlers of plugin(s) %s failed", self.describe())

    def _give_back_signals(self) -> None:
        """spawn_tasks took SIGINT/SIGTERM for this operator: they stop the whole process again."""
        if self.on_signal is None or threading.current_thread() is not threading.main_thread():
            return
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(sig, self.on_signal)

    async def stop(self, timeout: float = 30.0) -> None:
        task, flag = self.task, self.stop_flag
        if task is None or flag is None:
            return
        if not task.done():
            logger.info("Stopping the kopf handlers of plugin(s) %s: no profile in force enables them",
                        self.describe())
        flag.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), timeout)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        except Exception:
            pass
        if self.task is task:
            self.task = None


class PluginOperators:
    """The plugin operators, following the plugins the profiles in force enable (`follow`)."""

    def __init__(self, parts: Mapping[frozenset[str], kopf.OperatorRegistry], **options: Any) -> None:
        self.operators = [PluginOperator(plugins, source, **options) for plugins, source in parts.items()
                          if plugins]
        self.in_force: frozenset[str] = frozenset()
        self._started = False
        self._stopping: dict[PluginOperator, asyncio.Task[None]] = {}

    def follow(self, in_force: frozenset[str]) -> None:
        """Run the operators of the plugins `in_force`, stop the others (once started)."""
        self.in_force = in_force
        if self._started:
            self._reconcile()

    def start(self) -> None:
        self._started = True
        self._reconcile()

    def _reconcile(self) -> None:
        loop = asyncio.get_running_loop()
        for op in self.operators:
            wanted = bool(op.plugins & self.in_force)
            stopping = self._stopping.get(op)
            if wanted and not op.running and stopping is None:
                op.start()
            elif wanted and stopping is not None:
                # Stopping still: start again once it has stopped.
                stopping.add_done_callback(functools.partial(self._restart, op))
            elif not wanted and op.running and stopping is None:
                task = loop.create_task(op.stop(), name=f"stop kopf of {op.describe()}")
                self._stopping[op] = task
                task.add_done_callback(functools.partial(self._stopped, op))

    def _stopped(self, op: PluginOperator, _task: asyncio.Task[None]) -> None:
        self._stopping.pop(op, None)

    def _restart(self, op: PluginOperator, _task: asyncio.Task[None]) -> None:
        if self._started and op.plugins & self.in_force and not op.running and op not in self._stopping:
            op.start()

    async def close(self) -> None:
        self._started = False
        await asyncio.gather(*(op.stop() for op in self.operators), *self._stopping.values(),
                             return_exceptions=True)
