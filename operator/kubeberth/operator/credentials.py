"""Where the bearer token comes from, read again as client-go reads it, and what a 401 means.

A token in a file (the ServiceAccount token the kubelet mounts and rotates, a kubeconfig user's
`tokenFile`) is read again once it is a minute old and at once after the API server answered 401,
as client-go's cached token source does: a rotated or rewritten token is used without a restart.
Other credentials (an inline token, a client certificate, an exec plugin) come from the
kubernetes-asyncio `Configuration` as before.

A 401 is reported as what it is (which credential, which server), once per token and then every
few minutes while it lasts; callers keep their caches and retry with backoff. A 403 names the
missing permission once per verb and resource (`Forbidden`) and is counted.
"""

from __future__ import annotations

import inspect
import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml
from kubernetes_asyncio.client import Configuration

logger = logging.getLogger(__name__)

SERVICE_ACCOUNT_TOKEN = "/var/run/secrets/kubernetes.io/serviceaccount/token"
TOKEN_CACHE_SECONDS = 60.0  # client-go's cachingTokenSource for a token file
REPEAT_SECONDS = 300.0  # a 401 that lasts is logged again this often


async def authorization(cfg: Configuration) -> str | None:
    """The Authorization header of a configuration's bearer token ("Bearer ..."), if it has one."""
    header: Any = cfg.get_api_key_with_prefix("BearerToken")
    if inspect.isawaitable(header):  # kubernetes-asyncio >= 33.3 refreshes tokens asynchronously
        header = await header
    return str(header) if header else None


class Credentials:
    """The Authorization header of every request, and the story of the last 401."""

    def __init__(self, configuration: Configuration, *, token_file: str | None = None,
                 description: str = "", monotonic: Callable[[], float] = time.monotonic,
                 cache_seconds: float = TOKEN_CACHE_SECONDS) -> None:
        self.configuration = configuration
        self.token_file = token_file
        self.description = description or describe_static(configuration)
        self.monotonic = monotonic
        self.cache_seconds = cache_seconds
        self._token: str | None = None
        self._read_at: float | None = None
        self.rejected = False  # the last answer to our credentials was 401
        self.rejections = 0
        self._reported: tuple[str | None, float] | None = None  # (token, when) of the last 401 log line
        if token_file is not None:
            # In-cluster, kubernetes-asyncio reads the file on its own schedule; ours replaces it.
            configuration.refresh_api_key_hook = None

    @property
    def server(self) -> str:
        return str(self.configuration.host)

    def _read(self) -> str | None:
        assert self.token_file is not None
        try:
            with open(self.token_file) as f:
                token = f.read().strip()
        except OSError as exc:
            if self._token is None:
                logger.error("Cannot read the bearer token file %s: %s", self.token_file, exc.strerror)
            else:
                logger.warning("Cannot read the bearer token file %s again (%s); keeping the token read before",
                               self.token_file, exc.strerror)
            return self._token
        if not token:
            logger.error("The bearer token file %s is empty", self.token_file)
            return self._token
        if self._token is not None and token != self._token:
            logger.info("Read a new bearer token from %s", self.token_file)
        return token

    def token(self) -> str | None:
        """The token of the file, read again once it is `cache_seconds` old or after a 401."""
        now = self.monotonic()
        if self._read_at is None or now - self._read_at >= self.cache_seconds:
            self._token = self._read()
            self._read_at = now
            if self._token:
                self.configuration.api_key["BearerToken"] = self._token
                self.configuration.api_key_prefix["BearerToken"] = "Bearer"
        return self._token

    async def authorization(self) -> str | None:
        """The Authorization header value ("Bearer ..."), if a token is used."""
        if self.token_file is not None:
            token = self.token()
            if token:
                return f"Bearer {token}"
        return await authorization(self.configuration)

    def unauthorized(self, method: str, path: str) -> None:
        """The API server answered 401: read the token file again before the next request, and say so."""
        self._read_at = None
        self.rejected = True
        self.rejections += 1
        now = self.monotonic()
        token = self._token if self.token_file is not None else None
        if self._reported is not None and self._reported[0] == token and now - self._reported[1] < REPEAT_SECONDS:
            return
        again = self._reported is not None and self._reported[0] == token
        self._reported = (token, now)
        source = (f"; the token file is read again before every retry (and every "
                  f"{self.cache_seconds:.0f}s), so a renewed token is used without a restart"
                  if self.token_file is not None else "; renew the credentials (the process reads "
                  "an inline kubeconfig token only at start-up)")
        logger.error("Unauthorized (401)%s: the API server %s rejected the credentials of %s (%s %s); "
                     "the scheduler keeps its cache and retries with backoff%s",
                     " still" if again else "", self.server, self.description, method, path, source)

    def accepted(self) -> None:
        """A request went through: the credentials work (again)."""
        if self.rejected:
            self.rejected = False
            self._reported = None
            logger.warning("The API server %s accepts the credentials of %s again", self.server, self.description)


def describe_static(configuration: Configuration) -> str:
    if configuration.cert_file:
        return f"the client certificate {configuration.cert_file}"
    if configuration.api_key.get("BearerToken") or configuration.refresh_api_key_hook is not None:
        return "the bearer token"
    if configuration.username:
        return f"the basic-auth user {configuration.username!r}"
    return "no credentials (anonymous)"


