"""Pydantic models of the SchedulingProfile spec (kubeberth.io/v1alpha1).

The spec mirrors one profile of upstream's KubeSchedulerConfiguration. These
models are the single source of truth for the CRD schema, the operator and
`simulate`.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

_STRICT = ConfigDict(extra="forbid", populate_by_name=True)


class PluginRef(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1)
    weight: int | None = Field(default=None, ge=0, le=2**31 - 1)


class PluginSet(BaseModel):
    model_config = _STRICT
    enabled: list[PluginRef] = Field(default_factory=list)
    disabled: list[PluginRef] = Field(default_factory=list)


class Plugins(BaseModel):
    model_config = _STRICT
    multiPoint: PluginSet = Field(default_factory=PluginSet)
    preEnqueue: PluginSet = Field(default_factory=PluginSet)
    queueSort: PluginSet = Field(default_factory=PluginSet)
    preFilter: PluginSet = Field(default_factory=PluginSet)
    filter: PluginSet = Field(default_factory=PluginSet)
    postFilter: PluginSet = Field(default_factory=PluginSet)
    preScore: PluginSet = Field(default_factory=PluginSet)
    score: PluginSet = Field(default_factory=PluginSet)
    reserve: PluginSet = Field(default_factory=PluginSet)
    permit: PluginSet = Field(default_factory=PluginSet)
    preBind: PluginSet = Field(default_factory=PluginSet)
    bind: PluginSet = Field(default_factory=PluginSet)
    postBind: PluginSet = Field(default_factory=PluginSet)
    placementGenerate: PluginSet = Field(default_factory=PluginSet)
    placementScore: PluginSet = Field(default_factory=PluginSet)


# Plugin args copied from a KubeSchedulerConfiguration carry their type, as upstream's files do.
ARGS_API_VERSIONS = ("kubescheduler.config.k8s.io/v1",)


class PluginConfig(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _typed_args(self) -> PluginConfig:
        """Accept and drop `apiVersion`/`kind`; they must name this plugin's args type."""
        api_version = self.args.get("apiVersion")
        kind = self.args.get("kind")
        if api_version is None and kind is None:
            return self
        if api_version not in ARGS_API_VERSIONS:
            raise ValueError(f"args.apiVersion: want {' or '.join(ARGS_API_VERSIONS)}, got {api_version!r}")
        if kind != f"{self.name}Args":
            raise ValueError(f"args.kind: want {self.name}Args for plugin {self.name}, got {kind!r}")
        self.args = {k: v for k, v in self.args.items() if k not in ("apiVersion", "kind")}
        return self


_DURATION = re.compile(r"^(?:(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h))+$")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(text: str | int | float) -> float:
    """A Go duration string ('5s', '1m30s', '500ms') in seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return float(text)
    if not isinstance(text, str) or not _DURATION.match(text):
        raise ValueError(f"invalid duration {text!r}: use a Go duration like 5s, 500ms or 1m30s")
    return sum(float(n) * _UNIT_SECONDS[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", text))


class ResourceRef(BaseModel):
    model_config = _STRICT
    name: str = Field(min_length=1)
    ignoredByScheduler: bool = False


class TLSConfig(BaseModel):
    model_config = _STRICT
    insecure: bool = False
    serverName: str = ""
    certFile: str = ""
    keyFile: str = ""
    caFile: str = ""
    certData: str = ""
    keyData: str = ""
    caData: str = ""


class ExtenderConfig(BaseModel):
    model_config = _STRICT
    urlPrefix: str = Field(min_length=1)
    filterVerb: str = ""
    preemptVerb: str = ""
    prioritizeVerb: str = ""
    bindVerb: str = ""
    weight: int = 1
    enableHTTPS: bool = False
    tlsConfig: TLSConfig | None = None
    httpTimeout: str | float = "30s"
    nodeCacheCapable: bool = False
    managedResources: list[ResourceRef] = Field(default_factory=list)
    ignorable: bool = False

    @field_validator("urlPrefix")
    @classmethod
    def _url(cls, v: str) -> str:
        if not re.match(r"^https?://", v):
            raise ValueError("urlPrefix must start with http:// or https://")
        return v

    @field_validator("httpTimeout")
    @classmethod
    def _timeout(cls, v: str | float) -> str | float:
        if parse_duration(v) <= 0:
            raise ValueError("httpTimeout must be positive")
        return v

    @field_validator("weight")
    @classmethod
    def _weight(cls, v: int, info: ValidationInfo) -> int:
        if info.data.get("prioritizeVerb") and v <= 0:
            raise ValueError("weight must be a positive integer when prioritizeVerb is set")
        if v < 0:
            raise ValueError("weight must not be negative")
        return v

    @property
    def timeout_seconds(self) -> float:
        return parse_duration(self.httpTimeout)


class ShadowConfig(BaseModel):
    """What a profile in Shadow mode watches and may write."""
    model_config = _STRICT
    schedulerNames: list[str] = Field(default_factory=lambda: ["default-scheduler"], min_length=1)
    annotate: bool = False


ACTIVE = "Active"
SHADOW = "Shadow"


class SchedulingProfileSpec(BaseModel):
    model_config = _STRICT
    schedulerName: str = Field(default="default-scheduler", min_length=1)
    percentageOfNodesToScore: int | None = Field(default=None, ge=0, le=100)
    podInitialBackoffSeconds: int = Field(default=1, gt=0)
    podMaxBackoffSeconds: int = Field(default=10, gt=0)
    plugins: Plugins = Field(default_factory=Plugins)
    pluginConfig: list[PluginConfig] = Field(default_factory=list)
    extenders: list[ExtenderConfig] = Field(default_factory=list)
    mode: Literal["Active", "Shadow"] = "Active"
    shadow: ShadowConfig | None = None

    @model_validator(mode="after")
    def _backoff(self) -> SchedulingProfileSpec:
        if self.shadow is not None and self.mode != SHADOW:
            raise ValueError("shadow is only for mode: Shadow")
        if self.mode == SHADOW and any(e.bindVerb for e in self.extenders):
            raise ValueError("a Shadow profile never binds: drop the extender's bindVerb")
        if self.podMaxBackoffSeconds < self.podInitialBackoffSeconds:
            raise ValueError("podMaxBackoffSeconds must be >= podInitialBackoffSeconds")
        names = [pc.name for pc in self.pluginConfig]
        dups = sorted({n for n in names if names.count(n) > 1})
        if dups:
            raise ValueError(f"pluginConfig repeats {', '.join(dups)}")
        binders = [e for e in self.extenders if e.bindVerb]
        if len(binders) > 1:
            raise ValueError("only one extender can implement bind")
        return self
