"""The dry-run service against the real API server, on the dry-run front's port (--dry-run-port):
kubeberth runs with its ServiceAccount's token and the RBAC of `manifests/`, the callers are
ServiceAccounts with real tokens; the SubjectAccessReview on `dryruns.kubeberth.io` decides
(ClusterRole kubeberth-dryrun bound in team-a only), and the answer is where the scheduler then
binds the same pod."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

import pytest

from .conftest import Operators
from .control_plane import ControlPlane, ControlPlaneError, kubectl
from .kube import Kube, eventually, node, pod

pytestmark = pytest.mark.cluster

NS = "team-a"
PATH = f"/apis/kubeberth.io/v1alpha1/namespaces/{NS}/dryruns"


def ensure(plane: ControlPlane, *args: str) -> None:
    proc = kubectl(plane, *args, check=False)
    if proc.returncode != 0 and "AlreadyExists" not in proc.stderr:
        raise ControlPlaneError(f"kubectl {' '.join(args)}: {proc.stderr}")


def post(base: str, path: str, body: dict[str, Any], token: str | None) -> tuple[int, Any]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the self-signed certificate kubeberth made at start
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {token}"} if token else {})}
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=30, context=ctx) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")
    except urllib.error.URLError:  # nothing listens yet: the front takes a second to start
        return 0, None


async def test_a_dry_run_answers_where_the_scheduler_then_binds(operators: Operators, control_plane: ControlPlane,
                                                                 kube: Kube) -> None:
    ensure(control_plane, "create", "serviceaccount", "planner", "-n", NS)
    ensure(control_plane, "create", "serviceaccount", "stranger", "-n", NS)
    ensure(control_plane, "create", "rolebinding", "test-planner-dryrun", "-n", NS,
           "--clusterrole=kubeberth-dryrun", f"--serviceaccount={NS}:planner")

    def token(sa: str) -> str:
        return kubectl(control_plane, "create", "token", sa, "-n", NS, "--duration=1h").stdout.strip()

    planner, stranger = token("planner"), token("stranger")
    await kube.create("nodes", node("small", cpu="2"))
    await kube.create("nodes", node("large", cpu="8"))
    op = operators.start(secure=True, dry_run=True)
    base = f"https://127.0.0.1:{op.dry_run_port}"
    wanted = pod("web", namespace=NS, cpu="1")
    body = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "DryRun", "spec": {"pod": wanted, "copies": 1}}

    async def two_nodes_known() -> Any:  # the watch has brought both nodes
        status, got = post(base, PATH, body, planner)
        return got if status == 201 and got["status"]["snapshot"]["nodes"] == 2 else None

    answer = await eventually(two_nodes_known, what="a dry run seeing both nodes")
    for who, tok, path, code in [("anonymous", None, PATH, 403), ("garbage", "not-a-token", PATH, 401),
                                 ("stranger", stranger, PATH, 403),
                                 ("planner elsewhere", planner, PATH.replace(NS, "default"), 403)]:
        status, got = post(base, path, body, tok)
        assert status == code, f"{who}: {status} {got}"
        assert got["reason"] == ("Unauthorized" if code == 401 else "Forbidden"), who
    status, _ = post(f"https://127.0.0.1:{op.metrics_port}", PATH, body, planner)
    assert status == 307  # the secure port (the scheduler's process) sends dry runs on to the front
    status, bad = post(base, PATH, {**body, "spec": {"pod": wanted, "copies": 0}}, planner)
    assert (status, bad["message"].split(":")[0]) == (400, "spec.copies")
    (answered,) = answer["status"]["pods"]
    assert answered["status"] == "Scheduled" and answer["status"]["servedBy"] == "worker"  # a fork of the operator
    status, explained = post(base, PATH, {**body, "spec": {"pod": wanted, "explain": True}}, planner)
    assert status == 201 and explained["status"]["servedBy"] == "worker"
    (by_worker,) = explained["status"]["pods"]
    assert by_worker["node"] == answered["node"] and by_worker["explanation"]["scope"]["namespace"] == NS
    status, many = post(base, PATH, {**body, "spec": {"pod": pod("big", namespace=NS, cpu="3"), "copies": 4}},
                        planner)
    assert status == 201
    assert [p.get("node") for p in many["status"]["pods"]] == ["large", "large", None, None]
    assert many["status"]["pods"][2]["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")

    await kube.create("pods", wanted, NS)

    async def bound() -> str | None:
        return (await kube.get("pods", "web", NS))["spec"].get("nodeName")

    assert await eventually(bound, what="web bound") == answered["node"]
