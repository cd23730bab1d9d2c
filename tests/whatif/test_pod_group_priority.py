"""A PodGroup's priority as kube-apiserver v1.37.2's Priority admission sets it on create
(plugin/pkg/admission/priority, admitPodGroup): from its PriorityClass, the globalDefault class
when it names none, else 0; an unknown class, or a spec.priority / preemptionPolicy other than the
class's, refused with admission's words. simulate, `kubeberth test` and --compare play that part
(`PriorityResolver.admit_pod_group`, the resolver pods' priorities come from); a refused PodGroup
is named with the file and document it came from, and the rest is simulated.
tests/cluster/test_pod_group_admission.py holds the same cases against the real API server."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeberth import features
from kubeberth.cli import main
from kubeberth.features import FeatureGates
from kubeberth.priority import PriorityResolver, Refused
from tests.builders import node_dict, pod_dict

GATE = "GenericWorkload=true"
FORBIDDEN = 'podgroups.scheduling.k8s.io "pg" is forbidden: '
INVALID = 'PodGroup.scheduling.k8s.io "pg" is invalid: spec.priority: Invalid value: '


@pytest.fixture(autouse=True)
def restore_gates() -> Iterator[None]:
    with features.override(FeatureGates()):
        yield


def pclass(name: str, value: int, *, default: bool = False, policy: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                           "value": value}
    if default:
        obj["globalDefault"] = True
    if policy:
        obj["preemptionPolicy"] = policy
    return obj


def pod_group(name: str = "pg", min_count: int | None = 1, **spec: Any) -> dict[str, Any]:
    policy = {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"}, "spec": {"schedulingPolicy": policy, **spec}}


CLASSES = [pclass("low", 10), pclass("high", 1000), pclass("calm", 500, policy="Never"),
           pclass("odd", 7, policy="Sometimes"), pclass("top-user", 1_000_000_000)]
ADMITTED = ("priorityClassName", "priority", "preemptionPolicy")


# (classes, the PodGroup's spec, PodGroupPreemptionPolicy, what admission writes or its refusal);
# tests/cluster/test_pod_group_admission.py runs them through kube-apiserver v1.37.2
ADMISSION_CASES = [
    pytest.param(CLASSES, {"priorityClassName": "high"}, False, {"priorityClassName": "high", "priority": 1000},
                 id="named-class"),
    pytest.param(CLASSES, {"priorityClassName": "nope"}, False,
                 "no PriorityClass with name nope was found", id="unknown-class"),
    pytest.param([*CLASSES, pclass("usual", 300, default=True)], {}, False,
                 {"priorityClassName": "usual", "priority": 300}, id="global-default"),
    pytest.param([*CLASSES, pclass("usual", 300, default=True), pclass("other", 200, default=True)], {}, False,
                 {"priorityClassName": "other", "priority": 200}, id="two-defaults-the-lowest"),
    pytest.param(CLASSES, {}, False, {"priority": 0}, id="no-default-is-0"),
    pytest.param(CLASSES, {"priorityClassName": "high", "priority": 1000}, False,
                 {"priorityClassName": "high", "priority": 1000}, id="explicit-priority-matching"),
    pytest.param(CLASSES, {"priorityClassName": "high", "priority": 5}, False,
                 "priority set in the pod group (5) must match the priority computed (1000) based on the priority "
                 "class set in the spec", id="explicit-priority-mismatching"),
    # admitted with the system class's value, which v1beta1's validation then refuses (above
    # HighestUserDefinablePriority)
    pytest.param([], {"priorityClassName": "system-cluster-critical"}, False,
                 INVALID + "2000000000: must be less than or equal to 1000000000", id="system-cluster"),
    pytest.param([], {"priorityClassName": "system-node-critical"}, False,
                 INVALID + "2000001000: must be less than or equal to 1000000000", id="system-node"),
    pytest.param([], {"priority": 1_000_000_001}, False,
                 INVALID + "1000000001: must be less than or equal to 1000000000", id="stored-above-highest"),
    pytest.param(CLASSES, {"priorityClassName": "top-user"}, False,
                 {"priorityClassName": "top-user", "priority": 1_000_000_000}, id="highest-user-priority"),
    pytest.param([], {"priorityClassName": "system-node-critical", "priority": 1}, False,
                 "priority set in the pod group (1) must match the priority computed (2000001000) based on the "
                 "priority class set in the spec", id="system-class-mismatching"),
    # an object the API server stored (a dump): spec.priority stands when no class, or a class the
    # input lacks, says otherwise (as a pod's spec.priority does)
    pytest.param([], {"priorityClassName": "high", "priority": 1000}, False,
                 {"priorityClassName": "high", "priority": 1000}, id="stored-class-not-in-the-input"),
    pytest.param(CLASSES, {"priority": 42}, False, {"priority": 42}, id="stored-without-class"),
    # PodGroupPreemptionPolicy: the class's policy, the PodGroup's own defaulted first
    pytest.param(CLASSES, {"priorityClassName": "low"}, True,
                 {"priorityClassName": "low", "priority": 10, "preemptionPolicy": "PreemptLowerPriority"},
                 id="policy-from-class"),
    pytest.param(CLASSES, {"priorityClassName": "calm"}, True,
                 "the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod group "
                 "spec; priority admission controller computed Never from the given PriorityClass name",
                 id="policy-never-class-defaulted-group"),
    pytest.param(CLASSES, {"priorityClassName": "calm", "preemptionPolicy": "Never"}, True,
                 {"priorityClassName": "calm", "priority": 500, "preemptionPolicy": "Never"}, id="policy-never-both"),
    pytest.param(CLASSES, {"preemptionPolicy": "Never"}, True,
                 "the string value of PreemptionPolicy (Never) must not be provided in pod group spec; priority "
                 "admission controller computed PreemptLowerPriority from the given PriorityClass name",
                 id="policy-never-group-no-class"),
    pytest.param(CLASSES, {"priorityClassName": "odd"}, True,
                 "preemptionPolicy set in the PriorityClass object (Sometimes) must match one of the allowed values "
                 "of PreemptionPolicy type in pod group", id="policy-class-invalid"),
    pytest.param(CLASSES, {"priorityClassName": "calm"}, False, {"priorityClassName": "calm", "priority": 500},
                 id="policy-gate-off-left-alone"),
    pytest.param(CLASSES, {"priorityClassName": "calm", "preemptionPolicy": "Never"}, False,
                 {"priorityClassName": "calm", "priority": 500}, id="policy-gate-off-field-dropped"),
]


def refusal(expected: str) -> str:
    """The API server's whole message: admission's reason is Forbidden's."""
    return expected if expected.startswith(INVALID) else FORBIDDEN + expected


