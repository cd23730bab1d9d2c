"""Reading the what-if tools' input files: cluster dumps (kubectl get -o yaml, multi-document YAML,
`kind: List`), each object noted with where it was read so that an error can name its file and
document."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import yaml

# libyaml's safe loader when PyYAML has it (the same objects, ten times faster on a 5,000-node dump).
SAFE_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class InputError(ValueError):
    """An input the what-if tools refuse (a file, a document, a profile): the message names it."""


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
            docs = list(yaml.load_all(text, Loader=SAFE_LOADER))
        except yaml.YAMLError as exc:
            raise InputError(f"{path}: invalid YAML: {exc}") from exc
        objects.extend(iter_objects(docs, str(path), origins))
    return objects


def object_key(obj: Mapping[str, Any]) -> str:
    """NAMESPACE/NAME of an input object (namespace `default` when it names none)."""
    meta = obj.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"
