"""Black-box scheduling cases (tests/conformance/cases/*.yaml) run through `kubeberth test`'s code.

Same case format as the shared conformance sample and users' policy tests: `objects`, `expect`,
optional `seed` and `profile`. Cases run in-process through policy_tests.run_case (what
`kubeberth test` runs); one case also goes through simulate's CLI to hold the JSON contract.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from kubeberth.whatif.policy_tests import Case, load_cases, run_case

CASES_DIR = Path(__file__).parent / "cases"
CASES = load_cases([CASES_DIR])


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_case(case: Case) -> None:
    result = run_case(case)
    assert result.problems == []


def test_every_case_file_is_loaded() -> None:
    assert len(CASES) == len(list(CASES_DIR.glob("*.yaml")))


def test_cli_json_contract(tmp_path: Path) -> None:
    case = yaml.safe_load((CASES_DIR / "resources-fit.yaml").read_text())
    src = tmp_path / "cluster.yaml"
    src.write_text(yaml.safe_dump_all(case["objects"]))
    proc = subprocess.run([sys.executable, "-m", "kubeberth.cli", "simulate", str(src), "--output", "json",
                           "--seed", "1"], capture_output=True, text=True, timeout=120, check=True)
    answer = json.loads(proc.stdout)
    assert set(answer) == {"pods"}
    assert [p["pod"] for p in answer["pods"]] == ["default/busy", "default/p", "default/big"]
    for entry in answer["pods"]:
        assert set(entry) == {"pod", "status", "node", "nominatedNode", "victims", "message"}
