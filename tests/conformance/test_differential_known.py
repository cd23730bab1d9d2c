"""tests/conformance/differential.yaml: each explained disagreement names a case that exists."""

from __future__ import annotations

from pathlib import Path

import yaml

HERE = Path(__file__).parent
KINDS = {"not-run", "environment", "timing", "message-source", "wording"}


def test_every_entry_names_a_case_a_kind_and_a_reason() -> None:
    entries = yaml.safe_load((HERE / "differential.yaml").read_text())
    cases = {yaml.safe_load(p.read_text())["name"] for p in (HERE / "cases").glob("*.yaml")}
    assert entries, "no entries"
    for entry in entries:
        assert set(entry) == {"case", "kind", "why"}, entry
        assert entry["case"] in cases, f"{entry['case']}: no such case"
        assert entry["kind"] in KINDS, entry
        assert len(entry["why"]) > 40, entry
    names = [e["case"] for e in entries]
    assert len(names) == len(set(names)), "a case explained twice"
