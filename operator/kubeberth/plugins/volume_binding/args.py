"""VolumeBindingArgs, defaulted and validated as upstream v1.37 (StorageCapacityScoring on)."""

from __future__ import annotations

import itertools

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .capacity import MAX_CUSTOM_PRIORITY_SCORE, MAX_UTILIZATION

DEFAULT_BIND_TIMEOUT_SECONDS = 600


class UtilizationShapePoint(BaseModel):
    model_config = ConfigDict(extra="forbid")
    utilization: int = Field(ge=0, le=MAX_UTILIZATION)
    score: int = Field(ge=0, le=MAX_CUSTOM_PRIORITY_SCORE)


def default_shape() -> list[UtilizationShapePoint]:
    """SetDefaults_VolumeBindingArgs with StorageCapacityScoring on: emptier nodes score higher."""
    return [UtilizationShapePoint(utilization=0, score=MAX_CUSTOM_PRIORITY_SCORE),
            UtilizationShapePoint(utilization=MAX_UTILIZATION, score=0)]


class VolumeBindingArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")
    bindTimeoutSeconds: int = Field(default=DEFAULT_BIND_TIMEOUT_SECONDS, ge=0)
    # An empty (or absent) shape takes the default, as upstream's defaulting does.
    shape: list[UtilizationShapePoint] = Field(default_factory=default_shape)

    @field_validator("shape")
    @classmethod
    def _shape(cls, shape: list[UtilizationShapePoint]) -> list[UtilizationShapePoint]:
        if not shape:
            return default_shape()
        for prev, point in itertools.pairwise(shape):
            if prev.utilization >= point.utilization:
                raise ValueError(f"utilization {point.utilization}: values must be sorted in increasing order")
        return shape

    def shape_points(self) -> list[tuple[int, int]]:
        return [(p.utilization, p.score) for p in self.shape]
