"""Fixtures of the real-cluster suite: one control plane per session, the operator as a process.

The control plane (etcd + kube-apiserver, see control_plane.py) starts once; `crds/` and
`manifests/` are applied to it as the README tells a cluster administrator to. Every test
starts from an empty cluster (no nodes, pods, profiles, PDBs or priority classes of its own)
and runs `kubeberth run` as a child process with the kubeberth ServiceAccount's own token,
so that every test also shows the ClusterRole to be enough.

Without the binaries (`make control-plane`), the whole suite is skipped with one line saying so.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import signal
import sys
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from .control_plane import ADMIN_TOKEN, ROOT, ControlPlane, Process, free_port, kubectl, missing_binaries
from .kube import Kube, reset_devices

NAMESPACE = "kubeberth-system"
SERVICE_ACCOUNT = "kubeberth"
TEST_NAMESPACES = ("default", "team-a")

# Plugin distributions of this repository that may be installed beside kubeberth (`make install`
# installs Coscheduling's). `kubeberth run` reads their kinds only while a profile enables them
# (test_coscheduling.py's profiles do), but `kubeberth snapshot` lists the kinds of every loaded
# plugin: the cluster gets their CRDs and RBAC as their READMEs tell an administrator to apply them.
PLUGIN_DISTRIBUTIONS = {"kubeberth-coscheduling": ROOT / "examples" / "plugins" / "coscheduling",
                        "kubeberth-gpushare": ROOT / "examples" / "plugins" / "gpushare"}


def installed_plugins() -> dict[str, Path]:
    names = {ep.dist.name for ep in importlib.metadata.entry_points(group="kubeberth.plugins") if ep.dist is not None}
    return {dist: path for dist, path in PLUGIN_DISTRIBUTIONS.items() if dist in names}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    missing = missing_binaries()
    if not missing:
        return
    skip = pytest.mark.skip(reason=f"real control plane not built ({', '.join(missing)}): run `make control-plane`")
    for item in items:
        if "tests/cluster/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(skip)


def install_kubeberth(plane: ControlPlane) -> None:
    """kubeberth's CRDs and manifests, and those of the repository's plugin distributions that are
    installed (make install adds Coscheduling; see PLUGIN_DISTRIBUTIONS)."""
    kubectl(plane, "apply", "-f", "crds/")
    kubectl(plane, "wait", "--for", "condition=established", "--timeout=60s", "crd/schedulingprofiles.kubeberth.io",
            "crd/workloadsummaries.kubeberth.io")
    kubectl(plane, "apply", "-k", "manifests/")
    for path in installed_plugins().values():
        if (path / "crds").is_dir():  # gpushare's kind is kubeberth's own (crds/workloadsummary.yaml)
            kubectl(plane, "apply", "-f", str(path / "crds"))
            kubectl(plane, "wait", "--for", "condition=established", "--timeout=60s", "-f", str(path / "crds"))
        kubectl(plane, "apply", "-f", str(path / "manifests" / "rbac.yaml"))


@pytest.fixture(scope="session")
def control_plane() -> Iterator[ControlPlane]:
    plane = ControlPlane().start()
    try:
        install_kubeberth(plane)
        kubectl(plane, "create", "namespace", "team-a")
        yield plane
    except BaseException:
        sys.stderr.write(plane.logs())
        raise
    finally:
        plane.stop()


@pytest.fixture(scope="session")
def sa_kubeconfig(control_plane: ControlPlane) -> Path:
    """A kubeconfig with a token of the kubeberth ServiceAccount (TokenRequest, as a kubelet mounts it)."""
    token = kubectl(control_plane, "create", "token", SERVICE_ACCOUNT, "-n", NAMESPACE,
                    "--duration=2h").stdout.strip()
    return control_plane.write_kubeconfig(control_plane.dir / "kubeberth.kubeconfig", token=token,
                                          user=f"system:serviceaccount:{NAMESPACE}:{SERVICE_ACCOUNT}")


@pytest_asyncio.fixture
async def kube(control_plane: ControlPlane) -> AsyncIterator[Kube]:
    async with Kube(control_plane.url, ADMIN_TOKEN, control_plane.ssl_context()) as client:
        await reset(client)
        yield client


async def reset(kube: Kube) -> None:
    """An empty cluster for the next test: what earlier tests created is gone."""
    for ns in TEST_NAMESPACES:
        await kube.delete_all("pods", ns, grace_period=0)
        await kube.delete_all("poddisruptionbudgets", ns)
        await kube.delete_all("events", ns)
    await kube.delete_all("nodes")
    await kube.delete_all("schedulingprofiles")
    await reset_devices(kube)
    for pc in await kube.list("priorityclasses"):
        if not pc["metadata"]["name"].startswith("system-"):
            await kube.delete("priorityclasses", pc["metadata"]["name"])


class OperatorProcess:
    """`kubeberth run` as a child process; `ready()` once its probe says it has synced."""

    def __init__(self, plane: ControlPlane, kubeconfig: Path, args: list[str], name: str,
                 secure: bool = False, dry_run: bool = False) -> None:
        self.port = free_port()
        self.metrics_port = free_port()
        # The dry runs' own process and port (--dry-run-port) only for the tests of the dry runs.
        self.dry_run_port = free_port() if dry_run else 0
        # The metrics port: plain HTTP on loopback (--metrics-insecure) unless the test is about the secure port.
        self.metrics_scheme = "https" if secure else "http"
        argv = [str(ROOT / ".venv" / "bin" / "kubeberth"), "run", f"--kubeconfig={kubeconfig}",
                f"--liveness=http://127.0.0.1:{self.port}/healthz", f"--metrics-port={self.metrics_port}",
                "--metrics-host=127.0.0.1", *([] if secure else ["--metrics-insecure"]), "--seed=1",
                f"--dry-run-port={self.dry_run_port}", *args]
        if not Path(argv[0]).exists():
            argv[:1] = [sys.executable, "-m", "kubeberth.cli"]
        self.process = Process.start(name, argv, plane.dir, env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def health(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/healthz", timeout=2) as resp:
                return dict(json.loads(resp.read()))
        except (OSError, ValueError):
            return None

    def synced(self) -> bool:
        health = self.health()
        return bool(health and (health.get("scheduler") or {}).get("synced"))

    def wait_synced(self, timeout: float = 60.0) -> OperatorProcess:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.process.alive():
                raise AssertionError(f"kubeberth run exited ({self.process.popen.returncode}):\n"
                                     f"{self.process.tail(80)}")
            if self.synced():
                return self
            time.sleep(0.1)
        raise AssertionError(f"kubeberth run did not sync within {timeout:.0f}s:\n{self.process.tail(80)}")

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5) as resp:
            return str(resp.read().decode())

    def kill(self, sig: int = signal.SIGKILL) -> None:
        self.process.signal(sig)

    def stop(self) -> int | None:
        self.process.stop(timeout=15)
        return self.process.popen.returncode

    def log(self) -> str:
        return self.process.log_path.read_text(errors="replace")


class Operators:
    """Starts operators for a test and stops them all after it (their logs shown when it failed)."""

    def __init__(self, plane: ControlPlane, kubeconfig: Path) -> None:
        self.plane = plane
        self.kubeconfig = kubeconfig
        self.started: list[OperatorProcess] = []

    def start(self, *args: str, wait: bool = True, kubeconfig: Path | None = None,
              secure: bool = False, dry_run: bool = False) -> OperatorProcess:
        op = OperatorProcess(self.plane, kubeconfig or self.kubeconfig, list(args),
                             name=f"kubeberth-{len(self.started)}-{free_port()}", secure=secure, dry_run=dry_run)
        self.started.append(op)
        return op.wait_synced() if wait else op

    def stop_all(self) -> None:
        for op in self.started:
            op.stop()


@pytest.fixture
def operators(control_plane: ControlPlane, sa_kubeconfig: Path,
              request: pytest.FixtureRequest) -> Iterator[Operators]:
    ops = Operators(control_plane, sa_kubeconfig)
    yield ops
    ops.stop_all()
    failed = getattr(request.node, "rep_call", None)
    if failed is not None and failed.failed:
        for op in ops.started:
            sys.stderr.write(f"--- {op.process.name} ---\n{op.process.tail(60)}\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.when == "call":
        item.rep_call = report  # type: ignore[attr-defined]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    missing = missing_binaries()
    if missing:
        terminalreporter.write_line(f"real-cluster suite (tests/cluster) skipped: {', '.join(missing)} not built "
                                    "(make control-plane)")