@pytest.mark.parametrize(("classes", "spec", "policy_gate", "expected"), ADMISSION_CASES)
def test_admission_of_a_pod_group(classes: list[dict[str, Any]], spec: dict[str, Any], policy_gate: bool,
                                  expected: dict[str, Any] | str) -> None:
    resolver = PriorityResolver()
    for c in classes:
        resolver.put(c)
    raw = pod_group(**spec)
    if isinstance(expected, str):
        with pytest.raises(Refused) as info:
            resolver.admit_pod_group(raw, preemption_policy_gate=policy_gate)
        assert str(info.value) == refusal(expected)
        return
    admitted = resolver.admit_pod_group(raw, preemption_policy_gate=policy_gate)
    assert {k: v for k, v in admitted["spec"].items() if k in ADMITTED} == expected
    assert raw == pod_group(**spec)  # the input is not changed


# ---- end to end ---------------------------------------------------------------------------------

def member(group: str, name: str, cpu: str, priority_class: str, node: str = "") -> dict[str, Any]:
    return pod_dict(name, cpu=cpu, memory="100Mi", node=node, priorityClassName=priority_class,
                    schedulingGroup={"podGroupName": group})


def gang_story() -> list[dict[str, Any]]:
    """tests/cluster/test_gang_preemption.py's `gang` story, written by hand: no spec.priority
    anywhere, the classes say it. kube-scheduler v1.37.2 preempts both low pods there, and binds
    the gang on n1 and n2 (PodGroupInitiallyScheduled True)."""
    return [pclass("low", 10), pclass("high", 1000), node_dict("n1", cpu="2", memory="4Gi"),
            node_dict("n2", cpu="2", memory="4Gi"),
            pod_dict("low-a", cpu="1500m", memory="100Mi", node="n1", priorityClassName="low"),
            pod_dict("low-b", cpu="1500m", memory="100Mi", node="n2", priorityClassName="low"),
            pod_group("gang", 2, priorityClassName="high"),
            *(member("gang", f"gang-{i}", "1500m", "high") for i in range(2))]


def write(path: Path, objects: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump_all(objects))
    return path


