"""Credentials: token files read again as client-go does, 401 and 403 told as what they are,
the Lease's loss told by its cause, and kopf kept from ending the process on API failures."""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sized
from pathlib import Path
from typing import Any

import kopf
import pytest
import yaml
from kubernetes_asyncio.client import Configuration

from kubeberth.metrics import SchedulerMetrics
from kubeberth.operator.app import OperatorApp
from kubeberth.operator.connection import RetryForever, load_credentials
from kubeberth.operator.credentials import (
    SERVICE_ACCOUNT_TOKEN,
    Credentials,
    Forbidden,
    ResourceRequest,
    kubeconfig_user,
    resource_request,
    subject_of,
)
from kubeberth.operator.leader import LeaderElector, LeaseConfig
from kubeberth.operator.options import OperatorConfig
from kubeberth.operator.rest import api_exception


class Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def token_credentials(tmp_path: Path, token: str = "first") -> tuple[Credentials, Path, Clock]:
    path = tmp_path / "token"
    path.write_text(token + "\n")
    cfg = Configuration()
    cfg.host = "https://127.0.0.1:6443"
    clock = Clock()
    return Credentials(cfg, token_file=str(path), description=f"tokenFile {path}", monotonic=clock), path, clock


# --- the token file, read again ---

@pytest.mark.parametrize(("advance", "after_401", "want"), [
    (0.0, False, "Bearer first"),     # cached: the file is not read on every request
    (59.0, False, "Bearer first"),
    (60.0, False, "Bearer second"),   # a minute old: read again (client-go's cachingTokenSource)
    (0.0, True, "Bearer second"),     # a 401: read again before the next request
], ids=["fresh", "59s", "a-minute", "after-401"])
async def test_the_token_file_is_read_again_after_a_minute_or_a_401(tmp_path, advance, after_401, want):
    creds, path, clock = token_credentials(tmp_path)
    assert await creds.authorization() == "Bearer first"
    path.write_text("second")
    clock.t += advance
    if after_401:
        creds.unauthorized("GET", "/api/v1/pods")
    assert await creds.authorization() == want
    assert creds.configuration.api_key["BearerToken"] == want.split(" ", 1)[1]  # kopf's login reads it too


async def test_an_unreadable_or_empty_token_file_keeps_the_token_read_before(tmp_path, caplog):
    creds, path, _clock = token_credentials(tmp_path)
    assert await creds.authorization() == "Bearer first"
    path.write_text("")
    creds.unauthorized("GET", "/api")
    assert await creds.authorization() == "Bearer first"
    path.unlink()
    creds.unauthorized("GET", "/api")
    assert await creds.authorization() == "Bearer first"
    assert f"The bearer token file {path} is empty" in caplog.text
    assert f"Cannot read the bearer token file {path} again" in caplog.text


async def test_a_401_names_the_credential_and_the_server_once_per_token(tmp_path, caplog):
    creds, path, clock = token_credentials(tmp_path)
    await creds.authorization()
    caplog.set_level(logging.INFO, logger="kubeberth.operator.credentials")
    for _ in range(3):
        creds.unauthorized("GET", "/api/v1/pods")
    lines = [r.getMessage() for r in caplog.records if "Unauthorized (401)" in r.getMessage()]
    assert lines == [f"Unauthorized (401): the API server https://127.0.0.1:6443 rejected the credentials of "
                     f"tokenFile {path} (GET /api/v1/pods); the scheduler keeps its cache and retries with backoff; "
                     "the token file is read again before every retry (and every 60s), so a renewed token is used "
                     "without a restart"]
    clock.t += 300.0
    creds.unauthorized("GET", "/api/v1/pods")  # still failing: said again, every few minutes
    assert sum("Unauthorized (401) still" in r.getMessage() for r in caplog.records) == 1
    path.write_text("renewed")
    await creds.authorization()
    creds.accepted()
    assert "Read a new bearer token from" in caplog.text
    assert "accepts the credentials of" in caplog.text
    assert not creds.rejected


# --- where the token comes from ---

def write_kubeconfig(tmp_path: Path, user: dict[str, Any]) -> Path:
    path = tmp_path / "config"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "http://127.0.0.1:1"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "me"}},
                     {"name": "other", "context": {"cluster": "k", "user": "them"}}],
        "users": [{"name": "me", "user": user}, {"name": "them", "user": {"token": "x"}}]}))
    return path


