"""No import circle: within operator/kubeberth, and within benchmarks/, no module imports itself
through others.

The graph: one node per .py file (a package is its `__init__.py`), one edge per module an import
statement names or executes, wherever the statement is written: at module level, inside a function
or a class, under `if TYPE_CHECKING:` (a circle the type checker alone follows is still a circle a
reader has to untangle), in a try. Relative imports are resolved against the importing module's
package. What one statement in module M counts:

- `import a.b.c` and `from a.b.c import n`: an edge to each of `a`, `a.b`, `a.b.c` that is a module
  of the graph. Importing `a.b.c` runs `a/__init__.py` and `a/b/__init__.py` on the way, so a
  package's `__init__` is imported by every import of a module inside it: from framework/interfaces.py,
  `from .vector.views import X` imports framework/vector/__init__.py as well as views.py.
- Except the packages that contain M itself: they have started before M's first line runs (importing
  M ran them), so the statement runs none of them. `from . import x` and `from .x import y` in
  framework/handle.py import no `framework/__init__.py`.
- `from P import n` also imports `P.n` when that is a module (a submodule taken from its package).
  When P contains M, P's `__init__` counts only if some `n` is not a submodule: the name is read from
  the package's `__init__`, which may not have got that far.

Strongly connected components of that graph (Tarjan's algorithm) of more than one module are the
circles; each is printed as cycle paths that together pass through all of its modules, each edge
with the file and line(s) of its import.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "operator" / "kubeberth"
BENCHMARKS = ROOT / "benchmarks"


@dataclass
class Graph:
    root: Path  # the top package's directory; module names start with its name
    files: dict[str, Path] = field(default_factory=dict)  # module -> file
    packages: set[str] = field(default_factory=set)
    edges: dict[str, dict[str, list[int]]] = field(default_factory=dict)  # module -> module -> lines

    def path(self, module: str) -> str:
        return str(self.files[module].relative_to(self.root.parent))


def module_names(root: Path) -> Iterator[tuple[str, Path, bool]]:
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        yield ".".join(parts), path, is_package


def imports_of(tree: ast.AST, module: str, is_package: bool) -> Iterator[tuple[int, str, list[str], bool]]:
    """(line, target, submodule candidates, whether the target itself is read) of each import."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, [], True
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            yield node.lineno, target, [f"{target}.{a.name}" for a in node.names], False


def build_graph(root: Path) -> Graph:
    g = Graph(root)
    found = list(module_names(root))
    for name, path, is_package in found:
        g.files[name] = path
        if is_package:
            g.packages.add(name)
    for name, path, is_package in found:
        out = g.edges.setdefault(name, {})
        parts = name.split(".")
        # the packages that contain the module (a package contains itself): already running
        containing = {".".join(parts[:i]) for i in range(1, len(parts))} | ({name} if is_package else set())
        for line, target, names, whole in imports_of(ast.parse(path.read_text(), str(path)), name, is_package):
            subs = [s for s in names if s in g.files]
            # `import P` reads P; `from P import n` reads P's __init__ unless every n is a submodule
            reads_target = whole or len(subs) < len(names)
            hit: list[str] = []
            tparts = target.split(".")
            for i in range(1, len(tparts) + 1):
                prefix = ".".join(tparts[:i])
                if prefix not in g.files:
                    continue
                if prefix in containing and not (i == len(tparts) and reads_target):
                    continue
                hit.append(prefix)
            hit += subs
            for target_module in hit:
                if target_module != name:
                    out.setdefault(target_module, []).append(line)
    return g


