"""Small configurable plugins for exercising the framework runtime."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from kubeberth.framework import (
    BindPlugin,
    Code,
    CycleState,
    FilterPlugin,
    NodeScore,
    PermitPlugin,
    PostBindPlugin,
    PreFilterPlugin,
    PreFilterResult,
    Registry,
    ReservePlugin,
    ScorePlugin,
    Status,
)
from kubeberth.framework.registry import PluginSpec
from kubeberth.model import NodeInfo, Pod
from tests.doubles import Sort


class RejectArgs(BaseModel):
    nodes: dict[str, str] = {}
    unresolvable: bool = False


class Reject(FilterPlugin):
    """Rejects the nodes named in args.nodes with the given reason."""

    name = "Reject"
    args_model = RejectArgs

    def __init__(self, args: RejectArgs, handle: Any) -> None:
        self.args = args

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        reason = self.args.nodes.get(node_info.name)
        if reason is None:
            return None
        return Status.unresolvable(reason) if self.args.unresolvable else Status.unschedulable(reason)


class Reject2(Reject):
    name = "Reject2"


class OnlyNodes(PreFilterPlugin):
    name = "OnlyNodes"
    args_model = RejectArgs

    def __init__(self, args: RejectArgs, handle: Any) -> None:
        self.args = args

    def pre_filter(self, state: CycleState, pod: Pod, nodes: Any) -> tuple[PreFilterResult | None, Status | None]:
        return PreFilterResult(self.args.nodes), None


class ScoreArgs(BaseModel):
    scores: dict[str, int] = {}
    normalize_to: int = 0


class Fixed(ScorePlugin):
    """Scores from args; optionally normalises so the max becomes normalize_to."""

    name = "Fixed"
    args_model = ScoreArgs

    def __init__(self, args: ScoreArgs, handle: Any) -> None:
        self.args = args
        self.has_normalize = bool(args.normalize_to)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> int:
        return self.args.scores.get(node_info.name, 0)

    def normalize_score(self, state: CycleState, pod: Pod, scores: list[NodeScore]) -> Status | None:
        top = max(s.score for s in scores) or 1
        for s in scores:
            s.score = s.score * self.args.normalize_to // top
        return None


class Fixed2(Fixed):
    name = "Fixed2"


class Journal:
    """Shared log the lifecycle plugins append to."""

    entries: list[str] = []


class LifecycleArgs(BaseModel):
    reserve_fails: bool = False
    permit: str = "allow"  # allow | reject | wait
    timeout: float = 5.0
    bind: str = "ok"  # ok | skip | error


class Lifecycle(ReservePlugin, PermitPlugin, BindPlugin, PostBindPlugin):
    name = "Lifecycle"
    args_model = LifecycleArgs

    def __init__(self, args: LifecycleArgs, handle: Any) -> None:
        self.args = args

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        Journal.entries.append(f"{self.name}.reserve")
        return Status.error("reserve failed") if self.args.reserve_fails else None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        Journal.entries.append(f"{self.name}.unreserve")

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        if self.args.permit == "reject":
            return Status.unschedulable("not now"), 0
        if self.args.permit == "wait":
            return Status(Code.WAIT), self.args.timeout
        return None, 0

    async def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        Journal.entries.append(f"{self.name}.bind")
        if self.args.bind == "skip":
            return Status.skip()
        if self.args.bind == "error":
            return Status.error("boom")
        return None

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        Journal.entries.append(f"{self.name}.post_bind")


class Lifecycle2(Lifecycle):
    name = "Lifecycle2"


def registry() -> Registry:
    r = Registry()
    for cls in (Sort, Reject, Reject2, OnlyNodes, Fixed, Fixed2, Lifecycle, Lifecycle2):
        r.register(PluginSpec(cls.name, cls, getattr(cls, "args_model", None)))
    return r


def profile(*, filters: list[str] = (), scores: list[tuple[str, int | None]] = (),  # type: ignore[assignment]
            lifecycle: list[str] = (), args: dict[str, dict[str, Any]] | None = None,  # type: ignore[assignment]
            percentage: int | None = None, prefilter: list[str] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    """A profile that switches the defaults off and enables exactly these plugins."""
    plugins: dict[str, Any] = {
        "multiPoint": {"disabled": [{"name": "*"}]},
        "queueSort": {"enabled": [{"name": "Sort"}]},
        "preFilter": {"enabled": [{"name": n} for n in prefilter]},
        "filter": {"enabled": [{"name": n} for n in filters]},
        "score": {"enabled": [{"name": n, **({"weight": w} if w is not None else {})} for n, w in scores]},
        "reserve": {"enabled": [{"name": n} for n in lifecycle]},
        "permit": {"enabled": [{"name": n} for n in lifecycle]},
        "bind": {"enabled": [{"name": n} for n in lifecycle or ["Lifecycle"]]},
        "postBind": {"enabled": [{"name": n} for n in lifecycle]},
    }
    spec: dict[str, Any] = {"plugins": plugins,
                            "pluginConfig": [{"name": k, "args": v} for k, v in (args or {}).items()]}
    if percentage is not None:
        spec["percentageOfNodesToScore"] = percentage
    return spec
