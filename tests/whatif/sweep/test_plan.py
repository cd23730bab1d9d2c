"""The sweep's runs: seeds, sweep files (paths, errors naming the field), the product and run names."""

from __future__ import annotations

from pathlib import Path

import pytest

from kubeberth.whatif.sweep.plan import Sweep, SweepError, load_sweep, parse_seeds, run_name
from tests.whatif.sweep.conftest import profiles
from tests.whatif.sweep.replay_fixture import write_trace


@pytest.mark.parametrize("text, seeds", [("42-44", [42, 43, 44]), ("7", [7]), ("1,5-6", [1, 5, 6]),
                                         ("3, 9", [3, 9])])
def test_seeds(text: str, seeds: list[int]) -> None:
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text, message", [("x", "'x' is not a seed"), ("5-3", "the range 5-3 is empty"),
                                           ("1,,2", "'' is not a seed")])
def test_bad_seeds(text: str, message: str) -> None:
    with pytest.raises(SweepError, match=message):
        parse_seeds(text)


def _files(tmp_path: Path) -> None:
    write_trace(tmp_path / "data", "alpha")
    write_trace(tmp_path / "data", "beta")
    profiles(tmp_path / "profiles", ("FGD", "Random", "BestFit"))


def test_a_sweep_file_is_the_product_in_order_with_paths_relative_to_it(tmp_path: Path) -> None:
    _files(tmp_path)
    (tmp_path / "sweep.yaml").write_text("""
kind: Sweep
traces:
- {nodes: data/nodes.csv, files: [data/openb_pod_list_alpha.csv]}
- {name: b, format: openb, nodes: data/nodes.csv, files: data/openb_pod_list_beta.csv}
profiles: [profiles/FGD.yaml, profiles/Random.yaml]
seeds: 42-43
options: [{protocol: artifact, tune: 1.3}, {protocol: artifact, tune: 1.0, tieBreak: fixed-order}]
""")
    sweep = load_sweep(str(tmp_path / "sweep.yaml"))
    got = [(r.trace.name, r.policy, r.options.label, r.seed) for r in sweep.runs]
    assert len(got) == 2 * 2 * 2 * 2
    assert got[:5] == [("openb_pod_list_alpha", "FGD", "artifact-tune1.3", 42),
                       ("openb_pod_list_alpha", "FGD", "artifact-tune1.3", 43),
                       ("openb_pod_list_alpha", "FGD", "artifact-tune1-fixed-order", 42),
                       ("openb_pod_list_alpha", "FGD", "artifact-tune1-fixed-order", 43),
                       ("openb_pod_list_alpha", "Random", "artifact-tune1.3", 42)]
    assert got[-1] == ("b", "Random", "artifact-tune1-fixed-order", 43)
    first = sweep.runs[0].replay_kwargs()
    assert first == {"files": [str(tmp_path / "data" / "openb_pod_list_alpha.csv")], "format": "openb",
                     "nodes": str(tmp_path / "data" / "nodes.csv"), "profile": str(tmp_path / "profiles" / "FGD.yaml"),
                     "seed": 42, "protocol": "artifact", "tune": 1.3, "tie_break": None}


def test_a_profile_directory_gives_its_profiles_by_name(tmp_path: Path) -> None:
    _files(tmp_path)
    (tmp_path / "s.yaml").write_text("traces: [data/openb_pod_list_alpha.yaml]\nprofiles: [profiles, null]\n")
    (tmp_path / "data" / "openb_pod_list_alpha.yaml").write_text("")
    sweep = load_sweep(str(tmp_path / "s.yaml"))
    assert [r.policy for r in sweep.runs] == ["BestFit", "FGD", "Random", "default"]
    assert {r.trace.format for r in sweep.runs} == {"yaml"}


@pytest.mark.parametrize("body, message", [
    ("traces: []\n", "s.yaml: traces: at least one trace"),
    ("traces: [{files: [data/nodes.csv]}]\nseed: 1\n", r"s.yaml: unknown field\(s\) seed"),
    ("traces: [{files: [data/nodes.csv], nodez: x}]\n", r"s.yaml: traces\[0\]: unknown field\(s\) nodez"),
    ("traces: [{files: [data/missing.csv]}]\n", r"s.yaml: traces\[0\]: .*missing.csv: no such file"),
    ("traces: [{format: openb, files: [data/nodes.csv]}]\n", r"traces\[0\]: the openb format needs a nodes file"),
    ("traces: [data/nodes.csv]\noptions: [{protocol: paper}]\n", r"options\[0\]: protocol 'paper'"),
    ("traces: [data/nodes.csv]\noptions: [{tune: -1}]\n", r"options\[0\]: tune -1"),
    ("traces: [data/nodes.csv]\nseeds: [1, x]\n", "seeds: a list of integers"),
    ("traces: [data/nodes.csv]\nprofiles: [nowhere.yaml]\n", "profiles: .*nowhere.yaml: no such file"),
    ("traces: [data/nodes.csv, data/nodes.csv]\n", "two runs have the same parameters"),
    ("traces: [data/nodes.csv\n", r"s.yaml: line 2, column 1: not YAML"),
])
def test_sweep_file_errors_name_the_file_and_field(tmp_path: Path, body: str, message: str) -> None:
    _files(tmp_path)
    (tmp_path / "s.yaml").write_text(body)
    with pytest.raises(SweepError, match=message):
        load_sweep(str(tmp_path / "s.yaml"))


def test_run_names_are_readable_stable_and_follow_the_inputs_bytes(tmp_path: Path) -> None:
    _files(tmp_path)
    (tmp_path / "s.yaml").write_text("traces: [{nodes: data/nodes.csv, files: [data/openb_pod_list_alpha.csv]}]\n"
                                     "profiles: [profiles/FGD.yaml]\nseeds: [1, 2]\n"
                                     "options: [{protocol: artifact, tune: 1.3}]\n")
    sweep = load_sweep(str(tmp_path / "s.yaml"))
    names = [run_name(r, sweep) for r in sweep.runs]
    assert names[0].startswith("openb_pod_list_alpha-FGD-s1-artifact-tune1.3-")
    assert len(names[0].rsplit("-", 1)[1]) == 12
    assert len(set(names)) == 2
    assert [run_name(r, load_sweep(str(tmp_path / "s.yaml"))) for r in sweep.runs] == names
    with_plugin = Sweep(sweep.runs, plugins=("my_plugins",))
    assert run_name(sweep.runs[0], with_plugin) != names[0]
    # another file with the same path: other bytes, another name (the digest cache is per path: clear it)
    from kubeberth.whatif.sweep.plan import file_digest

    (tmp_path / "profiles" / "FGD.yaml").write_text("changed\n")
    file_digest.cache_clear()
    assert run_name(sweep.runs[0], sweep) != names[0]
