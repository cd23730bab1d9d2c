"""The replay on the hand-made scenario (scenario.py): every time, node, delay and count
computed by hand from the rules below; two runs byte-identical; a departed pod leaves no trace.

The rules the hand computation uses (upstream's): a pod that fails waits in the unschedulable
pool until a cluster event may help it; a pod group that fails is retried after its backoff,
min(1 s x 2^(n-1), 10 s) after its n-th failure, completed once the 1-second window after the
expiry has begun (retries at 42, 45, 50, 59, 70, 81, ... after failing at 40); queue order is
priority first; a pod waits behind a higher-priority pod's nomination; preemption evicts the
lowest-priority pods that make room.
"""

from __future__ import annotations

import gc
import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubeberth import features
from kubeberth.features import FeatureGates
from kubeberth.model import Pod
from kubeberth.whatif.inputs import Origins, load_files
from kubeberth.whatif.replay.engine import Replay, ReplayOptions
from kubeberth.whatif.replay.output import build_result, render_json
from kubeberth.whatif.replay.workload import replay_input

from .scenario import scenario_yaml

# The gang fails at 40 and on each retry of its backoff: 42, 45, 50, 59, then every 11 s.
GANG_RETRIES = [42.0, 45.0, 50.0, 59.0, 70.0, 81.0, 92.0, 103.0, 114.0, 125.0, 136.0, 147.0, 158.0]
INSTANTS = sorted({0.0, 10.0, 20.0, 30.0, 40.0, 60.0, 100.0, 150.0, *GANG_RETRIES})


@pytest.fixture(autouse=True)
def gangs() -> Iterator[None]:
    with features.override(FeatureGates.parse(["GenericWorkload=true"])):
        yield


def replay(tmp_path: Path, text: str, **options: object) -> tuple[Replay, dict[str, object]]:
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    origins = Origins()
    data = replay_input(load_files([path], origins), io.StringIO(), origins)
    r = Replay(data, ReplayOptions(**options), warn=io.StringIO())  # type: ignore[arg-type]
    ledger = r.run()
    return r, build_result(ledger, r.end, {"files": [str(path)]})


def test_pods_bound_when_room_comes(tmp_path: Path) -> None:
    _, result = replay(tmp_path, scenario_yaml())
    pods = {p["pod"].split("/")[1]: p for p in result["pods"]}  # type: ignore[attr-defined]
    expected = {  # arrival, bound, node, departure, status
        "a": (0.0, 0.0, "n1", 100.0, "Scheduled"),
        "b": (10.0, 10.0, "n1", 30.0, "Preempted"),       # the lowest priority on the node
        "c": (20.0, 100.0, "n1", None, "Scheduled"),      # behind hi's nomination at 30; a leaves at 100
        "hi": (30.0, 30.0, "n1", 150.0, "Scheduled"),
        "g-0": (40.0, 158.0, "n1", None, "Scheduled"),    # hi leaves at 150, the gang's backoff ends at 158
        "g-1": (40.0, 158.0, "n1", None, "Scheduled"),
    }
    got = {k: (p["arrival"], p["bound"], p["node"], p["departure"], p["status"]) for k, p in pods.items()}
    assert got == expected


