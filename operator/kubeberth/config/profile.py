"""Reading a SchedulingProfile object (the CR) into a validated spec."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from .errors import ConfigError, from_validation_error
from .models import SchedulingProfileSpec

GROUP = "kubeberth.io"
VERSION = "v1alpha1"
KIND = "SchedulingProfile"
PLURAL = "schedulingprofiles"


def parse_spec(spec: Any) -> SchedulingProfileSpec:
    if spec is None:
        spec = {}
    if not isinstance(spec, Mapping):
        raise ConfigError("spec", "must be a mapping")
    try:
        return SchedulingProfileSpec.model_validate(dict(spec))
    except ValidationError as exc:
        raise from_validation_error(exc) from None


def parse_profile_object(obj: Mapping[str, Any]) -> tuple[str, SchedulingProfileSpec]:
    """(metadata.name, spec) of a SchedulingProfile object."""
    api_version = obj.get("apiVersion", f"{GROUP}/{VERSION}")
    if api_version != f"{GROUP}/{VERSION}":
        raise ConfigError("apiVersion", f"want {GROUP}/{VERSION}, got {api_version!r}")
    name = str((obj.get("metadata") or {}).get("name") or "")
    if not name:
        raise ConfigError("metadata.name", "a SchedulingProfile needs a name")
    return name, parse_spec(obj.get("spec"))
