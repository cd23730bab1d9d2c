"""Reading cluster dumps (kubectl get -o yaml) and writing simulate's answer."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml


class InputError(ValueError):
    pass


def iter_objects(docs: Iterable[Any], source: str) -> Iterator[dict[str, Any]]:
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise InputError(f"{source}: document {i + 1} is not a Kubernetes object")
        if doc.get("kind") == "List" or (str(doc.get("kind", "")).endswith("List") and "items" in doc):
            for item in doc.get("items") or []:
                yield from iter_objects([item], source)
            continue
        if not doc.get("kind"):
            raise InputError(f"{source}: document {i + 1} has no kind")
        yield doc


def load_files(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    objects: list[dict[str, Any]] = []
    for p in paths:
        path = Path(p)
        try:
            text = path.read_text()
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror}") from exc
        try:
            docs = list(yaml.safe_load_all(text))
        except yaml.YAMLError as exc:
            raise InputError(f"{path}: invalid YAML: {exc}") from exc
        objects.extend(iter_objects(docs, str(path)))
    return objects


@dataclass
class PodOutcome:
    pod: str
    status: str
    node: str | None = None
    nominatedNode: str | None = None
    victims: list[str] = field(default_factory=list)
    message: str = ""
    # Only for pods simulate was asked to explain: per attempt (the first and the latest ones kept),
    # scheduler/explain.py's Explanation.to_dict(). Left out of the JSON when empty.
    explanations: list[Mapping[str, Any]] = field(default_factory=list)


def outcome_dict(o: PodOutcome) -> dict[str, Any]:
    d = asdict(o)
    if not o.explanations:
        del d["explanations"]
    return d


def render_json(outcomes: list[PodOutcome]) -> str:
    return json.dumps({"pods": [outcome_dict(o) for o in outcomes]}, indent=2)


def render_table(outcomes: list[PodOutcome]) -> str:
    rows = [("POD", "STATUS", "NODE", "REASON")]
    for o in outcomes:
        reason = o.message
        if o.victims:
            reason = (f"preempted {', '.join(o.victims)}" + (f"; {reason}" if reason else ""))
        if o.nominatedNode and o.status != "Scheduled":
            reason = f"nominated to {o.nominatedNode}" + (f"; {reason}" if reason else "")
        rows.append((o.pod, o.status, o.node or "-", reason))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = [f"{r[0]:<{widths[0]}}  {r[1]:<{widths[1]}}  {r[2]:<{widths[2]}}  {r[3]}".rstrip() for r in rows]
    counts: dict[str, int] = {}
    for o in outcomes:
        counts[o.status] = counts.get(o.status, 0) + 1
    lines.append("")
    lines.append(", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "no pods")
    return "\n".join(lines)
