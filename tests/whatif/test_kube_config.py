"""KubeSchedulerConfiguration in (simulate/run --config) and out (profile export)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeberth.cli import main
from kubeberth.config import ConfigError, parse_profile_object
from kubeberth.config.kube_config import export_config, import_config
from kubeberth.operator.options import BadConfigFile, load_config_file
from kubeberth.whatif.config_files import prepare
from kubeberth.whatif.engine import run_simulation
from tests.builders import node_dict, pod_dict

ROOT = Path(__file__).resolve().parents[2]
KSC = "kubescheduler.config.k8s.io/v1"


def ksc(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": KSC, "kind": "KubeSchedulerConfiguration", **fields}


MOST_ALLOCATED = {"name": "NodeResourcesFit",
                  "args": {"apiVersion": KSC, "kind": "NodeResourcesFitArgs",
                           "scoringStrategy": {"type": "MostAllocated"}}}


def test_profiles_become_scheduling_profiles_with_global_fields_copied() -> None:
    doc = ksc(percentageOfNodesToScore=40, podMaxBackoffSeconds=20, parallelism=4,
              extenders=[{"urlPrefix": "http://ext:8888", "filterVerb": "filter"}],
              profiles=[{"schedulerName": "default-scheduler", "pluginConfig": [MOST_ALLOCATED]},
                        {"schedulerName": "Batch_Jobs", "percentageOfNodesToScore": 100}])
    got = import_config(doc)
    assert [p["metadata"]["name"] for p in got.profiles] == ["default-scheduler", "batch-jobs"]
    specs = [parse_profile_object(p)[1] for p in got.profiles]
    assert [s.percentageOfNodesToScore for s in specs] == [40, 100]  # a profile's own value wins
    assert all(s.podMaxBackoffSeconds == 20 and s.extenders[0].urlPrefix == "http://ext:8888" for s in specs)
    # apiVersion/kind accepted and dropped: the plugin sees its own args only
    assert specs[0].pluginConfig[0].args == {"scoringStrategy": {"type": "MostAllocated"}}
    assert got.percentage_of_nodes_to_score == 40
    assert len(got.warnings) == 1 and got.warnings[0].startswith("parallelism does not apply")


@pytest.mark.parametrize(("doc", "path", "text"), [
    (ksc(profiles=[{"schedulerName": "a", "plugins": {"scoer": {}}}]), "profiles[0].plugins.scoer", "Extra inputs"),
    (ksc(bogus=1), "bogus", "unknown field"),
    (ksc(profiles=[{"schedulerName": "a", "extra": 1}]), "profiles[0].extra", "unknown field"),
    (ksc(profiles=[{"schedulerName": "a"}, {"schedulerName": "a"}]), "profiles[1].schedulerName", "earlier profile"),
    (ksc(percentageOfNodesToScore=101), "percentageOfNodesToScore", "0 to 100"),
    (ksc(profiles=[{"pluginConfig": [{**MOST_ALLOCATED, "args": {**MOST_ALLOCATED["args"],
                                                                 "kind": "InterPodAffinityArgs"}}]}]),
     "profiles[0].pluginConfig[0]", "want NodeResourcesFitArgs"),
    ({**ksc(), "apiVersion": "kubescheduler.config.k8s.io/v1beta1"}, "apiVersion", "want kubescheduler"),
])
def test_invalid_configuration_names_the_field(doc: dict[str, Any], path: str, text: str) -> None:
    with pytest.raises(ConfigError) as err:
        import_config(doc, "f.yaml")
    assert err.value.path == f"f.yaml: {path}"
    assert text in err.value.detail


def test_export_then_import_round_trip() -> None:
    specs = [parse_profile_object(p)[1] for p in import_config(ksc(
        podInitialBackoffSeconds=2,
        profiles=[{"pluginConfig": [MOST_ALLOCATED]},
                  {"schedulerName": "b", "plugins": {"score": {"disabled": [{"name": "ImageLocality"}]}}}])).profiles]
    doc = export_config(specs)
    assert doc["podInitialBackoffSeconds"] == 2
    assert doc["profiles"][0]["pluginConfig"][0]["args"]["kind"] == "NodeResourcesFitArgs"
    again = [parse_profile_object(p)[1] for p in import_config(doc).profiles]
    assert again == specs


def test_export_refuses_profiles_that_differ_in_a_scheduler_wide_field() -> None:
    a = parse_profile_object({"metadata": {"name": "a"}, "spec": {"podMaxBackoffSeconds": 30}})[1]
    b = parse_profile_object({"metadata": {"name": "b"}, "spec": {"schedulerName": "b"}})[1]
    with pytest.raises(ConfigError, match="podMaxBackoffSeconds: differs between the profiles"):
        export_config([a, b])


def _cluster() -> list[dict[str, Any]]:
    return [node_dict("small", cpu="2", memory="4Gi"), node_dict("large", cpu="8", memory="16Gi"),
            pod_dict("p", cpu="1")]


def test_simulate_honours_the_configuration() -> None:
    def node_of(objects: list[dict[str, Any]]) -> str | None:
        return run_simulation(objects, warn=io.StringIO())[0][0].node

    assert node_of(_cluster()) == "large"  # LeastAllocated by default
    warn = io.StringIO()
    sim = prepare([*_cluster(), ksc(profiles=[{"pluginConfig": [MOST_ALLOCATED]}])], warn)
    assert node_of(sim.objects) == "small"
    assert warn.getvalue() == ""


def test_unknown_kinds_are_a_warning_per_kind() -> None:
    warn = io.StringIO()
    objects = [*_cluster(), {"kind": "Deployment"}, {"kind": "Deployment"}, {"kind": "ConfigMap"}]
    sim = prepare(objects, warn)
    assert len(sim.objects) == 3
    assert warn.getvalue().splitlines() == [
        "warning: 1 ConfigMap object ignored: simulate does not read ConfigMap",
        "warning: 2 Deployment objects ignored: simulate does not read Deployment"]


def test_cli_config_and_export(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(_cluster()))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(ksc(leaderElection={"leaderElect": True},
                                         profiles=[{"pluginConfig": [MOST_ALLOCATED]}])))
    assert main(["simulate", str(cluster), "--config", str(config)]) == 0
    out, err = capsys.readouterr()
    assert "default/p  Scheduled  small" in out
    assert "leaderElection does not apply to kubeberth" in err
    profile = tmp_path / "profile.yaml"
    profile.write_text(yaml.safe_dump({"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile",
                                       "metadata": {"name": "p"}, "spec": {"pluginConfig": [MOST_ALLOCATED]}}))
    assert main(["profile", "export", str(profile)]) == 0
    exported = yaml.safe_load(capsys.readouterr().out)
    assert exported["kind"] == "KubeSchedulerConfiguration"
    config.write_text(yaml.safe_dump(exported))
    assert main(["simulate", str(cluster), "--config", str(config)]) == 0
    assert "default/p  Scheduled  small" in capsys.readouterr().out
    assert main(["simulate", str(cluster), "--config", str(profile)]) == 2
    assert "want exactly one KubeSchedulerConfiguration" in capsys.readouterr().err


def test_run_config_loads_profiles_and_refuses_what_cannot_run(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(ksc(percentageOfNodesToScore=30, profiles=[{"schedulerName": "x"}])))
    profiles, pct = load_config_file(str(good))
    assert [p["spec"]["schedulerName"] for p in profiles] == ["x"] and pct == 30
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(ksc(profiles=[{"plugins": {"score": {"enabled": [{"name": "Nope"}]}}}])))
    with pytest.raises(BadConfigFile, match="plugin 'Nope' does not exist"):
        load_config_file(str(bad))


def test_simulate_refuses_a_config_whose_profile_cannot_run(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all(_cluster()))
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(ksc(profiles=[{"schedulerName": "x",
                                                 "plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}])))
    assert main(["simulate", str(cluster), "--config", str(bad)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"kubeberth simulate: {bad}: profiles[0].plugins.filter.enabled[0].name: plugin 'Nope' does not exist")


def test_run_config_profiles_are_in_force_without_a_status_to_write(tmp_path: Path) -> None:
    from kubeberth.clock import FakeClock
    from kubeberth.operator.profiles import ProfileManager
    from kubeberth.plugins import in_tree_registry
    from kubeberth.scheduler import Scheduler

    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(ksc(profiles=[{"schedulerName": "batch", "pluginConfig": [MOST_ALLOCATED]}])))
    profiles, _ = load_config_file(str(good))
    sched = Scheduler(clock=FakeClock())
    manager = ProfileManager(sched, in_tree_registry())
    for obj in profiles:
        manager.apply_fixed(obj)
    assert set(sched.profiles) == {"default-scheduler", "batch"}
    assert manager.pending_status() == []
    # a SchedulingProfile resource wanting the same schedulerName is refused as a conflict
    manager.apply("late", {"metadata": {"name": "late"}, "spec": {"schedulerName": "batch"}})
    assert manager.verdicts["late"].reason == "Conflict"
