"""The collector around the initial sync: off while the lists are applied, the survivors frozen."""

from __future__ import annotations

import gc

import pytest

from kubeberth.operator.collector import collector_paused


@pytest.mark.parametrize("enabled_before", [True, False], ids=["on", "off"])
def test_off_during_the_body_then_frozen_and_as_before(enabled_before: bool) -> None:
    was = gc.isenabled()
    (gc.enable if enabled_before else gc.disable)()
    try:
        frozen = gc.get_freeze_count()
        with collector_paused():
            assert not gc.isenabled()
            cache = [{"node": i} for i in range(1000)]  # long-lived, tracked objects
        assert gc.isenabled() is enabled_before
        assert gc.get_freeze_count() >= frozen + len(cache)
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()


def test_an_exception_still_restores_the_collector() -> None:
    was = gc.isenabled()
    gc.enable()
    try:
        with pytest.raises(RuntimeError), collector_paused():
            raise RuntimeError("the list failed")
        assert gc.isenabled()
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()
