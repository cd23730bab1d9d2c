"""The command line: subcommands, exit codes, and the convert-policy → simulate round trip."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
import yaml

from kubeberth.cli import main
from tests.builders import node_dict, pod_dict

ROOT = Path(__file__).resolve().parents[1]


def test_demo_cluster_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", str(ROOT / "examples" / "cluster.yaml"), "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["POD", "STATUS", "NODE", "REASON"]
    for status in ("Existing", "Scheduled", "Unschedulable", "Ignored", "Evicted"):
        assert status in out
    assert "preempted shop/batch-" in out
    assert "0/12 nodes are available" in out


@pytest.mark.parametrize(("argv", "code", "text"), [
    (["simulate", "does-not-exist.yaml"], 2, "does-not-exist.yaml"),
    (["convert-policy", "does-not-exist.json"], 2, "does-not-exist.json"),
])
def test_errors_exit_2_and_name_the_file(argv: list[str], code: int, text: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == code
    assert text in capsys.readouterr().err


def test_bad_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: [unclosed\n")
    assert main(["simulate", str(bad)]) == 2
    assert "invalid YAML" in capsys.readouterr().err


def test_simulate_takes_a_scheduler_wide_percentage_of_nodes_to_score(capsys) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(SystemExit):
        main(["simulate", "examples/cluster.yaml", "--percentage-of-nodes-to-score", "150"])
    assert "must be from 0 to 100, not 150" in capsys.readouterr().err
    assert main(["simulate", "examples/cluster.yaml", "--percentage-of-nodes-to-score", "50", "-o", "json"]) == 0


@pytest.mark.parametrize("argv", [
    ["simulate", str(ROOT / "examples" / "cluster.yaml"), "{bad}"],
    ["simulate", str(ROOT / "examples" / "cluster.yaml"), "--compare", "{bad}", "{bad}"],
    ["profile", "export", "{bad}"],
], ids=["simulate", "compare", "export"])
def test_the_command_exits_2_on_a_refused_profile_printing_nothing_on_stdout(argv: list[str],
                                                                          tmp_path: Path) -> None:
    """The process a user runs: a profile the operator would refuse gives exit status 2, one line on
    stderr naming the document and the field, and no results (issue 29: it once gave exit 0 and the
    default profile's results)."""
    import subprocess
    import sys

    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: kubeberth.io/v1alpha1\nkind: SchedulingProfile\nmetadata: {name: binpack}\n"
                   "spec: {plugins: {score: {enabled: [{name: Foo}]}}}\n")
    proc = subprocess.run([sys.executable, "-m", "kubeberth.cli", *(a.format(bad=bad) for a in argv)],
                          capture_output=True, text=True, timeout=120)
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.splitlines() == [
        f"kubeberth {' '.join(argv[:2]) if argv[0] == 'profile' else 'simulate'}: {bad}, document 1: "
        "SchedulingProfile binpack: spec.plugins.score.enabled[0].name: plugin 'Foo' does not exist"]


def test_a_pod_whose_uid_another_pod_has_is_refused_and_the_rest_simulated(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # An API server gives every object its own uid; two pods with one are one pod to the cache
    # and the queue (a gang's member came out Scheduled alone). The later one is refused, named
    # where the input gave it.
    first, second, other = pod_dict("first", cpu="1"), pod_dict("second", cpu="1"), pod_dict("other", cpu="1")
    first["metadata"]["uid"] = second["metadata"]["uid"] = "u-1"
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([node_dict("n", cpu="4"), first, second, other]))
    assert main(["simulate", str(path), "-o", "json"]) == 0
    captured = capsys.readouterr()
    message = "metadata.uid 'u-1' is also pod default/first's: a uid names one object"
    assert captured.err == f"skipping pod default/second ({path}, document 3): {message}\n"
    got = {o["pod"]: (o["status"], o.get("node"), o.get("message", "")) for o in json.loads(captured.out)["pods"]}
    assert got == {"default/first": ("Scheduled", "n", ""), "default/other": ("Scheduled", "n", ""),
                   "default/second": ("Unschedulable", None, f"{path}, document 3: {message}")}


def test_a_pod_repeating_a_gang_members_uid_is_refused_and_the_run_ends(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # With both pods given to the scheduler, the gang's attempt was refused at assume, again and
    # again: simulate never ended. Now the later pod (y) is refused at input and the gang binds.
    group = {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": "g",
             "namespace": "default"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}}
    members = [pod_dict(f"g-{i}", cpu="500m") for i in range(3)]
    for m in members:
        m["spec"]["schedulingGroup"] = {"podGroupName": "g"}
    other = pod_dict("y", cpu="100m")
    other["metadata"]["uid"] = members[2]["metadata"]["uid"] = "u-1"
    path = tmp_path / "in.yaml"
    path.write_text(yaml.safe_dump_all([node_dict("a", cpu="2"), node_dict("b", cpu="2"), group, *members, other]))
    codes: list[int] = []
    run = threading.Thread(target=lambda: codes.append(main(["simulate", "--feature-gates", "GenericWorkload=true",
                                                             str(path), "-o", "json"])), daemon=True)
    run.start()
    run.join(timeout=120)
    assert codes == [0], "simulate did not end"
    captured = capsys.readouterr()
    assert captured.err.startswith(f"skipping pod default/y ({path}, document 7): metadata.uid 'u-1' is also pod "
                                   "default/g-2's")
    got = {o["pod"]: o["status"] for o in json.loads(captured.out)["pods"]}
    assert got == {"default/g-0": "Scheduled", "default/g-1": "Scheduled", "default/g-2": "Scheduled",
                   "default/y": "Unschedulable"}
