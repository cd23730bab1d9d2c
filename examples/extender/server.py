"""A small scheduler extender, to run and point a SchedulingProfile at.

    python examples/extender/server.py --port 8888

It speaks upstream's extender protocol (k8s.io/kube-scheduler/extender/v1), so
it works with kube-scheduler as well as with kubeberth:

- POST <prefix>/filter      drops nodes labelled example.com/blocked=true;
- POST <prefix>/prioritize  prefers nodes labelled example.com/preferred: the
                            label's value as a score 0..10 when it is a number,
                            else 10; other nodes score 0;
- POST <prefix>/preempt     accepts the scheduler's candidates as they are.

It is not nodeCacheCapable: it decides from the Node objects it is sent. Only
aiohttp is needed, so the file can be copied out and run on its own.
"""

from __future__ import annotations

import argparse
import json
import logging
from typing import Any

from aiohttp import web

BLOCKED = "example.com/blocked"
PREFERRED = "example.com/preferred"
MAX_EXTENDER_PRIORITY = 10

log = logging.getLogger("example-extender")


def _get(obj: Any, key: str) -> Any:
    """A field of a request object: Go's encoder writes the field names, but match as Go's
    decoder does (case-insensitively) so any client works."""
    if not isinstance(obj, dict):
        return None
    if key in obj:
        return obj[key]
    folded = key.casefold()
    for k, v in obj.items():
        if isinstance(k, str) and k.casefold() == folded:
            return v
    return None


def _nodes(args: dict[str, Any]) -> list[dict[str, Any]]:
    return list(_get(_get(args, "Nodes"), "items") or [])


def _name(node: dict[str, Any]) -> str:
    return str((node.get("metadata") or {}).get("name") or "")


def _labels(node: dict[str, Any]) -> dict[str, str]:
    return (node.get("metadata") or {}).get("labels") or {}


def _pod_key(args: dict[str, Any]) -> str:
    meta = (_get(args, "Pod") or {}).get("metadata") or {}
    return f"{meta.get('namespace', 'default')}/{meta.get('name', '?')}"


def filter_nodes(args: dict[str, Any]) -> dict[str, Any]:
    """ExtenderArgs -> ExtenderFilterResult."""
    names = _get(args, "NodeNames")
    if names is not None and _get(args, "Nodes") is None:
        # Sent names only (nodeCacheCapable): this extender keeps no node cache, so it lets them pass.
        return {"Nodes": None, "NodeNames": list(names), "FailedNodes": {}, "FailedAndUnresolvableNodes": {},
                "Error": ""}
    kept, failed = [], {}
    for node in _nodes(args):
        if _labels(node).get(BLOCKED) == "true":
            failed[_name(node)] = f"node(s) had label {BLOCKED}=true"
        else:
            kept.append(node)
    log.info("filter %s: kept %s, failed %s", _pod_key(args), [_name(n) for n in kept], sorted(failed))
    return {"Nodes": {"metadata": {}, "items": kept}, "NodeNames": None, "FailedNodes": failed,
            "FailedAndUnresolvableNodes": {}, "Error": ""}


def preference(labels: dict[str, str]) -> int:
    value = labels.get(PREFERRED)
    if value is None:
        return 0
    try:
        return max(0, min(MAX_EXTENDER_PRIORITY, int(value)))
    except ValueError:
        return MAX_EXTENDER_PRIORITY


def prioritize_nodes(args: dict[str, Any]) -> list[dict[str, Any]]:
    """ExtenderArgs -> HostPriorityList."""
    result = [{"Host": _name(n), "Score": preference(_labels(n))} for n in _nodes(args)]
    names = _get(args, "NodeNames")
    if names is not None and _get(args, "Nodes") is None:
        result = [{"Host": n, "Score": 0} for n in names]
    log.info("prioritize %s: %s", _pod_key(args), {r["Host"]: r["Score"] for r in result})
    return result


def preempt(args: dict[str, Any]) -> dict[str, Any]:
    """ExtenderPreemptionArgs -> ExtenderPreemptionResult: every candidate kept as proposed."""
    meta = _get(args, "NodeNameToMetaVictims")
    if meta is None:
        meta = {
            node: {"Pods": [{"UID": ((p or {}).get("metadata") or {}).get("uid", "")}
                            for p in _get(victims, "Pods") or []],
                   "NumPDBViolations": _get(victims, "NumPDBViolations") or 0}
            for node, victims in (_get(args, "NodeNameToVictims") or {}).items()}
    log.info("preempt %s: candidates %s", _pod_key(args), sorted(meta))
    return {"NodeNameToMetaVictims": meta}


VERBS = {"filter": filter_nodes, "prioritize": prioritize_nodes, "preempt": preempt}


async def handle(request: web.Request) -> web.Response:
    verb = VERBS[request.match_info["verb"]]
    try:
        args = json.loads(await request.read())
    except ValueError as exc:
        return web.json_response({"Error": f"invalid request: {exc}"}, status=400)
    if not isinstance(args, dict):
        return web.json_response({"Error": "the request is not a JSON object"}, status=400)
    return web.json_response(verb(args))


async def healthz(_: web.Request) -> web.Response:
    return web.Response(text="ok")


def make_app(prefix: str = "/api/scheduler") -> web.Application:
    app = web.Application()
    prefix = "/" + prefix.strip("/")
    app.router.add_post(prefix + "/{verb:filter|prioritize|preempt}", handle)
    app.router.add_get("/healthz", healthz)
    return app


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8888, help="port to listen on (default 8888)")
    parser.add_argument("--prefix", default="/api/scheduler", help="URL prefix of the verbs")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    web.run_app(make_app(args.prefix), host=args.host, port=args.port, access_log=None)


if __name__ == "__main__":
    main()
