"""No module of operator/kubeberth over MAX_LINES lines: a module a newcomer can read through. A
module that grows past it is split along a seam upstream names (the queue's unschedulable pods,
nominator and backoff; DynamicResources' extension points; preemption's evaluator and its
candidates), not cut in the middle."""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "operator" / "kubeberth"
MAX_LINES = 480

def test_no_module_is_over_the_limit() -> None:
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in sorted(PACKAGE.rglob("*.py"))}
    over = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines (split each along a seam): {over}"

