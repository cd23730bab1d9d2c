"""Delegated authentication and authorization of the secure port, as kube-scheduler's.

kube-scheduler (k8s.io/apiserver's DelegatingAuthenticationOptions and
DelegatingAuthorizationOptions) asks the API server who a caller is and what it may do:

- Authentication, in upstream's order: the front proxy (a client certificate issued by the
  requestheader CA, whose user is in the X-Remote-User / X-Remote-Group / X-Remote-Extra-
  headers), a client certificate issued by the client CA (user: the CommonName, groups: the
  Organizations), a bearer token (a TokenReview); every user so found is also in
  system:authenticated. A request with none of these is system:anonymous in
  system:unauthenticated. A credential that is presented and fails (a token the TokenReview
  does not accept, a certificate no CA issued) is refused outright: 401.
- Authorization: paths always allowed (`/healthz`, `/readyz`, `/livez`), groups always allowed
  (`system:masters`), else a SubjectAccessReview of the non-resource URL with the request's
  lower-case method as its verb (`get` on `/metrics`); not allowed is 403.
- Caches: a TokenReview's answer (accepted or not; not an error) for 10 s, a SubjectAccessReview's
  for 10 s when allowed and 10 s when not (upstream's defaults), in LRU caches of bounded size.

The CA bundles and front-proxy headers come from flags, else from the ConfigMap
kube-system/extension-apiserver-authentication that kube-apiserver publishes (a failure to read
it is tolerated, as kube-scheduler tolerates it: client certificates then stay unused).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import random
import time
import urllib.parse
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from cryptography import x509
from cryptography.x509.oid import NameOID

logger = logging.getLogger(__name__)

ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
AUTHENTICATED = "system:authenticated"
ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
ALWAYS_ALLOW_GROUPS = ("system:masters",)
TOKEN_CACHE_TTL = 10.0  # --authentication-token-webhook-cache-ttl
AUTHORIZED_TTL = 10.0  # --authorization-webhook-cache-authorized-ttl
UNAUTHORIZED_TTL = 10.0  # --authorization-webhook-cache-unauthorized-ttl
TOKEN_CACHE_SIZE = 32 * 4096  # upstream stripes 32 caches; bounded here by one LRU
SAR_CACHE_SIZE = 8192  # upstream's webhook authorizer cache
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
AUTH_CONFIGMAP = "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"
# Upstream's flag defaults for the front proxy's headers.
DEFAULT_USERNAME_HEADERS = ("X-Remote-User",)
DEFAULT_UID_HEADERS: tuple[str, ...] = ()
DEFAULT_GROUP_HEADERS = ("X-Remote-Group",)
DEFAULT_EXTRA_PREFIXES = ("X-Remote-Extra-",)

# POST a JSON body to an API path and return the parsed answer (the operator's RestClient.request).
Post = Callable[[str, dict[str, Any]], Awaitable[Any]]

V = TypeVar("V")


@dataclass(frozen=True)
class User:
    name: str
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @classmethod
    def anonymous(cls) -> User:
        return cls(ANONYMOUS, groups=(UNAUTHENTICATED,))

    def with_authenticated(self) -> User:
        """Upstream's AuthenticatedGroupAdder: system:authenticated unless already there or anonymous."""
        if AUTHENTICATED in self.groups or self.name == ANONYMOUS or UNAUTHENTICATED in self.groups:
            return self
        return User(self.name, self.uid, (*self.groups, AUTHENTICATED), self.extra)


class AuthenticationFailed(Exception):
    """A presented credential was refused (401)."""


class AuthorizationError(Exception):
    """The authorizer could not decide (the SubjectAccessReview failed): 500, as upstream."""


@dataclass(frozen=True)
class Backoff:
    """Upstream's DefaultAuthWebhookRetryBackoff: 5 tries, 0.5 s apart growing 1.5 times, 20% jitter."""

    duration: float = 0.5
    factor: float = 1.5
    jitter: float = 0.2
    steps: int = 5


