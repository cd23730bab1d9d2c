"""Delegated authentication and authorization of the secure port (operator/delegated_auth.py), with
an API server double answering TokenReviews and SubjectAccessReviews, and a fake clock for the caches."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trustme
from cryptography import x509

from kubeberth.operator.delegated_auth import (
    SUBJECT_ACCESS_REVIEWS,
    TOKEN_REVIEWS,
    AuthenticationFailed,
    AuthnConfig,
    AuthorizationError,
    ExpiringLRU,
    RequestAuthenticator,
    RequestHeaderConfig,
    SubjectAccessReviewAuthorizer,
    TokenReviewAuthenticator,
    User,
    forbidden_message,
    parse_configmap,
)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class ApiServer:
    """Answers TokenReviews from `tokens` (token -> user dict) and SubjectAccessReviews from `allowed`
    ((user, verb, path) triples; for a resource, path is "resource.group/namespace"); records every
    review it was sent."""

    def __init__(self, tokens: dict[str, dict[str, Any]] | None = None,
                 allowed: set[tuple[str, str, str]] | None = None) -> None:
        self.tokens = tokens or {}
        self.allowed = allowed or set()
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.fail: Exception | None = None
        self.reason = ""

    async def post(self, path: str, body: dict[str, Any]) -> Any:
        self.calls.append((path, body))
        if self.fail is not None:
            raise self.fail
        if path == TOKEN_REVIEWS:
            user = self.tokens.get(body["spec"]["token"])
            return {**body, "status": {"authenticated": True, "user": user} if user else {}}
        assert path == SUBJECT_ACCESS_REVIEWS
        spec = body["spec"]
        attrs = spec.get("nonResourceAttributes")
        if attrs is not None:
            ok = (spec["user"], attrs["verb"], attrs["path"]) in self.allowed
        else:  # a resource: (user, verb, "resource.group/namespace")
            r = spec["resourceAttributes"]
            ok = (spec["user"], r["verb"], f"{r['resource']}.{r['group']}/{r['namespace']}") in self.allowed
        return {**body, "status": {"allowed": True} if ok else {"allowed": False, "reason": self.reason}}

    def count(self, path: str) -> int:
        return sum(1 for p, _ in self.calls if p == path)


PROM = {"username": "system:serviceaccount:monitoring:prometheus", "uid": "u-1",
        "groups": ["system:serviceaccounts", "system:serviceaccounts:monitoring"]}


# --- the LRU cache with expiry ---

def test_entries_expire_after_their_ttl_and_the_least_recent_goes_first():
    clock = Clock()
    cache: ExpiringLRU[int] = ExpiringLRU(2, clock)
    cache.set("a", 1, 10.0)
    cache.set("b", 2, 5.0)
    clock.t += 4.9
    assert cache.get("b") == 2 and cache.get("a") == 1  # a is now the most recent
    cache.set("c", 3, 10.0)  # over the size: b goes
    assert cache.get("b") is None and cache.get("a") == 1 and cache.get("c") == 3
    clock.t += 5.1  # a set at 1000 with ttl 10
    assert cache.get("a") is None and cache.get("c") == 3
    cache.set("d", 4, 0)  # a ttl of 0 caches nothing
    assert cache.get("d") is None


# --- TokenReview ---

async def test_an_accepted_token_is_its_user_and_cached_for_ten_seconds():
    api, clock = ApiServer(tokens={"good": PROM}), Clock()
    tokens = TokenReviewAuthenticator(api.post, clock=clock)
    user = await tokens.authenticate("good")
    assert user == User(PROM["username"], "u-1", tuple(PROM["groups"]))
    assert api.calls[0][1] == {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                               "spec": {"token": "good"}}
    clock.t += 9.9
    assert await tokens.authenticate("good") == user
    assert api.count(TOKEN_REVIEWS) == 1
    clock.t += 0.1
    assert await tokens.authenticate("good") == user
    assert api.count(TOKEN_REVIEWS) == 2


async def test_a_refused_token_is_cached_too_but_an_error_is_not():
    api, clock = ApiServer(), Clock()
    tokens = TokenReviewAuthenticator(api.post, clock=clock)
    assert await tokens.authenticate("garbage") is None
    assert await tokens.authenticate("garbage") is None
    assert api.count(TOKEN_REVIEWS) == 1
    api.fail = RuntimeError("connection refused")
    with pytest.raises(AuthenticationFailed, match="TokenReview failed: connection refused"):
        await tokens.authenticate("other")
    api.fail = None
    assert await tokens.authenticate("other") is None  # asked again: the error was not cached
    assert api.count(TOKEN_REVIEWS) == 3


async def test_a_review_that_reports_an_error_is_a_failure_and_not_cached():
    calls = []

    async def post(path: str, body: dict[str, Any]) -> Any:
        calls.append(body)
        return {"status": {"authenticated": False, "error": "token expired"}}

    tokens = TokenReviewAuthenticator(post, clock=Clock())
    for _ in range(2):
        with pytest.raises(AuthenticationFailed, match="token expired"):
            await tokens.authenticate("old")
    assert len(calls) == 2


# --- SubjectAccessReview ---

TENANT = User("system:serviceaccount:team-a:default", groups=("system:serviceaccounts", "system:authenticated"))
PROM_USER = User(PROM["username"], "u-1", ("system:serviceaccounts", "system:authenticated"),
                 extra=(("authentication.kubernetes.io/pod-name", ("prom-0",)),))


async def test_the_review_asks_for_the_non_resource_url_and_the_verb():
    api = ApiServer(allowed={(PROM_USER.name, "get", "/metrics")})
    authz = SubjectAccessReviewAuthorizer(api.post, clock=Clock())
    assert await authz.authorize(PROM_USER, "get", "/metrics") == (True, "")
    [(path, body)] = api.calls
    assert path == SUBJECT_ACCESS_REVIEWS
    assert body == {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                    "spec": {"nonResourceAttributes": {"path": "/metrics", "verb": "get"}, "user": PROM_USER.name,
                             "uid": "u-1", "groups": list(PROM_USER.groups),
                             "extra": {"authentication.kubernetes.io/pod-name": ["prom-0"]}}}
    assert await authz.authorize(PROM_USER, "post", "/metrics") == (False, "")


@pytest.mark.parametrize("user, path", [
    (User.anonymous(), "/healthz"), (User.anonymous(), "/livez"), (User.anonymous(), "/readyz"),
    (User("admin", groups=("system:masters",)), "/metrics"),
], ids=["healthz", "livez", "readyz", "system:masters"])
async def test_always_allowed_paths_and_groups_ask_nobody(user, path):
    api = ApiServer()
    assert await SubjectAccessReviewAuthorizer(api.post).authorize(user, "get", path) == (True, "")
    assert api.calls == []


async def test_always_allowed_paths_are_exact_unless_they_end_in_a_star():
    api = ApiServer()
    authz = SubjectAccessReviewAuthorizer(api.post, always_allow_paths=["/healthz", "/debug/*"])
    assert await authz.authorize(User.anonymous(), "get", "/healthz/ping") == (False, "")
    assert await authz.authorize(User.anonymous(), "get", "/debug/pprof") == (True, "")
    assert await authz.authorize(User.anonymous(), "get", "/livez") == (False, "")


@pytest.mark.parametrize("allowed, ttl_used", [(True, 7.0), (False, 3.0)], ids=["allowed", "denied"])
async def test_answers_are_cached_for_their_own_ttl(allowed, ttl_used):
    api, clock = ApiServer(allowed={(TENANT.name, "get", "/metrics")} if allowed else set()), Clock()
    authz = SubjectAccessReviewAuthorizer(api.post, allowed_ttl=7.0, denied_ttl=3.0, clock=clock)
    assert (await authz.authorize(TENANT, "get", "/metrics"))[0] is allowed
    clock.t += ttl_used - 0.01
    assert (await authz.authorize(TENANT, "get", "/metrics"))[0] is allowed
    assert api.count(SUBJECT_ACCESS_REVIEWS) == 1
    clock.t += 0.01
    await authz.authorize(TENANT, "get", "/metrics")
    assert api.count(SUBJECT_ACCESS_REVIEWS) == 2


async def test_upstreams_default_ttls_are_ten_seconds_each():
    api, clock = ApiServer(), Clock()
    authz = SubjectAccessReviewAuthorizer(api.post, clock=clock)
    tokens = TokenReviewAuthenticator(api.post, clock=clock)
    assert (authz.allowed_ttl, authz.denied_ttl, tokens.ttl) == (10.0, 10.0, 10.0)


async def test_a_failed_review_cannot_decide_and_is_not_cached():
    api = ApiServer()
    api.fail = RuntimeError("503")
    authz = SubjectAccessReviewAuthorizer(api.post, clock=Clock())
    with pytest.raises(AuthorizationError, match="SubjectAccessReview failed: 503"):
        await authz.authorize(TENANT, "get", "/metrics")
    api.fail = None
    assert await authz.authorize(TENANT, "get", "/metrics") == (False, "")
    assert api.count(SUBJECT_ACCESS_REVIEWS) == 2


def test_the_forbidden_message_is_upstreams():
    assert forbidden_message(User.anonymous(), "get", "/metrics", "") == \
        'forbidden: User "system:anonymous" cannot get path "/metrics"'
    assert forbidden_message(TENANT, "get", "/metrics", "no RBAC policy matched") == \
        'forbidden: User "system:serviceaccount:team-a:default" cannot get path "/metrics": no RBAC policy matched'


# --- the request authenticator ---

class Headers(dict[str, str]):
    def getall(self, name: str, default: list[str]) -> list[str]:
        for k, v in self.items():
            if k.lower() == name.lower():
                return [v]
        return default

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        return self.getall(name, [default])[0]


@pytest.mark.parametrize("authorization, want", [
    (None, User.anonymous()),
    ("", User.anonymous()),
    ("Basic dXNlcjpwdw==", User.anonymous()),  # not a bearer token: no credential this authenticator knows
    ("Bearer ", User.anonymous()),
    ("Bearer good", User(PROM["username"], "u-1", (*PROM["groups"], "system:authenticated"))),
    ("bearer  good ", User(PROM["username"], "u-1", (*PROM["groups"], "system:authenticated"))),
    ("Bearer garbage", AuthenticationFailed),
], ids=["none", "empty", "basic", "empty-bearer", "token", "case-and-spaces", "garbage"])
async def test_tokens_and_anonymous(authorization, want):
    api = ApiServer(tokens={"good": PROM})
    authn = RequestAuthenticator(TokenReviewAuthenticator(api.post, clock=Clock()))
    headers = Headers({"Authorization": authorization} if authorization is not None else {})
    if want is AuthenticationFailed:
        with pytest.raises(AuthenticationFailed, match="invalid bearer token"):
            await authn.authenticate(headers=headers, peer_cert=None)
    else:
        assert await authn.authenticate(headers=headers, peer_cert=None) == want


def client_cert(ca: trustme.CA, cn: str, org: str | None = None, *, san: bool = True) -> x509.Certificate:
    """A client certificate; `san=False`: trustme's empty critical subjectAltName, which Go refuses."""
    names = [f"{cn}.test"] if san else []
    leaf = (ca.issue_cert(*names, common_name=cn, organization_name=org) if org
            else ca.issue_cert(*names, common_name=cn))
    return x509.load_pem_x509_certificate(leaf.cert_chain_pems[0].bytes())


