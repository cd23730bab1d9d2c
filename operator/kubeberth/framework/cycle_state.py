"""Per-cycle scratch space that plugins share within one scheduling attempt."""

from __future__ import annotations

from typing import Any, Protocol


class StateData(Protocol):
    """A value kept in a CycleState that preemption's dry runs copy with `clone()` (state that
    AddPod/RemovePod change implements it)."""

    def clone(self) -> StateData: ...


class CycleState:
    """Keyed storage for one cycle. Values that must survive cloning (for
    preemption's dry runs) implement `clone()`; others are shared."""

    __slots__ = ("_data", "record_plugin_metrics", "skip_filter_plugins", "skip_pre_bind_plugins",
                 "skip_score_plugins")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        self.skip_pre_bind_plugins: set[str] = set()
        self.record_plugin_metrics = False

    def read(self, key: str) -> Any:
        try:
            return self._data[key]
        except KeyError:
            raise KeyError(f"{key!r} not found in cycle state") from None

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def clone(self) -> CycleState:
        c = CycleState()
        for k, v in self._data.items():
            clone = getattr(v, "clone", None)
            c._data[k] = clone() if callable(clone) else v
        c.skip_filter_plugins = set(self.skip_filter_plugins)
        c.skip_score_plugins = set(self.skip_score_plugins)
        c.skip_pre_bind_plugins = set(self.skip_pre_bind_plugins)
        c.record_plugin_metrics = self.record_plugin_metrics
        return c