@dataclass(frozen=True)
class KubeconfigUser:
    name: str
    path: str  # the kubeconfig file that defines the user
    user: Mapping[str, Any]

    @property
    def token_file(self) -> str | None:
        token_file = self.user.get("tokenFile")
        if not token_file or self.user.get("token"):
            return None  # client-go: an inline token wins over tokenFile
        return str(token_file) if os.path.isabs(str(token_file)) else \
            os.path.join(os.path.dirname(os.path.abspath(self.path)), str(token_file))

    def describe(self) -> str:
        what = f"kubeconfig user {self.name!r} ({self.path}"
        if self.token_file:
            return f"{what}, tokenFile {self.token_file})"
        if self.user.get("token"):
            return f"{what}, its token)"
        if self.user.get("exec"):
            return f"{what}, exec {(self.user['exec'] or {}).get('command')})"
        if self.user.get("client-certificate") or self.user.get("client-certificate-data"):
            return f"{what}, client certificate)"
        return f"{what})"


def kubeconfig_user(config_file: str | None, context: str | None) -> KubeconfigUser | None:
    """The user of the context in use, read as kubectl merges $KUBECONFIG (first file wins); None
    when it cannot be told (the kubeconfig loader reports a broken file on its own)."""
    paths = [config_file] if config_file else [
        p for p in os.environ.get("KUBECONFIG", "~/.kube/config").split(os.pathsep) if p]
    docs: list[tuple[str, Mapping[str, Any]]] = []
    for path in paths:
        try:
            with open(os.path.expanduser(path)) as f:
                doc = yaml.safe_load(f)
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(doc, Mapping):
            docs.append((os.path.expanduser(path), doc))
    current = context or next((str(d["current-context"]) for _, d in docs if d.get("current-context")), None)
    user_name = next((str((c.get("context") or {}).get("user") or "") for _, d in docs
                      for c in d.get("contexts") or [] if isinstance(c, Mapping) and c.get("name") == current), "")
    for path, doc in docs:
        for u in doc.get("users") or []:
            if isinstance(u, Mapping) and u.get("name") == user_name:
                return KubeconfigUser(name=user_name, path=path, user=u.get("user") or {})
    return None


# --- 403: the permission that is missing ---

VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}


@dataclass(frozen=True)
class ResourceRequest:
    """What RBAC is asked for a request: verb, API group, resource (with its subresource), namespace."""

    verb: str
    group: str
    resource: str
    namespace: str = ""

    @property
    def rbac_resource(self) -> str:
        """The resource as `kubectl auth can-i` names it: pods/binding, leases.coordination.k8s.io."""
        if not self.group:
            return self.resource
        base, _, sub = self.resource.partition("/")
        return f"{base}.{self.group}" + (f"/{sub}" if sub else "")


def resource_request(method: str, path: str, query: Mapping[str, str] | None = None) -> ResourceRequest | None:
    """The RBAC request of an API path (None for a path that is not a resource, e.g. /version)."""
    parts = [p for p in path.split("?", 1)[0].split("/") if p]
    if len(parts) >= 2 and parts[0] == "api":
        group, rest = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        return None
    namespace = ""
    if len(rest) >= 3 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    if not rest:
        return None
    resource = rest[0] + (f"/{rest[2]}" if len(rest) >= 3 else "")
    named = len(rest) >= 2
    method = method.upper()
    if method == "GET":
        verb = "get" if named else ("watch" if (query or {}).get("watch") in ("true", "1") else "list")
    elif method == "DELETE":
        verb = "delete" if named else "deletecollection"
    else:
        verb = VERBS.get(method, method.lower())
    return ResourceRequest(verb=verb, group=group, resource=resource, namespace=namespace)


_USER = re.compile(r'User "([^"]*)"')


def subject_of(message: str, fallback: str) -> str:
    """Who was refused, from the API server's message (`User "system:serviceaccount:ns:sa" cannot ...`)."""
    match = _USER.search(message)
    if match is None:
        return fallback
    user = match.group(1)
    if user.startswith("system:serviceaccount:") and user.count(":") == 3:
        _, _, ns, name = user.split(":")
        return f"the ServiceAccount {ns}/{name}"
    return f"the user {user!r}"


def status_message(body: str | bytes | None) -> str:
    try:
        return str(json.loads(body or "{}").get("message") or "")
    except (ValueError, AttributeError):
        return ""


class Forbidden:
    """A 403: logged once per verb and resource with the missing permission named, and counted."""

    def __init__(self, *, subject: str = "the credentials in use",
                 count: Callable[[str, str], None] | None = None) -> None:
        self.subject = subject
        self.count = count
        self.reported: set[tuple[str, str]] = set()

    def report(self, method: str, path: str, query: Mapping[str, str] | None, body: str | bytes | None) -> None:
        request = resource_request(method, path, query)
        message = status_message(body)
        if request is None:
            key = (method.upper(), path)
            if key not in self.reported:
                self.reported.add(key)
                logger.error("Forbidden (403): %s %s: %s", method.upper(), path, message or "no message")
            return
        resource = request.rbac_resource
        if self.count is not None:
            self.count(request.verb, resource)
        key = (request.verb, resource)
        if key in self.reported:
            return
        self.reported.add(key)
        where = f" in namespace {request.namespace}" if request.namespace else ""
        logger.error("forbidden: %s %s%s: %s lacks RBAC verb %s on %s (API group %r); grant it in its "
                     "(Cluster)Role. The API server said: %s. Logged once per verb and resource, counted in "
                     "kubeberth_api_forbidden_total", request.verb, resource, where,
                     subject_of(message, self.subject), request.verb, request.resource, request.group,
                     message or "no message")
