"""A SchedulingProfile's verdict is logged when it changes, not each time the object comes back
unchanged (the operator's own status write, a relist)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from kubeberth.operator.profiles import ProfileManager
from kubeberth.plugins import in_tree_registry
from kubeberth.scheduler import Scheduler

GOOD = {"schedulerName": "mine"}
BAD = {"schedulerName": "mine", "plugins": {"score": {"enabled": [{"name": "Nope"}]}}}


def profile(spec: dict[str, Any], generation: int, status: Any = None) -> dict[str, Any]:
    o: dict[str, Any] = {"metadata": {"name": "p", "generation": generation, "uid": "p"}, "spec": spec}
    if status is not None:
        o["status"] = status
    return o


def test_a_verdict_is_announced_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="kubeberth.operator.profiles")
    pm = ProfileManager(Scheduler(), in_tree_registry())

    def logged() -> list[str]:
        got = [r.getMessage() for r in caplog.records if r.name == "kubeberth.operator.profiles"]
        caplog.clear()
        return got

    pm.apply("p", profile(GOOD, 1))
    assert logged() == ["SchedulingProfile p is in force for mine"]
    pm.apply("p", profile(GOOD, 1, status={"conditions": [{"type": "Accepted", "status": "True"}]}))
    pm.apply("p", profile(GOOD, 1))  # a relist
    assert logged() == []
    pm.apply("p", profile(BAD, 2))
    assert [m.split(":")[0] for m in logged()] == ["SchedulingProfile p refused"]
    pm.apply("p", profile(BAD, 2, status={"conditions": [{"type": "Accepted", "status": "False"}]}))
    assert logged() == []
    pm.apply("p", profile(GOOD, 3))  # back to the spec in force: announced again
    assert logged() == ["SchedulingProfile p is in force for mine"]
    pm.apply("p", None)
    assert logged() == ["SchedulingProfile p deleted; mine is no longer served"]
    pm.apply("p", profile(GOOD, 1))  # created again
    assert logged() == ["SchedulingProfile p is in force for mine"]
