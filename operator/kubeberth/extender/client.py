"""HTTPExtender: one configured scheduler extender, spoken to over HTTP(S) with aiohttp.

Semantics follow upstream's pkg/scheduler/extender.go. Each extender owns one
pooled aiohttp ClientSession, created lazily in the running event loop and
released with `await close()`.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import os
import ssl
import tempfile
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from typing import Any

import aiohttp

from ..config.errors import ConfigError
from ..config.models import ExtenderConfig, TLSConfig
from ..framework.extender import ExtenderError, NodeInfoLister
from ..framework.victims import Victims
from ..model import NodeInfo, Pod
from . import wire
from .wire import VictimsLike, WireError

_HEADERS = {"Content-Type": "application/json", "Accept": "application/json"}
_BODY_SNIPPET = 200


class HTTPExtender:
    """A scheduler extender as configured in a SchedulingProfile's `extenders` list."""

    def __init__(self, config: ExtenderConfig, *, path: str = "spec.extenders[0]",
                 node_infos: Callable[[], NodeInfoLister] | None = None) -> None:
        """Raises ConfigError (naming `path`.<field>) when the TLS material cannot be loaded.

        `node_infos` returns the current snapshot, where process_preemption finds the pods an
        extender names by UID when its caller passes none.
        """
        self.config = config
        self.url_prefix = config.urlPrefix
        self.filter_verb = config.filterVerb
        self.prioritize_verb = config.prioritizeVerb
        self.preempt_verb = config.preemptVerb
        self.bind_verb = config.bindVerb
        self.weight = config.weight
        self.timeout = config.timeout_seconds
        self.node_cache_capable = config.nodeCacheCapable
        self.ignorable = config.ignorable
        self.managed_resources = frozenset(r.name for r in config.managedResources)
        self.ignored_resources = frozenset(r.name for r in config.managedResources if r.ignoredByScheduler)
        self.ssl_context = make_ssl_context(config, path)
        self.server_name = config.tlsConfig.serverName if config.tlsConfig is not None else ""
        self.node_infos_source = node_infos
        self._session: aiohttp.ClientSession | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._keeper: AsyncGenerator[None, None] | None = None

    # ---- identity and capabilities ----------------------------------------------------------
    @property
    def name(self) -> str:
        """The extender's URL prefix, as upstream names it."""
        return self.url_prefix

    @property
    def is_ignorable(self) -> bool:
        return self.ignorable

    @property
    def is_filter(self) -> bool:
        return bool(self.filter_verb)

    @property
    def is_prioritizer(self) -> bool:
        return bool(self.prioritize_verb)

    @property
    def supports_preemption(self) -> bool:
        return bool(self.preempt_verb)

    @property
    def is_binder(self) -> bool:
        return bool(self.bind_verb)

    def is_interested(self, pod: Pod) -> bool:
        """True when the extender manages no resources, or the pod names one in a container's
        requests or limits (init containers included)."""
        managed = self.managed_resources
        if not managed:
            return True
        spec = pod.spec
        for key in ("containers", "initContainers"):
            for container in spec.get(key) or ():
                resources = container.get("resources") or {}
                for kind in ("requests", "limits"):
                    for name in resources.get(kind) or ():
                        if name in managed:
                            return True
        return False

    def __repr__(self) -> str:
        return f"HTTPExtender({self.url_prefix})"

    # ---- verbs -------------------------------------------------------------------------------
    async def filter(self, pod: Pod, node_infos: Sequence[NodeInfo]
                     ) -> tuple[list[NodeInfo], dict[str, str], dict[str, str]]:
        """(feasible node infos, failed {node: reason}, failed and unresolvable {node: reason}).

        The feasible list is a subset of `node_infos`, in the extender's order; a node the
        extender names that was not sent is an error.
        """
        if not self.filter_verb:
            return list(node_infos), {}, {}
        body = await self._send(self.filter_verb, self._args(pod, node_infos))
        result = self._decode(self.filter_verb, wire.decode_filter_result, body)
        if result.Error:
            raise ExtenderError(self.name, self.filter_verb,
                                f"extender {self.name} returned an error from {self.filter_verb}: "
                                f"{result.Error}")
        names: Sequence[str]
        if self.node_cache_capable and result.NodeNames is not None:
            names = result.NodeNames
        elif result.Nodes is not None:
            try:
                names = [wire.node_name_of(item) for item in result.Nodes.items or ()]
            except WireError as exc:
                raise self._bad_response(self.filter_verb, exc) from None
        elif result.NodeNames is not None:
            # Upstream reads NodeNames only from a nodeCacheCapable extender; an extender that
            # answers with names anyway is taken at its word rather than filtering out every node.
            names = result.NodeNames
        else:
            names = ()
        by_name = {ni.name: ni for ni in node_infos}
        feasible: list[NodeInfo] = []
        seen: set[str] = set()
        for name in names:
            ni = by_name.get(name)
            if ni is None:
                raise ExtenderError(self.name, self.filter_verb,
                                    f"extender {self.name!r} claims a filtered node {name!r} which is not "
                                    f"found in the input node list")
            if name not in seen:
                seen.add(name)
                feasible.append(ni)
        return (feasible, _reasons(result.FailedNodes), _reasons(result.FailedAndUnresolvableNodes))

    async def prioritize(self, pod: Pod, node_infos: Sequence[NodeInfo]) -> tuple[list[tuple[str, int]], int]:
        """([(host, score 0..10)], weight). Without a prioritize verb: zero scores and weight 0."""
        if not self.prioritize_verb:
            return [(ni.name, 0) for ni in node_infos], 0
        body = await self._send(self.prioritize_verb, self._args(pod, node_infos))
        items = self._decode(self.prioritize_verb, wire.decode_host_priority_list, body)
        return [(hp.Host, hp.Score) for hp in items], self.weight

    async def process_preemption(self, pod: Pod, node_to_victims: Mapping[str, VictimsLike],
                                 node_infos: NodeInfoLister | None = None) -> dict[str, Victims]:
        """The candidates the extender keeps, with the victims it chose on each.

        A nodeCacheCapable extender is sent pod UIDs only, others the full pods. The answer
        (always UIDs) is mapped back to the pods on each node of `node_infos` (the snapshot;
        by default the one given at construction, else only the proposed victims are known).
        """
        if not self.preempt_verb:
            raise ExtenderError(self.name, "preempt",
                                f"preempt verb is not defined for extender {self.name} but run into "
                                f"ProcessPreemption")
        if node_infos is None and self.node_infos_source is not None:
            node_infos = self.node_infos_source()
        args = wire.preemption_args(pod.raw, node_to_victims, meta=self.node_cache_capable)
        body = await self._send(self.preempt_verb, args)
        result = self._decode(self.preempt_verb, wire.decode_preemption_result, body)
        out: dict[str, Victims] = {}
        for node_name, meta in (result.NodeNameToMetaVictims or {}).items():
            on_node = self._pods_on(node_name, node_to_victims, node_infos)
            if meta is None:
                out[node_name] = Victims()
                continue
            pods = []
            for meta_pod in meta.Pods or ():
                uid = meta_pod.UID if meta_pod is not None else ""
                victim = on_node.get(uid)
                if victim is None:
                    raise ExtenderError(self.name, self.preempt_verb,
                                        f"extender: {self.name} claims to preempt pod (UID: {uid}) on node: "
                                        f"{node_name}, but the pod is not found on that node")
                pods.append(victim)
            out[node_name] = Victims(pods, meta.NumPDBViolations)
        return out

    def _pods_on(self, node_name: str, proposed: Mapping[str, VictimsLike],
                 node_infos: NodeInfoLister | None) -> dict[str, Pod]:
        if node_infos is not None:
            ni = node_infos.get(node_name)
            if ni is None:
                raise ExtenderError(self.name, self.preempt_verb,
                                    f"extender {self.name} returned node {node_name!r} for preemption, "
                                    f"but it is not in the snapshot")
            return {p.uid: p for p in ni.pods}
        victims = proposed.get(node_name)
        if victims is None:
            raise ExtenderError(self.name, self.preempt_verb,
                                f"extender {self.name} returned node {node_name!r} for preemption, "
                                f"but it was not a candidate")
        return {p.uid: p for p in victims.pods}

    async def bind(self, pod: Pod, node_name: str) -> None:
        """Delegate binding to the extender; raises ExtenderError when it fails or answers an Error."""
        if not self.bind_verb:
            raise ExtenderError(self.name, "bind", "unexpected empty bindVerb in extender")
        args = wire.binding_args(pod.name, pod.namespace, pod.uid, node_name)
        body = await self._send(self.bind_verb, args)
        result = self._decode(self.bind_verb, wire.decode_binding_result, body)
        if result.Error:
            raise ExtenderError(self.name, self.bind_verb,
                                f"extender {self.name} failed to bind pod {pod.namespace}/{pod.name} to "
                                f"node {node_name}: {result.Error}")

    # ---- transport ---------------------------------------------------------------------------
    def _args(self, pod: Pod, node_infos: Sequence[NodeInfo]) -> dict[str, Any]:
        if self.node_cache_capable:
            return wire.extender_args(pod.raw, node_names=[ni.name for ni in node_infos])
        return wire.extender_args(pod.raw, nodes=[ni.node.raw for ni in node_infos if ni.node is not None])

    def _url(self, verb: str) -> str:
        return self.url_prefix.rstrip("/") + "/" + verb

    async def _session_for_loop(self) -> aiohttp.ClientSession:
        loop = asyncio.get_running_loop()
        session = self._session
        if session is not None and not session.closed and self._loop is loop:
            return session
        if session is not None and not session.closed:
            _abandon(session)
        connector = aiohttp.TCPConnector(ssl=self.ssl_context if self.ssl_context is not None else True)
        session = aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=self.timeout), headers=_HEADERS)
        # A safety net for callers that never close(): the loop finalises pending async
        # generators when it shuts down (asyncio.run does), which closes the session in time.
        keeper = _close_at_loop_shutdown(session)
        await keeper.__anext__()
        self._session, self._loop, self._keeper = session, loop, keeper
        return session

    async def _send(self, verb: str, payload: Any) -> bytes:
        """POST the payload to urlPrefix/verb; the body of a 200 answer."""
        url = self._url(verb)
        data = wire.encode(payload)
        session = await self._session_for_loop()
        kwargs: dict[str, Any] = {}
        if self.server_name and url.startswith("https:"):
            kwargs["server_hostname"] = self.server_name
        try:
            async with session.post(url, data=data, **kwargs) as resp:
                body = await resp.read()
                if resp.status != 200:
                    snippet = body[:_BODY_SNIPPET].decode("utf-8", errors="replace").strip()
                    raise ExtenderError(
                        self.name, verb,
                        f"failed {verb} with extender at URL {url}, code {resp.status}"
                        + (f": {snippet}" if snippet else ""))
                return body
        except TimeoutError:
            raise ExtenderError(self.name, verb,
                                f"{verb} with extender at URL {url} timed out after {self.timeout:g}s "
                                f"(httpTimeout)") from None
        except (aiohttp.ClientError, ssl.SSLError, OSError) as exc:
            raise ExtenderError(self.name, verb,
                                f"failed {verb} with extender at URL {url}: {_describe(exc)}") from exc

    def _decode(self, verb: str, decoder: Any, body: bytes) -> Any:
        try:
            return decoder(body)
        except WireError as exc:
            raise self._bad_response(verb, exc) from None

    def _bad_response(self, verb: str, exc: Exception) -> ExtenderError:
        return ExtenderError(self.name, verb,
                             f"decoding the {verb} response of extender at URL {self._url(verb)}: {exc}")

    async def close(self) -> None:
        """Release the pooled connections. The extender stays usable (a new session is made)."""
        session, loop, keeper = self._session, self._loop, self._keeper
        self._session, self._loop, self._keeper = None, None, None
        if session is None or session.closed:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:  # pragma: no cover - called outside a loop
            running = None
        if running is not None and running is loop:
            await session.close()
            if keeper is not None:
                await keeper.aclose()
        else:
            _abandon(session)


