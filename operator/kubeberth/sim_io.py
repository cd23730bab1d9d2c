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


class Origins:
    """Where each object was read ("FILE, document N", ", item M" inside a List), by identity, so
    that an error about an object can name its file and document."""

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Mapping[str, Any], str]] = {}

    def note(self, obj: Mapping[str, Any], where: str) -> None:
        self._by_id[id(obj)] = (obj, where)  # the reference keeps the id from being reused

    def of(self, obj: Mapping[str, Any]) -> str | None:
        got = self._by_id.get(id(obj))
        return got[1] if got is not None and got[0] is obj else None


def iter_objects(docs: Iterable[Any], source: str, origins: Origins | None = None) -> Iterator[dict[str, Any]]:
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise InputError(f"{source}: document {i + 1} is not a Kubernetes object")
        if doc.get("kind") == "List" or (str(doc.get("kind", "")).endswith("List") and "items" in doc):
            for j, item in enumerate(doc.get("items") or []):
                for obj in iter_objects([item], source):
                    if origins is not None:
                        origins.note(obj, f"{source}, document {i + 1}, item {j + 1}")
                    yield obj
            continue
        if not doc.get("kind"):
            raise InputError(f"{source}: document {i + 1} has no kind")
        if origins is not None:
            origins.note(doc, f"{source}, document {i + 1}")
        yield doc


def load_files(paths: Iterable[str | Path], origins: Origins | None = None) -> list[dict[str, Any]]:
    """The objects of the files, in order; `origins` (if given) learns each one's file and document."""
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
        objects.extend(iter_objects(docs, str(path), origins))
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


def render_json(outcomes: list[PodOutcome], groups: list[Mapping[str, Any]] | None = None) -> str:
    """`groups` (sim_groups.group_dict of each pod group): under `podGroups`, only when there are any."""
    out: dict[str, Any] = {"pods": [outcome_dict(o) for o in outcomes]}
    if groups:
        out["podGroups"] = list(groups)
    return json.dumps(out, indent=2)


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
