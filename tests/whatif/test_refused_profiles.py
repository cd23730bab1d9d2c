"""A profile the operator would refuse is an error wherever it is given (issue 29, finding 4):
`kubeberth simulate` (input files, `--config`, a KubeSchedulerConfiguration among the inputs,
`--compare`'s sides), `kubeberth test` (a case's `profile` and `objects`) and `kubeberth profile
export` exit 2 naming the file/document and the field, and print nothing on stdout: nothing is
simulated under a policy that was not asked for."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeberth.cli import main
from kubeberth.whatif.engine import run_simulation
from kubeberth.whatif.inputs import InputError
from kubeberth.whatif.snapshot import refused_profiles, take
from tests.builders import node_dict, pod_dict

KSC = "kubescheduler.config.k8s.io/v1"
MOST_ALLOCATED = {"pluginConfig": [{"name": "NodeResourcesFit",
                                    "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}


def sp(spec: dict[str, Any], name: str = "p") -> dict[str, Any]:
    return {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": name},
            "spec": spec}


def ksc(*profiles: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": KSC, "kind": "KubeSchedulerConfiguration", "profiles": list(profiles)}


def cluster() -> list[dict[str, Any]]:
    # LeastAllocated (the default) puts p on large, MostAllocated on small
    return [node_dict("small", cpu="2"), node_dict("large", cpu="8"), pod_dict("p", cpu="1")]


def write(path: Path, *docs: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump_all(list(docs), sort_keys=False))
    return str(path)


# The ways a profile is refused: (spec, the field under the profile, words of the message).
REFUSED = {
    "unknown-plugin": ({"plugins": {"score": {"enabled": [{"name": "Foo"}]}}},
                       "plugins.score.enabled[0].name", "plugin 'Foo' does not exist"),
    "bad-args-field": ({"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "Bogus"}}}]},
                       "pluginConfig[0].args.scoringStrategy.type", "Input should be 'LeastAllocated'"),
    "unknown-args-field": ({"pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategi": {}}}]},
                           "pluginConfig[0].args.scoringStrategi", "Extra inputs are not permitted"),
    "bad-schema-field": ({"plugins": {"scoer": {}}}, "plugins.scoer", "Extra inputs are not permitted"),
    "wrong-extension-point": ({"plugins": {"filter": {"enabled": [{"name": "ImageLocality"}]}}},
                              "plugins.filter.enabled[0].name", "plugin 'ImageLocality' does not extend filter"),
    "args-for-unknown-plugin": ({"pluginConfig": [{"name": "Nope", "args": {}}]},
                                "pluginConfig[0].name", "plugin 'Nope' does not exist"),
    # the user's index, not the entry's place among upstream's defaults merged in (issue 37)
    "multipoint-typo": ({"plugins": {"multiPoint": {"enabled": [{"name": "ImageLocalty"}]}}},
                        "plugins.multiPoint.enabled[0].name", "plugin 'ImageLocalty' does not exist"),
}


@dataclass
class Given:
    argv: list[str]
    where: str  # what the message names before the field: the file/document, the profile
    command: str  # simulate, test or profile export


# Each way of giving a profile: (tmp_path, the refused spec) -> the command and what names the spot.
def simulate_input_file(tmp: Path, spec: dict[str, Any]) -> Given:
    prof = write(tmp / "prof.yaml", sp({"schedulerName": "other"}, "ok"), sp(spec))
    return Given(["simulate", write(tmp / "c.yaml", *cluster()), prof],
                 f"{prof}, document 2: SchedulingProfile p: spec.", "simulate")


def simulate_input_list(tmp: Path, spec: dict[str, Any]) -> Given:
    path = write(tmp / "c.yaml", *cluster(), {"apiVersion": "v1", "kind": "List", "items": [sp(spec)]})
    return Given(["simulate", path, "-o", "json"], f"{path}, document 4, item 1: SchedulingProfile p: spec.",
                 "simulate")


def simulate_explain_html(tmp: Path, spec: dict[str, Any]) -> Given:
    path = write(tmp / "c.yaml", sp(spec), *cluster())
    return Given(["simulate", path, "-o", "html", "--explain"], f"{path}, document 1: SchedulingProfile p: spec.",
                 "simulate")


def simulate_config(tmp: Path, spec: dict[str, Any]) -> Given:
    config = write(tmp / "ksc.yaml", ksc(spec))
    return Given(["simulate", write(tmp / "c.yaml", *cluster()), "--config", config], f"{config}: profiles[0].",
                 "simulate")


def simulate_ksc_in_input(tmp: Path, spec: dict[str, Any]) -> Given:
    path = write(tmp / "c.yaml", *cluster(), ksc({"schedulerName": "a"}, spec))
    return Given(["simulate", path], f"{path}, document 4: profiles[1].", "simulate")


def compare_second_profile(tmp: Path, spec: dict[str, Any]) -> Given:
    a, b = write(tmp / "a.yaml", sp({})), write(tmp / "b.yaml", sp(spec))
    return Given(["simulate", write(tmp / "c.yaml", *cluster()), "--compare", a, b],
                 f"{b}, document 1: SchedulingProfile p: spec.", "simulate")


def compare_second_config(tmp: Path, spec: dict[str, Any]) -> Given:
    a, b = write(tmp / "a.yaml", ksc({})), write(tmp / "b.yaml", ksc(spec))
    return Given(["simulate", write(tmp / "c.yaml", *cluster()), "--config", a, "--config", b, "--compare", "-o",
                  "json"], f"{b}: profiles[0].", "simulate")


def compare_input(tmp: Path, spec: dict[str, Any]) -> Given:
    a, b = write(tmp / "a.yaml", sp({})), write(tmp / "b.yaml", sp(MOST_ALLOCATED))
    path = write(tmp / "c.yaml", *cluster(), sp({**spec, "schedulerName": "batch"}, "batch"))
    return Given(["simulate", path, "--compare", a, b], f"{path}, document 4: SchedulingProfile batch: spec.",
                 "simulate")


def _case(tmp: Path, **fields: Any) -> str:
    return write(tmp / "case.yaml", {"name": "c", "objects": cluster(), "expect": [{"pod": "default/p", "kept": True}],
                                     **fields})


def case_profile_object(tmp: Path, spec: dict[str, Any]) -> Given:
    path = _case(tmp, profile=sp(spec))
    return Given(["test", path], f"{path}.profile: SchedulingProfile p: spec.", "test")


def case_profile_bare_spec(tmp: Path, spec: dict[str, Any]) -> Given:
    path = _case(tmp, profile=spec)
    return Given(["test", path], f"{path}.profile.", "test")


def case_profile_config(tmp: Path, spec: dict[str, Any]) -> Given:
    path = _case(tmp, profile=ksc(spec))
    return Given(["test", path], f"{path}.profile: profiles[0].", "test")


def case_objects(tmp: Path, spec: dict[str, Any]) -> Given:
    path = write(tmp / "case.yaml", {"name": "c", "objects": [*cluster(), sp(spec)],
                                     "expect": [{"pod": "default/p", "kept": True}]})
    return Given(["test", path], f"{path}.objects[3]: SchedulingProfile p: spec.", "test")


def case_objects_config_second_case(tmp: Path, spec: dict[str, Any]) -> Given:
    good = {"name": "good", "objects": cluster(), "expect": [{"pod": "default/p", "kept": True}]}
    bad = {"name": "bad", "objects": [*cluster(), ksc(spec)], "expect": [{"pod": "default/p", "kept": True}]}
    path = write(tmp / "cases.yaml", good, bad)
    return Given(["test", path], f"{path} (case 2).objects[3]: profiles[0].", "test")


def export(tmp: Path, spec: dict[str, Any]) -> Given:
    good, bad = write(tmp / "a.yaml", sp({"schedulerName": "a"}, "a")), write(tmp / "b.yaml", sp(spec))
    return Given(["profile", "export", good, bad], f"{bad}, document 1: SchedulingProfile p: spec.", "profile export")


WAYS: list[Callable[[Path, dict[str, Any]], Given]] = [
    simulate_input_file, simulate_input_list, simulate_explain_html, simulate_config, simulate_ksc_in_input,
    compare_second_profile, compare_second_config, compare_input, case_profile_object, case_profile_bare_spec,
    case_profile_config, case_objects, case_objects_config_second_case, export]


@pytest.mark.parametrize("way", WAYS, ids=[w.__name__ for w in WAYS])
@pytest.mark.parametrize("refused", list(REFUSED), ids=list(REFUSED))
def test_a_refused_profile_is_an_error_naming_the_document_and_field(
        way: Callable[[Path, dict[str, Any]], Given], refused: str, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    spec, field, text = REFUSED[refused]
    given = way(tmp_path, spec)
    assert main(given.argv) == 2
    out, err = capsys.readouterr()
    assert out == ""  # no results under another policy
    [line] = err.splitlines()
    assert line.startswith(f"kubeberth {given.command}: {given.where}{field}: ")
    assert text in line


def two(tmp: Path, name: str, a: dict[str, Any], b: dict[str, Any]) -> tuple[str, str]:
    return write(tmp / f"{name}-a.yaml", a), write(tmp / f"{name}-b.yaml", b)


# Two profiles serving one schedulerName: the operator refuses the later one (Conflict).
@pytest.mark.parametrize(("given", "line"), [
    (lambda t: ["simulate", write(t / "c.yaml", *cluster()), *two(t, "p", sp({}, "x"), sp(MOST_ALLOCATED, "y"))],
     "kubeberth simulate: {t}/p-b.yaml, document 1: SchedulingProfile y: spec.schedulerName: default-scheduler "
     "is already served by SchedulingProfile x ({t}/p-a.yaml, document 1)"),
    (lambda t: ["simulate", write(t / "c.yaml", *cluster(), sp({"schedulerName": "s"}, "x"),
                                  sp({"schedulerName": "s"}, "y"))],
     "kubeberth simulate: {t}/c.yaml, document 5: SchedulingProfile y: spec.schedulerName: s is already served "
     "by SchedulingProfile x ({t}/c.yaml, document 4)"),
    (lambda t: ["simulate", write(t / "c.yaml", *cluster()), "--compare", write(t / "a.yaml", sp({})),
                write(t / "b.yaml", sp({}, "x"), sp(MOST_ALLOCATED, "y"))],
     "kubeberth simulate: {t}/b.yaml, document 2: SchedulingProfile y: spec.schedulerName: default-scheduler "
     "is already served by SchedulingProfile x ({t}/b.yaml, document 1)"),
    (lambda t: ["simulate", write(t / "c.yaml", *cluster()), "--config",
                write(t / "k.yaml", ksc({"schedulerName": "s"}, {"schedulerName": "s"}))],
     "kubeberth simulate: {t}/k.yaml: profiles[1].schedulerName: 's' is served by an earlier profile"),
    (lambda t: ["test", write(t / "case.yaml", {"name": "c", "objects": [*cluster(), sp({}, "x"), sp({}, "y")],
                                                "expect": [{"pod": "default/p", "kept": True}]})],
     "kubeberth test: {t}/case.yaml.objects[4]: SchedulingProfile y: spec.schedulerName: default-scheduler is "
     "already served by SchedulingProfile x ({t}/case.yaml.objects[3])"),
    (lambda t: ["profile", "export", *two(t, "p", sp({}, "x"), sp(MOST_ALLOCATED, "y"))],
     "kubeberth profile export: {t}/p-b.yaml, document 1: SchedulingProfile y: spec.schedulerName: "
     "default-scheduler is already served by SchedulingProfile x ({t}/p-a.yaml, document 1)"),
], ids=["simulate-files", "simulate-one-file", "compare-side", "config", "test-objects", "export"])
def test_two_profiles_serving_one_scheduler_name_are_refused(given: Callable[[Path], list[str]], line: str,
                                                             tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(given(tmp_path)) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [line.format(t=tmp_path)]


def _node_of_p(out: str) -> str:
    return next(p["node"] for p in json.loads(out)["pods"] if p["pod"] == "default/p")


def test_a_config_replaces_the_input_profile_serving_its_scheduler_name(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    """Not a conflict: --config (and a case's `profile`) is the policy asked for; the input's profile
    for that schedulerName is replaced, with a warning, and is no longer run."""
    path = write(tmp_path / "c.yaml", *cluster(), sp(MOST_ALLOCATED, "binpack"))
    assert main(["simulate", path, "-o", "json"]) == 0
    assert _node_of_p(capsys.readouterr().out) == "small"
    config = write(tmp_path / "k.yaml", ksc({}))
    assert main(["simulate", path, "--config", config, "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert _node_of_p(out) == "large"
    assert "warning: the configuration's profile default-scheduler replaces SchedulingProfile binpack" in err
    case = write(tmp_path / "case.yaml", {"name": "c", "objects": [*cluster(), sp(MOST_ALLOCATED, "binpack")],
                                          "profile": {}, "expect": [{"pod": "default/p", "node": "large"}]})
    assert main(["test", case]) == 0


# Shadow profiles: they schedule nothing in a cluster, so simulate leaves them out (and says so);
# where a profile stands for the policy under test, a Shadow one is an error.
SHADOW = {"mode": "Shadow", **MOST_ALLOCATED}


def test_simulate_leaves_a_shadow_profile_out_and_says_so(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "c.yaml", *cluster(), sp(SHADOW, "candidate"), sp({"schedulerName": "x"}, "x"))
    assert main(["simulate", path, "-o", "json"]) == 0
    out, err = capsys.readouterr()
    assert _node_of_p(out) == "large"  # the default profile's choice, not MostAllocated's
    assert err.splitlines() == [f"note: {path}, document 4: SchedulingProfile candidate is mode: Shadow: it schedules "
                                "nothing, here as in a cluster (set mode: Active to simulate its policy)"]
    # a Shadow profile serves no schedulerName: an Active one beside it is no conflict
    path = write(tmp_path / "c.yaml", *cluster(), sp(SHADOW, "candidate"), sp(MOST_ALLOCATED, "binpack"))
    assert main(["simulate", path, "-o", "json"]) == 0
    assert _node_of_p(capsys.readouterr().out) == "small"


@pytest.mark.parametrize(("argv", "line"), [
    (lambda t: ["simulate", write(t / "c.yaml", *cluster(), sp({"mode": "Shadow", **REFUSED["unknown-plugin"][0]}))],
     "kubeberth simulate: {t}/c.yaml, document 4: SchedulingProfile p: spec.plugins.score.enabled[0].name: "
     "plugin 'Foo' does not exist"),
    (lambda t: ["simulate", write(t / "c.yaml", *cluster()), "--compare", write(t / "a.yaml", sp({})),
                write(t / "b.yaml", sp(SHADOW, "candidate"))],
     "kubeberth simulate: {t}/b.yaml, document 1: SchedulingProfile candidate: spec.mode: a Shadow profile "
     "schedules nothing, so it has no outcome to compare; set mode: Active to compare its policy"),
    (lambda t: ["test", _case(t, profile=SHADOW)],
     "kubeberth test: {t}/case.yaml.profile.mode: a Shadow profile schedules nothing, so the case would test the "
     "default policy; set mode: Active to test its policy"),
    (lambda t: ["test", _case(t, profile=sp(SHADOW, "candidate"))],
     "kubeberth test: {t}/case.yaml.profile: SchedulingProfile candidate: spec.mode: a Shadow profile schedules "
     "nothing, so the case would test the default policy; set mode: Active to test its policy"),
    (lambda t: ["profile", "export", write(t / "s.yaml", sp(SHADOW, "candidate"))],
     "kubeberth profile export: {t}/s.yaml, document 1: SchedulingProfile candidate: spec.mode: a Shadow profile "
     "has no KubeSchedulerConfiguration form (kube-scheduler binds every pod it schedules)"),
], ids=["simulate-refused-shadow", "compare-side", "test-bare-spec", "test-object", "export"])
def test_shadow_profiles_where_they_cannot_stand(argv: Callable[[Path], list[str]], line: str, tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv(tmp_path)) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [line.format(t=tmp_path)]


def test_compare_needs_a_profile_in_each_side_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("")
    assert main(["simulate", write(tmp_path / "c.yaml", *cluster()), "--compare", write(tmp_path / "a.yaml", sp({})),
                 str(empty)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.strip() == f"kubeberth simulate: {empty}: no SchedulingProfile in this file"


def test_export_still_writes_valid_profiles(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["profile", "export", write(tmp_path / "a.yaml", sp(MOST_ALLOCATED), sp({"schedulerName": "b"}, "b"))
                 ]) == 0
    doc = yaml.safe_load(capsys.readouterr().out)
    assert [p["schedulerName"] for p in doc["profiles"]] == ["default-scheduler", "b"]


# The library entry point refuses too (conformance runners and benchmarks call it directly).
@pytest.mark.parametrize(("objects", "text"), [
    ([*cluster(), sp(REFUSED["unknown-plugin"][0])],
     "SchedulingProfile p: spec.plugins.score.enabled[0].name: plugin 'Foo' does not exist"),
    ([*cluster(), sp(REFUSED["bad-schema-field"][0])], "SchedulingProfile p: spec.plugins.scoer: Extra inputs"),
    ([*cluster(), sp({}, "x"), sp(MOST_ALLOCATED, "y")],
     "SchedulingProfile y: spec.schedulerName: default-scheduler is already served by SchedulingProfile x"),
], ids=["unknown-plugin", "bad-schema-field", "duplicate"])
def test_run_simulation_raises_for_a_refused_profile(objects: list[dict[str, Any]], text: str) -> None:
    with pytest.raises(InputError) as err:
        run_simulation(objects, warn=io.StringIO())
    assert str(err.value).startswith(text)


def test_run_simulation_leaves_shadow_profiles_out() -> None:
    outcomes, sched = run_simulation([*cluster(), sp(SHADOW, "candidate")], warn=io.StringIO())
    assert outcomes[0].node == "large" and set(sched.profiles) == {"default-scheduler"}


# kubeberth snapshot copies the cluster's SchedulingProfiles; one simulate will refuse is said at once.
class FakeRest:
    """Answers kubeberth snapshot's list calls: the SchedulingProfiles given, nothing else."""

    def __init__(self, profiles: list[dict[str, Any]]) -> None:
        self.profiles = profiles

    async def request(self, method: str, path: str, query: dict[str, str] | None = None) -> dict[str, Any]:
        items = self.profiles if path.endswith("/schedulingprofiles") else []
        return {"items": items, "metadata": {}}


def test_snapshot_warns_of_a_profile_simulate_will_refuse() -> None:
    refused = {**sp(REFUSED["unknown-plugin"][0], "bad"),
               "status": {"conditions": [{"type": "Accepted", "status": "False", "reason": "Invalid"}]}}
    progress = io.StringIO()
    objects = asyncio.run(take(FakeRest([sp({}, "good"), refused, sp(SHADOW, "candidate")]), progress=progress))
    assert [o["metadata"]["name"] for o in objects] == ["good", "bad", "candidate"]
    assert progress.getvalue().splitlines()[-1] == (
        "warning: SchedulingProfile bad: spec.plugins.score.enabled[0].name: plugin 'Foo' does not exist (the "
        "cluster's kubeberth refuses it too: Accepted=False); simulate refuses this snapshot until the profile is "
        "fixed or left out")
    assert refused_profiles([sp({}, "good"), sp(SHADOW, "candidate")]) == []
    assert refused_profiles([sp({}, "a"), sp({}, "b")]) == [
        "SchedulingProfile b: spec.schedulerName: default-scheduler is already served by SchedulingProfile a"]
