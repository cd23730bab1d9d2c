"""The replay's clock and events: nodes that come and go, Permit timeouts on the virtual clock,
a protocol dropping the pods left unschedulable, and bad times named where they were read."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeberth.framework import CycleState, PermitPlugin, Pod, Status
from kubeberth.framework.status import Code
from kubeberth.plugins import plugin_registry
from kubeberth.whatif.inputs import Origins, load_files
from kubeberth.whatif.replay.engine import Replay, ReplayOptions, Sample
from kubeberth.whatif.replay.ledger import Ledger
from kubeberth.whatif.replay.workload import ReplayInput, replay_input


def node(name: str, cpu: str, **times: float) -> dict[str, Any]:
    ann = {f"kubeberth.io/{k.replace('_', '-')}": str(v) for k, v in times.items()}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "annotations": ann},
            "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}


def pod(name: str, cpu: str, **times: float) -> dict[str, Any]:
    ann = {f"kubeberth.io/{k.replace('_', '-')}": str(v) for k, v in times.items()}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default", "annotations": ann},
            "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}]}}


def run(objects: list[dict[str, Any]], options: ReplayOptions | None = None,
        registry: Any = None) -> tuple[Replay, Ledger, dict[str, Any]]:
    data = replay_input(objects, io.StringIO())
    r = Replay(data, options or ReplayOptions(), registry=registry, warn=io.StringIO())
    ledger = r.run()
    return r, ledger, {e.key.split("/")[1]: e.as_dict() for e in ledger.entries.values()}


def column(ledger: Ledger, name: str) -> list[tuple[float, Any]]:
    i = ledger.columns.index(name)
    return [(row[0], row[i]) for row in ledger.rows]  # type: ignore[misc]


def test_nodes_come_and_go() -> None:
    """x (3 CPU) waits for n2 (4 CPU, from 10 to 50), then is deleted with it."""
    _, ledger, pods = run([node("n1", "2"), node("n2", "4", arrival_time=10, departure_time=50),
                           pod("x", "3", arrival_time=5)])
    assert (pods["x"]["bound"], pods["x"]["node"], pods["x"]["departure"], pods["x"]["status"]) == \
        (10.0, "n2", 50.0, "Orphaned")
    assert column(ledger, "capacity.cpu") == [(0.0, 2000), (5.0, 2000), (10.0, 6000), (50.0, 2000)]
    assert column(ledger, "allocated.cpu") == [(0.0, 0), (5.0, 0), (10.0, 3000), (50.0, 0)]


class Holding(PermitPlugin):
    """Holds each pod at Permit for 30 s on its first attempt (never allowing it); lets it
    through afterwards."""

    name = "Holding"
    tried: set[str] = set()

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        if pod.key in self.tried:
            return None, 0.0
        self.tried.add(pod.key)
        return Status(Code.WAIT, "held"), 30.0


def test_permit_timeouts_run_on_the_virtual_clock() -> None:
    """Held at 0, rejected by the timeout at 30 of the virtual clock (no wall-clock wait), tried
    again at once (the reservation it gives back is a cluster event that may help it) and
    bound at 30."""
    Holding.tried = set()
    registry = plugin_registry().copy()
    registry.register(Holding)
    profile = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "d"},
               "spec": {"schedulerName": "default-scheduler",
                        "plugins": {"permit": {"enabled": [{"name": "Holding"}]}}}}
    r, ledger, pods = run([profile, node("n1", "2"), node("n2", "2", arrival_time=100), pod("p", "1")],
                          registry=registry)
    assert [row[0] for row in ledger.rows] == [0.0, 30.0, 100.0]
    assert (pods["p"]["arrival"], pods["p"]["bound"], pods["p"]["status"]) == (0.0, 30.0, "Scheduled")
    assert ledger.reasons == {"rejected due to timeout after waiting 30s at plugin Holding": 1}
    assert len(r.sched.ctx.waiting_pods) == 0


def test_a_protocol_drops_pods_left_unschedulable() -> None:
    samples: list[Sample] = []
    opts = ReplayOptions(drop_unschedulable=True, on_sample=samples.append)
    _, ledger, pods = run([node("n1", "2"), pod("a", "2"), pod("b", "1", arrival_time=1),
                           pod("c", "1", arrival_time=2, departure_time=3)], opts)
    assert {k: (p["status"], p["departure"]) for k, p in pods.items()} == {
        "a": ("Scheduled", None), "b": ("Dropped", 1.0), "c": ("Dropped", 2.0)}
    assert (ledger.arrived, ledger.failed, ledger.pending) == (3, 2, 0)
    assert [(s.time, s.values["failed"], s.values["pending"]) for s in samples] == [
        (0.0, 0, 0), (1.0, 1, 0), (2.0, 2, 0), (3.0, 2, 0)]


def test_duration_counts_from_binding() -> None:
    """b waits for a (leaves at 20), then stays its 15 s."""
    _, _, pods = run([node("n1", "2"), pod("a", "2", departure_time=20), pod("b", "2", arrival_time=5, duration=15)])
    assert (pods["b"]["bound"], pods["b"]["departure"]) == (20.0, 35.0)


def test_a_pod_can_leave_at_the_instant_it_arrives() -> None:
    _, ledger, pods = run([node("n1", "2"), pod("a", "1", arrival_time=4, departure_time=4)])
    assert (pods["a"]["bound"], pods["a"]["departure"], ledger.failed) == (None, 4.0, 1)


@pytest.mark.parametrize(("obj", "message"), [
    (pod("p", "1", arrival_time="soon"), "t.yaml, document 1: annotation kubeberth.io/arrival-time: 'soon' is not "
                                         "a number of seconds; skipped"),
    (pod("p", "1", arrival_time=-1), "annotation kubeberth.io/arrival-time: '-1' must be a finite number"),
    (pod("p", "1", arrival_time=9, departure_time=3), "annotation kubeberth.io/departure-time (3) is before "
                                                      "kubeberth.io/arrival-time (9)"),
    (pod("p", "1", departure_time=3, duration=1), "give kubeberth.io/departure-time or kubeberth.io/duration"),
    (node("n", "1", duration=5), "annotation kubeberth.io/duration: only pods have a duration"),
])
def test_bad_times_are_named_and_skipped(tmp_path: Path, obj: dict[str, Any], message: str) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump_all([obj, pod("ok", "1")]))
    warn = io.StringIO()
    origins = Origins()
    data = replay_input(load_files([path], origins), warn, origins)
    assert message in warn.getvalue()
    assert [t.obj["metadata"]["name"] for t in data.timed] == ["ok"] and data.problems == 1


SCENARIO = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "ReplayScenario", "metadata": {"name": "s"}}


@pytest.mark.parametrize(("item", "message"), [
    ({"template": "web", "colour": 1}, "spec.items[0]: unknown field 'colour'"),
    ({"template": "nope"}, "spec.items[0].template: template 'nope' names no Pod of the input"),
    ({"template": "web", "count": 0}, "spec.items[0].count: 0 must be a whole number, at least 1"),
    ({"template": "web", "at": "x"}, "spec.items[0].at: 'x' is not a number of seconds"),
    ({"template": "web", "object": {}}, "spec.items[0]: give one of object or template"),
    ({"template": "web", "at": 10, "departAt": 5}, "spec.items[0].departAt (5) is before copy 0's arrival (10)"),
])
def test_scenario_errors(tmp_path: Path, item: dict[str, Any], message: str) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump_all([pod("web", "1"), {**SCENARIO, "spec": {"items": [item]}}]))
    warn = io.StringIO()
    origins = Origins()
    data = replay_input(load_files([path], origins), warn, origins)
    assert f"{path}, document 2: {message}" in warn.getvalue()
    assert [t.obj["metadata"]["name"] for t in data.timed] == ["web"]


def test_scenario_copies_of_a_template() -> None:
    item = {"template": "default/web", "at": 10, "count": 3, "every": 5, "duration": 60}
    data = replay_input([pod("web", "1"), {**SCENARIO, "spec": {"items": [item]}}], io.StringIO())
    assert [(t.obj["metadata"]["name"], t.arrival, t.duration) for t in data.timed] == [
        ("web-0", 10.0, 60.0), ("web-1", 15.0, 60.0), ("web-2", 20.0, 60.0)]  # the template is not replayed


def test_an_empty_input_replays_nothing() -> None:
    r = Replay(ReplayInput(), ReplayOptions(), warn=io.StringIO())
    ledger = r.run()
    assert (ledger.arrived, ledger.rows, r.end) == (0, [], 0.0)


DRIVER = "gpu.example.com"
DRA_OBJECTS = [
    {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
     "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "n1-gpu"},
     "spec": {"driver": DRIVER, "nodeName": "n1", "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
              "devices": [{"name": "gpu-0"}]}},
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
     "metadata": {"name": "one-gpu", "namespace": "default"},
     "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}},
]


def with_gpu(p: dict[str, Any]) -> dict[str, Any]:
    p["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    return p


def test_claims_from_templates_come_and_go_with_their_pods() -> None:
    """One device: b waits for a's claim to go with a (at 10)."""
    r, _, pods = run([*DRA_OBJECTS, node("n1", "4"), with_gpu(pod("a", "1", departure_time=10)),
                      with_gpu(pod("b", "1", arrival_time=5))])
    assert (pods["a"]["bound"], pods["b"]["bound"]) == (0.0, 10.0)
    claims = list(r.sched.ctx.objects.list("ResourceClaim"))
    assert [c["metadata"]["ownerReferences"][0]["name"] for c in claims] == ["b"]  # a's went with it
