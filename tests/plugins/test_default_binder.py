"""DefaultBinder: binds through the cluster client; a failure is an Error status."""

from __future__ import annotations

import pytest

from kubeberth.client import BindConflict
from kubeberth.framework import Code, CycleState
from kubeberth.plugins.default_binder import DefaultBinder
from tests.builders import make_pod
from tests.doubles import RecordingClient, handle


async def test_bind_success() -> None:
    client = RecordingClient()
    binder = DefaultBinder(None, handle(client=client))
    assert await binder.bind(CycleState(), make_pod("foo", "ns"), "foohost.kubernetes.mydomain.com") is None
    assert client.calls == [("bind", "ns/foo", "foohost.kubernetes.mydomain.com")]


@pytest.mark.parametrize(("error", "message"), [
    (RuntimeError("binding rejected"), "binding rejected"),
    (BindConflict("pod already bound"), "pod already bound"),
    (RuntimeError(), "RuntimeError"),
], ids=["api error", "conflict", "no message"])
async def test_bind_failure_is_an_error(error: Exception, message: str) -> None:
    client = RecordingClient()
    client.fail("bind", error)
    binder = DefaultBinder(None, handle(client=client))
    status = await binder.bind(CycleState(), make_pod("foo"), "n1")
    assert status is not None and status.code == Code.ERROR
    assert status.message() == message
    assert client.calls == []