def ca_certs(ca: trustme.CA) -> list[x509.Certificate]:
    return [x509.load_pem_x509_certificate(ca.cert_pem.bytes())]


async def test_a_client_certificate_of_the_client_ca_is_its_common_name_and_organizations():
    client_ca, other = trustme.CA(), trustme.CA()
    authn = RequestAuthenticator(None, AuthnConfig(client_ca=ca_certs(client_ca)))
    user = await authn.authenticate(headers=Headers(), peer_cert=client_cert(client_ca, "alice", "ops"))
    assert user == User("alice", groups=("ops", "system:authenticated"))
    with pytest.raises(AuthenticationFailed, match="not issued by the client CA"):
        await authn.authenticate(headers=Headers(), peer_cert=client_cert(other, "mallory"))
    # kube-scheduler (Go) refuses an empty critical subjectAltName: 401 there, here too.
    with pytest.raises(AuthenticationFailed, match="unhandled critical extension"):
        await authn.authenticate(headers=Headers(), peer_cert=client_cert(client_ca, "alice", san=False))


async def test_a_front_proxy_passes_the_user_in_headers_when_its_name_is_allowed():
    proxy_ca, client_ca = trustme.CA(), trustme.CA()
    cfg = AuthnConfig(client_ca=ca_certs(client_ca),
                      requestheader=RequestHeaderConfig(ca=ca_certs(proxy_ca), allowed_names=("front-proxy",)))
    authn = RequestAuthenticator(None, cfg)
    headers = Headers({"X-Remote-User": "bob", "X-Remote-Group": "dev", "X-Remote-Extra-Scopes%2fA": "x"})
    user = await authn.authenticate(headers=headers, peer_cert=client_cert(proxy_ca, "front-proxy"))
    assert user == User("bob", groups=("dev", "system:authenticated"), extra=(("scopes/a", ("x",)),))
    with pytest.raises(AuthenticationFailed, match="CommonName is not one of"):
        await authn.authenticate(headers=headers, peer_cert=client_cert(proxy_ca, "someone-else"))
    # A client certificate of the client CA is still its own user, headers or not.
    carol = await authn.authenticate(headers=headers, peer_cert=client_cert(client_ca, "carol"))
    assert carol.name == "carol"


