"""Port 10259 as kube-scheduler serves it: HTTPS, delegated authn/authz, /metrics and the probes.

`ComponentServer` serves `/metrics` (the scheduler's registry), `/healthz`, `/livez` and `/readyz`
(upstream's healthz format: `ok`, `?verbose`, `?exclude=`, a 500 naming the failed checks with the
reason withheld) behind `delegated_auth`'s authenticator and authorizer, over TLS with the
certificate of --tls-cert-file/--tls-private-key-file or one made at start (self-signed, for
`localhost` and 127.0.0.1, as kube-scheduler makes one when given none: `serving_certs.py`).

With `insecure=True` (--metrics-insecure, for development) it serves plain HTTP without
authentication or authorization, and only on a loopback address.

The dry-run front (dryrun_front.py) serves its port with the same server, options and
certificate (`make_server(..., metrics=None, self_signed=...)`): the probes and the dry runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web
from cryptography import x509
from prometheus_client import CONTENT_TYPE_LATEST

from ..metrics import SchedulerMetrics
from .delegated_auth import (
    AUTH_CONFIGMAP,
    AuthenticationFailed,
    AuthnConfig,
    AuthorizationError,
    Post,
    RequestAuthenticator,
    RequestHeaderConfig,
    SubjectAccessReviewAuthorizer,
    TokenReviewAuthenticator,
    User,
    forbidden_message,
    load_pem_file,
    parse_configmap,
    with_retries,
)
from .serving_certs import read_keypair, self_signed_certificate, server_ssl_context
from .serving_options import ServingOptions, is_loopback

logger = logging.getLogger(__name__)

JSON_CONTENT_TYPE = "application/json"
RELOAD_INTERVAL = 60.0  # certificate files and the ConfigMap read again, as upstream's controllers resync
TEXT_CONTENT_TYPE = "text/plain; charset=utf-8"


@dataclass(frozen=True)
class HealthCheck:
    """A named check: `check()` returns None when healthy, else why not (logged, never served)."""

    name: str
    check: Callable[[], str | None]


PING = HealthCheck("ping", lambda: None)

# A resource of kubeberth's own served here (the dry runs): authenticated by the chain, authorized
# by the handler itself (a SubjectAccessReview on the resource, whose namespace is in the path);
# the authorizer is None with --metrics-insecure.
ResourceHandler = Callable[[web.Request, User, "SubjectAccessReviewAuthorizer | None"], Awaitable[web.StreamResponse]]
USER_KEY: web.RequestKey[User] = web.RequestKey("kubeberth.user", User)


def refuse_taken_port(host: str, port: int) -> None:
    """OSError (address already in use) when something listens on `port` already. The secure port
    listens with SO_REUSEPORT, to swap its TLS context without a gap; this keeps a second process on
    the same port an error, as it is for kube-scheduler."""
    for family, kind, proto, _, addr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                           flags=socket.AI_PASSIVE):
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(addr)
            except OSError as exc:
                raise OSError(exc.errno, f"the secure port {host}:{port} is taken: {exc.strerror}") from None


def _status(code: int, reason: str, message: str, *, details: bool = False) -> web.Response:
    """A metav1.Status answer, as kube-scheduler's handler chain writes it (its 403, from the
    authorization filter, says nosniff; its 401 does not)."""
    body: dict[str, object] = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                               "message": message, "reason": reason}
    if details:
        body["details"] = {}
    body["code"] = code
    headers = {"X-Content-Type-Options": "nosniff"} if code == 403 else {}
    return web.Response(status=code, body=orjson.dumps(body) + b"\n", content_type=JSON_CONTENT_TYPE,
                        headers=headers)


def _text(status: int, text: str) -> web.Response:
    return web.Response(status=status, text=text, content_type="text/plain", charset="utf-8",
                        headers={"X-Content-Type-Options": "nosniff"})


class ComponentServer:
    """The secure port: /metrics and the probes behind delegated authentication and authorization."""

    def __init__(self, metrics: SchedulerMetrics | None, port: int, host: str = "0.0.0.0", *,
                 authenticator: RequestAuthenticator | None = None,
                 authorizer: SubjectAccessReviewAuthorizer | None = None,
                 ssl_context: ssl.SSLContext | None = None, insecure: bool = False,
                 healthz: Sequence[HealthCheck] = (), livez: Sequence[HealthCheck] = (),
                 readyz: Sequence[HealthCheck] = (), reload: Callable[[], Awaitable[object]] | None = None,
                 reload_interval: float = RELOAD_INTERVAL,
                 resource_routes: Mapping[str, ResourceHandler] | None = None) -> None:
        if insecure:
            if not is_loopback(host):
                raise ValueError(f"--metrics-insecure serves plain HTTP without authentication: it listens on a "
                                 f"loopback address only, not {host!r} (use --metrics-host=127.0.0.1)")
        elif authenticator is None or authorizer is None or ssl_context is None:
            raise ValueError("the secure port needs an authenticator, an authorizer and a TLS context")
        self.metrics = metrics  # None: no /metrics (the dry-run front)
        self.self_signed: tuple[bytes, bytes] | None = None  # the certificate made at start, if any
        self.host = host
        self.port = port
        self.insecure = insecure
        self.authenticator = authenticator
        self.authorizer = authorizer
        self.ssl_context = ssl_context
        self.checks = {"healthz": list(healthz) or [PING], "livez": list(livez) or [PING],
                       "readyz": list(readyz) or [PING]}
        self.reload = reload
        self.reload_interval = reload_interval
        self.resource_routes = dict(resource_routes or {})  # POST path (aiohttp pattern) -> handler
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._reloading: asyncio.Task[None] | None = None

    @property
    def scheme(self) -> str:
        return "http" if self.insecure else "https"

    # --- the handler chain ---

    @web.middleware
    async def _guard(self, request: web.Request, handler: Callable[[web.Request], object]) -> web.StreamResponse:
        response = await self._checked(request, handler)
        response.headers.setdefault("Cache-Control", "no-cache, private")
        return response

    async def _checked(self, request: web.Request, handler: Callable[[web.Request], object]) -> web.StreamResponse:
        if not self.insecure:
            assert self.authenticator is not None and self.authorizer is not None
            try:
                user = await self.authenticator.authenticate(headers=request.headers,
                                                             peer_cert=self._peer_certificate(request))
            except AuthenticationFailed as exc:
                logger.debug("Unauthorized %s %s: %s", request.method, request.path, exc)
                return _status(401, "Unauthorized", "Unauthorized")
            request[USER_KEY] = user
            route = request.match_info.route.resource
            if route is not None and route.canonical in self.resource_routes:
                return await self._handled(request, handler)  # the handler authorizes the resource
            verb = request.method.lower()
            try:
                allowed, reason = await self.authorizer.authorize(user, verb, request.path)
            except AuthorizationError as exc:
                logger.warning("Could not authorize %s %s for %s: %s", request.method, request.path, user.name, exc)
                return _text(500, f'Internal Server Error: "{request.path_qs}": {exc}\n')
            if not allowed:
                return _status(403, "Forbidden", forbidden_message(user, verb, request.path, reason), details=True)
        return await self._handled(request, handler)

    @staticmethod
    async def _handled(request: web.Request, handler: Callable[[web.Request], object]) -> web.StreamResponse:
        try:
            result = await handler(request)  # type: ignore[misc]
        except web.HTTPNotFound:
            return _text(404, "404 page not found\n")
        assert isinstance(result, web.StreamResponse)
        return result

    @staticmethod
    def _peer_certificate(request: web.Request) -> x509.Certificate | None:
        transport = request.transport
        ssl_object = transport.get_extra_info("ssl_object") if transport is not None else None
        der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
        return x509.load_der_x509_certificate(der) if der else None

    # --- the endpoints ---

    async def _serve_metrics(self, request: web.Request) -> web.Response:
        assert self.metrics is not None
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    def _health(self, name: str) -> Callable[[web.Request], object]:
        async def serve(request: web.Request) -> web.Response:
            excluded = set(request.query.getall("exclude", []))
            unknown = set(excluded)
            lines: list[str] = []
            failed: list[str] = []
            for check in self.checks[name]:
                if check.name in excluded:
                    unknown.discard(check.name)
                    lines.append(f"[+]{check.name} excluded: ok")
                    continue
                try:
                    error = check.check()
                except Exception as exc:  # a check that raises has failed
                    error = f"{type(exc).__name__}: {exc}"
                if error is not None:
                    lines.append(f"[-]{check.name} failed: reason withheld")
                    failed.append(f"[-]{check.name} failed: {error}")
                else:
                    lines.append(f"[+]{check.name} ok")
            if unknown:
                quoted = ",".join(f'"{u}"' for u in sorted(unknown))
                lines.append(f"warn: some health checks cannot be excluded: no matches for {quoted}")
            if failed:
                logger.info("%s check failed:\n%s", name, "\n".join(failed))
                return _text(500, "".join(f"{line}\n" for line in lines) + f"{name} check failed\n")
            if "verbose" not in request.query:
                return _text(200, "ok")
            return _text(200, "".join(f"{line}\n" for line in lines) + f"{name} check passed\n")
        return serve

    def _resource(self, serve: ResourceHandler) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
        async def handle(request: web.Request) -> web.StreamResponse:
            user = request.get(USER_KEY) or User.anonymous()
            return await serve(request, user, None if self.insecure else self.authorizer)
        return handle

    async def start(self) -> int:
        """Listen; returns the bound port (useful with port 0)."""
        app = web.Application(middlewares=[self._guard])
        if self.metrics is not None:
            app.router.add_get("/metrics", self._serve_metrics)
        for name in self.checks:
            app.router.add_get(f"/{name}", self._health(name))  # type: ignore[arg-type]
        for path, serve in self.resource_routes.items():
            app.router.add_post(path, self._resource(serve))
        if self.port:
            refuse_taken_port(self.host, self.port)  # SO_REUSEPORT below would share it instead of failing
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        self._site = web.TCPSite(self._runner, self.host, self.port,
                                 ssl_context=None if self.insecure else self.ssl_context, reuse_port=not self.insecure)
        await self._site.start()
        self.port = int(self._runner.addresses[0][1])
        if self.reload is not None:
            self._reloading = asyncio.get_running_loop().create_task(self._reload_forever(),
                                                                     name="kubeberth secure port reload")
        paths = ", ".join([*(["/metrics"] if self.metrics is not None else []), *(f"/{n}" for n in self.checks),
                           *self.resource_routes])
        if self.insecure:
            logger.warning("Serving %s on http://%s:%d without authentication (--metrics-insecure)",
                           paths, self.host, self.port)
        else:
            logger.info("Serving securely on %s:%d (%s)", self.host, self.port, paths)
        return self.port

    async def replace_tls(self, context: ssl.SSLContext) -> None:
        """Serve new connections with `context` (a new certificate or client CAs): a listener with it on
        the same port (SO_REUSEPORT), then the old one closed; connections already open keep theirs."""
        assert self._runner is not None and not self.insecure
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=context, reuse_port=True)
        await site.start()
        old, self._site, self.ssl_context = self._site, site, context
        if old is not None:
            await old.stop()

    async def _reload_forever(self) -> None:
        assert self.reload is not None
        while True:
            await asyncio.sleep(self.reload_interval)
            try:
                await self.reload()
            except Exception as exc:  # keep serving with what is in force
                logger.warning("Could not reload the secure port's certificates: %s", exc)

    async def stop(self) -> None:
        if self._reloading is not None:
            self._reloading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reloading
            self._reloading = None
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            self._site = None


async def authn_config(options: ServingOptions, get: Callable[[str], Awaitable[Any]] | None, *,
                       tolerate: bool = True) -> AuthnConfig:
    """The client CA and the front proxy: from the flags, and what they leave out from ConfigMap
    kube-system/extension-apiserver-authentication (unless --authentication-skip-lookup). A failed
    lookup is tolerated, as kube-scheduler tolerates it: tokens still work, certificates do not
    (`tolerate=False`: it raises, for a reload to keep what is in force)."""
    cfg = AuthnConfig()
    if options.client_ca_file:
        cfg.client_ca = load_pem_file(options.client_ca_file, "--client-ca-file")
    if options.requestheader_client_ca_file:
        cfg.requestheader = RequestHeaderConfig(
            ca=load_pem_file(options.requestheader_client_ca_file, "--requestheader-client-ca-file"),
            allowed_names=options.requestheader_allowed_names,
            username_headers=options.requestheader_username_headers,
            uid_headers=options.requestheader_uid_headers, group_headers=options.requestheader_group_headers,
            extra_prefixes=options.requestheader_extra_headers_prefix)
    if options.authentication_skip_lookup or get is None or (cfg.client_ca and cfg.requestheader):
        return cfg
    try:
        configmap = await get(AUTH_CONFIGMAP)
        found = parse_configmap((configmap or {}).get("data") or {})
    except Exception as exc:
        if not tolerate:
            raise
        logger.warning("Could not read ConfigMap kube-system/extension-apiserver-authentication (%s): "
                       "client certificates are not accepted on the secure port, bearer tokens are", exc)
        return cfg
    if not cfg.client_ca:
        cfg.client_ca = found.client_ca
    if cfg.requestheader is None:
        cfg.requestheader = found.requestheader
    return cfg


async def make_server(options: ServingOptions, metrics: SchedulerMetrics | None, port: int, host: str, *,
                      post: Post | None, get: Callable[[str], Awaitable[Any]] | None,
                      healthz: Sequence[HealthCheck] = (), livez: Sequence[HealthCheck] = (),
                      readyz: Sequence[HealthCheck] = (), reload_interval: float = RELOAD_INTERVAL,
                      resource_routes: Mapping[str, ResourceHandler] | None = None,
                      self_signed: tuple[bytes, bytes] | None = None) -> ComponentServer:
    """The secure port as the options say (not yet listening); `post`/`get` reach the API server.
    Every `reload_interval` it reads the certificate files and the ConfigMap again, as kube-scheduler's
    dynamic certificate controllers do, and serves what changed. Without --tls-cert-file it serves
    `self_signed` (certificate and key, PEM) when given, else one made now (`server.self_signed`)."""
    if options.insecure:
        return ComponentServer(metrics, port, host, insecure=True, healthz=healthz, livez=livez, readyz=readyz,
                               resource_routes=resource_routes)
    if options.tls_cert_file:
        self_signed = None
    elif self_signed is None:
        self_signed = self_signed_certificate()

    def keypair() -> tuple[bytes, bytes]:
        pair = read_keypair(options.tls_cert_file, options.tls_private_key_file)
        assert pair is not None or self_signed is not None
        return pair or self_signed  # type: ignore[return-value]

    cfg = await authn_config(options, get)
    in_force = (keypair(), cfg.trust_pem())
    tokens = TokenReviewAuthenticator(with_retries(post), ttl=options.token_cache_ttl) if post is not None else None
    authenticator = RequestAuthenticator(tokens, cfg)
    authorizer = SubjectAccessReviewAuthorizer(
        with_retries(post) if post is not None else None, always_allow_paths=options.always_allow_paths,
        always_allow_groups=options.always_allow_groups, allowed_ttl=options.authorized_cache_ttl,
        denied_ttl=options.unauthorized_cache_ttl)

    async def reload() -> bool:
        """Serve changed certificates or CAs; whether anything changed."""
        nonlocal in_force
        new_cfg = await authn_config(options, get, tolerate=False)
        material = (keypair(), new_cfg.trust_pem())
        if material == in_force:
            return False
        context = server_ssl_context(material[0], client_trust_pem=material[1])
        authenticator.config = new_cfg
        await server.replace_tls(context)
        in_force = material
        logger.info("The secure port serves a new certificate or client CAs")
        return True

    server = ComponentServer(metrics, port, host, authenticator=authenticator, authorizer=authorizer,
                             ssl_context=server_ssl_context(in_force[0], client_trust_pem=in_force[1]),
                             healthz=healthz, livez=livez, readyz=readyz, reload=reload,
                             reload_interval=reload_interval, resource_routes=resource_routes)
    server.self_signed = self_signed
    return server
