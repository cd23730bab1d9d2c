"""Configuration errors that name the offending field."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pydantic import ValidationError


class ConfigError(ValueError):
    """An invalid SchedulingProfile. `path` is the field, e.g. spec.plugins.score.enabled[0].weight."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.detail = message
        super().__init__(f"{path}: {message}" if path else message)


def format_loc(loc: Sequence[str | int], prefix: str = "spec") -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def from_validation_error(exc: ValidationError, prefix: str = "spec") -> ConfigError:
    errors = exc.errors()
    first = errors[0]
    path = format_loc([p for p in first["loc"] if not _is_union_tag(p)], prefix)
    message = first["msg"]
    if len(errors) > 1:
        others = "; ".join(
            f"{format_loc([p for p in e['loc'] if not _is_union_tag(p)], prefix)}: {e['msg']}"
            for e in errors[1:4])
        message += f" (also {others})"
    return ConfigError(path, message)


def _is_union_tag(part: str | int) -> bool:
    return isinstance(part, str) and ("[" in part or part.startswith("function-"))


def join_paths(parts: Iterable[str]) -> str:
    return ".".join(p for p in parts if p)
