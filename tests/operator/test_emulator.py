"""The emulated API server's semantics that the operator tests rely on."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

from .emulator import field_matcher, label_matcher, make_node, make_pod, merge_patch, strategic_merge_patch


@pytest.mark.parametrize("selector, labels, expected", [
    ("", {}, True),
    ("app=web", {"app": "web"}, True),
    ("app==web", {"app": "db"}, False),
    ("app!=web", {}, True),
    ("tier in (a, b),env", {"tier": "b", "env": "x"}, True),
    ("tier notin (a,b)", {"tier": "a"}, False),
    ("!canary", {"canary": "1"}, False),
])
def test_label_selectors(selector, labels, expected):
    assert label_matcher(selector)(labels) is expected


def test_field_selectors():
    pod = make_pod("p", node="n1")
    assert field_matcher("spec.nodeName=n1,metadata.name=p")(pod)
    assert field_matcher("spec.nodeName!=")(pod)
    assert not field_matcher("spec.schedulerName=other")(pod)
    assert field_matcher("status.phase!=Succeeded")(pod)


def test_patches():
    assert merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}
    status = {"conditions": [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}]}
    patched = strategic_merge_patch(status, {"conditions": [{"type": "PodScheduled", "status": "False"}]})
    assert patched["conditions"] == [{"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "False"}]


async def get(cluster: Any, path: str) -> tuple[int, Any]:
    async with aiohttp.ClientSession() as s, s.get(cluster.url + path) as r:
        return r.status, await r.json()


async def test_lists_watches_and_resource_versions(cluster):
    api = cluster.api
    api.create("nodes", make_node("n1", labels={"zone": "a"}))
    api.create("nodes", make_node("n2", labels={"zone": "b"}))
    status, listing = await get(cluster, "/api/v1/nodes?labelSelector=zone%3Da")
    assert status == 200 and [n["metadata"]["name"] for n in listing["items"]] == ["n1"]
    rv = listing["metadata"]["resourceVersion"]
    api.patch("nodes", "n2", {"metadata": {"labels": {"zone": "a"}}})  # now matches: ADDED for this watch
    api.delete("nodes", "n1")
    events = []
    async with aiohttp.ClientSession() as s, s.get(
            f"{cluster.url}/api/v1/nodes?watch=true&labelSelector=zone%3Da&resourceVersion={rv}&timeoutSeconds=1") as r:
        async for line in r.content:
            events.append(json.loads(line))
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "n2"), ("DELETED", "n1")]
    api.compact()
    async with aiohttp.ClientSession() as s, s.get(
            f"{cluster.url}/api/v1/nodes?watch=true&resourceVersion={rv}&timeoutSeconds=1") as r:
        [gone] = [json.loads(line) async for line in r.content]
    assert gone["type"] == "ERROR" and gone["object"]["code"] == 410


async def test_binding_status_and_graceful_deletion(cluster):
    api = cluster.api
    api.pod_grace_seconds = 0.05
    pod = api.create("pods", make_pod("p"))
    assert pod["metadata"]["uid"] and pod["metadata"]["resourceVersion"]
    assert pod["status"]["phase"] == "Pending" and pod["spec"]["priority"] == 0
    async with aiohttp.ClientSession() as s:
        binding = {"metadata": {"name": "p", "uid": pod["metadata"]["uid"]}, "target": {"name": "n1"}}
        url = f"{cluster.url}/api/v1/namespaces/default/pods/p"
        async with s.post(url + "/binding", json=binding) as r:
            assert r.status == 201
        async with s.post(url + "/binding", json=binding) as r:
            assert r.status == 409 and "already assigned" in (await r.json())["message"]
        # The main resource does not write status; /status writes nothing else.
        async with s.patch(url, json={"status": {"phase": "Running"}, "metadata": {"labels": {"a": "b"}}},
                           headers={"Content-Type": "application/merge-patch+json"}) as r:
            assert (await r.json())["status"]["phase"] == "Pending"
        async with s.patch(url + "/status", json={"status": {"phase": "Running"}, "spec": {"nodeName": "x"}},
                           headers={"Content-Type": "application/merge-patch+json"}) as r:
            body = await r.json()
            assert body["status"]["phase"] == "Running" and body["spec"]["nodeName"] == "n1"
        async with s.delete(url, json={"preconditions": {"uid": "someone-else"}}) as r:
            assert r.status == 409
        async with s.delete(url, json={"preconditions": {"uid": pod["metadata"]["uid"]}}) as r:
            assert r.status == 200 and (await r.json())["metadata"]["deletionTimestamp"]
    assert api.get("pods", "p", "default")["metadata"]["deletionTimestamp"]
    await asyncio.sleep(0.1)
    assert api.get("pods", "p", "default") is None


async def test_faults(cluster):
    api = cluster.api
    api.create("pods", make_pod("p"))
    fault = api.inject(method="GET", plural="pods", name="p", status=503, times=2)
    codes = [(await get(cluster, "/api/v1/namespaces/default/pods/p"))[0] for _ in range(3)]
    assert codes == [503, 503, 200] and fault.hits == 2