def transient(exc: BaseException) -> bool:
    """Upstream's DefaultShouldRetry: a reset connection, an internal error, a timeout, too many
    requests, or an answer with Retry-After."""
    from kubernetes_asyncio.client.exceptions import ApiException

    if isinstance(exc, ApiException):
        headers: Mapping[str, str] = exc.headers or {}
        return exc.status in (429, 500, 504) or "Retry-After" in headers
    return isinstance(exc, (ConnectionResetError, asyncio.TimeoutError)) or type(exc).__name__ in (
        "ServerDisconnectedError", "ClientOSError")


def with_retries(post: Post, backoff: Backoff = Backoff(), *,
                 sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 rng: Callable[[], float] = random.random) -> Post:
    """`post`, tried again after a transient failure as upstream's webhooks are (the last error raised)."""
    async def retrying(path: str, body: dict[str, Any]) -> Any:
        delay = backoff.duration
        for attempt in range(1, backoff.steps + 1):
            try:
                return await post(path, body)
            except Exception as exc:
                if attempt == backoff.steps or not transient(exc):
                    raise
            await sleep(delay + rng() * backoff.jitter * delay)
            delay *= backoff.factor
        raise AssertionError("unreachable")
    return retrying


class ExpiringLRU(Generic[V]):
    """A bounded cache whose entries expire `ttl` seconds after being set (upstream's LRUExpireCache)."""

    def __init__(self, max_size: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_size = max_size
        self.clock = clock
        self._items: OrderedDict[str, tuple[float, V]] = OrderedDict()

    def get(self, key: str) -> V | None:
        item = self._items.get(key)
        if item is None:
            return None
        expires, value = item
        if self.clock() >= expires:
            del self._items[key]
            return None
        self._items.move_to_end(key)
        return value

    def set(self, key: str, value: V, ttl: float) -> None:
        if ttl <= 0:
            return
        self._items[key] = (self.clock() + ttl, value)
        self._items.move_to_end(key)
        while len(self._items) > self.max_size:
            self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


def _user_from_review(user: Mapping[str, Any]) -> User:
    extra = tuple(sorted((k, tuple(v or ())) for k, v in (user.get("extra") or {}).items()))
    return User(str(user.get("username") or ""), str(user.get("uid") or ""), tuple(user.get("groups") or ()), extra)


class TokenReviewAuthenticator:
    """A bearer token -> its user, by a TokenReview; answers cached for `ttl` seconds (errors are not),
    and one review at a time per token (upstream's cache shares an in-flight review)."""

    def __init__(self, post: Post, *, ttl: float = TOKEN_CACHE_TTL, audiences: Sequence[str] = (),
                 clock: Callable[[], float] = time.monotonic, max_size: int = TOKEN_CACHE_SIZE) -> None:
        self.post = post
        self.ttl = ttl
        self.audiences = list(audiences)
        self.cache: ExpiringLRU[tuple[User | None]] = ExpiringLRU(max_size, clock)
        self._inflight: dict[str, asyncio.Task[User | None]] = {}

    async def authenticate(self, token: str) -> User | None:
        """The token's user, None when the API server does not accept it; raises on a failed review."""
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self.cache.get(key)
        if cached is not None:
            return cached[0]
        task = self._inflight.get(key)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._review(key, token))
            self._inflight[key] = task
            task.add_done_callback(lambda _: self._inflight.pop(key, None))
        return await asyncio.shield(task)  # a caller that goes away leaves the review to the others

    async def _review(self, key: str, token: str) -> User | None:
        spec: dict[str, Any] = {"token": token}
        if self.audiences:
            spec["audiences"] = self.audiences
        try:
            review = await self.post(TOKEN_REVIEWS, {"apiVersion": "authentication.k8s.io/v1",
                                                     "kind": "TokenReview", "spec": spec})
        except Exception as exc:
            raise AuthenticationFailed(f"TokenReview failed: {exc}") from exc
        status = (review or {}).get("status") or {}
        if status.get("authenticated"):
            user: User | None = _user_from_review(status.get("user") or {})
        elif status.get("error"):
            raise AuthenticationFailed(str(status["error"]))  # not cached, as upstream's errors
        else:
            user = None
        self.cache.set(key, (user,), self.ttl)
        return user