@pytest.mark.parametrize(("user", "context", "token_file", "describe"), [
    ({"tokenFile": "tok"}, None, "{dir}/tok", "kubeconfig user 'me' ({dir}/config, tokenFile {dir}/tok)"),
    ({"tokenFile": "/abs/tok"}, None, "/abs/tok", "kubeconfig user 'me' ({dir}/config, tokenFile /abs/tok)"),
    ({"token": "inline", "tokenFile": "tok"}, None, None, "kubeconfig user 'me' ({dir}/config, its token)"),
    ({"tokenFile": "tok"}, "other", None, "kubeconfig user 'them' ({dir}/config, its token)"),
], ids=["relative-tokenFile", "absolute-tokenFile", "inline-token-wins", "other-context"])
def test_the_kubeconfig_user_in_use_and_its_token_file(tmp_path, user, context, token_file, describe):
    path = write_kubeconfig(tmp_path, user)
    found = kubeconfig_user(str(path), context)
    assert found is not None
    assert found.token_file == (token_file.format(dir=tmp_path) if token_file else None)
    assert found.describe() == describe.format(dir=tmp_path)


def test_in_cluster_credentials_read_the_service_account_token_file():
    creds = load_credentials(OperatorConfig(in_cluster=True), Configuration())
    assert creds.token_file == SERVICE_ACCOUNT_TOKEN
    assert creds.description == f"the ServiceAccount token file {SERVICE_ACCOUNT_TOKEN}"


async def test_a_kubeconfig_token_file_is_read_by_the_operators_credentials(tmp_path):
    (tmp_path / "tok").write_text("from-file")
    path = write_kubeconfig(tmp_path, {"tokenFile": "tok"})
    creds = load_credentials(OperatorConfig(kubeconfig=str(path)), Configuration())
    assert creds.token_file == str(tmp_path / "tok")
    assert await creds.authorization() == "Bearer from-file"


# --- 403: the missing permission ---

@pytest.mark.parametrize(("method", "path", "query", "want"), [
    ("POST", "/api/v1/namespaces/x/pods/p/binding", None, ResourceRequest("create", "", "pods/binding", "x")),
    ("PATCH", "/api/v1/namespaces/x/pods/p/status", None, ResourceRequest("patch", "", "pods/status", "x")),
    ("DELETE", "/api/v1/namespaces/x/pods/p", None, ResourceRequest("delete", "", "pods", "x")),
    ("POST", "/api/v1/namespaces/x/events", None, ResourceRequest("create", "", "events", "x")),
    ("GET", "/api/v1/pods", None, ResourceRequest("list", "", "pods")),
    ("GET", "/api/v1/pods", {"watch": "true"}, ResourceRequest("watch", "", "pods")),
    ("GET", "/api/v1/nodes/n1", None, ResourceRequest("get", "", "nodes")),
    ("PUT", "/apis/coordination.k8s.io/v1/namespaces/s/leases/l", None,
     ResourceRequest("update", "coordination.k8s.io", "leases", "s")),
    ("PATCH", "/apis/kubeberth.io/v1alpha1/schedulingprofiles/p/status", None,
     ResourceRequest("patch", "kubeberth.io", "schedulingprofiles/status")),
    ("GET", "/api/v1/namespaces/x", None, ResourceRequest("get", "", "namespaces")),
    ("GET", "/version", None, None),
], ids=lambda v: v if isinstance(v, str) else None)
def test_the_rbac_request_of_a_path(method, path, query, want):
    assert resource_request(method, path, query) == want


def test_a_grouped_resource_is_named_as_kubectl_auth_can_i_names_it():
    assert ResourceRequest("update", "coordination.k8s.io", "leases").rbac_resource == "leases.coordination.k8s.io"
    assert ResourceRequest("update", "resource.k8s.io", "resourceclaims/status").rbac_resource == \
        "resourceclaims.resource.k8s.io/status"


@pytest.mark.parametrize(("message", "want"), [
    ('pods "p" is forbidden: User "system:serviceaccount:kubeberth-system:kubeberth" cannot create resource '
     '"pods/binding" in API group "" in the namespace "x"', "the ServiceAccount kubeberth-system/kubeberth"),
    ('User "alice" cannot list resource "pods"', "the user 'alice'"),
    ("no user here", "the fallback"),
], ids=["service-account", "user", "unknown"])
def test_who_was_refused(message, want):
    assert subject_of(message, "the fallback") == want