def strongly_connected(edges: dict[str, dict[str, list[int]]]) -> list[list[str]]:
    """Tarjan's algorithm (iterative); the components of more than one module, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for start in sorted(edges):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = []
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        work.append((start, iter(sorted(edges[start]))))
        while work:
            v, successors = work[-1]
            for w in successors:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[v])
                if low[v] == index[v]:
                    component = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        component.append(w)
                        if w == v:
                            break
                    if len(component) > 1:
                        out.append(sorted(component))
    return sorted(out)


def shortest_cycle(edges: dict[str, dict[str, list[int]]], component: set[str], start: str) -> list[str]:
    """The modules of a shortest cycle through `start` within `component` (start first)."""
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in sorted(edges[v]):
            if w not in component:
                continue
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(previous[path[-1]])
                return path[::-1]
            if w not in previous:
                previous[w] = v
                queue.append(w)
    raise AssertionError(f"{start} is on no cycle")


def describe(g: Graph, component: list[str]) -> str:
    """The circle as cycle paths covering its modules: each edge `file:lines imports module`."""
    members = set(component)
    lines = [f"circle of {len(component)} modules: {', '.join(component)}"]
    left = list(component)
    while left:
        cycle = shortest_cycle(g.edges, members, left[0])
        lines.append("  cycle:")
        for i, v in enumerate(cycle):
            w = cycle[(i + 1) % len(cycle)]
            at = ",".join(str(n) for n in sorted(set(g.edges[v][w])))
            lines.append(f"    {g.path(v)}:{at} imports {w}")
        left = [m for m in left if m not in cycle]
    return "\n".join(lines)


def circles(root: Path) -> tuple[Graph, list[list[str]]]:
    g = build_graph(root)
    return g, strongly_connected(g.edges)


@pytest.mark.parametrize("root", [PACKAGE, BENCHMARKS], ids=["kubeberth", "benchmarks"])
def test_no_import_circle(root: Path) -> None:
    g, found = circles(root)
    bad = [describe(g, c) for c in found]
    assert not bad, "import circles (break each: move the shared part down, or invert the call):\n" + "\n".join(bad)


def write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root / "pkg"


@pytest.mark.parametrize("files, expected", [
    pytest.param({"pkg/__init__.py": "", "pkg/a.py": "from .b import f\n",
                  "pkg/b.py": "def f():\n    from .a import g\n"},
                 [["pkg.a", "pkg.b"]], id="inside-a-function"),
    pytest.param({"pkg/__init__.py": "", "pkg/a.py": "from typing import TYPE_CHECKING\nfrom .b import f\n",
                  "pkg/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.a import A\n"},
                 [["pkg.a", "pkg.b"]], id="type-checking-absolute"),
    # a.py imports sub.y, which runs sub/__init__.py, which imports z.py, which imports a.py
    pytest.param({"pkg/__init__.py": "", "pkg/a.py": "from .sub.y import f\n",
                  "pkg/sub/__init__.py": "from .z import g\n", "pkg/sub/y.py": "",
                  "pkg/sub/z.py": "from ..a import h\n"},
                 [["pkg.a", "pkg.sub", "pkg.sub.z"]], id="through-a-package-init"),
    pytest.param({"pkg/__init__.py": "from .a import f\n", "pkg/a.py": "from . import b\n",
                  "pkg/b.py": "import pkg.c\n", "pkg/c.py": ""},
                 [], id="a-containing-package-is-not-imported"),
    pytest.param({"pkg/__init__.py": "from .a import f\nX = 1\n", "pkg/a.py": "from . import X\n"},
                 [["pkg", "pkg.a"]], id="a-name-read-from-the-containing-package"),
    pytest.param({"pkg/__init__.py": "", "pkg/sub/__init__.py": "from . import m\n",
                  "pkg/sub/m.py": "", "pkg/n.py": "from .sub import m\n"},
                 [], id="a-submodule-from-its-package"),
])
def test_the_graph_counts_every_kind_of_import(tmp_path: Path, files: dict[str, str],
                                               expected: list[list[str]]) -> None:
    g, found = circles(write(tmp_path, files))
    assert found == expected
    for c in found:
        describe(g, c)


def test_a_circle_is_printed_with_files_and_lines(tmp_path: Path) -> None:
    g, found = circles(write(tmp_path, {
        "pkg/__init__.py": "", "pkg/a.py": "import os\nfrom .b import f\n",
        "pkg/b.py": "def f():\n    from .a import g\n"}))
    assert describe(g, found[0]) == ("circle of 2 modules: pkg.a, pkg.b\n  cycle:\n"
                                     "    pkg/a.py:2 imports pkg.b\n    pkg/b.py:2 imports pkg.a")
