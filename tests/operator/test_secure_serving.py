"""The secure port (operator/secure_serving.py) on loopback: HTTPS, the answers kube-scheduler gives
(401, 403 with its Status bodies, 200), the probes without a token, client certificates, and the
options that cannot work. The API server is a double (tests/operator/test_delegated_auth.ApiServer)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import json
import re
import ssl
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
import pytest_asyncio
import trustme
from cryptography import x509

from kubeberth.metrics import SchedulerMetrics
from kubeberth.operator.options import add_run_arguments, config_from_args
from kubeberth.operator.run import run_main
from kubeberth.operator.secure_serving import (
    PING,
    ComponentServer,
    HealthCheck,
    authn_config,
    make_server,
)
from kubeberth.operator.serving_certs import read_keypair, self_signed_certificate, server_ssl_context
from kubeberth.operator.serving_options import ServingOptions, ServingOptionsError, go_duration

from .test_delegated_auth import PROM, ApiServer

TENANT = {"username": "system:serviceaccount:team-a:default", "groups": ["system:serviceaccounts"]}


def insecure_client() -> ssl.SSLContext:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


class Served:
    def __init__(self, server: ComponentServer, api: ApiServer, health: dict[str, str | None]) -> None:
        self.server, self.api, self.health = server, api, health

    @property
    def url(self) -> str:
        return f"{self.server.scheme}://127.0.0.1:{self.server.port}"

    async def get(self, path: str, token: str | None = None, *, ssl_context: ssl.SSLContext | None = None,
                  headers: dict[str, str] | None = None) -> tuple[int, str, Any]:
        hdrs = dict(headers or {})
        if token is not None:
            hdrs["Authorization"] = f"Bearer {token}"
        ctx: ssl.SSLContext | bool = ssl_context or (insecure_client() if self.server.scheme == "https" else False)
        async with aiohttp.ClientSession() as s, s.get(self.url + path, headers=hdrs, ssl=ctx) as r:
            return r.status, await r.text(), r.headers


@pytest_asyncio.fixture
async def served() -> AsyncIterator[Served]:
    api = ApiServer(tokens={"prom": PROM, "tenant": TENANT}, allowed={(PROM["username"], "get", "/metrics")})
    metrics = SchedulerMetrics()
    metrics.schedule_attempt("scheduled", "default-scheduler", 0.01)
    health: dict[str, str | None] = {"sync": None}
    synced = HealthCheck("sched-handler-sync", lambda: health["sync"])
    server = await make_server(ServingOptions(authentication_skip_lookup=True), metrics, 0, "127.0.0.1",
                               post=api.post, get=None, readyz=[HealthCheck("shutdown", lambda: None), synced])
    await server.start()
    try:
        yield Served(server, api, health)
    finally:
        await server.stop()


UNAUTHORIZED = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": "Unauthorized",
                "reason": "Unauthorized", "code": 401}


def forbidden(user: str, path: str = "/metrics") -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'forbidden: User "{user}" cannot get path "{path}"', "reason": "Forbidden", "details": {},
            "code": 403}


@pytest.mark.parametrize("token, status, body", [
    (None, 403, forbidden("system:anonymous")),
    ("garbage", 401, UNAUTHORIZED),
    ("tenant", 403, forbidden(TENANT["username"])),
    ("prom", 200, None),
], ids=["anonymous", "garbage", "tenant", "allowed"])
async def test_metrics_answer_as_kube_scheduler_does(served, token, status, body):
    got_status, text, headers = await served.get("/metrics", token)
    assert got_status == status
    assert headers["Cache-Control"] == "no-cache, private"
    if body is None:
        assert 'scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 1.0' in text
    else:
        assert headers["Content-Type"] == "application/json"
        assert json.loads(text) == body
        assert headers.get("X-Content-Type-Options") == ("nosniff" if status == 403 else None)  # as upstream


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz"])
async def test_probes_need_no_token(served, path):
    assert (await served.get(path))[:2] == (200, "ok")
    assert served.api.calls == []  # neither a TokenReview nor a SubjectAccessReview


async def test_a_probe_with_a_bad_token_is_still_refused(served):
    assert (await served.get("/healthz", "garbage"))[0] == 401  # authentication comes first, as upstream


async def test_readyz_fails_with_the_reason_withheld_and_says_it_verbosely(served):
    served.health["sync"] = "handlers are not fully synchronized"
    status, text, _ = await served.get("/readyz")
    assert status == 500
    assert text == "[+]shutdown ok\n[-]sched-handler-sync failed: reason withheld\nreadyz check failed\n"
    served.health["sync"] = None
    assert (await served.get("/readyz?verbose"))[1] == \
        "[+]shutdown ok\n[+]sched-handler-sync ok\nreadyz check passed\n"
    assert (await served.get("/readyz?exclude=shutdown&verbose"))[1].startswith("[+]shutdown excluded: ok\n")
    assert (await served.get("/livez?verbose"))[1] == "[+]ping ok\nlivez check passed\n"


async def test_an_unknown_path_is_authorized_first_then_not_found(served):
    status, text, _ = await served.get("/configz")
    assert (status, json.loads(text)) == (403, forbidden("system:anonymous", "/configz"))
    served.api.allowed.add((PROM["username"], "get", "/nothing"))
    assert (await served.get("/nothing", "prom"))[:2] == (404, "404 page not found\n")


async def test_plain_http_is_not_served(served):
    async with aiohttp.ClientSession() as s:
        with pytest.raises(aiohttp.ClientError):
            async with s.get(f"http://127.0.0.1:{served.server.port}/metrics") as r:
                await r.read()


async def test_a_failed_review_is_a_500_and_not_a_200(served):
    served.api.fail = RuntimeError("the API server is away")
    status, text, _ = await served.get("/metrics", "prom")
    assert status == 401  # the TokenReview failed: unauthenticated
    served.api.fail = None
    await served.get("/metrics", "prom")  # cached now
    served.api.fail = RuntimeError("the API server is away")
    served.server.authorizer.cache._items.clear()  # type: ignore[union-attr]
    status, text, _ = await served.get("/metrics", "prom")
    assert status == 500 and text.startswith('Internal Server Error: "/metrics": SubjectAccessReview failed')


def test_the_self_signed_certificate_names_localhost_and_loopback():
    cert_pem, key_pem = self_signed_certificate(now=1_700_000_000)
    cert = x509.load_pem_x509_certificate(cert_pem)
    assert cert.subject.rfc4514_string() == "CN=localhost@1700000000"
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["localhost"]
    assert sans.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert b"PRIVATE KEY" in key_pem


async def test_the_self_signed_certificate_is_what_a_client_can_pin(served):
    # The served certificate verifies as itself for 127.0.0.1: a client may pin it.
    pem = await asyncio.to_thread(ssl.get_server_certificate, ("127.0.0.1", served.server.port))
    pinned = ssl.create_default_context(cadata=pem)
    assert (await served.get("/livez", ssl_context=pinned))[:2] == (200, "ok")


async def test_given_certificate_files_are_served(tmp_path):
    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1", "localhost")
    leaf.cert_chain_pems[0].write_to_path(str(tmp_path / "tls.crt"))
    leaf.private_key_pem.write_to_path(str(tmp_path / "tls.key"))
    opts = ServingOptions(tls_cert_file=str(tmp_path / "tls.crt"), tls_private_key_file=str(tmp_path / "tls.key"),
                          authentication_skip_lookup=True)
    server = await make_server(opts, SchedulerMetrics(), 0, "127.0.0.1", post=ApiServer().post, get=None)
    await server.start()
    try:
        client = ssl.create_default_context(cadata=ca.cert_pem.bytes().decode())
        async with aiohttp.ClientSession() as s, s.get(f"https://127.0.0.1:{server.port}/healthz", ssl=client) as r:
            assert (r.status, await r.text()) == (200, "ok")
    finally:
        await server.stop()


async def test_a_client_certificate_authenticates_over_tls(tmp_path):
    client_ca = trustme.CA()
    (tmp_path / "client-ca.crt").write_bytes(client_ca.cert_pem.bytes())
    api = ApiServer(allowed={("scraper", "get", "/metrics")})
    opts = ServingOptions(client_ca_file=str(tmp_path / "client-ca.crt"), authentication_skip_lookup=True)
    server = await make_server(opts, SchedulerMetrics(), 0, "127.0.0.1", post=api.post, get=None)
    await server.start()
    try:
        url = f"https://127.0.0.1:{server.port}/metrics"
        for cn, want in (("scraper", 200), ("intruder", 403)):
            ctx = insecure_client()
            client_ca.issue_cert(f"{cn}.test", common_name=cn, organization_name="scrapers").configure_cert(ctx)
            async with aiohttp.ClientSession() as s, s.get(url, ssl=ctx) as r:
                assert r.status == want, await r.text()
        # A certificate of a CA not configured ends the TLS handshake (kube-scheduler: 401): never served.
        foreign = insecure_client()
        trustme.CA().issue_cert("x.test", common_name="scraper").configure_cert(foreign)
        with pytest.raises(aiohttp.ClientError):
            async with aiohttp.ClientSession() as s, s.get(url, ssl=foreign) as r:
                await r.read()
        sar = [body["spec"] for path, body in api.calls if "subjectaccessreviews" in path]
        assert sar[0]["user"] == "scraper" and sar[0]["groups"] == ["scrapers", "system:authenticated"]
        assert not any("tokenreviews" in path for path, _ in api.calls)
    finally:
        await server.stop()


async def test_cas_missing_from_the_flags_come_from_the_configmap(tmp_path):
    client_ca, proxy_ca, flag_ca = trustme.CA(), trustme.CA(), trustme.CA()
    (tmp_path / "ca.crt").write_bytes(flag_ca.cert_pem.bytes())
    asked: list[str] = []

    async def get(path: str) -> Any:
        asked.append(path)
        return {"data": {"client-ca-file": client_ca.cert_pem.bytes().decode(),
                         "requestheader-client-ca-file": proxy_ca.cert_pem.bytes().decode()}}

    cfg = await authn_config(ServingOptions(client_ca_file=str(tmp_path / "ca.crt")), get)
    assert asked == ["/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"]
    assert cfg.client_ca[0].subject == x509.load_pem_x509_certificate(flag_ca.cert_pem.bytes()).subject
    assert cfg.requestheader is not None
    assert cfg.requestheader.ca[0].subject == x509.load_pem_x509_certificate(proxy_ca.cert_pem.bytes()).subject
    assert (await authn_config(ServingOptions(authentication_skip_lookup=True), get)).client_ca == []
    assert len(asked) == 1

    async def refused(path: str) -> Any:
        raise RuntimeError("403 Forbidden")

    tolerated = await authn_config(ServingOptions(), refused)  # as kube-scheduler: tolerated, tokens still work
    assert tolerated.client_ca == [] and tolerated.requestheader is None


async def test_insecure_serves_plain_http_on_loopback_only():
    server = await make_server(ServingOptions(insecure=True), SchedulerMetrics(), 0, "127.0.0.1", post=None, get=None)
    await server.start()
    try:
        async with aiohttp.ClientSession() as s, s.get(f"http://127.0.0.1:{server.port}/metrics") as r:
            assert r.status == 200
    finally:
        await server.stop()
    with pytest.raises(ValueError, match=re.escape("loopback address only, not '0.0.0.0'")):
        ComponentServer(SchedulerMetrics(), 0, "0.0.0.0", insecure=True)


def parse(*argv: str) -> argparse.Namespace:
    return add_run_arguments(argparse.ArgumentParser()).parse_args(list(argv))


@pytest.mark.parametrize("argv, message", [
    (["--metrics-insecure"], "needs a loopback --metrics-host (e.g. 127.0.0.1), not '0.0.0.0'"),
    (["--metrics-insecure", "--metrics-host=10.1.2.3"], "not '10.1.2.3'"),
    (["--tls-cert-file=/x.crt"], "--tls-cert-file and --tls-private-key-file go together"),
    (["--tls-cert-file=/nonexistent.crt", "--tls-private-key-file=/nonexistent.key"],
     "--tls-cert-file /nonexistent.crt / --tls-private-key-file /nonexistent.key"),
    (["--client-ca-file=/nonexistent-ca.crt"], "--client-ca-file /nonexistent-ca.crt: No such file"),
], ids=["insecure-everywhere", "insecure-on-a-lan", "cert-without-key", "missing-cert", "missing-ca"])
def test_options_that_cannot_work_are_refused_by_name(argv, message, capsys):
    with pytest.raises(ServingOptionsError, match=re.escape(message)):
        config_from_args(parse(*argv))
    assert run_main(parse(*argv)) == 2
    assert "kubeberth run: " in capsys.readouterr().err


def test_the_defaults_are_kube_schedulers():
    cfg = config_from_args(parse())
    s = cfg.serving
    assert (cfg.metrics_port, cfg.metrics_host, s.insecure) == (10259, "0.0.0.0", False)
    assert (s.token_cache_ttl, s.authorized_cache_ttl, s.unauthorized_cache_ttl) == (10.0, 10.0, 10.0)
    assert s.always_allow_paths == ("/healthz", "/readyz", "/livez")
    spelled = config_from_args(parse("--secure-port=10300", "--bind-address=127.0.0.1", "--metrics-insecure",
                                     "--authorization-webhook-cache-authorized-ttl=1m30s",
                                     "--authorization-always-allow-paths=/healthz,/metrics"))
    assert (spelled.metrics_port, spelled.metrics_host, spelled.serving.insecure) == (10300, "127.0.0.1", True)
    assert spelled.serving.authorized_cache_ttl == 90.0
    assert spelled.serving.always_allow_paths == ("/healthz", "/metrics")


@pytest.mark.parametrize("text, seconds", [("10s", 10.0), ("1m30s", 90.0), ("500ms", 0.5), ("0", 0.0), ("2h", 7200.0)])
def test_go_durations(text, seconds):
    assert go_duration(text) == seconds


@pytest.mark.parametrize("text", ["10", "ten seconds", "1x", ""])
def test_bad_go_durations(text):
    with pytest.raises(argparse.ArgumentTypeError):
        go_duration(text)


def test_a_key_pair_needs_both_files_and_ones_that_load(tmp_path):
    with pytest.raises(ValueError, match="go together"):
        read_keypair("/x.crt", None)
    assert read_keypair(None, None) is None
    (tmp_path / "tls.crt").write_text("x")
    with pytest.raises(ValueError, match=re.escape("--tls-private-key-file /nonexistent.key: No such file")):
        read_keypair(str(tmp_path / "tls.crt"), "/nonexistent.key")
    with pytest.raises(ValueError, match="the serving certificate and key do not load"):
        server_ssl_context((b"not a certificate", b"not a key"))


def test_ping_is_the_default_check():
    server = ComponentServer(SchedulerMetrics(), 0, "127.0.0.1", insecure=True)
    assert server.checks == {"healthz": [PING], "livez": [PING], "readyz": [PING]}



async def test_the_operators_checks_are_upstreams_and_the_loops():
    """/healthz, /livez, /readyz of a running operator: leaderElection (upstream's watchdog: a holder
    that has not renewed for the lease duration + 20 s), shutdown, sched-handler-sync, and
    kubeberth's scheduling-loop."""
    from kubernetes_asyncio.client import Configuration

    from kubeberth.operator.app import OperatorApp
    from kubeberth.operator.options import OperatorConfig

    app = OperatorApp(OperatorConfig(server="http://127.0.0.1:9", leader_elect=True))
    cfg = Configuration()
    cfg.host = "http://127.0.0.1:9"
    app.build(cfg)
    try:
        now = [100.0]
        elector = app.elector
        assert elector is not None
        elector.monotonic = lambda: now[0]
        leader, loop, shutdown, synced = app._health_checks()
        assert leader is not None
        assert [c.name for c in (leader, loop, shutdown, synced)] == [
            "leaderElection", "scheduling-loop", "shutdown", "sched-handler-sync"]
        assert leader.check() is None  # not holding the Lease: healthy
        elector._renewed = 100.0
        now[0] = 135.0
        assert leader.check() is None
        now[0] = 135.1
        assert leader.check() == "failed election to renew leadership on lease kubeberth"

        assert synced.check() == "handlers are not fully synchronized"
        app.ingest.synced.set()
        assert synced.check() is None

        app._stop = asyncio.Event()
        assert shutdown.check() is None
        app._stop.set()
        assert shutdown.check() == "process is shutting down"

        async def dies() -> None:
            raise RuntimeError("boom")

        assert loop.check() is None
        app._loop_task = asyncio.get_running_loop().create_task(dies())
        await asyncio.wait([app._loop_task])
        assert loop.check() == "the scheduling loop died: RuntimeError('boom')"
        app._loop_task = None
    finally:
        await app._rest.close()  # type: ignore[union-attr]
        if app.api_client is not None:
            await app.api_client.close()


