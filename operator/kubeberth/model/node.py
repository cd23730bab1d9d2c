"""A read-only view of a Node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import ModelError
from .resources import Resource
from .taints import Taint


class ImageState:
    __slots__ = ("names", "size")

    def __init__(self, names: tuple[str, ...], size: int) -> None:
        self.names = names
        self.size = size


class Node:
    __slots__ = ("allocatable", "cache", "capacity", "conditions", "images", "labels", "name", "raw",
                 "taints", "uid", "unschedulable")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        if not isinstance(raw, Mapping):
            raise ModelError(f"node {raw!r} is not a mapping")
        meta = raw.get("metadata") or {}
        self.name = str(meta.get("name") or "")
        if not self.name:
            raise ModelError("node has no metadata.name")
        where = f"node {self.name}"
        spec = raw.get("spec") or {}
        status = raw.get("status") or {}
        self.raw = raw
        self.cache: dict[str, Any] = {}
        self.uid = str(meta.get("uid") or self.name)
        self.labels: dict[str, str] = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        self.unschedulable = bool(spec.get("unschedulable"))
        try:
            self.taints = [Taint.from_dict(t) for t in spec.get("taints") or []]
            self.capacity = Resource.from_list(status.get("capacity"), where="status.capacity")
            alloc = status.get("allocatable")
            # The API server defaults allocatable to capacity when it is absent.
            self.allocatable = (Resource.from_list(alloc, where="status.allocatable")
                                if alloc is not None else self.capacity.clone())
        except ModelError as exc:
            raise ModelError(str(exc), obj=where) from exc
        self.conditions: dict[str, str] = {
            str(c.get("type")): str(c.get("status")) for c in status.get("conditions") or []
            if isinstance(c, Mapping)}
        self.images: list[ImageState] = []
        for img in status.get("images") or []:
            names = tuple(str(n) for n in img.get("names") or [])
            if names:
                self.images.append(ImageState(names, int(img.get("sizeBytes") or 0)))

    def __repr__(self) -> str:
        return f"Node({self.name})"