def test_the_configmap_gives_the_cas_and_the_headers():
    client_ca, proxy_ca = trustme.CA(), trustme.CA()
    cfg = parse_configmap({
        "client-ca-file": client_ca.cert_pem.bytes().decode(),
        "requestheader-client-ca-file": proxy_ca.cert_pem.bytes().decode(),
        "requestheader-allowed-names": json.dumps(["front-proxy-client"]),
        "requestheader-username-headers": json.dumps(["X-Remote-User"]),
        "requestheader-group-headers": json.dumps(["X-Remote-Group"]),
        "requestheader-extra-headers-prefix": json.dumps(["X-Remote-Extra-"]),
    })
    assert cfg.client_ca == ca_certs(client_ca)
    assert cfg.requestheader is not None and cfg.requestheader.ca == ca_certs(proxy_ca)
    assert cfg.requestheader.allowed_names == ("front-proxy-client",)
    assert cfg.requestheader.username_headers == ("X-Remote-User",)
    assert parse_configmap({}).client_ca == [] and parse_configmap({}).requestheader is None
    with pytest.raises(ValueError, match="client-ca-file: not a PEM certificate bundle"):
        parse_configmap({"client-ca-file": "nonsense"})


# --- retries, as upstream's webhooks ---

def api_error(status: int, headers: dict[str, str] | None = None) -> Exception:
    from kubernetes_asyncio.client.exceptions import ApiException

    exc = ApiException(status=status, reason="x")
    exc.headers = headers or {}  # type: ignore[assignment]
    return exc