async def test_a_running_operator_serves_its_checks(cluster, start_operator):
    op = await start_operator()  # plain HTTP on loopback (tests/operator/conftest.py): the emulator has no reviews
    base = f"http://127.0.0.1:{op.app.metrics_port}"

    async def fetch(path: str) -> tuple[int, str]:
        async with aiohttp.ClientSession() as s, s.get(base + path) as r:
            return r.status, await r.text()

    for _ in range(250):  # ready once every kind has been listed
        if (await fetch("/readyz"))[0] == 200:
            break
        await asyncio.sleep(0.02)
    assert await fetch("/readyz?verbose") == (200, "[+]shutdown ok\n[+]sched-handler-sync ok\nreadyz check passed\n")
    assert await fetch("/livez?verbose") == (200, "[+]ping ok\n[+]scheduling-loop ok\nlivez check passed\n")
    assert await fetch("/healthz") == (200, "ok")


# --- reloading, as upstream's dynamic certificate controllers ---

async def fetch_status(port: int, ctx: ssl.SSLContext, path: str = "/metrics") -> int:
    async with aiohttp.ClientSession() as s, s.get(f"https://127.0.0.1:{port}{path}", ssl=ctx) as r:
        return r.status


async def test_a_rotated_serving_certificate_is_served_after_a_reload(tmp_path):
    old_ca, new_ca = trustme.CA(), trustme.CA()
    crt, key = tmp_path / "tls.crt", tmp_path / "tls.key"

    def write(ca: trustme.CA) -> None:
        leaf = ca.issue_cert("127.0.0.1")
        leaf.cert_chain_pems[0].write_to_path(str(crt))
        leaf.private_key_pem.write_to_path(str(key))

    write(old_ca)
    opts = ServingOptions(tls_cert_file=str(crt), tls_private_key_file=str(key), authentication_skip_lookup=True)
    server = await make_server(opts, SchedulerMetrics(), 0, "127.0.0.1", post=ApiServer().post, get=None)
    await server.start()
    trusts_old = ssl.create_default_context(cadata=old_ca.cert_pem.bytes().decode())
    trusts_new = ssl.create_default_context(cadata=new_ca.cert_pem.bytes().decode())
    try:
        assert await fetch_status(server.port, trusts_old, "/livez") == 200
        assert server.reload is not None and await server.reload() is False  # nothing changed
        write(new_ca)
        assert await server.reload() is True
        assert await fetch_status(server.port, trusts_new, "/livez") == 200
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await fetch_status(server.port, trusts_old, "/livez")
    finally:
        await server.stop()