def test_series_and_summary(tmp_path: Path) -> None:
    _, result = replay(tmp_path, scenario_yaml())
    series = result["series"]
    cols = series["columns"]  # type: ignore[index]
    rows = [dict(zip(cols, row, strict=True)) for row in series["rows"]]  # type: ignore[index]
    assert [r["time"] for r in rows] == INSTANTS

    def at(t: float) -> dict[str, object]:
        return next(r for r in rows if r["time"] == t)

    # time: (arrived, scheduled, pending, running, failed, preemptions, allocated cpu, oldest pending)
    hand = {0.0: (1, 1, 0, 1, 0, 0, 2000, 0.0), 10.0: (2, 2, 0, 2, 0, 0, 4000, 0.0),
            20.0: (3, 2, 1, 2, 0, 0, 4000, 0.0), 30.0: (4, 3, 1, 2, 0, 1, 4000, 10.0),
            40.0: (6, 3, 3, 2, 0, 1, 4000, 20.0), 60.0: (6, 3, 3, 2, 0, 1, 4000, 40.0),
            100.0: (6, 4, 2, 2, 0, 1, 3000, 60.0), 150.0: (6, 4, 2, 1, 0, 1, 1000, 110.0),
            158.0: (6, 6, 0, 3, 0, 1, 3000, 0.0)}
    names = ("arrived", "scheduled", "pending", "running", "failed", "preemptions", "allocated.cpu", "oldestPending")
    for t, values in hand.items():
        assert tuple(at(t)[n] for n in names) == values, t
    assert {r["time"]: r["queueingDelay"] for r in rows if r["queueingDelay"]} == {100.0: 80.0, 158.0: 118.0}
    assert {r["capacity.cpu"] for r in rows} == {4000}
    assert rows[-1]["arrivedRequests.cpu"] == 2000 + 2000 + 1000 + 2000 + 2 * 1000
    s = result["summary"]
    assert s["arrived"] == 6 and s["scheduled"] == 6 and s["failed"] == 0  # type: ignore[index]
    assert s["departed"] == 3 and s["preemptions"] == 1 and s["duration"] == 158.0  # type: ignore[index]
    # delays 0 (a, b, hi), 80 (c), 118 (g-0, g-1): nearest rank
    assert s["queueingDelay"] == {"p50": 0.0, "p99": 118.0, "mean": round(316 / 6, 6), "max": 118.0}  # type: ignore[index]
    # cpu: 50% for 10 s, 100% for 90 s, 75% for 50 s, 25% for 8 s, over 158 s
    mean = (50 * 10 + 100 * 90 + 75 * 50 + 25 * 8) / 158
    assert s["allocation"]["cpu"] == {"mean": round(mean, 6), "max": 100.0, "final": 75.0}  # type: ignore[index]
    # the last failure of each pod that ever failed: hi, c and g-1 for cpu, g-0 for its group
    reasons = s["unschedulableByReason"]  # type: ignore[index]
    assert reasons["Insufficient cpu"] == 3
    assert sum(reasons.values()) == 4


def test_sample_every(tmp_path: Path) -> None:
    _, result = replay(tmp_path, scenario_yaml(), sample_every=50.0)
    rows = result["series"]["rows"]  # type: ignore[index]
    # the state at 0, 50, 100, 150 (before the gang's binding at 158): pending then
    assert [(r[0], r[3]) for r in rows] == [(0.0, 0), (50.0, 3), (100.0, 2), (150.0, 2)]


def test_until_stops_the_clock(tmp_path: Path) -> None:
    _, result = replay(tmp_path, scenario_yaml(), until=35.0)
    assert result["summary"]["duration"] == 35.0  # type: ignore[index]
    assert [r[0] for r in result["series"]["rows"]] == [0.0, 10.0, 20.0, 30.0]  # type: ignore[index]


def test_two_runs_are_byte_identical(tmp_path: Path) -> None:
    one = render_json(replay(tmp_path, scenario_yaml(), seed=7)[1])
    two = render_json(replay(tmp_path, scenario_yaml(), seed=7)[1])
    assert one == two
    json.loads(one)


def test_departed_pods_leave_no_trace(tmp_path: Path) -> None:
    """Every pod leaves (the gang's pods and c get a departure): the scheduler holds nothing of them."""
    text = scenario_yaml().replace('kubeberth.io/arrival-time: "20"', 'kubeberth.io/arrival-time: "20", '
                                   'kubeberth.io/departure-time: "200"')
    text = text.replace("  - at: 40\n", "  - at: 40\n    departAt: 300\n")
    # Pod objects other tests of this process keep alive (same keys, other scenarios) are not this
    # replay's: held here so that their ids stay theirs, and left out of the check below.
    gc.collect()
    before = [o for o in gc.get_objects() if isinstance(o, Pod)]
    r, result = replay(tmp_path, text)
    assert result["summary"]["departed"] == 6  # type: ignore[index]
    s = r.sched
    assert s.outcomes == {}
    assert s.cache.pod_count() == 0 and s.cache.assumed_count() == 0
    assert sum(len(p) for p in s.queue.pending_pods().values()) == 0
    assert not s._pending and not s._uids and not s._seqs and not s._given_up
    assert len(s.ctx.waiting_pods) == 0
    assert not r._on_node.get("n1") and not r._arrival_annotations
    assert s.ctx.client.events == []  # type: ignore[union-attr]
    assert all(p["departure"] is not None for p in result["pods"])  # type: ignore[attr-defined]
    # The snapshot is the cluster as of the last cycle: refreshed as the next cycle would, nothing is left.
    s.cache.update_snapshot(s.snapshot)
    gc.collect()
    keys = {p["pod"] for p in result["pods"]}  # type: ignore[attr-defined]
    earlier = {id(o) for o in before}
    left = [o.key for o in gc.get_objects() if isinstance(o, Pod) and o.key in keys and id(o) not in earlier]
    assert left == []  # no Pod object left
