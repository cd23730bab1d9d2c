"""Credentials and outages against a real kube-apiserver: nothing the API server answers ends the process.

- An API server answering 503 for longer than every retry budget (kopf's own included), through a
  fault-injecting proxy: the process lives, its probe says synced false, a pod created meanwhile
  binds after (KUBEBERTH_OUTAGE_SECONDS, default 45 s: kopf's retries used to give up after 34 s).
- Credentials refused (401) from the start, through the proxy: told as what they are, kopf's login
  waits instead of ending the process, and the pods bind once they are accepted.
- A ServiceAccount deleted under a running operator (its token refused): told, and a token file
  rewritten with a valid token is used without a restart; a leader in that state says why it lost
  the Lease.
- The ClusterRoleBinding removed: the 403 of pods/binding is logged once with the permission named
  and counted; the pod binds once the binding is back.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import NAMESPACE, SERVICE_ACCOUNT, OperatorProcess, Operators
from .control_plane import ROOT, ControlPlane, free_port, kubectl
from .fault_proxy import FaultProxy
from .kube import ApiError, Kube, eventually, node, pod

pytestmark = pytest.mark.cluster

OUTAGE_SECONDS = float(os.environ.get("KUBEBERTH_OUTAGE_SECONDS", "45"))
ROTATED = "kubeberth-rotated"  # a second ServiceAccount with kubeberth's roles, deleted by the tests


def write_kubeconfig(path: Path, *, server: str, user: str, token: str | None = None,
                     token_file: Path | None = None, ca: Path | None = None) -> Path:
    cluster: dict[str, object] = {"server": server}
    if ca is not None and server.startswith("https"):
        cluster["certificate-authority"] = str(ca)
    credentials = {"token": token} if token is not None else {"tokenFile": str(token_file)}
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": cluster}],
        "users": [{"name": user, "user": credentials}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": user}}]}))
    return path


def create_token(plane: ControlPlane, account: str = SERVICE_ACCOUNT) -> str:
    return kubectl(plane, "create", "token", account, "-n", NAMESPACE, "--duration=1h").stdout.strip()


async def bound(kube: Kube, name: str) -> str | None:
    return (await kube.get("pods", name, "default"))["spec"].get("nodeName")


async def scheduler_health(op: OperatorProcess) -> dict[str, object]:
    health = await asyncio.to_thread(op.health)
    return dict((health or {}).get("scheduler") or {})


def lines(op: OperatorProcess, text: str) -> list[str]:
    return [line for line in op.log().splitlines() if text in line]


async def logged(op: OperatorProcess, text: str, timeout: float = 30.0) -> list[str]:
    async def check() -> list[str]:
        assert op.process.alive(), f"kubeberth run exited:\n{op.process.tail(60)}"
        return lines(op, text)
    return await eventually(check, timeout=timeout, interval=0.2, what=f"{text!r} in the log")


async def hold(op: OperatorProcess, seconds: float) -> None:
    """The process lives and its probe says synced: false for `seconds`."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert op.process.alive(), f"kubeberth run exited:\n{op.process.tail(60)}"
        assert (await scheduler_health(op)).get("synced") is False
        await asyncio.sleep(1.0)


@pytest.fixture
def rotated_account(control_plane: ControlPlane) -> Iterator[str]:
    """A ServiceAccount bound to kubeberth's ClusterRole and leader-election Role; its token."""
    kubectl(control_plane, "create", "serviceaccount", ROTATED, "-n", NAMESPACE)
    kubectl(control_plane, "create", "clusterrolebinding", ROTATED, "--clusterrole=kubeberth",
            f"--serviceaccount={NAMESPACE}:{ROTATED}")
    kubectl(control_plane, "create", "rolebinding", ROTATED, "-n", NAMESPACE, "--role=kubeberth-leader-election",
            f"--serviceaccount={NAMESPACE}:{ROTATED}")
    try:
        yield create_token(control_plane, ROTATED)
    finally:
        kubectl(control_plane, "delete", "serviceaccount", ROTATED, "-n", NAMESPACE, "--ignore-not-found")
        kubectl(control_plane, "delete", "clusterrolebinding", ROTATED, "--ignore-not-found")
        kubectl(control_plane, "delete", "rolebinding", ROTATED, "-n", NAMESPACE, "--ignore-not-found")