async def test_a_client_ca_published_later_is_trusted_after_a_reload_and_kept_when_the_lookup_fails():
    client_ca = trustme.CA()
    published: dict[str, Any] = {"data": {}}

    async def get(path: str) -> Any:
        if isinstance(published, Exception):
            raise published
        return published

    api = ApiServer(allowed={("scraper", "get", "/metrics")})
    server = await make_server(ServingOptions(), SchedulerMetrics(), 0, "127.0.0.1", post=api.post, get=get)
    await server.start()
    client = insecure_client()
    client_ca.issue_cert("scraper.test", common_name="scraper").configure_cert(client)
    try:
        assert await fetch_status(server.port, client) == 403  # not asked for its certificate: anonymous
        published["data"] = {"client-ca-file": client_ca.cert_pem.bytes().decode()}
        assert server.reload is not None and await server.reload() is True
        assert await fetch_status(server.port, client) == 200
        published = RuntimeError("the API server is away")  # type: ignore[assignment]
        with pytest.raises(RuntimeError):
            await server.reload()
        assert await fetch_status(server.port, client) == 200  # what was in force stays
    finally:
        await server.stop()


@pytest.mark.looptime
async def test_the_server_reloads_every_minute_and_survives_a_failed_reload():
    calls: list[float] = []

    async def reload() -> None:
        calls.append(asyncio.get_running_loop().time())
        if len(calls) == 1:
            raise ValueError("a certificate half written")

    server = ComponentServer(SchedulerMetrics(), 0, "127.0.0.1", insecure=True, reload=reload)
    task = asyncio.get_running_loop().create_task(server._reload_forever())
    start = asyncio.get_running_loop().time()
    await asyncio.sleep(181)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert [round(t - start) for t in calls] == [60, 120, 180]


async def test_a_taken_port_is_an_error_though_the_listener_shares_for_reloads():
    first = await make_server(ServingOptions(authentication_skip_lookup=True), SchedulerMetrics(), 0, "127.0.0.1",
                              post=ApiServer().post, get=None)
    await first.start()
    try:
        second = await make_server(ServingOptions(authentication_skip_lookup=True), SchedulerMetrics(), first.port,
                                   "127.0.0.1", post=ApiServer().post, get=None)
        with pytest.raises(OSError, match=f"the secure port 127.0.0.1:{first.port} is taken"):
            await second.start()
        await second.stop()
    finally:
        await first.stop()
