"""`kubeberth test`: users' scheduling policy tests, exit status, the diff on failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeberth.cli import main
from tests.builders import node_dict, pod_dict

KSC = "kubescheduler.config.k8s.io/v1"
MOST_ALLOCATED = {"pluginConfig": [{"name": "NodeResourcesFit",
                                    "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}


def case(name: str, expect: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    objects = [node_dict("small", cpu="2"), node_dict("large", cpu="8"), pod_dict("web", cpu="1"),
               pod_dict("huge", cpu="64")]
    return {"name": name, "objects": objects, "expect": expect, **extra}


def write(path: Path, *docs: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(list(docs)))
    return path


def test_passing_cases_exit_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spread = case("spread", [{"pod": "default/web", "node": "large"},
                             {"pod": "default/huge", "unschedulable": True,
                              "messageContains": ["0/2 nodes are available", "2 Insufficient cpu"]}])
    # the same cluster under a profile: a bare spec, a SchedulingProfile, a KubeSchedulerConfiguration
    packed = [case("bin-pack-spec", [{"pod": "default/web", "node": "small"}], profile=MOST_ALLOCATED),
              case("bin-pack-object", [{"pod": "default/web", "node": "small"}],
                   profile={"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile",
                            "metadata": {"name": "p"}, "spec": MOST_ALLOCATED}),
              case("bin-pack-config", [{"pod": "default/web", "node": "small"}],
                   profile={"apiVersion": KSC, "kind": "KubeSchedulerConfiguration", "profiles": [MOST_ALLOCATED]})]
    (tmp_path / "dir").mkdir()
    write(tmp_path / "dir" / "spread.yaml", spread)
    assert main(["test", str(tmp_path / "dir"), str(write(tmp_path / "packed.yaml", *packed)), "-v"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == ["PASS spread", "PASS bin-pack-spec", "PASS bin-pack-object", "PASS bin-pack-config",
                                "4 cases: 4 passed, 0 failed"]


def test_failing_case_exits_1_with_a_readable_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wrong = case("wrong", [{"pod": "default/web", "node": "small"}, {"pod": "default/huge", "nodeIn": ["large"]},
                           {"pod": "default/gone", "kept": True}], description="bin-packing expected")
    good = case("good", [{"pod": "default/web", "kept": True}])
    assert main(["test", str(write(tmp_path / "c.yaml", wrong, good))]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"FAIL wrong ({tmp_path / 'c.yaml'})"
    assert out[1] == "  bin-packing expected"
    assert out[2] == "  - default/web: want Scheduled on small, got Scheduled on large"
    assert out[3].startswith("  - default/huge: want Scheduled on one of large, got Unschedulable (0/2 nodes")
    assert out[4] == "  - default/gone: want it in the results, but there is no such pod in the objects"
    assert out[-1] == "2 cases: 1 passed, 1 failed"


@pytest.mark.parametrize(("doc", "text"), [
    ({"name": "x", "objects": [], "expect": [{"pod": "a/b", "nod": "n"}]}, "expect[0]: unknown key 'nod'"),
    ({"name": "x", "objects": [], "expect": [{"pod": "a/b"}]}, "expect[0]: says nothing about a/b"),
    ({"name": "x", "objects": [{"metadata": {}}], "expect": [{"pod": "a/b", "kept": True}]}, "objects: must be"),
    ({"name": "x", "objects": [], "expect": []}, "expect: must be a non-empty list"),
    ({"name": "x", "objects": [], "expects": []}, "unknown key 'expects'"),
    ({"name": "x", "objects": [], "expect": [{"pod": "a/b", "kept": True}], "profile": "p"}, "profile: must be"),
])
def test_malformed_case_exits_2_naming_the_problem(tmp_path: Path, doc: dict[str, Any], text: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["test", str(write(tmp_path / "bad.yaml", doc))]) == 2
    assert text in capsys.readouterr().err


def test_the_project_conformance_cases_pass_through_the_command(capsys: pytest.CaptureFixture[str]) -> None:
    cases = Path(__file__).resolve().parents[1] / "conformance" / "cases"
    assert main(["test", str(cases / "resources-fit.yaml"), str(cases / "affinity-required.yaml")]) == 0
    assert capsys.readouterr().out == "2 cases: 2 passed, 0 failed\n"