def test_a_403_is_logged_once_per_verb_and_resource_and_counted_every_time(caplog):
    metrics = SchedulerMetrics()
    forbidden = Forbidden(subject="tokenFile /t", count=metrics.api_forbidden)
    body = (b'{"kind":"Status","code":403,"reason":"Forbidden","message":"pods \\"p\\" is forbidden: User '
            b'\\"system:serviceaccount:kubeberth-system:kubeberth\\" cannot create resource \\"pods/binding\\" '
            b'in API group \\"\\" in the namespace \\"team-a\\""}')
    for name in ("p", "q", "r"):
        forbidden.report("POST", f"/api/v1/namespaces/team-a/pods/{name}/binding", None, body)
    forbidden.report("POST", "/api/v1/namespaces/team-a/events", None, b"{}")
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(lines) == 2
    assert lines[0].startswith("forbidden: create pods/binding in namespace team-a: the ServiceAccount "
                               "kubeberth-system/kubeberth lacks RBAC verb create on pods/binding (API group '')")
    assert "cannot create resource" in lines[0]  # the API server's own words follow
    assert lines[1].startswith("forbidden: create events in namespace team-a: tokenFile /t lacks RBAC verb create")
    assert metrics.sample("kubeberth_api_forbidden_total", {"verb": "create", "resource": "pods/binding"}) == 3.0
    assert metrics.sample("kubeberth_api_forbidden_total", {"verb": "create", "resource": "events"}) == 1.0


# --- the Lease lost, and why ---

class FailingLease:
    """A Lease read and written until `failure` is set; then every request raises it."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.failure: BaseException | None = None
        self.credentials = Credentials(Configuration(), description="tokenFile /t")
        self.credentials.configuration.host = "https://api:6443"

    async def request(self, method: str, path: str, *, body: Any = None, **_: Any) -> Any:
        if self.failure is not None:
            raise self.failure
        if method == "GET":
            if self.lease is None:
                raise api_exception(404, "Not Found", b"")
            return self.lease
        self.lease = {**body, "metadata": {**body["metadata"], "resourceVersion": "1"}}
        return self.lease


@pytest.mark.parametrize(("failure", "reason"), [
    (api_exception(401, "Unauthorized", b""), "could not renew it within the renew deadline (10s): the API server "
     "https://api:6443 rejected the credentials of tokenFile /t (401 Unauthorized)"),
    (api_exception(403, "Forbidden", b""), "could not renew it within the renew deadline (10s): the API server "
     "refused access to the Lease (403 Forbidden): the credentials lack RBAC permission on "
     "leases.coordination.k8s.io in namespace ns"),
    (api_exception(503, "Service Unavailable", b""), "could not renew it within the renew deadline (10s): the API "
     "server answered HTTP 503 Service Unavailable"),
    (ConnectionRefusedError("refused"), "could not renew it within the renew deadline (10s): the API server could "
     "not be reached (ConnectionRefusedError: refused)"),
], ids=["401", "403", "503", "refused"])
async def test_a_lease_lost_for_lack_of_credentials_or_an_outage_says_so(failure, reason, caplog):
    server, clock = FailingLease(), Clock()
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        clock.t += seconds
        if elector.elected.is_set():
            server.failure = failure  # from the first renewal on
        assert len(sleeps) < 100, "the elector never gave up"

    elector = LeaderElector(rest=server, identity="me", config=LeaseConfig(namespace="ns"),  # type: ignore[arg-type]
                            monotonic=clock, wall=lambda: 1.7e9, sleep=sleep)
    await elector.run()
    assert elector.lost.is_set()
    assert elector.lost_reason() == reason
    assert "another replica" not in caplog.text
    assert f"lost the Lease ns/kubeberth: {reason}" in caplog.text


async def test_a_lease_taken_by_another_replica_says_so():
    server, clock = FailingLease(), Clock()
    elector = LeaderElector(rest=server, identity="me", config=LeaseConfig(namespace="ns"),  # type: ignore[arg-type]
                            monotonic=clock, wall=lambda: 1.7e9)
    assert await elector.try_acquire_or_renew()
    assert server.lease is not None
    server.lease["spec"]["holderIdentity"] = "them"
    server.lease["spec"]["renewTime"] = "later"
    clock.t += 11.0
    assert not await elector._attempt()
    assert elector.lost_reason() == "another replica holds it (them)"


# --- kopf: nothing it does may end the process ---

def test_kopfs_resource_watch_is_off_and_its_requests_retry_for_ever():
    settings = kopf.OperatorSettings()
    OperatorApp(OperatorConfig()).configure_settings(settings)
    assert settings.scanning.disabled
    backoffs = settings.networking.error_backoffs
    assert isinstance(backoffs, RetryForever) and not isinstance(backoffs, Sized)  # kopf: no count, no end
    assert list(itertools.islice(backoffs, 8)) == [1, 2, 4, 8, 16, 30, 30, 30]
    assert list(itertools.islice(backoffs, 2)) == [1, 2]  # every request starts from the beginning
