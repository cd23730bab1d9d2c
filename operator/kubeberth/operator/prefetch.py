"""The initial lists of nodes and pods, sent while the rest of kubeberth is still being imported.

`kubeberth run` spends most of its start importing the scheduler (numpy, pydantic, the plugins,
kopf) and then lists every kind; at 5000 nodes and 5000 pods the API server takes a good part of
a second to answer those two lists. The console script (`entry.py`) therefore starts a thread,
before the big imports, that connects exactly as the operator will (the same options, through
`connection.py` and `rest.py`), lists nodes and pods page by page and keeps the pages. The
operator's reflectors take them as their initial list (`Prefetch.take`) instead of asking again:
a list is a consistent snapshot at its resourceVersion, and the watch goes on from that version
as after any list, so nothing the API server does meanwhile is missed.

Nothing here is ever needed: arguments that do not parse, a failure of any kind, or options that
differ from those the operator ends up with, and the reflectors list as they always did. The thread
reports nothing (a refusal or an outage is the reflectors' to report, when they list themselves).
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import threading
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from .rest import RestClient

__all__ = ["PATHS", "Options", "Prefetch", "current", "start", "taken_by"]

PATHS = ("/api/v1/nodes", "/api/v1/pods")  # what is big at start-up; the other kinds list as before
PAGE_SIZE = 500  # the reflectors' own

Page = dict[str, Any]


@dataclass(frozen=True)
class Options:
    """How to connect: the options of `kubeberth run` that `load_configuration` reads."""

    kubeconfig: str | None
    context: str | None
    in_cluster: bool | None
    server: str | None


class _NoParse(Exception):
    pass


class _QuietParser(argparse.ArgumentParser):
    """The run command's parser, raising instead of printing and exiting: the real one reports."""

    def error(self, message: str) -> NoReturn:
        raise _NoParse(message)


def parse_options(argv: Sequence[str]) -> Options | None:
    """The connection options of `kubeberth run ARGV` as its own parser reads them; None when it
    would not run (bad arguments, --help)."""
    from .run import add_run_arguments

    parser = _QuietParser(add_help=False)
    add_run_arguments(parser)
    try:
        args = parser.parse_args(list(argv))
    except (_NoParse, SystemExit):
        return None
    return Options(kubeconfig=args.kubeconfig, context=args.context, in_cluster=args.in_cluster,
                   server=args.server)


class Prefetch:
    """Lists `paths` on its own thread and event loop; `take(path)` is the pages of one, once.

    `options` are the arguments' (None: they do not parse, and nothing is listed). They are read,
    and what the thread needs imported, before the thread starts: two threads importing at once
    slowed the main thread's imports more than the lists gained."""

    def __init__(self, argv: Sequence[str], paths: Sequence[str] = PATHS, page_size: int = PAGE_SIZE) -> None:
        self.argv = list(argv)
        self.options: Options | None = parse_options(self.argv)
        if self.options is not None:
            from . import connection, rest  # noqa: F401 - imported here, not on the thread
        self.page_size = page_size
        self._lists: dict[str, concurrent.futures.Future[list[Page]]] = {p: concurrent.futures.Future()
                                                                          for p in paths}
        self._untaken = set(paths)
        self._thread = threading.Thread(target=self._run, name="kubeberth prefetch", daemon=True)

    def start(self) -> Prefetch:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            if self.options is None:
                raise _NoParse("the arguments do not parse")
            asyncio.run(self._list_all(self.options))
        except BaseException as exc:  # whatever it was, the reflectors list themselves
            for future in self._lists.values():
                if not future.done():
                    future.set_exception(exc if isinstance(exc, Exception) else RuntimeError(repr(exc)))

    async def _list_all(self, options: Options) -> None:
        from kubernetes_asyncio.client.exceptions import ApiException

        from .. import __version__
        from .connection import load_configuration, load_credentials
        from .rest import RestClient, api_exception

        class Quiet(RestClient):
            """Refusals only raised: the reflectors report them if they persist."""

            def _refused(self, method: str, path: str, query: Mapping[str, str] | None, status: int,
                         reason: str, raw: bytes) -> ApiException:
                return api_exception(status, reason, raw)

        cfg = await load_configuration(options)
        rest = Quiet(cfg, credentials=load_credentials(options, cfg), pool_size=len(self._lists) + 1,
                     user_agent=f"kubeberth/{__version__}")
        try:
            await asyncio.gather(*(self._list(rest, path, future) for path, future in self._lists.items()))
        finally:
            await rest.close()

    async def _list(self, rest: RestClient, path: str, future: concurrent.futures.Future[list[Page]]) -> None:
        pages: list[Page] = []
        query = {"limit": str(self.page_size)}
        try:
            while True:
                page = await rest.request("GET", path, query=query, timeout=60.0)
                pages.append(page)
                token = (page.get("metadata") or {}).get("continue")
                if not token:
                    break
                query = {"limit": str(self.page_size), "continue": token}
        except Exception as exc:
            future.set_exception(exc)
            return
        future.set_result(pages)

    def take(self, path: str) -> Awaitable[list[Page]] | None:
        """The pages of `path`'s list (awaitable: it may still be under way; it raises what the list
        raised), or None when this prefetch has no list of it or gave it already."""
        if path not in self._untaken:
            return None
        self._untaken.discard(path)
        return asyncio.wrap_future(self._lists[path])


_current: Prefetch | None = None


def start(argv: Sequence[str]) -> Prefetch:
    """Start listing for `kubeberth run ARGV` (the console script calls this before the big imports)."""
    global _current
    _current = Prefetch(argv).start()
    return _current


def current() -> Prefetch | None:
    return _current


def taken_by(options: Options) -> Prefetch | None:
    """The prefetch under way, handed over once (later calls get None), if it connects with
    `options`; None otherwise."""
    global _current
    prefetch, _current = _current, None
    if prefetch is None or prefetch.options != options:
        return None
    return prefetch
