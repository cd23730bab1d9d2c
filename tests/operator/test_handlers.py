"""The kopf handlers of the operator's frame, called as kopf calls them."""

from __future__ import annotations

from typing import Any

import kopf

from kubeberth.operator import handlers


class FakeApp:
    def __init__(self) -> None:
        self.api_client = object()
        self.calls: list[str] = []

    def configure_settings(self, settings: kopf.OperatorSettings) -> None:
        self.calls.append("configure")

    async def start(self) -> None:
        self.calls.append("start")


async def test_startup_hands_the_api_client_to_other_handlers_through_the_memo() -> None:
    registry = kopf.OperatorRegistry()
    app = FakeApp()
    handlers.register(registry, app)  # type: ignore[arg-type]
    (startup,) = [h for h in registry._activities.get_all_handlers() if h.id == "kubeberth_startup"]
    memo = kopf.Memo()
    result: Any = startup.fn(settings=kopf.OperatorSettings(), memo=memo)
    await result
    assert memo["kubeberth_api_client"] is app.api_client
    assert app.calls == ["configure", "start"]