async def revoke(plane: ControlPlane, token: str) -> None:
    """Delete the ServiceAccount, and wait out the API server's cache of accepted tokens (10 s)."""
    kubectl(plane, "delete", "serviceaccount", ROTATED, "-n", NAMESPACE)

    async def refused() -> bool:
        async with Kube(plane.url, token, plane.ssl_context()) as client:
            try:
                await client.list("nodes")
            except ApiError as exc:
                return exc.status == 401
        return False

    await eventually(refused, timeout=30, interval=0.5, what="the deleted ServiceAccount's token refused")


async def test_an_api_server_answering_503_longer_than_every_retry_budget_is_survived(
        control_plane: ControlPlane, kube: Kube, operators: Operators, tmp_path: Path) -> None:
    await kube.create("nodes", node("n1"))
    with FaultProxy.started(control_plane.url, control_plane.ssl_context()) as proxy:
        config = write_kubeconfig(tmp_path / "proxy.kubeconfig", server=proxy.url, user="kubeberth",
                                  token=create_token(control_plane))
        op = operators.start(kubeconfig=config)
        await kube.create("pods", pod("before"))
        await eventually(lambda: bound(kube, "before"), what="bound before the outage")
        proxy.fail(503)
        failed_at = time.monotonic()
        await eventually(lambda: _unsynced(op), what="the probe says synced: false")
        await kube.create("pods", pod("during"))  # straight to the API server: the operator cannot see it
        await hold(op, max(OUTAGE_SECONDS - (time.monotonic() - failed_at), 1.0))
        assert await bound(kube, "during") is None
        assert proxy.faulted > 0
        proxy.heal()
        assert await eventually(lambda: bound(kube, "during"), timeout=90, interval=0.5,
                                what="bound after the outage") == "n1"
        await eventually(lambda: _synced(op), timeout=60, interval=0.5, what="synced again")
        assert op.process.alive()
        # kopf's own resource scanning is off, and it watches nothing: the kopf handlers of installed
        # plugins (make install adds Coscheduling's) run only while a profile enables them
        assert not lines(op, "APIServerError") and not lines(op, "escalating") and not lines(op, "has failed")


async def _synced(op: OperatorProcess) -> bool:
    return (await scheduler_health(op)).get("synced") is True


async def _unsynced(op: OperatorProcess) -> bool:
    return (await scheduler_health(op)).get("synced") is False


async def test_credentials_refused_from_the_start_are_told_and_the_process_waits_for_them(
        control_plane: ControlPlane, kube: Kube, operators: Operators, tmp_path: Path) -> None:
    await kube.create("nodes", node("n1"))
    with FaultProxy.started(control_plane.url, control_plane.ssl_context()) as proxy:
        proxy.fail(401)
        config = write_kubeconfig(tmp_path / "proxy.kubeconfig", server=proxy.url, user="kubeberth",
                                  token=create_token(control_plane))
        op = operators.start(kubeconfig=config, wait=False)
        told = await logged(op, "Unauthorized (401)")
        assert (f"Unauthorized (401): the API server {proxy.url} rejected the credentials of kubeconfig user "
                f"'kubeberth' ({config}, its token)") in told[0]
        await logged(op, "kopf's login waits until the API server")
        await kube.create("pods", pod("waiting"))
        await hold(op, 8.0)
        assert len(lines(op, "Unauthorized (401)")) == 1  # once, not once per request
        proxy.heal()
        assert await eventually(lambda: bound(kube, "waiting"), timeout=60, interval=0.5,
                                what="bound once the credentials are accepted") == "n1"
        assert op.process.alive()
        assert lines(op, "accepts the credentials of kubeconfig user 'kubeberth'")
        assert not lines(op, "LoginError")