@dataclass
class RequestHeaderConfig:
    """The front proxy: whose certificates to trust, for which names, and the headers it sets."""

    ca: list[x509.Certificate]
    allowed_names: tuple[str, ...] = ()
    username_headers: tuple[str, ...] = DEFAULT_USERNAME_HEADERS
    uid_headers: tuple[str, ...] = DEFAULT_UID_HEADERS
    group_headers: tuple[str, ...] = DEFAULT_GROUP_HEADERS
    extra_prefixes: tuple[str, ...] = DEFAULT_EXTRA_PREFIXES


@dataclass
class AuthnConfig:
    """What the secure port trusts besides tokens: the client CA and the front proxy."""

    client_ca: list[x509.Certificate] = field(default_factory=list)
    requestheader: RequestHeaderConfig | None = None

    def trust_pem(self) -> bytes:
        """Every CA a client certificate may come from, for the TLS layer to verify against."""
        from cryptography.hazmat.primitives.serialization import Encoding

        certs = [*self.client_ca, *(self.requestheader.ca if self.requestheader else [])]
        return b"".join(c.public_bytes(Encoding.PEM) for c in certs)


def load_pem_bundle(data: bytes | str, what: str) -> list[x509.Certificate]:
    """The certificates of a PEM bundle; ValueError naming `what` when there are none or it is invalid."""
    raw = data.encode() if isinstance(data, str) else data
    try:
        certs = x509.load_pem_x509_certificates(raw)
    except ValueError as exc:
        raise ValueError(f"{what}: not a PEM certificate bundle: {exc}") from None
    if not certs:
        raise ValueError(f"{what}: no certificate in it")
    return certs


def load_pem_file(path: str, what: str) -> list[x509.Certificate]:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise ValueError(f"{what} {path}: {exc.strerror}") from None
    return load_pem_bundle(data, f"{what} {path}")


def issued_by(cert: x509.Certificate, cas: Sequence[x509.Certificate]) -> bool:
    """Whether one of `cas` signed `cert` directly (the TLS layer has already checked the chain)."""
    for ca in cas:
        try:
            cert.verify_directly_issued_by(ca)
        except Exception:  # InvalidSignature, or a different issuer or key type
            continue
        return True
    return False


def check_critical_extensions(cert: x509.Certificate) -> None:
    """AuthenticationFailed for what Go's verifier refuses and OpenSSL lets through: a critical
    subjectAltName with no name in it is an unhandled critical extension to Go."""
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    except x509.ExtensionNotFound:
        return
    if san.critical and len(san.value) == 0:
        raise AuthenticationFailed("x509: unhandled critical extension (an empty subjectAltName)")


def _names(cert: x509.Certificate, oid: x509.ObjectIdentifier) -> list[str]:
    return [str(a.value) for a in cert.subject.get_attributes_for_oid(oid)]


def _header_values(headers: Mapping[str, str] | Any, names: Sequence[str]) -> list[str]:
    out: list[str] = []
    for name in names:
        out += [v for v in headers.getall(name, []) if v] if hasattr(headers, "getall") else (
            [headers[name]] if headers.get(name) else [])
    return out