@pytest.mark.parametrize("failures, calls, sleeps, raised", [
    ([api_error(500), api_error(429)], 3, [0.5, 0.75], None),
    ([ConnectionResetError()], 2, [0.5], None),
    ([api_error(503, {"Retry-After": "1"})], 2, [0.5], None),
    ([api_error(403)], 1, [], 403),  # not transient: at once
    ([api_error(500)] * 5, 5, [0.5, 0.75, 1.125, 1.6875], 500),  # five tries, then the last error
], ids=["500-then-429", "reset", "retry-after", "forbidden", "gives-up"])
async def test_reviews_are_retried_after_transient_failures_only(failures, calls, sleeps, raised):
    from kubeberth.operator.delegated_auth import with_retries

    attempts: list[int] = []
    slept: list[float] = []

    async def post(path: str, body: dict[str, Any]) -> Any:
        attempts.append(1)
        if len(attempts) <= len(failures):
            raise failures[len(attempts) - 1]
        return {"status": {"allowed": True}}

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    retrying = with_retries(post, sleep=sleep, rng=lambda: 0.0)
    if raised is None:
        assert await retrying("/x", {}) == {"status": {"allowed": True}}
    else:
        with pytest.raises(Exception) as info:
            await retrying("/x", {})
        assert info.value.status == raised  # type: ignore[attr-defined]
    assert (len(attempts), slept) == (calls, sleeps)


async def test_concurrent_requests_with_one_token_share_one_review():
    import asyncio

    release = asyncio.Event()
    calls: list[str] = []

    async def post(path: str, body: dict[str, Any]) -> Any:
        calls.append(body["spec"]["token"])
        await release.wait()
        return {"status": {"authenticated": True, "user": PROM}}

    tokens = TokenReviewAuthenticator(post, clock=Clock())
    waiting = [asyncio.ensure_future(tokens.authenticate("good")) for _ in range(5)]
    other = asyncio.ensure_future(tokens.authenticate("other"))
    await asyncio.sleep(0)
    waiting[0].cancel()  # one caller goes away: the others still get the answer
    release.set()
    users = await asyncio.gather(*waiting[1:], other)
    assert {u.name for u in users if u} == {PROM["username"]}
    assert sorted(calls) == ["good", "other"]
    assert tokens._inflight == {}
