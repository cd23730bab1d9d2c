"""The Kueue admission check's kopf-free logic: pod sets into pods, the verdicts, the controller's writes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kubeberth.kueue.api import CONTROLLER_NAME, FINISHED, PENDING, QUOTA_RESERVED, READY, REJECTED, RETRY
from kubeberth.kueue.controller import AdmissionCheckController, NotFound, Stale
from kubeberth.kueue.decide import verdict, waiting_checks
from kubeberth.kueue.podsets import PODSET_LABEL, WorkloadError, expand

GPU = {"metadata": {"name": "gpu"}, "spec": {"nodeLabels": {"pool": "gpu", "zone": "z1"},
                                            "tolerations": [{"key": "gpu", "operator": "Exists",
                                                             "effect": "NoSchedule"}]}}
SPOT = {"metadata": {"name": "spot"}, "spec": {"nodeLabels": {"spot": "true"}}}


def podset(name: str, count: int, cpu: str = "1", **spec: Any) -> dict[str, Any]:
    return {"name": name, "count": count, "template": {
        "metadata": {"labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}], **spec}}}


def workload(podsets: list[dict[str, Any]], assignments: list[dict[str, Any]] | None = None,
             checks: list[dict[str, Any]] | None = None, reserved: bool = True,
             finished: bool = False, evicted: str | None = None) -> dict[str, Any]:
    conditions = [{"type": QUOTA_RESERVED, "status": "True" if reserved else "False"}]
    if finished:
        conditions.append({"type": FINISHED, "status": "True"})
    if evicted is not None:
        conditions.append({"type": "Evicted", "status": evicted})
    status: dict[str, Any] = {"conditions": conditions, "admissionChecks": checks or []}
    if reserved:
        status["admission"] = {"clusterQueue": "cq", "podSetAssignments": assignments or []}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": "wl", "namespace": "team-a", "uid": "u1"},
            "spec": {"podSets": podsets}, "status": status}


def test_expand_counts_names_and_flavours() -> None:
    wl = workload([podset("driver", 1, nodeSelector={"zone": "z9"}), podset("workers", 3)],
                  [{"name": "driver", "flavors": {"cpu": "gpu"}, "count": 1},
                   {"name": "workers", "flavors": {"cpu": "spot", "memory": "spot"}, "count": 2}])
    pods = expand(wl, {"gpu": GPU, "spot": SPOT})
    assert [p["metadata"]["name"] for p in pods] == ["wl-driver-0", "wl-workers-0", "wl-workers-1"]  # partial: 2
    assert {p["metadata"]["namespace"] for p in pods} == {"team-a"}
    assert len({p["metadata"]["uid"] for p in pods}) == 3
    driver, worker = pods[0], pods[1]
    assert driver["spec"]["nodeSelector"] == {"zone": "z9", "pool": "gpu"}  # the template's key wins
    assert driver["spec"]["tolerations"] == GPU["spec"]["tolerations"]
    assert worker["spec"]["nodeSelector"] == {"spot": "true"}
    assert "tolerations" not in worker["spec"]
    assert worker["metadata"]["labels"] == {"app": "workers", PODSET_LABEL: "workers"}


def test_expand_without_assignment_count_uses_the_podset_count_and_drops_group() -> None:
    wl = workload([podset("main", 2, schedulingGroup={"podGroupName": "g"}, nodeName="n1")],
                  [{"name": "main", "flavors": {}}])
    pods = expand(wl, {})
    assert len(pods) == 2
    assert all("schedulingGroup" not in p["spec"] and "nodeName" not in p["spec"] for p in pods)


def test_expand_topology_assignment_pins_each_pod_to_its_domain() -> None:
    topology = {"levels": ["rack", "kubernetes.io/hostname"], "slices": [
        {"domainCount": 2, "podCounts": {"individual": [1, 2]},
         "valuesPerLevel": [{"universal": "r1"}, {"individual": {"prefix": "n-", "roots": ["a", "b"]}}]}]}
    wl = workload([podset("main", 3)], [{"name": "main", "count": 3, "topologyAssignment": topology}])
    selectors = [p["spec"]["nodeSelector"] for p in expand(wl, {})]
    assert selectors == [{"rack": "r1", "kubernetes.io/hostname": "n-a"},
                         {"rack": "r1", "kubernetes.io/hostname": "n-b"},
                         {"rack": "r1", "kubernetes.io/hostname": "n-b"}]


@pytest.mark.parametrize("wl, problem", [
    (workload([podset("main", 1)], [{"name": "main", "flavors": {"cpu": "nope"}}]), "'nope'"),
    (workload([], []), "no pod"),
    (workload([{"name": "main", "count": 1, "template": {}}], []), "template.spec"),
])
def test_expand_refuses_with_the_field(wl: dict[str, Any], problem: str) -> None:
    with pytest.raises(WorkloadError, match=problem):
        expand(wl, {})


OURS = {"dry-run"}


@pytest.mark.parametrize("checks, reserved, finished, expected", [
    ([{"name": "dry-run", "state": PENDING}], True, False, ["dry-run"]),
    ([{"name": "dry-run", "state": PENDING}, {"name": "prov", "state": PENDING}], True, False, ["dry-run"]),
    ([{"name": "dry-run", "state": RETRY}], True, False, []),      # Kueue's to reset
    ([{"name": "dry-run", "state": READY}], True, False, []),      # answered
    ([{"name": "dry-run", "state": REJECTED}], True, False, []),
    ([{"name": "dry-run", "state": PENDING}], False, False, []),   # no quota reserved
    ([{"name": "dry-run", "state": PENDING}], True, True, []),     # finished
    ([{"name": "other", "state": PENDING}], True, False, []),
])
def test_waiting_checks(checks: list[dict[str, Any]], reserved: bool, finished: bool, expected: list[str]) -> None:
    assert waiting_checks(workload([podset("main", 1)], checks=checks, reserved=reserved, finished=finished),
                          OURS) == expected


@pytest.mark.parametrize("evicted, expected", [("True", []), ("False", ["dry-run"]), (None, ["dry-run"])])
def test_a_workload_being_evicted_is_not_answered(evicted: str | None, expected: list[str]) -> None:
    """Kueue resets the checks to Pending while it evicts (quota still reserved for a moment): a
    Retry written then would stick, Kueue never reserving for a workload with a Retry check."""
    wl = workload([podset("main", 1)], checks=[{"name": "dry-run", "state": PENDING}], evicted=evicted)
    assert waiting_checks(wl, OURS) == expected


def answer(*nodes: str | None, message: str = "0/2 nodes are available: 2 Insufficient cpu.") -> dict[str, Any]:
    pods = [{"name": f"p{i}", "status": "Scheduled" if n else "Unschedulable", **({"node": n} if n else
                                                                                {"message": message})}
            for i, n in enumerate(nodes)]
    return {"schedulable": all(nodes), "scheduled": sum(1 for n in nodes if n), "pods": pods}


@pytest.mark.parametrize("ans, state, words", [
    (answer("n1", "n1", "n2"), READY, ["all 3 pod(s) fit now", "n1 x2", "n2"]),
    (answer("n1", None), RETRY, ["1 of 2 pod(s)", "pod p1: 0/2 nodes are available: 2 Insufficient cpu."]),
    (answer(None), RETRY, ["0 of 1"]),
    ({"schedulable": False, "scheduled": 0, "pods": []}, RETRY, ["no pod"]),
])
def test_verdict(ans: dict[str, Any], state: str, words: list[str]) -> None:
    found = verdict(ans)
    assert found.state == state
    for w in words:
        assert w in found.message


def test_verdict_carries_preemption_and_suggestion() -> None:
    ans = answer(None)
    ans["pods"][0]["preemption"] = {"node": "n3", "victims": [{"namespace": "team-a", "name": "x"}],
                                    "victimsInOtherNamespaces": 2}
    found = verdict(ans, "add 1 node like n1")
    assert "preemption could make room on n3, evicting 3 pod(s)" in found.message
    assert found.message.endswith("suggestion: add 1 node like n1")


class FakeApi:
    def __init__(self, objects: dict[str, dict[str, Any]], current: str | None = None) -> None:
        self.objects = objects
        self.applied: list[tuple[str, dict[str, Any]]] = []
        self.current = current  # the Workloads' resourceVersion now (None: any)

    async def get(self, path: str) -> dict[str, Any]:
        if path not in self.objects:
            raise NotFound(path)
        return self.objects[path]

    async def apply_status(self, path: str, body: dict[str, Any]) -> None:
        version = body["metadata"].get("resourceVersion")
        if self.current is not None and body["kind"] == "Workload" and version != self.current:
            raise Stale(path)
        self.applied.append((path, body))


def check(name: str, controller: str, active: bool = False) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": name, "generation": 2}, "spec": {"controllerName": controller}}
    if active:
        obj["status"] = {"conditions": [{"type": "Active", "status": "True"}]}
    return obj


AC = "/apis/kueue.x-k8s.io/v1beta2/admissionchecks/"


def test_admission_check_marked_active_once_and_only_ours() -> None:
    api = FakeApi({})
    ctl = AdmissionCheckController(api, dry_run=None, now=lambda: "T")  # type: ignore[arg-type]
    assert asyncio.run(ctl.on_admission_check(check("dry-run", CONTROLLER_NAME)))
    assert not asyncio.run(ctl.on_admission_check(check("prov", "kueue.x-k8s.io/provisioning-request")))
    assert asyncio.run(ctl.on_admission_check(check("dry-run", CONTROLLER_NAME, active=True)))
    assert len(api.applied) == 1
    path, body = api.applied[0]
    assert path == AC + "dry-run/status"
    cond = body["status"]["conditions"][0]
    assert (cond["type"], cond["status"], cond["reason"], cond["observedGeneration"]) == ("Active", "True", "Active", 2)


@pytest.mark.parametrize("nodes, state", [(["n1", "n2"], READY), (["n1", None], RETRY)])
def test_workload_answered_as_a_gang(nodes: list[str | None], state: str) -> None:
    api = FakeApi({AC + "dry-run": check("dry-run", CONTROLLER_NAME), AC + "prov": check("prov", "other"),
                   "/apis/kueue.x-k8s.io/v1beta2/resourceflavors/spot": SPOT})
    asked: list[tuple[str, list[dict[str, Any]]]] = []

    async def dry_run(namespace: str, pods: list[dict[str, Any]]) -> dict[str, Any]:
        asked.append((namespace, pods))
        return answer(*nodes)

    async def suggest(pods: list[dict[str, Any]]) -> str | None:
        return "add a node"

    ctl = AdmissionCheckController(api, dry_run, suggester=suggest, now=lambda: "T")
    wl = workload([podset("a", 1), podset("b", 1)],
                  [{"name": "a", "flavors": {"cpu": "spot"}}, {"name": "b", "flavors": {"cpu": "spot"}}],
                  checks=[{"name": "dry-run", "state": PENDING}, {"name": "prov", "state": PENDING}])
    out = asyncio.run(ctl.on_workload(wl))
    assert list(out) == ["dry-run"] and out["dry-run"].state == state
    assert len(asked) == 1 and asked[0][0] == "team-a" and len(asked[0][1]) == 2  # both pod sets in one run
    path, body = api.applied[-1]
    assert path == "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/wl/status"
    entries = body["status"]["admissionChecks"]
    assert [(e["name"], e["state"], e["lastTransitionTime"]) for e in entries] == [("dry-run", state, "T")]
    assert ("suggestion: add a node" in entries[0]["message"]) == (state == RETRY)
    assert entries[0].get("requeueAfterSeconds") == (5 if state == RETRY else None)  # Kueue's backoff: ours
    # answered: the same workload with our check no longer Pending is left alone
    wl["status"]["admissionChecks"][0]["state"] = state
    assert asyncio.run(ctl.on_workload(wl)) == {}
    assert len(asked) == 1


def test_workload_with_a_missing_flavour_gets_retry_saying_so() -> None:
    api = FakeApi({AC + "dry-run": check("dry-run", CONTROLLER_NAME)})

    async def dry_run(namespace: str, pods: list[dict[str, Any]]) -> dict[str, Any]:
        raise AssertionError("not dry run")

    ctl = AdmissionCheckController(api, dry_run, now=lambda: "T")
    wl = workload([podset("a", 1)], [{"name": "a", "flavors": {"cpu": "gone"}}],
                  checks=[{"name": "dry-run", "state": PENDING}])
    out = asyncio.run(ctl.on_workload(wl))
    assert out["dry-run"].state == RETRY and "ResourceFlavor 'gone'" in out["dry-run"].message


def test_the_manifests_component_turns_on_an_option_run_knows() -> None:
    import argparse
    from pathlib import Path

    import yaml

    from kubeberth.operator.options import add_run_arguments

    root = Path(__file__).resolve().parents[2] / "manifests" / "kueue"
    component = yaml.safe_load((root / "kustomization.yaml").read_text())
    assert component["kind"] == "Component" and component["resources"] == ["rbac.yaml"]
    [patch] = component["patches"]
    [op] = yaml.safe_load(patch["patch"])
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    assert parser.parse_args([op["value"]]).kueue_admission_check is True
    role = next(d for d in yaml.safe_load_all((root / "rbac.yaml").read_text()) if d["kind"] == "ClusterRole")
    verbs = {(r, v) for rule in role["rules"] for r in rule["resources"] for v in rule["verbs"]}
    assert ("workloads/status", "patch") in verbs and ("workloads", "update") not in verbs
    assert not any(v in {"create", "delete", "update", "*"} for _, v in verbs)  # status patches only


@pytest.mark.parametrize("current, written", [("7", True), ("8", False)])
def test_an_answer_is_for_the_version_it_was_computed_on(current: str, written: bool) -> None:
    api = FakeApi({AC + "dry-run": check("dry-run", CONTROLLER_NAME)}, current=current)

    async def dry_run(namespace: str, pods: list[dict[str, Any]]) -> dict[str, Any]:
        return answer("n1")

    ctl = AdmissionCheckController(api, dry_run, now=lambda: "T")
    wl = workload([podset("a", 1)], [{"name": "a"}], checks=[{"name": "dry-run", "state": PENDING}])
    wl["metadata"]["resourceVersion"] = "7"
    out = asyncio.run(ctl.on_workload(wl))
    assert bool(out) == written and len(api.applied) == int(written)
    if written:
        assert api.applied[0][1]["metadata"]["resourceVersion"] == "7"


def test_the_kopf_handlers_act_only_once_the_gate_opens() -> None:
    """The handlers wait for the gate (this replica leads and has listed the cluster) before any write."""
    import kopf

    from kubeberth.operator.kueue_check import register

    async def scenario() -> None:
        api = FakeApi({})
        ctl = AdmissionCheckController(api, dry_run=None, now=lambda: "T")  # type: ignore[arg-type]
        leading = asyncio.Event()

        async def gate() -> None:
            await leading.wait()

        registry = kopf.OperatorRegistry()
        register(registry, ctl, gate)
        handlers = {h.id: h.fn for h in registry._watching.get_all_handlers()}
        assert set(handlers) == {"kueue_admission_check", "kueue_workload"}
        task = asyncio.create_task(handlers["kueue_admission_check"](
            type="ADDED", name="dry-run", body=check("dry-run", CONTROLLER_NAME)))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert not task.done() and api.applied == []
        leading.set()
        await task
        assert [p for p, _ in api.applied] == [AC + "dry-run/status"]
        await handlers["kueue_admission_check"](type="DELETED", name="dry-run", body=check("dry-run", CONTROLLER_NAME))
        assert "dry-run" not in ctl.controllers

    asyncio.run(scenario())


@pytest.mark.parametrize("count, seconds", [(0, 5), (1, 10), (3, 40), (6, 300), (40, 300), (-1, 5)])
def test_retry_after_doubles_with_kueues_retry_count(count: int, seconds: int) -> None:
    from kubeberth.kueue.decide import retry_after

    assert retry_after(count) == seconds
