"""The documentation's plugin tutorial (docs/plugins/tutorial.md, "Write your own plugin") runs as
written: its files (the code blocks titled with a file name) are written as they stand, its
`console` blocks' commands run in that directory (with this checkout's kubeberth and pip first on
PATH; `pip install` goes to a directory of the test's own) and print what the page shows; the
image, the ConfigMap patch and the live profile are checked against the repository's own
Dockerfile, Deployment and registry."""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubeberth.config import parse_profile_object
from kubeberth.plugins import in_tree_registry
from kubeberth.plugins._loading import load
from kubeberth.profile import check_buildable

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "docs" / "plugins" / "tutorial.md"
FENCE = re.compile(r'^```(\S*)(?: title="([^"]+)")?\n(.*?)^```$', re.M | re.S)


def tutorial() -> str:
    return TUTORIAL.read_text()


def blocks() -> list[tuple[str, str | None, str]]:
    return [(m.group(1), m.group(2), m.group(3)) for m in FENCE.finditer(tutorial())]


def files() -> dict[str, str]:
    return {name: body for _, name, body in blocks() if name}


def commands() -> list[tuple[str, str]]:
    """(command, expected output) of each `$ ` line of the console blocks."""
    out: list[tuple[str, str]] = []
    for lang, _, body in blocks():
        if lang != "console":
            continue
        for chunk in re.split(r"^\$ ", body, flags=re.M)[1:]:
            command, _, expected = chunk.partition("\n")
            out.append((command, expected))
    return out


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("tutorial")
    for name, body in files().items():
        (d / name).write_text(body)
    return d


def shell_env(workdir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    site = workdir / "site"
    env["PYTHONPATH"] = str(site)  # where `pip install` puts the distribution (below)
    env["PIP_TARGET"] = str(site)
    env["PIP_NO_INDEX"] = "1"
    env["PIP_NO_BUILD_ISOLATION"] = "false"  # pip's spelling of "use the environment's setuptools"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["PWD"] = str(workdir)
    return env


def test_the_tutorial_has_what_it_promises() -> None:
    names = set(files())
    assert {"myplugin.py", "myplugin_fast.py", "cluster.yaml", "prefer-label-test.yaml", "pyproject.toml",
            "Dockerfile", "plugins-patch.yaml", "profile-prefer-gold.yaml"} <= names
    run = [c for c, _ in commands()]
    for wanted in ("kubeberth simulate cluster.yaml --plugins myplugin.py",
                   "kubeberth simulate cluster.yaml --plugins myplugin.py --explain web-1",
                   "kubeberth test prefer-label-test.yaml --plugins myplugin.py", "pip install --quiet --no-deps ."):
        assert wanted in run
    # About twenty lines of plugin.
    assert len(files()["myplugin.py"].strip().splitlines()) <= 25


def test_the_console_blocks_print_what_the_page_shows(workdir: Path) -> None:
    env = shell_env(workdir)
    for command, expected in commands():
        done = subprocess.run(["bash", "-o", "pipefail", "-c", command], cwd=workdir, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"$ {command}\n{done.stderr}"
        got = done.stdout.replace(str(workdir), "$PWD")
        assert got == expected, f"$ {command}"


def test_the_plugin_files_pass_mypy_strict(workdir: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental", "myplugin.py",
                           "myplugin_fast.py"], cwd=workdir, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout


def test_score_all_scores_as_score_does(workdir: Path) -> None:
    """On a cluster large enough for the vectorised path, both files place every pod alike."""
    rng = random.Random(7)
    docs: list[dict[str, Any]] = [yaml.safe_load_all(files()["cluster.yaml"]).__next__()]
    for i in range(120):
        labels = {"tier": rng.choice(["gold", "silver", "bronze"])} if rng.random() < 0.8 else {}
        docs.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"n{i:03}", "labels": labels},
                     "status": {"allocatable": {"cpu": str(rng.choice([2, 4, 8])), "memory": "16Gi",
                                                "pods": "110"}}})
    for i in range(150):
        docs.append({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i:03}", "namespace": "default"},
                     "spec": {"containers": [{"name": "c", "image": "x",
                                              "resources": {"requests": {"cpu": rng.choice(["500m", "1", "2"])}}}]}})
    big = workdir / "big.yaml"
    big.write_text(yaml.safe_dump_all(docs))
    out = {}
    for plugin in ("myplugin.py", "myplugin_fast.py"):
        # The console script, as a user runs it (`python -m` would put the tutorial's directory, with
        # the build's egg-info of the `pip install .` above, on sys.path).
        kubeberth = str(Path(sys.executable).parent / "kubeberth")
        done = subprocess.run([kubeberth, "simulate", str(big), "--plugins", plugin, "-o", "json"], cwd=workdir,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr
        out[plugin] = done.stdout
    assert out["myplugin.py"] == out["myplugin_fast.py"]
    assert '"node": "n' in out["myplugin.py"]


def test_the_image_builds_on_kubeberths() -> None:
    ours = (ROOT / "Dockerfile").read_text()
    theirs = files()["Dockerfile"]
    tag = re.search(r"docker build -t (\S+) \.", ours)
    assert tag is not None and f"FROM {tag.group(1)}\n" in theirs
    user = re.findall(r"^USER (\S+)$", ours, re.M)[-1]
    assert re.findall(r"^USER (\S+)$", theirs, re.M)[-1] == user
    venv = re.search(r"python -m venv (\S+)", ours)
    assert venv is not None and f"{venv.group(1)}/bin/pip install" in theirs
    modules = re.search(r'py-modules = \[(.*)\]', files()["pyproject.toml"])
    assert modules is not None
    copied = theirs.split("COPY ", 1)[1].split("\n", 1)[0].split()[:-1]
    listed = [m.strip().strip('"') for m in modules.group(1).split(",")]
    assert set(copied) == {"pyproject.toml"} | {f"{m}.py" for m in listed}


def test_the_configmap_patch_keeps_the_deployments_args() -> None:
    deployment = yaml.safe_load((ROOT / "manifests" / "deployment.yaml").read_text())
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    patch = yaml.safe_load(files()["plugins-patch.yaml"])
    container = patch["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][:-1] == args
    mount = container["volumeMounts"][0]["mountPath"]
    assert container["args"][-1] == f"--plugins={mount}/myplugin_fast.py"


def test_the_live_profile_runs_with_the_plugin(workdir: Path) -> None:
    registry = load(in_tree_registry(), [str(workdir / "myplugin_fast.py")], entry_points=False).registry
    obj = yaml.safe_load(files()["profile-prefer-gold.yaml"])
    check_buildable(parse_profile_object(obj)[1], registry)
    served = yaml.safe_load((ROOT / "manifests" / "profile-default.yaml").read_text())
    assert obj["spec"]["schedulerName"] == served["spec"]["schedulerName"]


def test_the_benchmarks_copies_are_the_readmes() -> None:
    for name in ("myplugin.py", "myplugin_fast.py"):
        assert (ROOT / "benchmarks" / "plugins" / name).read_text() == files()[name], name


def test_the_in_process_test_runs_as_written(workdir: Path) -> None:
    """The untitled python block of "Test it in-process" runs beside the tutorial's files."""
    section = tutorial().split("## Test it in-process", 1)[1].split("\n## ", 1)[0]
    [code] = [body for lang, name, body in (
        (m.group(1), m.group(2), m.group(3)) for m in FENCE.finditer(section)) if lang == "python" and not name]
    done = subprocess.run([sys.executable, "-c", code], cwd=workdir, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join([str(workdir), *sys.path])})
    assert done.returncode == 0, done.stderr
