"""The dry-run service's wire types: a `DryRun` posted to the operator's dry-run port, answered with
its `status` filled in (the pattern of TokenReview and SubjectAccessReview).

    POST /apis/kubeberth.io/v1alpha1/namespaces/{namespace}/dryruns

The request's `spec` holds what to try: one Pod (`pod`), `copies` copies of it, or the pods of a
gang (`pods`, with the `podGroup` they name). The answer's `status` says, per pod, the node it
would be placed on now, or why not (upstream's FailedScheduling message), the victims preemption
would choose, and the explanation when asked for (`spec.explain`).

These models are shared by the server (kubeberth.operator.dryrun_endpoint) and the client
(kubeberth.dryrun.client); they import nothing of the scheduler.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

GROUP = "kubeberth.io"
VERSION = "v1alpha1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "DryRun"
RESOURCE = "dryruns"
VERB = "create"
MAX_COPIES = 1000
MAX_PODS = 1000

SCHEDULED = "Scheduled"
UNSCHEDULABLE = "Unschedulable"
ERROR = "Error"


def path_for(namespace: str) -> str:
    """Where a DryRun for pods of `namespace` is posted."""
    return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{RESOURCE}"


class _Object(BaseModel):
    """A Kubernetes object as posted: kept whole (the scheduler's model reads it), checked for its shape."""

    model_config = ConfigDict(extra="allow")

    apiVersion: str | None = None
    kind: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: dict[str, Any] = Field(default_factory=dict)


class PodObject(_Object):
    @field_validator("kind")
    @classmethod
    def _pod(cls, v: str | None) -> str | None:
        if v not in (None, "Pod"):
            raise ValueError(f"expected kind Pod, not {v!r}")
        return v


class PodGroupObject(_Object):
    @field_validator("kind")
    @classmethod
    def _group(cls, v: str | None) -> str | None:
        if v not in (None, "PodGroup"):
            raise ValueError(f"expected kind PodGroup, not {v!r}")
        return v


class DryRunSpec(BaseModel):
    """What to try: `pod` (with `copies`), or `pods` (a gang, with its `podGroup`)."""

    model_config = ConfigDict(extra="forbid")

    pod: PodObject | None = None
    copies: int = Field(default=1, ge=1, le=MAX_COPIES)
    pods: list[PodObject] | None = Field(default=None, max_length=MAX_PODS)
    podGroup: PodGroupObject | None = None
    explain: bool = False

    @model_validator(mode="after")
    def _one_of(self) -> DryRunSpec:
        if (self.pod is None) == (self.pods is None):
            raise ValueError("give exactly one of pod (with copies) or pods")
        if self.pods is not None and not self.pods:
            raise ValueError("pods is empty")
        if self.pods is not None and self.copies != 1:
            raise ValueError("copies goes with pod, not with pods")
        return self


class DryRun(BaseModel):
    """The request (and, with `status`, the answer)."""

    model_config = ConfigDict(extra="forbid")

    apiVersion: str = API_VERSION
    kind: str = KIND
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: DryRunSpec
    status: DryRunStatus | None = None

    @field_validator("apiVersion")
    @classmethod
    def _version(cls, v: str) -> str:
        if v != API_VERSION:
            raise ValueError(f"expected {API_VERSION!r}")
        return v

    @field_validator("kind")
    @classmethod
    def _kind(cls, v: str) -> str:
        if v != KIND:
            raise ValueError(f"expected {KIND!r}")
        return v


class VictimRef(BaseModel):
    namespace: str
    name: str
    priority: int = 0


class Preemption(BaseModel):
    """What preemption would do for a pod that fits nowhere: evict `victims` on `node` (victims of
    other namespaces than the pod's are only counted)."""

    node: str
    victims: list[VictimRef] = Field(default_factory=list)
    victimsInOtherNamespaces: int = 0


class PodAnswer(BaseModel):
    namespace: str
    name: str
    status: str  # Scheduled | Unschedulable | Error
    node: str | None = None
    message: str = ""  # upstream's FailedScheduling message when not Scheduled
    preemption: Preemption | None = None
    explanation: dict[str, Any] | None = None


class SnapshotInfo(BaseModel):
    """The copy of the scheduler's cache the answer was computed on: how old it was."""

    ageMs: float
    nodes: int


class DryRunStatus(BaseModel):
    schedulable: bool  # every pod placed (a gang: at least its PodGroup's minCount)
    scheduled: int
    pods: list[PodAnswer]
    snapshot: SnapshotInfo | None = None
    extensionPoints: list[str] = Field(default_factory=list)  # those run, in order
    servedBy: str = ""  # "scheduler": in the operator's loop; "worker": by its forked copy


DryRun.model_rebuild()


def field_error(exc: ValidationError) -> str:
    """The first problem of a refused body, naming its field: `spec.pod.metadata: ...`."""
    problems = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err.get("loc", ()))
        problems.append(f"{where}: {err.get('msg', 'invalid')}" if where else str(err.get("msg", "invalid")))
    return "; ".join(problems) or str(exc)