def parse_configmap(data: Mapping[str, str]) -> AuthnConfig:
    """extension-apiserver-authentication's data -> what it says about client certificates."""
    cfg = AuthnConfig()
    if data.get("client-ca-file"):
        cfg.client_ca = load_pem_bundle(data["client-ca-file"], "client-ca-file")
    if data.get("requestheader-client-ca-file"):
        def listed(key: str, default: tuple[str, ...]) -> tuple[str, ...]:
            if key not in data:
                return default
            value = json.loads(data[key] or "null")
            return tuple(value or ())
        cfg.requestheader = RequestHeaderConfig(
            ca=load_pem_bundle(data["requestheader-client-ca-file"], "requestheader-client-ca-file"),
            allowed_names=listed("requestheader-allowed-names", ()),
            username_headers=listed("requestheader-username-headers", ()),
            uid_headers=listed("requestheader-uid-headers", ()),
            group_headers=listed("requestheader-group-headers", ()),
            extra_prefixes=listed("requestheader-extra-headers-prefix", ()))
    return cfg


class RequestAuthenticator:
    """The secure port's authenticator: front proxy, client certificate, token, then anonymous."""

    def __init__(self, tokens: TokenReviewAuthenticator | None, config: AuthnConfig | None = None) -> None:
        self.tokens = tokens
        self.config = config or AuthnConfig()

    def _front_proxy(self, cert: x509.Certificate, headers: Any) -> User | None:
        rh = self.config.requestheader
        if rh is None:
            return None
        if not issued_by(cert, rh.ca):
            raise AuthenticationFailed("client certificate not issued by the requestheader CA")
        check_critical_extensions(cert)
        if rh.allowed_names:
            names = set(_names(cert, NameOID.COMMON_NAME))
            if not names & set(rh.allowed_names):
                raise AuthenticationFailed(f"client certificate's CommonName is not one of {list(rh.allowed_names)}")
        users = _header_values(headers, rh.username_headers)
        if not users:
            return None
        uids = _header_values(headers, rh.uid_headers)
        groups = _header_values(headers, rh.group_headers)
        extra: dict[str, list[str]] = {}
        for name in (headers.keys() if hasattr(headers, "keys") else ()):
            for prefix in rh.extra_prefixes:
                if name.lower().startswith(prefix.lower()):
                    key = urllib.parse.unquote(name[len(prefix):].lower())
                    extra.setdefault(key, []).extend(_header_values(headers, [name]))
        return User(users[0], uids[0] if uids else "", tuple(groups),
                    tuple(sorted((k, tuple(v)) for k, v in extra.items())))

    def _client_cert(self, cert: x509.Certificate) -> User | None:
        if not self.config.client_ca:
            return None
        if not issued_by(cert, self.config.client_ca):
            raise AuthenticationFailed("client certificate not issued by the client CA")
        check_critical_extensions(cert)
        cn = _names(cert, NameOID.COMMON_NAME)
        if not cn or not cn[0]:
            return None
        return User(cn[0], groups=tuple(_names(cert, NameOID.ORGANIZATION_NAME)))

    async def _token(self, authorization: str | None) -> User | None:
        if self.tokens is None or not authorization:
            return None
        scheme, _, token = authorization.strip().partition(" ")
        if scheme.lower() != "bearer":
            return None
        token = token.strip()
        if not token:
            return None
        user = await self.tokens.authenticate(token)
        if user is None:
            raise AuthenticationFailed("invalid bearer token")
        return user

    async def authenticate(self, *, headers: Any, peer_cert: x509.Certificate | None) -> User:
        """The caller; raises AuthenticationFailed (401) when a presented credential is refused."""
        errors: list[str] = []
        steps: list[Callable[[], Awaitable[User | None]]] = []
        if peer_cert is not None:
            async def proxy() -> User | None:
                return self._front_proxy(peer_cert, headers)

            async def client() -> User | None:
                return self._client_cert(peer_cert)
            steps += [proxy, client]

        async def token() -> User | None:
            return await self._token(headers.get("Authorization"))
        steps.append(token)
        for step in steps:
            try:
                user = await step()
            except AuthenticationFailed as exc:
                errors.append(str(exc))
                continue
            if user is not None:
                return user.with_authenticated()
        if errors:
            raise AuthenticationFailed("; ".join(errors))
        return User.anonymous()


