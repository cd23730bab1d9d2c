"""Faults a real API server does not produce on demand, against the in-process operator: an outage
longer than kopf's retries, a token the server stops accepting (and a token file rewritten), a 403
on pods/binding. The real-server counterparts are in tests/cluster/test_resilience.py."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import Cluster, stays, wait_for
from .emulator import make_node, make_pod
from .test_operator import FAST_LEASE, node_of

FORBIDDEN = ('pods "{name}" is forbidden: User "system:serviceaccount:kubeberth-system:kubeberth" cannot create '
             'resource "pods/binding" in API group "" in the namespace "default"')


def synced(op: Any) -> bool:
    return bool(op.app.health()["synced"])


def token_kubeconfig(cluster: Cluster, tmp_path: Path, token: str) -> tuple[Path, Path]:
    token_file = tmp_path / "token"
    token_file.write_text(token)
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "emu",
        "clusters": [{"name": "emu", "cluster": {"server": cluster.url}}],
        "contexts": [{"name": "emu", "context": {"cluster": "emu", "user": "scheduler"}}],
        "users": [{"name": "scheduler", "user": {"tokenFile": str(token_file)}}]}))
    return path, token_file


def messages(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


async def test_an_outage_longer_than_kopfs_retries_leaves_the_process_alive_and_scheduling_after(
        cluster, start_operator):
    api = cluster.api
    api.create("nodes", make_node("n1"))
    op = await start_operator()  # kopf's retries here: 0.1 + 0.2 + 0.5 s, far shorter than the outage
    await wait_for(lambda: synced(op), message="synced")
    outage = api.inject(status=503, times=None, message="injected outage")  # every request, kopf's included
    api.disconnect_watches()
    await wait_for(lambda: not synced(op), message="the probe says synced: false during the outage")
    api.create("pods", make_pod("during"))
    await stays(lambda: op.alive and not synced(op), 3.0)
    api.faults.remove(outage)
    assert await wait_for(lambda: node_of(api, "during"), timeout=20, message="bound after the outage") == "n1"
    await wait_for(lambda: synced(op), timeout=20, message="every watch back")
    assert op.alive


async def test_a_rejected_token_is_told_retried_and_a_rewritten_token_file_used_without_restart(
        cluster, start_operator, tmp_path, caplog):
    caplog.set_level(logging.INFO)
    api = cluster.api
    api.token = "valid"
    api.create("nodes", make_node("n1"))
    kubeconfig, token_file = token_kubeconfig(cluster, tmp_path, "revoked")
    # kopf's own retries as configured by the operator (for ever), its login included.
    op = await start_operator(server=None, kubeconfig=str(kubeconfig), extra_settings={})
    told = await wait_for(lambda: messages(caplog, "Unauthorized (401)"), message="the 401 told")
    assert told[0].startswith(f"Unauthorized (401): the API server {cluster.url} rejected the credentials of "
                              f"kubeconfig user 'scheduler' ({kubeconfig}, tokenFile {token_file})")
    api.create("pods", make_pod("waiting"))
    await stays(lambda: op.alive and not synced(op), 2.0)  # kopf, refused too, does not end the process
    assert messages(caplog, "kopf's login waits until the API server")
    assert len(told) == 1 == len(messages(caplog, "Unauthorized (401)"))  # once per token, not per request
    token_file.write_text("valid\n")
    assert await wait_for(lambda: node_of(api, "waiting"), timeout=20, message="bound with the new token") == "n1"
    await wait_for(lambda: synced(op), timeout=20, message="every watch back")
    assert op.alive
    assert messages(caplog, f"Read a new bearer token from {token_file}")
    assert messages(caplog, "accepts the credentials of kubeconfig user 'scheduler'")


async def test_a_leader_whose_credentials_are_refused_says_so_when_it_loses_the_lease(
        cluster, start_operator, tmp_path, caplog):
    api = cluster.api
    api.token = "valid"
    api.create("nodes", make_node("n1"))
    kubeconfig, token_file = token_kubeconfig(cluster, tmp_path, "valid")
    op = await start_operator(server=None, kubeconfig=str(kubeconfig), **FAST_LEASE)
    await wait_for(lambda: op.app.elector is not None and op.app.elector.is_leader, message="leads")
    api.token = "rotated-elsewhere"
    await wait_for(lambda: not op.alive, timeout=10, message="the leader that lost its Lease exited")
    assert op.exit_code == 75
    lost = messages(caplog, "Lost the Lease default/kubeberth")
    assert lost == [f"Lost the Lease default/kubeberth: could not renew it within the renew deadline (0.6s): "
                    f"the API server {cluster.url} rejected the credentials of kubeconfig user 'scheduler' "
                    f"({kubeconfig}, tokenFile {token_file}) (401 Unauthorized); stopping (as kube-scheduler "
                    "does) so that this process restarts as a standby"]
    assert not messages(caplog, "another replica")


async def test_a_forbidden_binding_is_told_once_with_the_permission_counted_and_bound_once_allowed(
        cluster, start_operator, caplog):
    api = cluster.api
    api.create("nodes", make_node("n1"))
    refused = api.inject(method="POST", plural="pods", subresource="binding", status=403, times=None,
                         message=FORBIDDEN.format(name="p"))
    op = await start_operator()
    api.create("pods", make_pod("p"))
    api.create("pods", make_pod("q"))

    def forbidden() -> float:
        return op.app.metrics.sample("kubeberth_api_forbidden_total",
                                     {"verb": "create", "resource": "pods/binding"}) or 0.0

    await wait_for(lambda: forbidden() >= 3, timeout=20, message="refusals counted (both pods, and a retry)")
    told = messages(caplog, "forbidden: create pods/binding")
    assert told == [
        "forbidden: create pods/binding in namespace default: the ServiceAccount kubeberth-system/kubeberth lacks "
        "RBAC verb create on pods/binding (API group ''); grant it in its (Cluster)Role. The API server said: "
        f"{FORBIDDEN.format(name='p')}. Logged once per verb and resource, counted in kubeberth_api_forbidden_total"]
    assert node_of(api, "p") == node_of(api, "q") == ""
    api.faults.remove(refused)
    await wait_for(lambda: node_of(api, "p") and node_of(api, "q"), timeout=30, message="bound once allowed")
    assert "kubeberth_api_forbidden_total" in op.app.metrics.render().decode()
