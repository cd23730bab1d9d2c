"""PodTopologySpreadArgs (kubescheduler.config.k8s.io/v1), validated as upstream does."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from .._labels import qualified_name_errors
from .common import DO_NOT_SCHEDULE, SCHEDULE_ANYWAY


class DefaultConstraint(BaseModel):
    """One v1.TopologySpreadConstraint of PodTopologySpreadArgs.defaultConstraints."""

    model_config = ConfigDict(extra="forbid", validate_default=True)
    maxSkew: int = 0
    topologyKey: str = ""
    whenUnsatisfiable: str = ""
    labelSelector: dict[str, Any] | None = None
    minDomains: int | None = None
    nodeAffinityPolicy: str | None = None
    nodeTaintsPolicy: str | None = None
    matchLabelKeys: list[str] | None = None

    @field_validator("maxSkew")
    @classmethod
    def _max_skew(cls, v: int) -> int:
        if v <= 0:
            raise ValueError(f"Invalid value: {v}: not in valid range")
        return v

    @field_validator("topologyKey")
    @classmethod
    def _topology_key(cls, v: str) -> str:
        if not v:
            raise ValueError("Required value: can not be empty")
        errs = qualified_name_errors(v)
        if errs:
            raise ValueError(f"Invalid value: {v!r}: {'; '.join(errs)}")
        return v

    @field_validator("whenUnsatisfiable")
    @classmethod
    def _when(cls, v: str) -> str:
        if not v:
            raise ValueError("Required value: can not be empty")
        if v not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise ValueError(f'Unsupported value: "{v}": supported values: "{DO_NOT_SCHEDULE}", "{SCHEDULE_ANYWAY}"')
        return v

    @field_validator("labelSelector")
    @classmethod
    def _no_selector(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        if v is not None:
            raise ValueError("Forbidden: constraint must not define a selector, as they deduced for each pod")
        return v


class PodTopologySpreadArgs(BaseModel):
    """Upstream's PodTopologySpreadArgs (kubescheduler.config.k8s.io/v1); defaultingType defaults to System."""

    model_config = ConfigDict(extra="forbid", validate_default=True)
    defaultConstraints: list[DefaultConstraint] = []
    defaultingType: str = "System"

    @field_validator("defaultConstraints")
    @classmethod
    def _not_repeated(cls, v: list[DefaultConstraint]) -> list[DefaultConstraint]:
        seen: set[tuple[str, str]] = set()
        for i, c in enumerate(v):
            key = (c.topologyKey, c.whenUnsatisfiable)
            if key in seen:
                raise ValueError(f'[{i}]: Duplicate value: "{{{c.topologyKey}, {c.whenUnsatisfiable}}}"')
            seen.add(key)
        return v

    @field_validator("defaultingType")
    @classmethod
    def _defaulting(cls, v: str, info: Any) -> str:
        if v not in ("System", "List"):
            raise ValueError(f'Unsupported value: "{v}": supported values: "List", "System"')
        if v == "System" and info.data.get("defaultConstraints"):
            raise ValueError('Invalid value: "System": when .defaultConstraints are not empty')
        return v

