"""Black-box scheduling cases (tests/conformance/cases/*.yaml) run through simulate.

Same case format as the shared conformance sample: `objects`, `expect`,
optional `seed`. Cases run in-process; one case also goes through the CLI to
hold the JSON contract.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeberth.sim_io import PodOutcome
from kubeberth.simulate import simulate

CASES = sorted((Path(__file__).parent / "cases").glob("*.yaml"))


def problems(case: dict[str, Any], outcomes: list[PodOutcome]) -> list[str]:
    by_pod = {o.pod: o for o in outcomes}
    found = []
    for exp in case.get("expect", []):
        key = exp["pod"]
        got = by_pod.get(key)
        if got is None:
            found.append(f"{key}: missing")
            continue
        scheduled = got.status == "Scheduled"
        if "node" in exp and not (scheduled and got.node == exp["node"]):
            found.append(f"{key}: want Scheduled on {exp['node']}, got {got}")
        if "nodeIn" in exp and not (scheduled and got.node in exp["nodeIn"]):
            found.append(f"{key}: want Scheduled on one of {exp['nodeIn']}, got {got}")
        if "nodeNotIn" in exp and not (scheduled and got.node not in exp["nodeNotIn"]):
            found.append(f"{key}: want Scheduled outside {exp['nodeNotIn']}, got {got}")
        if exp.get("unschedulable") and not (got.status == "Unschedulable" and not got.node):
            found.append(f"{key}: want Unschedulable, got {got}")
        if exp.get("evicted") and got.status != "Evicted":
            found.append(f"{key}: want Evicted, got {got}")
        if exp.get("ignored") and got.status != "Ignored":
            found.append(f"{key}: want Ignored, got {got}")
        if exp.get("kept") and got.status not in ("Existing", "Scheduled"):
            found.append(f"{key}: want kept, got {got}")
        if "victims" in exp and sorted(got.victims) != sorted(exp["victims"] or []):
            found.append(f"{key}: want victims {exp['victims']}, got {got}")
        if "nominatedNode" in exp and got.nominatedNode != exp["nominatedNode"]:
            found.append(f"{key}: want nominated {exp['nominatedNode']}, got {got}")
        for text in exp.get("messageContains", []):
            if text not in got.message:
                found.append(f"{key}: message {got.message!r} lacks {text!r}")
    return found


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_case(path: Path) -> None:
    case = yaml.safe_load(path.read_text())
    outcomes = simulate(case["objects"], seed=case.get("seed", 0), warn=io.StringIO())
    assert problems(case, outcomes) == []


def test_cli_json_contract(tmp_path: Path) -> None:
    case = yaml.safe_load((Path(__file__).parent / "cases" / "resources-fit.yaml").read_text())
    src = tmp_path / "cluster.yaml"
    src.write_text(yaml.safe_dump_all(case["objects"]))
    proc = subprocess.run([sys.executable, "-m", "kubeberth.cli", "simulate", str(src), "--output", "json",
                           "--seed", "1"], capture_output=True, text=True, timeout=120, check=True)
    answer = json.loads(proc.stdout)
    assert set(answer) == {"pods"}
    assert [p["pod"] for p in answer["pods"]] == ["default/busy", "default/p", "default/big"]
    for entry in answer["pods"]:
        assert set(entry) == {"pod", "status", "node", "nominatedNode", "victims", "message"}
