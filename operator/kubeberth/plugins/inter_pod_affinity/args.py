"""InterPodAffinity's arguments (upstream's InterPodAffinityArgs, kubescheduler.config.k8s.io/v1)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, field_validator


class InterPodAffinityArgs(BaseModel):
    """Upstream's InterPodAffinityArgs (kubescheduler.config.k8s.io/v1)."""

    model_config = ConfigDict(extra="forbid")
    hardPodAffinityWeight: int = 1
    ignorePreferredTermsOfExistingPods: bool = False

    @field_validator("hardPodAffinityWeight")
    @classmethod
    def _weight_range(cls, v: int) -> int:
        if not 0 <= v <= 100:
            raise ValueError("not in valid range [0-100]")
        return v
