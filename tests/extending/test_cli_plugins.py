"""--plugins on the commands, and `kubeberth plugins`: what a user sees."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from kubeberth.cli import main

from .conftest import score_plugin

# The gold node is the smallest: without PreferGold, NodeResourcesFit sends the pod elsewhere.
NODES = [
    {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"tier": tier}},
     "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}
    for name, tier, cpu in (("a-silver", "silver", "8"), ("b-gold", "gold", "2"), ("c-silver", "silver", "8"))
]
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
       "spec": {"containers": [{"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "1"}}}]}}


def profile(plugin: str, weight: int = 50) -> dict:  # type: ignore[type-arg]
    return {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "default"},
            "spec": {"schedulerName": "default-scheduler",
                     "plugins": {"score": {"enabled": [{"name": plugin, "weight": weight}]}}}}


def cluster(tmp_path: Path, *extra: dict) -> str:  # type: ignore[type-arg]
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all([*NODES, POD, *extra]))
    return str(path)


def test_simulate_runs_a_plugin_given_with_plugins(write: Callable[[str, str], Path], tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = write("gold.py", score_plugin("PreferGold"))
    files = cluster(tmp_path, profile("PreferGold"))
    assert main(["simulate", files, "--plugins", str(path), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["pods"][0]["node"] == "b-gold"


def test_simulate_without_the_plugin_refuses_the_profile(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    files = cluster(tmp_path, profile("PreferGold"))
    main(["simulate", files, "-o", "json"])
    assert "plugin 'PreferGold' does not exist" in capsys.readouterr().err


def test_an_import_failure_is_reported_once_and_its_profile_is_an_error(
        write: Callable[[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write("gold.py", "import not_installed_anywhere\n" + score_plugin("PreferGold"))
    files = cluster(tmp_path, profile("PreferGold"))
    assert main(["simulate", files, "--plugins", str(path)]) == 2
    err = capsys.readouterr().err
    failure = f"path {path}: import failed: ModuleNotFoundError: No module named 'not_installed_anywhere'"
    assert err.count(failure) == 2  # the report, and the refused profile's reason
    assert f"kubeberth: plugin unavailable: {failure}\n" in err
    document = 1 + len(NODES) + 1  # the nodes, the pod, then the profile
    assert (f"kubeberth simulate: {files}, document {document}: SchedulingProfile default: "
            f"spec.plugins.score.enabled[0].name: plugin 'PreferGold' is unavailable: {failure}") in err


def test_an_import_failure_leaves_other_profiles_running(write: Callable[[str, str], Path], tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = write("gold.py", "raise RuntimeError('boom')\n")
    assert main(["simulate", cluster(tmp_path), "--plugins", str(path), "-o", "json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["pods"][0]["status"] == "Scheduled"
    assert f"kubeberth: plugin unavailable: path {path}: import failed: RuntimeError: boom" in captured.err


def test_a_clash_is_an_error_exit(write: Callable[[str, str], Path], tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    one = write("one.py", score_plugin("Same"))
    two = write("two.py", score_plugin("Same"))
    assert main(["simulate", cluster(tmp_path), "--plugins", str(one), "--plugins", str(two)]) == 2
    assert (f"kubeberth: a plugin named 'Same' already exists: path {one} has it, path {two} brings another"
            in capsys.readouterr().err)


def test_kubeberth_test_takes_plugins(write: Callable[[str, str], Path], tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = write("gold.py", score_plugin("PreferGold"))
    case = tmp_path / "case.yaml"
    case.write_text(yaml.safe_dump({"name": "gold wins", "objects": [*NODES, POD],
                                    "profile": profile("PreferGold")["spec"],
                                    "expect": [{"pod": "default/web", "node": "b-gold"}]}))
    assert main(["test", str(case), "--plugins", str(path)]) == 0
    assert main(["test", str(case)]) != 0


def test_plugins_lists_origins_points_hooks_and_args(write: Callable[[str, str], Path],
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    path = write("gold.py", score_plugin("PreferGold"))
    broken = write("broken.py", score_plugin("Broken") + "raise ValueError('nope')\n")
    assert main(["plugins", "-o", "json", "--plugins", str(path), "--plugins", str(broken)]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    by_name = {p["name"]: p for p in data["plugins"]}
    mine = by_name["PreferGold"]
    assert mine["origin"] == f"path {path}"
    assert mine["extensionPoints"] == ["score"]
    assert mine["vectorisedHooks"] == []
    assert mine["argsSchema"]["properties"]["label"] == {"default": "tier", "title": "Label", "type": "string"}
    assert by_name["NodeResourcesFit"]["origin"] == "in-tree"
    assert "filter_all" in by_name["NodeResourcesFit"]["vectorisedHooks"]
    assert data["unavailable"] == [{"origin": f"path {broken}", "error": "import failed: ValueError: nope",
                                    "names": ["Broken"]}]
    assert main(["plugins", "--plugins", str(path)]) == 0
    table = capsys.readouterr().out
    row = next(line for line in table.splitlines() if line.startswith("PreferGold"))
    assert row.split() == ["PreferGold", "path", str(path), "score", "no", "label,", "value"]


def test_profile_export_takes_plugins(write: Callable[[str, str], Path], tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    path = write("gold.py", score_plugin("PreferGold"))
    files = tmp_path / "profile.yaml"
    files.write_text(yaml.safe_dump(profile("PreferGold")))
    assert main(["profile", "export", str(files), "--plugins", str(path)]) == 0
    exported = yaml.safe_load(capsys.readouterr().out)
    assert exported["profiles"][0]["plugins"]["score"]["enabled"] == [{"name": "PreferGold", "weight": 50}]


def _with_args(spec: dict, args: dict) -> dict:  # type: ignore[type-arg]
    return {**spec, "pluginConfig": [{"name": "PreferGold", "args": args}]}


def test_an_undeclared_args_field_is_an_error_in_simulate_and_test(
        write: Callable[[str, str], Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """PreferGold's args model is a plain BaseModel, which would drop `colour` silently."""
    path = write("gold.py", score_plugin("PreferGold"))
    prof = profile("PreferGold")
    prof["spec"] = _with_args(prof["spec"], {"label": "tier", "colour": "gold"})
    files = cluster(tmp_path, prof)
    assert main(["simulate", files, "--plugins", str(path), "-o", "json"]) == 2
    out, err = capsys.readouterr()
    document = len(NODES) + 2
    assert out == "" and err.splitlines() == [
        f"kubeberth simulate: {files}, document {document}: SchedulingProfile default: "
        "spec.pluginConfig[0].args.colour: Extra inputs are not permitted"]
    case = tmp_path / "case.yaml"
    case.write_text(yaml.safe_dump({"name": "gold wins", "objects": [*NODES, POD],
                                    "profile": _with_args(profile("PreferGold")["spec"], {"colour": "gold"}),
                                    "expect": [{"pod": "default/web", "node": "b-gold"}]}))
    assert main(["test", str(case), "--plugins", str(path)]) == 2
    out, err = capsys.readouterr()
    assert f"kubeberth test: {case}.profile.pluginConfig[0].args.colour: Extra inputs are not permitted" in err
