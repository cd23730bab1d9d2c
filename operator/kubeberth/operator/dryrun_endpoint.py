"""The dry-run service's HTTP handler (docs/guides/dry-run.md):

    POST /apis/kubeberth.io/v1alpha1/namespaces/{namespace}/dryruns

Served by the dry-run front (dryrun_front.py: a process of its own, on --dry-run-port) with the
secure port's server (secure_serving.py). The caller is authenticated by the secure port's chain
(TokenReview, client certificates, the front proxy) and authorized here by a SubjectAccessReview
for verb `create` on resource `dryruns` of API group `kubeberth.io` in the path's namespace
(system:masters always may). The body is a `DryRun` (kubeberth.dryrun.models); its pods must be
of that namespace. The answer is the DryRun with its status, computed by whoever `workers` is:
in the front, a forked copy of the scheduler (dryrun_front.Copies); in tests, the in-process
service (kubeberth.dryrun.service) as well.

Status codes: 201 the answer; 400 a malformed body (the field named); 401 a refused credential;
403 not allowed; 404 no such path; 429 too many dry runs waiting (Retry-After); 500 the
SubjectAccessReview or the worker failed; 501 this platform cannot fork; 503 not synced yet.
"""

from __future__ import annotations

import itertools
import logging
import uuid
from collections.abc import Callable
from typing import Any, Protocol

import orjson
from aiohttp import web
from pydantic import ValidationError

from ..dryrun.models import (
    API_VERSION,
    GROUP,
    KIND,
    RESOURCE,
    VERB,
    VERSION,
    DryRun,
    field_error,
)
from ..dryrun.worker import Overloaded, ScopeOf, supported
from ..model import PodGroup
from ..model.errors import ModelError
from .delegated_auth import AuthorizationError, SubjectAccessReviewAuthorizer, User, forbidden_resource_message

logger = logging.getLogger(__name__)

ROUTE = f"/apis/{GROUP}/{VERSION}/namespaces/{{namespace}}/{RESOURCE}"
MAX_BODY = 4 << 20

class Answerer(Protocol):
    """The front's Copies, dryrun.service.DryRunService or its workers: a request -> the DryRun's status."""

    async def ask(self, request: dict[str, Any]) -> dict[str, Any]: ...


def _status(code: int, reason: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
    body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
            "reason": reason, "code": code}
    return web.Response(status=code, body=orjson.dumps(body) + b"\n", content_type="application/json",
                        headers=headers)


def bad_request(message: str) -> web.Response:
    return _status(400, "BadRequest", message)


def pods_of(dry: DryRun, namespace: str) -> tuple[list[dict[str, Any]], dict[str, Any] | None, int | None]:
    """The pods to try (copies named `<name>-<i>`, each with a uid of its own), the PodGroup and its
    minCount; ValueError naming the field when a pod is not of `namespace`."""
    spec = dry.spec
    group: dict[str, Any] | None = None
    min_count: int | None = None
    if spec.podGroup is not None:
        group = spec.podGroup.model_dump(exclude_none=True)
        group.setdefault("apiVersion", "scheduling.k8s.io/v1beta1")
        group.setdefault("kind", "PodGroup")
        meta = group.setdefault("metadata", {})
        if meta.get("namespace", namespace) != namespace:
            raise ValueError(f"spec.podGroup.metadata.namespace: {meta['namespace']!r} is not the path's "
                             f"namespace {namespace!r}")
        meta["namespace"] = namespace
        meta.setdefault("uid", f"dryrun-{uuid.uuid4().hex}")
        try:
            min_count = PodGroup(group).min_count
        except ModelError as exc:
            raise ValueError(f"spec.podGroup: {exc}") from None
    if spec.pod is not None:
        sources = [("spec.pod", spec.pod.model_dump(exclude_none=True))] * spec.copies
    else:
        sources = [(f"spec.pods[{i}]", p.model_dump(exclude_none=True)) for i, p in enumerate(spec.pods or [])]
    out = []
    run = uuid.uuid4().hex[:10]
    for i, (where, raw) in zip(itertools.count(), sources):
        pod = dict(raw)
        meta = dict(pod.get("metadata") or {})
        if meta.get("namespace", namespace) != namespace:
            raise ValueError(f"{where}.metadata.namespace: {meta['namespace']!r} is not the path's "
                             f"namespace {namespace!r}")
        name = meta.get("name") or f"{meta.get('generateName') or 'dryrun-'}{run}"
        if spec.pod is not None and spec.copies > 1:
            name = f"{name}-{i}"
        meta.update(namespace=namespace, name=name, uid=f"dryrun-{run}-{i}")
        pod["metadata"] = meta
        pod.setdefault("apiVersion", "v1")
        pod.setdefault("kind", "Pod")
        pod.pop("status", None)
        out.append(pod)
    return out, group, min_count