def simulate_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[dict[str, Any], str]:
    assert main(["simulate", "--feature-gates", GATE, "-o", "json", *argv]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def test_a_high_priority_gang_named_by_its_class_preempts_as_kube_scheduler_does(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out, err = simulate_json([str(write(tmp_path / "gang.yaml", gang_story()))], capsys)
    pods = {p["pod"].split("/")[1]: p for p in out["pods"]}
    assert pods["low-a"]["status"] == pods["low-b"]["status"] == "Evicted", pods
    assert sorted(pods[f"gang-{i}"]["node"] for i in range(2)) == ["n1", "n2"]
    assert sorted(v for i in range(2) for v in pods[f"gang-{i}"]["victims"]) == ["default/low-a", "default/low-b"]
    (group,) = out["podGroups"]
    assert (group["podGroup"], group["status"], group["scheduled"]) == ("default/gang", "Scheduled", 2)
    assert group["condition"] == {"status": "True", "reason": "Scheduled", "message": ""}
    assert err == ""


def test_a_refused_pod_group_is_named_where_it_was_given_and_the_rest_goes_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lost = [pod_group("lost", 1, priorityClassName="nope"), member("lost", "lost-0", "100m", "high")]
    path = write(tmp_path / "in.yaml", [*gang_story(), *lost])
    out, err = simulate_json([str(path)], capsys)
    error = f'{path}, document 10: podgroups.scheduling.k8s.io "lost" is forbidden: no PriorityClass with name ' \
            "nope was found"
    assert err == f"skipping podgroup: {error}\n"
    groups = {g["podGroup"]: g for g in out["podGroups"]}
    assert groups["default/gang"]["status"] == "Scheduled"
    assert groups["default/lost"]["status"] == "Waiting"
    assert groups["default/lost"]["message"] == f"PodGroup default/lost was refused ({error}): its pods wait for it"
    assert groups["default/lost"]["pods"] == ["default/lost-0"]
    pods = {p["pod"].split("/")[1]: p for p in out["pods"]}
    assert pods["lost-0"]["status"] == "Unschedulable" and pods["lost-0"]["node"] is None
    # the table says it too
    assert main(["simulate", "--feature-gates", GATE, str(path)]) == 0
    table = capsys.readouterr().out
    assert f"Waiting    PodGroup default/lost was refused ({error})" in table


def test_in_a_list_the_item_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "list.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                    "items": [node_dict("n1"), pod_group("pg", 1, priorityClassName="gone")]}))
    _, err = simulate_json([str(path)], capsys)
    assert err == f"skipping podgroup: {path}, document 1, item 2: {FORBIDDEN}no PriorityClass with name gone " \
                  "was found\n"


def test_without_the_gate_a_pod_group_is_not_admitted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "in.yaml", [node_dict("n1"), pod_group("pg", 1, priorityClassName="nope")])
    assert main(["simulate", str(path)]) == 0
    assert capsys.readouterr().err == ""


def test_a_policy_test_case_sees_the_class_priority_and_the_refusal(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    lost = [pod_group("lost", 1, priorityClassName="nope"), member("lost", "lost-0", "100m", "high")]
    case: Mapping[str, Any] = {
        "name": "classes", "featureGates": GATE, "objects": [*gang_story(), *lost],
        "expect": [{"pod": "default/low-a", "evicted": True},
                   {"podGroup": "default/gang", "status": "Scheduled", "scheduledPods": 2},
                   {"podGroup": "default/lost", "status": "Waiting",
                    "messageContains": [f"{tmp_path / 'case.yaml'}.objects[9]: podgroups.scheduling.k8s.io "
                                        '"lost" is forbidden: no PriorityClass with name nope was found']}]}
    path = tmp_path / "case.yaml"
    path.write_text(yaml.safe_dump(dict(case)))
    assert main(["test", str(path)]) == 0, capsys.readouterr()


def test_compare_names_the_refused_pod_group(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "in.yaml", [*gang_story(), pod_group("lost", 1, priorityClassName="nope")])
    sides = []
    for name in ("a", "b"):
        sides.append(write(tmp_path / f"{name}.yaml", [{
            "apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": name},
            "spec": {"schedulerName": "default-scheduler"}}]))
    assert main(["simulate", "--feature-gates", GATE, str(path), "--compare", *map(str, sides)]) == 0
    err = capsys.readouterr().err
    assert err == f"skipping podgroup: {path}, document 10: podgroups.scheduling.k8s.io \"lost\" is forbidden: " \
                  "no PriorityClass with name nope was found\n"  # once: both sides read the same input
