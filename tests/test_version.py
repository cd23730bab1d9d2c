"""`kubeberth --version`: kubeberth's version, the plugin API's and the kube-scheduler release it
follows, printed without loading the framework or the Kubernetes client."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import kubeberth
from kubeberth.features import KUBE_SCHEDULER_VERSION
from kubeberth.framework import API_VERSION

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = f"kubeberth {kubeberth.__version__}\nplugin API: {API_VERSION}\nkube-scheduler: Kubernetes v1.37.2\n"

# The console script (entry.main), then what it imported.
CONSOLE_SCRIPT = """
import sys
sys.argv = ["kubeberth", "--version"]
from kubeberth.entry import main
code = main()
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("kubernetes_asyncio", "numpy", "pydantic", "kopf")
               or m.startswith(("kubeberth.framework", "kubeberth.cli", "kubeberth.operator")))
print(heavy, file=sys.stderr)
sys.exit(code)
"""


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(Path(kubeberth.__file__).parents[1])}


def test_the_console_script_prints_the_three_versions_and_loads_nothing_heavy() -> None:
    proc = subprocess.run([sys.executable, "-c", CONSOLE_SCRIPT], capture_output=True, text=True, env=env(),
                          timeout=60)
    assert (proc.returncode, proc.stdout) == (0, EXPECTED)
    assert proc.stderr.strip() == "[]"


def test_the_cli_module_prints_the_same() -> None:
    proc = subprocess.run([sys.executable, "-m", "kubeberth.cli", "--version"], capture_output=True, text=True,
                          env=env(), timeout=60)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, EXPECTED, "")


def test_the_kube_scheduler_release_is_the_one_pinned_and_whose_gates_are_read() -> None:
    pinned = re.search(r"^\s*k8s\.io/kubernetes (v\S+)$", (ROOT / "tools/k8s/go.mod").read_text(), re.M)
    assert pinned is not None and pinned[1] == KUBE_SCHEDULER_VERSION
    gates = json.loads(resources.files("kubeberth").joinpath("features_v1_37.json").read_text())
    assert KUBE_SCHEDULER_VERSION.startswith(f"v{gates['version']}.")
