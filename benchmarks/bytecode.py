"""kubeberth's bytecode, compiled before a benchmark starts it as a process.

The image compiles every module (Dockerfile: `compileall`), so a deployed kubeberth starts from
bytecode. An editable install run with PYTHONDONTWRITEBYTECODE=1 (as on the machine of these
benchmarks) would compile its ~190 modules from source at every start instead: a third of a second
that no deployment pays. Compiled here once (up-to-date files are skipped), start-up is measured
as deployed.
"""

from __future__ import annotations

import compileall
from pathlib import Path

from tests.cluster.control_plane import ROOT


def compile_sources(root: Path = ROOT) -> None:
    """The bytecode of the checkout at `root` (this one by default)."""
    compileall.compile_dir(str(root / "operator" / "kubeberth"), quiet=1)
