"""The collector around the initial sync: off while the lists are applied, the survivors frozen."""

from __future__ import annotations

import gc

import pytest

from kubeberth.operator.collector import RUNNING_THRESHOLDS, collector_paused, schedule_full_collections


class Cyclic:
    """An object in a reference cycle with itself (only the cyclic collector frees it); counts its
    frees in `freed`."""

    freed = [0]

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        type(self).freed[0] += 1


@pytest.fixture(autouse=True)
def _thresholds_kept() -> object:
    before = gc.get_threshold()
    yield
    gc.set_threshold(*before)


@pytest.mark.parametrize("enabled_before", [True, False], ids=["on", "off"])
def test_off_during_the_body_then_frozen_and_as_before(enabled_before: bool) -> None:
    was = gc.isenabled()
    (gc.enable if enabled_before else gc.disable)()
    gc.set_threshold(700, 10, 10)
    try:
        frozen = gc.get_freeze_count()
        with collector_paused():
            assert not gc.isenabled()
            cache = [{"node": i} for i in range(1000)]  # long-lived, tracked objects
        assert gc.isenabled() is enabled_before
        assert gc.get_freeze_count() >= frozen + len(cache)
        assert gc.get_threshold() == (RUNNING_THRESHOLDS if enabled_before else (700, 10, 10))
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


def test_paused_for_the_start_up_until_the_first_sync() -> None:
    """`kubeberth run` starts with the collector off (entry.py); the initial sync turns it on."""
    from kubeberth.operator import collector

    was = gc.isenabled()
    gc.enable()
    try:
        collector.pause_for_start_up()
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert gc.isenabled()
        gc.disable()  # later syncs keep whatever the process chose
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.unfreeze()
        (gc.enable if was else gc.disable)()


@pytest.mark.parametrize(("argv", "paused"), [(["run", "--help"], True), (["simulate", "--help"], False)],
                         ids=["run", "simulate"])
def test_the_console_script_pauses_the_collector_for_run_only(argv: list[str], paused: bool,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    from kubeberth import cli, entry
    from kubeberth.operator import collector

    seen: list[bool] = []
    monkeypatch.setattr("sys.argv", ["kubeberth", *argv])
    monkeypatch.setattr(cli, "main", lambda: seen.append(gc.isenabled()) or 0)
    monkeypatch.setattr(collector, "_paused_for_start_up", False)
    was = gc.isenabled()
    gc.enable()
    try:
        assert entry.main() == 0
        assert seen == [not paused] and collector._paused_for_start_up is paused
    finally:
        (gc.enable if was else gc.disable)()


def test_cycles_are_still_collected_under_the_running_thresholds() -> None:
    """Garbage in reference cycles (which reference counting cannot free) is found by the young
    collections the running thresholds still make, without any explicit gc.collect()."""
    freed = Cyclic.freed = [0]
    was = gc.isenabled()
    gc.collect()
    gc.set_threshold(*RUNNING_THRESHOLDS)
    gc.enable()
    try:
        made = 4 * RUNNING_THRESHOLDS[0]
        for _ in range(made):
            Cyclic()
        assert freed[0] >= made // 2
    finally:
        (gc.enable if was else gc.disable)()
        gc.collect()


def test_a_full_collection_comes_on_a_timer_whatever_the_thresholds() -> None:
    """Cycles that died old wait for a full collection, which high thresholds make rare: the timer
    set once the initial sync is done collects them anyway (once per loop)."""
    import asyncio

    freed = Cyclic.freed = [0]
    async def main() -> tuple[bool, bool, int, int]:
        first = schedule_full_collections(interval=0.01)
        again = schedule_full_collections(interval=0.01)
        for _ in range(1000):
            Cyclic()
        before = freed[0]
        await asyncio.sleep(0.2)
        return first, again, before, freed[0]

    was = gc.isenabled()
    gc.collect()
    gc.set_threshold(10**9, 10**9, 10**9)  # no automatic collection at all
    gc.enable()
    try:
        first, again, before, after = asyncio.run(main())
        assert (first, again) == (True, False)
        assert before == 0 and after == 1000
        assert not schedule_full_collections()  # no running loop
    finally:
        (gc.enable if was else gc.disable)()
        gc.collect()
