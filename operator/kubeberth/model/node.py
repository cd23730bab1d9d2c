"""A read-only view of a Node."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .errors import ModelError
from .pod import string_map
from .resources import Resource
from .shape import NODE_SHAPE, malformed_field
from .taints import Taint


class ImageState:
    """An image the node reports (status.images): its `names` and `size` in bytes."""

    __slots__ = ("names", "size")

    def __init__(self, names: tuple[str, ...], size: int) -> None:
        self.names = names
        self.size = size


class Node:
    """Everything the scheduler reads from a Node object, parsed once and shared by every plugin
    (read-only: nothing may change it).

    `name`, `uid`; `labels` and `annotations` (metadata's, str -> str; the annotations are read
    on first use); `allocatable` and `capacity` (`Resource`; allocatable defaults to capacity),
    `taints`, `unschedulable`, `conditions` (type -> status), `images` (ImageState: names, size).

    `raw` is the escape hatch: the object as received (a mapping, read-only: never change it, it
    is shared with the cache and the other plugins), for fields no attribute carries. A plugin
    that parses something of it keeps the result in `cache` (a dict, keyed by the plugin's name),
    so that it is parsed once per node object. A changed node is a new Node (the NodeInfo's
    `node` is replaced), so what is kept in `cache` never goes stale.
    """

    __slots__ = ("_annotations", "allocatable", "cache", "capacity", "conditions", "images", "labels", "name", "raw",
                 "taints", "uid", "unschedulable")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        if not isinstance(raw, Mapping):
            raise ModelError(f"node {raw!r} is not a mapping")
        try:
            self._parse(raw)
        except ModelError:
            raise
        except (AttributeError, TypeError, ValueError, KeyError) as exc:
            # A field of an unexpected type (model/shape.py): named, the other nodes go on.
            meta = raw.get("metadata")
            name = meta.get("name") if isinstance(meta, Mapping) else None
            raise ModelError(malformed_field(raw, NODE_SHAPE) or f"malformed ({type(exc).__name__}: {exc})",
                             obj=f"node {name}") from exc

    def _parse(self, raw: Mapping[str, Any]) -> None:
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
        annotations = meta.get("annotations")
        if annotations is not None and type(annotations) is not dict and not isinstance(annotations, Mapping):
            raise ModelError("metadata.annotations must be a mapping", obj=where)
        self._annotations: dict[str, str] | None = None
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

    @property
    def annotations(self) -> dict[str, str]:
        """metadata.annotations (str -> str; empty when none), parsed on first read. Read-only,
        as `labels`."""
        parsed = self._annotations
        if parsed is None:
            parsed = self._annotations = string_map((self.raw.get("metadata") or {}).get("annotations"))
        return parsed

    def __repr__(self) -> str:
        return f"Node({self.name})"
