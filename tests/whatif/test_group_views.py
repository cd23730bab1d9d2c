"""Groups in the what-if tools (GenericWorkload): simulate's table, `-o json` and `-o html` show
each PodGroup, `--explain` says why a group waits (quorum, pods missing, each pod of the attempt:
where it was placed, where it failed, which it never reached), and `kubeberth test` pins a group's
outcome with a `podGroup` expectation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeberth import features
from kubeberth.cli import main
from kubeberth.features import FeatureGates
from kubeberth.whatif.inputs import InputError
from kubeberth.whatif.policy_tests import parse_case
from tests.builders import node_dict, pod_dict

GATE = "GenericWorkload=true"


@pytest.fixture(autouse=True)
def restore_gates() -> Iterator[None]:
    with features.override(FeatureGates()):
        yield


def group(name: str, min_count: int | None) -> dict[str, Any]:
    policy = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"schedulingPolicy": policy}}


def member(name: str, group_name: str, cpu: str) -> dict[str, Any]:
    return pod_dict(name, cpu=cpu, schedulingGroup={"podGroupName": group_name})


def cluster() -> list[dict[str, Any]]:
    """A 2-CPU node and a 1-CPU node. `fits`: a gang of three 100m pods. `toobig`: three 1500m pods,
    minCount 3 (one fits, on n1: the attempt places it, the next fits nowhere, the third is never tried).
    `short`: minCount 3 but two pods. `basic`: one pod that fits, one that cannot."""
    return [node_dict("n1", cpu="2"), node_dict("n2", cpu="1"),
            group("fits", 3), *(member(f"fits-{i}", "fits", "100m") for i in range(3)),
            group("toobig", 3), *(member(f"toobig-{i}", "toobig", "1500m") for i in range(3)),
            group("short", 3), *(member(f"short-{i}", "short", "100m") for i in range(2)),
            group("basic", None), member("basic-0", "basic", "100m"), member("basic-1", "basic", "8")]


@pytest.fixture
def input_file(tmp_path: Path) -> Path:
    path = tmp_path / "groups.yaml"
    path.write_text(yaml.safe_dump_all(cluster()))
    return path


def test_table_has_a_pod_group_section(input_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--feature-gates", GATE, str(input_file)]) == 0
    out = capsys.readouterr().out
    section = out.split("POD GROUP", 1)[1].splitlines()
    rows = {line.split()[0]: line for line in section[1:] if line.strip()}
    assert rows["default/fits"].split()[1:] == ["gang", "minCount=3", "3", "3", "Scheduled"]
    assert "Unschedulable" in rows["default/toobig"] and "minCount (3) cannot be satisfied" in rows["default/toobig"]
    assert "Waiting" in rows["default/short"]
    assert "2 of minCount 3 pods exist (1 missing)" in rows["default/short"]
    assert rows["default/basic"].split()[1:5] == ["basic", "2", "1", "Scheduled"]


def test_without_the_gate_there_is_no_group_section(input_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(input_file)]) == 0
    assert "POD GROUP" not in capsys.readouterr().out


def test_json_lists_pod_groups_with_their_last_attempt(input_file: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--feature-gates", GATE, "-o", "json", str(input_file)]) == 0
    data = json.loads(capsys.readouterr().out)
    groups = {g["podGroup"]: g for g in data["podGroups"]}
    assert list(groups) == ["default/fits", "default/toobig", "default/short", "default/basic"]
    toobig = groups["default/toobig"]
    assert (toobig["status"], toobig["policy"], toobig["minCount"], toobig["scheduled"]) == ("Unschedulable", "gang",
                                                                                             3, 0)
    assert toobig["condition"]["reason"] == "Unschedulable"
    tried = toobig["lastAttempt"]["pods"]
    assert [(p["tried"], bool(p["node"])) for p in tried] == [(True, True), (True, False), (False, False)]
    assert tried[1]["message"] == "0/2 nodes are available: 2 Insufficient cpu."
    assert groups["default/short"]["lastAttempt"] is None and groups["default/short"]["condition"] is None
    assert groups["default/fits"]["pods"] == [f"default/fits-{i}" for i in range(3)]


def test_json_without_groups_keeps_its_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text(yaml.safe_dump_all([node_dict("n1"), pod_dict("web", cpu="1")]))
    assert main(["simulate", "-o", "json", str(path)]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"pods"}


def test_explain_says_why_the_group_failed_pod_by_pod(input_file: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--feature-gates", GATE, str(input_file), "--explain", "toobig-1"]) == 0
    out = capsys.readouterr().out
    attempt = out.split("=== default/toobig-1: Unschedulable (attempt 1,", 1)[1].split("===", 1)[0]
    assert ("pod group default/toobig (gang, minCount 3): attempt 1 placed 1 of 3 queued pod(s), 0 scheduled "
            "before: unschedulable: minCount (3) cannot be satisfied: 1 scheduled, 1 remaining") in attempt
    lines = [line.strip() for line in attempt.splitlines()]
    assert "default/toobig-0: placed on n1" in lines
    assert "default/toobig-1: fits nowhere: 0/2 nodes are available: 2 Insufficient cpu." in lines
    assert "default/toobig-2: not tried (the attempt stopped before it)" in lines
    assert "2 node(s): Insufficient cpu [NodeResourcesFit]: n1, n2" in lines  # the pod's own filter verdicts


def test_explain_json_carries_the_group_section(input_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--feature-gates", GATE, "-o", "json", str(input_file), "--explain", "fits-0"]) == 0
    pods = {p["pod"]: p for p in json.loads(capsys.readouterr().out)["pods"]}
    x = pods["default/fits-0"]["explanations"][0]
    assert x["result"]["status"] == "Scheduled"
    assert x["podGroup"]["name"] == "default/fits" and x["podGroup"]["result"] == "scheduled"
    assert [p["pod"] for p in x["podGroup"]["pods"]] == [f"default/fits-{i}" for i in range(3)]
    assert all(p["node"] in ("n1", "n2") for p in x["podGroup"]["pods"])


def test_html_has_a_pod_groups_section(input_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--feature-gates", GATE, "-o", "html", str(input_file)]) == 0
    html = capsys.readouterr().out
    assert "<h2>Pod groups</h2>" in html
    table = html.split('<table id="pod-groups">', 1)[1].split("</table>", 1)[0]
    assert table.count('<tr class="pod-group"') == 4
    assert 'data-status="Waiting"' in table and "not tried" in table and "fits nowhere" in table


def test_html_without_groups_has_no_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "plain.yaml"
    path.write_text(yaml.safe_dump_all([node_dict("n1"), pod_dict("web", cpu="1")]))
    assert main(["simulate", "-o", "html", str(path)]) == 0
    assert "Pod groups" not in capsys.readouterr().out


# ---- kubeberth test: a group's outcome pinned --------------------------------------------------

def test_case(name: str, expect: list[dict[str, Any]], gates: str | None = GATE) -> dict[str, Any]:
    doc: dict[str, Any] = {"name": name, "objects": cluster(), "expect": expect}
    if gates:
        doc["featureGates"] = gates
    return doc


test_case.__test__ = False  # type: ignore[attr-defined]


def test_policy_test_pins_group_outcomes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = test_case("groups", [
        {"podGroup": "default/fits", "status": "Scheduled", "scheduledPods": 3},
        {"podGroup": "default/toobig", "status": "Unschedulable", "scheduledPods": 0,
         "messageContains": ["minCount (3) cannot be satisfied"]},
        {"podGroup": "default/short", "status": "Waiting", "messageContains": ["1 missing"]},
        {"podGroup": "default/basic", "status": "Scheduled", "scheduledPods": 1}])
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(good))
    assert main(["test", str(path), "-v"]) == 0
    assert capsys.readouterr().out.splitlines() == ["PASS groups", "1 case: 1 passed, 0 failed"]


def test_policy_test_says_what_the_group_did(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = test_case("wrong", [{"podGroup": "default/toobig", "status": "Scheduled", "scheduledPods": 3},
                                {"podGroup": "default/nope", "status": "Scheduled"}])
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(wrong))
    assert main(["test", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    said = ("Unschedulable, 0 of 3 pods scheduled (minCount (3) cannot be satisfied: 1 scheduled, 1 remaining, "
            "pod group preemption: No preemption victims found for incoming preemptor)")
    assert lines[1] == f"  - podGroup default/toobig: want Scheduled, got {said}"
    assert lines[2] == f"  - podGroup default/toobig: want 3 pods scheduled, got {said}"
    assert lines[3].startswith("  - podGroup default/nope: want it in the results, but no PodGroup or pod names it")


def test_without_the_gate_a_group_expectation_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(test_case("nogate", [{"podGroup": "default/fits", "status": "Scheduled"}], None)))
    assert main(["test", str(path)]) == 1
    assert "is GenericWorkload on?" in capsys.readouterr().out


@pytest.mark.parametrize(("expect", "message"), [
    ({"podGroup": "fits", "status": "Scheduled"}, "expect[0].podGroup: must be NAMESPACE/NAME"),
    ({"podGroup": "default/fits"}, "expect[0]: says nothing about default/fits"),
    ({"podGroup": "default/fits", "node": "n1"}, "expect[0]: unknown key 'node' for a podGroup"),
    ({"podGroup": "default/fits", "status": "Bound"}, "expect[0].status: 'Bound' is not one of Scheduled"),
    ({"podGroup": "default/fits", "scheduledPods": -1}, "expect[0].scheduledPods: must be a whole number"),
    ({"podGroup": "default/fits", "messageContains": "x"}, "expect[0].messageContains: must be a list of strings"),
], ids=["namespace", "empty", "unknown-key", "status", "count", "message"])
def test_bad_group_expectations_are_refused(expect: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_case(test_case("bad", [expect]), "c.yaml")
    assert message in str(err.value)


def test_an_operator_forgets_the_attempts_of_groups_that_are_gone() -> None:
    """simulate keeps every group's last attempt; a long-running scheduler (keep_deleted_records off)
    drops those of PodGroups it no longer knows."""
    import asyncio

    from kubeberth.clock import FakeClock
    from kubeberth.plugins import plugin_registry
    from kubeberth.scheduler import Scheduler
    from kubeberth.testing import InMemoryClient
    from kubeberth.whatif.engine import build_profiles

    with features.override(FeatureGates.parse(GATE)):
        sched = Scheduler(clock=FakeClock(), keep_deleted_records=False)
        sched.ctx.client = InMemoryClient(sched)
        for fw in build_profiles([], sched.ctx, plugin_registry()).values():
            sched.set_profile(fw)
        sched.on_node_add(node_dict("n1", cpu="2"))
        sched.on_object("PodGroup", group("a", 1))
        sched.on_pod_add(member("a-0", "a", "100m"))
        asyncio.run(sched.run_until_idle())
        assert list(sched.group_attempts) == ["default/a"]
        state = sched.pod_groups.get("default/a")
        assert state is not None
        for p in list(state.pods.values()):
            sched.on_pod_delete(p)
        sched.on_object_delete("PodGroup", "default/a")
        assert sched.pod_groups.get("default/a") is None
        sched.on_object("PodGroup", group("b", 1))
        sched.on_pod_add(member("b-0", "b", "100m"))
        asyncio.run(sched.run_until_idle())
        assert list(sched.group_attempts) == ["default/b"]  # a's is gone (simulate would keep it)