async def _close_at_loop_shutdown(session: aiohttp.ClientSession) -> AsyncGenerator[None, None]:
    try:
        yield
    finally:
        if not session.closed:
            await session.close()


def _reasons(failed: Mapping[str, str | None] | None) -> dict[str, str]:
    return {name: reason or "" for name, reason in (failed or {}).items()}


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _abandon(session: aiohttp.ClientSession) -> None:
    """Drop a session made in another (possibly closed) event loop without awaiting it."""
    connector = session.connector
    session.detach()
    if connector is not None:
        with contextlib.suppress(Exception):
            connector._close()


# ---- TLS ------------------------------------------------------------------------------------------

def _pem(text: str, path: str) -> str:
    """TLS data fields are []byte upstream, i.e. base64 in YAML/JSON; PEM text is accepted too."""
    if "-----BEGIN" in text:
        return text
    try:
        decoded = base64.b64decode("".join(text.split()), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        raise ConfigError(path, "must be PEM data, or PEM data encoded in base64") from None
    if "-----BEGIN" not in decoded:
        raise ConfigError(path, "does not hold PEM data (expected base64 of a PEM block)")
    return decoded


def _read(file: str, path: str) -> str:
    try:
        with open(file, encoding="utf-8") as fh:
            return fh.read()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(path, f"cannot read {file!r}: {exc}") from None


def make_ssl_context(config: ExtenderConfig, path: str = "spec.extenders[0]") -> ssl.SSLContext | None:
    """The TLS client context for an extender, as upstream's makeTransport builds it.

    None means default verification against the system roots (only used for https URLs).
    enableHTTPS without a CA skips verification, as upstream does. Data fields win over files.
    """
    tls = config.tlsConfig
    if tls is None and not config.enableHTTPS:
        return None
    tls = tls or TLSConfig()
    tpath = f"{path}.tlsConfig"
    has_ca = bool(tls.caData or tls.caFile)
    if tls.insecure and has_ca:
        raise ConfigError(f"{tpath}.insecure",
                          "specifying a root certificates file with the insecure flag is not allowed")
    insecure = tls.insecure or (config.enableHTTPS and not has_ca)
    has_cert = bool(tls.certData or tls.certFile)
    has_key = bool(tls.keyData or tls.keyFile)
    if has_cert != has_key:
        missing = "keyData" if has_cert else "certData"
        raise ConfigError(f"{tpath}.{missing}",
                          "a client certificate and its key must be specified together")
    if not (has_ca or insecure or has_cert or tls.serverName):
        return None

    if has_ca:
        if tls.caData:
            field, ca = "caData", _pem(tls.caData, f"{tpath}.caData")
        else:
            field, ca = "caFile", _read(tls.caFile, f"{tpath}.caFile")
        try:
            ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cadata=ca)
        except (ssl.SSLError, ValueError) as exc:
            raise ConfigError(f"{tpath}.{field}", f"invalid CA certificate: {exc}") from None
    else:
        ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    if has_cert:
        cert_field = "certData" if tls.certData else "certFile"
        key_field = "keyData" if tls.keyData else "keyFile"
        cert = _pem(tls.certData, f"{tpath}.certData") if tls.certData else _read(tls.certFile, f"{tpath}.certFile")
        key = _pem(tls.keyData, f"{tpath}.keyData") if tls.keyData else _read(tls.keyFile, f"{tpath}.keyFile")
        _load_client_cert(ctx, cert, key, f"{tpath}.{cert_field}", f"{tpath}.{key_field}")
    return ctx


def _load_client_cert(ctx: ssl.SSLContext, cert: str, key: str, cert_path: str, key_path: str) -> None:
    """ssl loads certificate chains from files only: stage the PEM in private temporary files."""
    with tempfile.TemporaryDirectory(prefix="kubeberth-tls-") as tmp:
        cert_file = os.path.join(tmp, "tls.crt")
        key_file = os.path.join(tmp, "tls.key")
        for file, text in ((cert_file, cert), (key_file, key)):
            fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
        try:
            ctx.load_cert_chain(cert_file, key_file)
        except ssl.SSLError as exc:
            reason = str(exc)
            where = key_path if "KEY" in reason.upper() and "CERT" not in reason.upper() else cert_path
            raise ConfigError(where, f"invalid client certificate or key: {exc}") from None