class SubjectAccessReviewAuthorizer:
    """The secure port's authorizer: always-allowed paths and groups, else a SubjectAccessReview."""

    def __init__(self, post: Post | None, *, always_allow_paths: Sequence[str] = ALWAYS_ALLOW_PATHS,
                 always_allow_groups: Sequence[str] = ALWAYS_ALLOW_GROUPS, allowed_ttl: float = AUTHORIZED_TTL,
                 denied_ttl: float = UNAUTHORIZED_TTL, clock: Callable[[], float] = time.monotonic,
                 max_size: int = SAR_CACHE_SIZE) -> None:
        self.post = post
        self.exact = {p for p in always_allow_paths if not p.endswith("*")}
        self.prefixes = tuple(p[:-1] for p in always_allow_paths if p.endswith("*"))
        self.groups = set(always_allow_groups)
        self.allowed_ttl = allowed_ttl
        self.denied_ttl = denied_ttl
        self.cache: ExpiringLRU[dict[str, Any]] = ExpiringLRU(max_size, clock)

    def always_allowed(self, path: str) -> bool:
        return path in self.exact or any(path.startswith(p) for p in self.prefixes)

    async def authorize(self, user: User, verb: str, path: str) -> tuple[bool, str]:
        """(allowed, reason) for a non-resource request; raises AuthorizationError when it cannot tell."""
        if self.groups & set(user.groups) or self.always_allowed(path):
            return True, ""
        return await self._review(user, {"nonResourceAttributes": {"path": path, "verb": verb}})

    async def authorize_resource(self, user: User, verb: str, group: str, resource: str, namespace: str,
                                 version: str = "") -> tuple[bool, str]:
        """(allowed, reason) for `verb` on `resource` of API group `group` in `namespace` (a resource
        of kubeberth's own, served on the secure port: the dry runs)."""
        if self.groups & set(user.groups):
            return True, ""
        attrs = {"namespace": namespace, "verb": verb, "group": group, "resource": resource}
        if version:
            attrs["version"] = version
        return await self._review(user, {"resourceAttributes": attrs})

    async def _review(self, user: User, attributes: dict[str, Any]) -> tuple[bool, str]:
        if self.post is None:
            return False, ""
        spec: dict[str, Any] = {**attributes, "user": user.name, "groups": list(user.groups)}
        if user.uid:
            spec["uid"] = user.uid
        if user.extra:
            spec["extra"] = {k: list(v) for k, v in user.extra}
        key = json.dumps(spec, sort_keys=True)
        status = self.cache.get(key)
        if status is None:
            try:
                review = await self.post(SUBJECT_ACCESS_REVIEWS, {"apiVersion": "authorization.k8s.io/v1",
                                                                  "kind": "SubjectAccessReview", "spec": spec})
            except Exception as exc:
                raise AuthorizationError(f"SubjectAccessReview failed: {exc}") from exc
            status = dict((review or {}).get("status") or {})
            self.cache.set(key, status, self.allowed_ttl if status.get("allowed") else self.denied_ttl)
        reason = str(status.get("reason") or "")
        if status.get("denied") and status.get("allowed"):
            raise AuthorizationError("webhook subject access review returned both allow and deny response")
        return bool(status.get("allowed")) and not status.get("denied"), reason


def forbidden_message(user: User, verb: str, path: str, reason: str) -> str:
    """Upstream's 403 message for a non-resource request."""
    msg = f'forbidden: User "{user.name}" cannot {verb} path "{path}"'
    return f"{msg}: {reason}" if reason else msg


def forbidden_resource_message(user: User, verb: str, group: str, resource: str, namespace: str,
                               reason: str) -> str:
    """Upstream's 403 message for a namespaced resource request."""
    msg = (f'{resource}.{group} is forbidden: User "{user.name}" cannot {verb} resource "{resource}" in API group '
           f'"{group}" in the namespace "{namespace}"')
    return f"{msg}: {reason}" if reason else msg
