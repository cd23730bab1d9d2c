"""One Dask cluster (2 worker processes, a thread each) for the sweep's tests, and small sweeps."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kubeberth.whatif.sweep.plan import Sweep, make_options, make_trace, product
from tests.whatif.sweep.replay_fixture import write_trace


@pytest.fixture(scope="session")
def dask_client() -> Iterator[Any]:
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address="127.0.0.1:0",
                      silence_logs=40) as cluster, Client(cluster) as client:
        yield client


def profiles(directory: Path, names: tuple[str, ...] = ("FGD", "Random")) -> list[str]:
    """Copies of the gpushare plugins' profiles of these policies in `directory`."""
    source = Path(pytest.importorskip("kubeberth_gpushare").__file__).parent / "profiles"
    directory.mkdir(parents=True, exist_ok=True)
    out = []
    for name in names:
        path = directory / f"{name}.yaml"
        path.write_text((source / f"{name}.yaml").read_text())
        out.append(str(path))
    return out


def small_sweep(tmp: Path, traces: tuple[str, ...] = ("alpha", "beta"), seeds: tuple[int, ...] = (1, 2, 3)) -> Sweep:
    """traces x FGD, Random x seeds, --protocol artifact --tune 1.3."""
    found = [make_trace([str(write_trace(tmp / "traces", t))], nodes=str(tmp / "traces" / "nodes.csv"))
             for t in traces]
    return Sweep(product(found, profiles(tmp / "profiles"), list(seeds), [make_options("artifact", 1.3, None, "t")]))
