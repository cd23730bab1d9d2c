"""A reader of the output that goes away early (`kubeberth simulate ... -o json | head`): every
command that prints stops quietly, exit status 141 (128 + SIGPIPE, as a shell reports git or
coreutils killed by SIGPIPE), no traceback. Real processes on real pipes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import kubeberth
from kubeberth.pipes import SIGPIPE_EXIT

ROOT = Path(__file__).resolve().parents[1]
CASE = ROOT / "tests" / "conformance" / "cases" / "affinity-waits-for-target.yaml"
PROFILE = {"apiVersion": "kubeberth.io/v1alpha1", "kind": "SchedulingProfile", "metadata": {"name": "p"},
           "spec": {"schedulerName": "default-scheduler"}}

# The console script (entry.main), as `kubeberth ARGS...` runs it.
CONSOLE_SCRIPT = "import sys; from kubeberth.entry import main; sys.argv[0] = 'kubeberth'; sys.exit(main())"


def kubeberth_argv(*args: str) -> list[str]:
    return [sys.executable, "-c", CONSOLE_SCRIPT, *args]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(Path(kubeberth.__file__).parents[1])}


@pytest.fixture
def profile_file(tmp_path: Path) -> Path:
    path = tmp_path / "profile.yaml"
    path.write_text(yaml.safe_dump(PROFILE))
    return path


@pytest.mark.parametrize("args", [
    ["simulate", "{cluster}", "-o", "json"],
    ["simulate", "{cluster}"],
    ["plugins"],
    ["plugins", "-o", "json"],
    ["profile", "export", "{profile}"],
    ["test", "--verbose", "{case}"],
    ["convert-policy", "{policy}"],
    ["--version"],
], ids=lambda args: " ".join(args))
def test_a_reader_gone_before_the_first_write(args: list[str], profile_file: Path) -> None:
    """stdout is a pipe whose reader has already closed it: the first write fails."""
    paths = {"cluster": ROOT / "examples" / "cluster.yaml", "profile": profile_file, "case": CASE,
             "policy": ROOT / "examples" / "policy.json"}
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run(kubeberth_argv(*(a.format(**paths) for a in args)), stdout=write,
                              stderr=subprocess.PIPE, text=True, env=env(), timeout=120)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (SIGPIPE_EXIT, "")


def test_simulate_json_into_head(tmp_path: Path) -> None:
    """`kubeberth simulate big.yaml -o json | head -c 100`: the reader takes a little, then goes."""
    docs = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
             "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "110"}}}]
    docs += [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"pod-{i}", "namespace": "default"},
              "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "2"}}}]}}
             for i in range(800)]  # ~200 KB of JSON: more than the pipe holds
    cluster = tmp_path / "big.yaml"
    cluster.write_text(yaml.safe_dump_all(docs))
    proc = subprocess.Popen(kubeberth_argv("simulate", str(cluster), "-o", "json"), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env())
    assert proc.stdout is not None and proc.stderr is not None
    head = proc.stdout.read(100)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == SIGPIPE_EXIT
    assert head.startswith(b'{\n  "pods": [') and err == ""
