"""The benchmarks' modules import one another without a circle: every import counts (at module
level, inside a function, under TYPE_CHECKING, `from . import x`), so that each module can be
read (and imported) after those below it. The shared records are benchmarks/record.py."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def local_imports(source: str) -> set[str]:
    """The benchmarks modules (by name) a benchmarks module's source imports."""
    names = {p.stem for p in BENCHMARKS.glob("*.py")}
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {a.name.split(".")[1] for a in node.names
                    if a.name.split(".")[0] == "benchmarks" and "." in a.name}
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level == 0 and module.split(".")[0] != "benchmarks":
                continue
            if node.level > 1:
                continue  # above the benchmarks package
            parts = module.split(".")[1:] if node.level == 0 else module.split(".") if module else []
            if parts and parts[0]:
                out.add(parts[0])
            else:  # from . import x (x a module of the package)
                out |= {a.name for a in node.names if a.name in names}
    return out & names


def graph() -> dict[str, set[str]]:
    return {p.stem: local_imports(p.read_text()) - {p.stem} for p in sorted(BENCHMARKS.glob("*.py"))}


def circle(edges: dict[str, set[str]]) -> list[str] | None:
    """One circle of the graph (its modules in order, the first repeated at the end), or None."""
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        path.append(n)
        for m in sorted(edges.get(n, ())):
            if state.get(m) == 1:
                return [*path[path.index(m):], m]
            if m not in state:
                found = visit(m)
                if found:
                    return found
        path.pop()
        state[n] = 2
        return None

    for n in sorted(edges):
        if n not in state:
            found = visit(n)
            if found:
                return found
    return None


@pytest.mark.parametrize("source, expected", [
    ("from .run import describe\n", {"run"}),
    ("def f():\n    from . import peer, workloads as wl\n", {"peer", "workloads"}),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from benchmarks.e2e import x\n", {"e2e"}),
    ("import benchmarks.dra\nfrom tests.cluster.kube import Kube\n", {"dra"}),
])
def test_every_import_counts(source: str, expected: set[str]) -> None:
    assert local_imports(source) == expected


def test_circle_finds_one() -> None:
    assert circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert circle({"a": {"b"}, "b": set()}) is None


def test_the_benchmarks_have_no_import_circle() -> None:
    edges = graph()
    assert {"run", "e2e", "peer", "peer_cases", "dra", "record"} <= set(edges)
    assert circle(edges) is None
    assert edges["record"] <= {"workloads", "templates"}, "record.py is the bottom: it imports no benchmark"