class DryRunEndpoint:
    """The handler; `workers` answer, `scope_of` says what the caller's namespace may read (None: the
    answerer finds out, on its copy of the scheduler), `ready` whether the scheduler has listed
    everything once."""

    def __init__(self, workers: Answerer, scope_of: ScopeOf | None,
                 ready: Callable[[], bool] = lambda: True) -> None:
        self.workers = workers
        self.scope_of = scope_of
        self.ready = ready
        self.served = 0

    def routes(self) -> dict[str, Any]:
        return {ROUTE: self.serve}

    async def serve(self, request: web.Request, user: User,
                    authorizer: SubjectAccessReviewAuthorizer | None) -> web.StreamResponse:
        namespace = request.match_info["namespace"]
        if authorizer is not None:
            try:
                allowed, reason = await authorizer.authorize_resource(user, VERB, GROUP, RESOURCE, namespace, VERSION)
            except AuthorizationError as exc:
                logger.warning("Could not authorize a dry run in %s for %s: %s", namespace, user.name, exc)
                return _status(500, "InternalError", f"authorization failed: {exc}")
            if not allowed:
                return _status(403, "Forbidden",
                               forbidden_resource_message(user, VERB, GROUP, RESOURCE, namespace, reason),
                               headers={"X-Content-Type-Options": "nosniff"})
        if not supported():
            return _status(501, "NotImplemented", "dry runs need fork(): Linux only")
        if not self.ready():
            return _status(503, "ServiceUnavailable", "the scheduler has not listed the cluster yet",
                           headers={"Retry-After": "1"})
        if request.content_length is not None and request.content_length > MAX_BODY:
            return _status(413, "RequestEntityTooLarge", f"the body is larger than {MAX_BODY} bytes")
        try:
            body = orjson.loads(await request.read())
        except orjson.JSONDecodeError as exc:
            return bad_request(f"the body is not JSON: {exc}")
        if not isinstance(body, dict):
            return bad_request(f"the body is not a {KIND} object")
        try:
            dry = DryRun.model_validate(body)
            pods, group, min_count = pods_of(dry, namespace)
        except ValidationError as exc:
            return bad_request(field_error(exc))
        except ValueError as exc:
            return bad_request(str(exc))
        ask: dict[str, Any] = {"namespace": namespace, "pods": pods, "explain": dry.spec.explain,
                               "pod_group": group, "min_count": min_count}
        if self.scope_of is not None:
            ask["detail"], ask["namespaces"] = self.scope_of(namespace)
        try:
            reply = await self.workers.ask(ask)
        except Overloaded as exc:
            return _status(429, "TooManyRequests", f"too many dry runs: {exc}", headers={"Retry-After": "1"})
        except Exception as exc:
            logger.warning("A dry-run worker failed: %s", exc)
            return _status(500, "InternalError", f"the dry run failed: {exc}")
        if "error" in reply:
            if reply.get("internal"):
                return _status(500, "InternalError", str(reply["error"]))
            return bad_request(str(reply["error"]))
        self.served += 1
        out = {"apiVersion": API_VERSION, "kind": KIND, "metadata": dry.metadata,
               "spec": dry.spec.model_dump(exclude_none=True), "status": reply}
        return web.Response(status=201, body=orjson.dumps(out), content_type="application/json")


def redirect_routes(port: int, up: Callable[[], bool]) -> dict[str, Any]:
    """The dry-run path on the secure port: 307 to the same path on the front's `port` (the
    caller's host, the same scheme; a 307 keeps the method and the body), 503 with Retry-After
    while the front is not up (`up`). The secure port authenticates the caller first, as for any
    path; the front authorizes the dry run itself."""

    async def serve(request: web.Request, user: User,
                    authorizer: SubjectAccessReviewAuthorizer | None) -> web.StreamResponse:
        if not up():
            return _status(503, "ServiceUnavailable", "the dry runs' process is starting", headers={"Retry-After": "1"})
        host = request.url.host or "127.0.0.1"
        host = f"[{host}]" if ":" in host else host
        location = f"{request.scheme}://{host}:{port}{request.path_qs}"
        return web.Response(status=307, headers={"Location": location})

    return {ROUTE: serve}