async def test_a_revoked_token_is_told_and_a_rewritten_token_file_is_used_without_a_restart(
        control_plane: ControlPlane, kube: Kube, operators: Operators, tmp_path: Path,
        rotated_account: str) -> None:
    await kube.create("nodes", node("n1"))
    token_file = tmp_path / "token"
    token_file.write_text(rotated_account)
    config = write_kubeconfig(tmp_path / "file.kubeconfig", server=control_plane.url, user="rotated",
                              token_file=token_file, ca=control_plane.ca_path)
    op = operators.start(kubeconfig=config)
    await revoke(control_plane, rotated_account)
    await kube.create("pods", pod("after-revocation"))  # seen on the watch opened before
    told = await logged(op, "Unauthorized (401)")
    assert (f"the API server {control_plane.url} rejected the credentials of kubeconfig user 'rotated' "
            f"({config}, tokenFile {token_file})") in told[0]
    assert "the token file is read again before every retry" in told[0]
    assert await bound(kube, "after-revocation") is None
    token_file.write_text(create_token(control_plane))  # as a kubelet rotates a projected token
    assert await eventually(lambda: bound(kube, "after-revocation"), timeout=60, interval=0.5,
                            what="bound with the rewritten token") == "n1"
    assert op.process.alive()
    assert lines(op, f"Read a new bearer token from {token_file}")


async def test_a_leader_whose_token_is_revoked_says_it_lost_the_lease_for_its_credentials(
        control_plane: ControlPlane, kube: Kube, operators: Operators, tmp_path: Path,
        rotated_account: str) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(rotated_account)
    config = write_kubeconfig(tmp_path / "file.kubeconfig", server=control_plane.url, user="rotated",
                              token_file=token_file, ca=control_plane.ca_path)
    lease = f"resilience-{free_port()}"
    op = operators.start("--leader-elect", f"--leader-elect-resource-name={lease}",
                         "--leader-elect-lease-duration=4", "--leader-elect-renew-deadline=3",
                         "--leader-elect-retry-period=1", kubeconfig=config)
    await eventually(lambda: _leads(op), what="leads")
    await revoke(control_plane, rotated_account)
    await eventually(lambda: asyncio.to_thread(lambda: not op.process.alive()), timeout=30, what="exited")
    assert op.process.popen.returncode == 75  # as kube-scheduler: restarted as a standby
    lost = lines(op, f"Lost the Lease {NAMESPACE}/{lease}")
    assert len(lost) == 1, op.process.tail(40)
    assert (f"Lost the Lease {NAMESPACE}/{lease}: could not renew it within the renew deadline (3s): the API server "
            f"{control_plane.url} rejected the credentials of kubeconfig user 'rotated' ({config}, tokenFile "
            f"{token_file}) (401 Unauthorized)") in lost[0]
    assert not lines(op, "another replica")


async def _leads(op: OperatorProcess) -> bool:
    return (await scheduler_health(op)).get("leader") is True


def forbidden_count(op: OperatorProcess, verb: str, resource: str) -> float:
    for line in op.metrics().splitlines():
        name, _, rest = line.partition("{")
        if name != "kubeberth_api_forbidden_total":
            continue
        labels, _, value = rest.partition("} ")
        if f'verb="{verb}"' in labels and f'resource="{resource}"' in labels:
            return float(value)
    return 0.0


async def test_a_removed_rbac_binding_names_the_missing_permission_once_and_pods_bind_once_restored(
        control_plane: ControlPlane, kube: Kube, operators: Operators) -> None:
    await kube.create("nodes", node("n1"))
    op = operators.start()
    try:
        kubectl(control_plane, "delete", "clusterrolebinding", "kubeberth")
        await kube.create("pods", pod("refused"))
        await eventually(lambda: asyncio.to_thread(lambda: forbidden_count(op, "create", "pods/binding") >= 2),
                         timeout=60, interval=0.5, what="two refused bindings counted")
        told = lines(op, "forbidden: create pods/binding")
        assert len(told) == 1, told  # once per verb and resource, however many attempts
        assert ("forbidden: create pods/binding in namespace default: the ServiceAccount "
                f"{NAMESPACE}/{SERVICE_ACCOUNT} lacks RBAC verb create on pods/binding") in told[0]
        assert await bound(kube, "refused") is None
    finally:
        kubectl(control_plane, "apply", "-f", str(ROOT / "manifests" / "rbac.yaml"))
    assert await eventually(lambda: bound(kube, "refused"), timeout=60, interval=0.5,
                            what="bound once the binding is back") == "n1"
    assert op.process.alive()
