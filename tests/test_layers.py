"""The package's import graph, built from the source: no cycle, layers that import downwards.

Every ``import`` of an mpicoll module counts, those inside functions too; only those
under ``if TYPE_CHECKING:`` do not (they never run). See docs/architecture.md.
"""

from __future__ import annotations

import ast
import io
import tokenize
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "mpicoll"

# The runtime, bottom up. A module of a layer imports only modules of its own layer or of
# the layers below it, and nothing of mpicoll outside the runtime: an upward need is met
# by registration (the monitor's sources, ``_start.on_start``, ``_process_group.at_birth``,
# ``_ordering.host_view``), never by an import.
LAYERS = [
    ("foundation", {"errors", "_env", "_mpi", "_start", "_tags", "_process", "_describe"}),
    ("process groups", {"_process_group"}),
    ("requests and waiting", {"_pending", "_progress", "_watched", "_polling", "_wait",
                              "_ordering", "_work", "_abandoned", "_departed", "_recorder",
                              "_record_dump", "_core_loader"}),
    ("monitor", {"_monitor", "_departures", "_signals"}),
    ("lifecycle", {"_excepthook", "_lifecycle"}),
]


class Import:
    """One import of an mpicoll module, as written in the source."""

    def __init__(self, target: str, line: int, deferred: bool) -> None:
        self.target, self.line, self.deferred = target, line, deferred


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every module of the package at ``root``."""
    found = {}
    for path in root.rglob("*.py"):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _targets(name: str, is_package: bool, node: ast.AST, known: dict[str, Path]) -> list[str]:
    top = name.split(".")[0]
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.split(".")[0] == top]
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = name.split(".") if is_package else name.split(".")[:-1]
        base = base[:len(base) - node.level + 1]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
        if module.split(".")[0] != top:
            return []
    # ``from . import x`` imports the module x where there is one
    return [f"{module}.{a.name}" if f"{module}.{a.name}" in known else module
            for a in node.names]


def imports(known: dict[str, Path]) -> dict[str, list[Import]]:
    """Module -> the imports of the package's own modules it makes (TYPE_CHECKING aside)."""
    graph: dict[str, list[Import]] = {}
    for name, path in known.items():
        is_package = path.name == "__init__.py"
        found: list[Import] = []

        def visit(node: ast.AST, deferred: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                    for other in child.orelse:
                        visit(other, deferred)
                    continue
                inner = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                       ast.Lambda))
                if isinstance(child, (ast.Import, ast.ImportFrom)):
                    for target in _targets(name, is_package, child, known):
                        while target not in known and "." in target:
                            target = target.rsplit(".", 1)[0]
                        if target in known and target != name:
                            found.append(Import(target, child.lineno, inner))
                visit(child, inner)

        visit(ast.parse(path.read_text()), False)
        graph[name] = found
    return graph


def cycles(graph: dict[str, list[Import]]) -> list[tuple[list[str], list[str]]]:
    """The strongly connected components of more than one module (Tarjan), each as
    (a path that closes on itself, the component's other modules)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[list[str], list[str]]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for imp in graph.get(v, []):
            w = imp.target
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                path = _closed_path(graph, set(component))
                found.append((path, sorted(set(component) - set(path))))

    for v in sorted(graph):
        if v not in index:
            strong(v)
    return found


def _closed_path(graph: dict[str, list[Import]], component: set[str]) -> list[str]:
    """One cycle through the component's first module, for the message."""
    start = min(component)
    path, seen = [start], {start}
    while True:
        nxt = sorted(i.target for i in graph[path[-1]] if i.target in component)
        back = [t for t in nxt if t == start]
        if back:
            return [*path, start]
        step = next((t for t in nxt if t not in seen), nxt[0])
        if step in seen:
            return [*path[path.index(step):], step]
        path.append(step)
        seen.add(step)


def _comments(path: Path) -> dict[int, str]:
    out: dict[int, str] = {}
    with io.open(path, encoding="utf-8") as f:
        for tok in tokenize.generate_tokens(f.readline):
            if tok.type == tokenize.COMMENT:
                out[tok.start[0]] = tok.string
    return out


def unexplained_deferred(known: dict[str, Path], graph: dict[str, list[Import]]) -> list[str]:
    """Deferred imports without a ``# lazy: <why>`` comment on their line, or above the
    block of imports they open."""
    bad = []
    for name, found in graph.items():
        deferred = [i for i in found if i.deferred]
        if not deferred:
            continue
        lines = known[name].read_text().splitlines()
        comments = _comments(known[name])
        for imp in deferred:
            n = imp.line
            while n > 1 and lines[n - 2].strip().startswith(("from ", "import ")):
                n -= 1  # up to the first import of the block
            said = [comments.get(k, "") for k in (imp.line, n - 1)]
            if not any(c.startswith("# lazy:") and len(c) > len("# lazy: ") for c in said):
                bad.append(f"{name}:{imp.line} imports {imp.target} inside a function")
    return bad


def layer_violations(graph: dict[str, list[Import]]) -> list[str]:
    floor = {f"mpicoll.{m}": k for k, (_, names) in enumerate(LAYERS) for m in names}
    bad = []
    for name, k in floor.items():
        for imp in graph.get(name, []):
            up = floor.get(imp.target)
            if up is None:
                bad.append(f"{name} ({LAYERS[k][0]}) imports {imp.target}, outside the runtime")
            elif up > k:
                bad.append(f"{name} ({LAYERS[k][0]}) imports {imp.target} ({LAYERS[up][0]})")
    return bad


KNOWN = modules(PACKAGE)
GRAPH = imports(KNOWN)


def test_no_import_cycle():
    found = cycles(GRAPH)
    assert not found, "import cycles: " + "; ".join(
        " -> ".join(path) + (f" (with {', '.join(others)} in the same knot)" if others else "")
        for path, others in found)


def test_runtime_layers_import_downwards():
    missing = {f"mpicoll.{m}" for _, names in LAYERS for m in names} - set(KNOWN)
    assert not missing, f"layers name modules that do not exist: {sorted(missing)}"
    assert layer_violations(GRAPH) == []


def test_deferred_imports_say_why():
    assert unexplained_deferred(KNOWN, GRAPH) == []


# -- the checks themselves, on a package made for them


@pytest.fixture
def tiny(tmp_path):
    pkg = tmp_path / "mpicoll"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "a.py": "from . import b\n",
        "b.py": "def f():\n    from .sub import c\n",
        "sub/__init__.py": "",
        "sub/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                    "    from ..d import X\nfrom .. import a\n",
        "d.py": "def g():\n    # lazy: a framework on first use\n    from . import a\n",
    }
    for rel, text in files.items():
        (pkg / rel).write_text(text)
    return pkg


def test_checker_names_a_cycle_through_a_deferred_import(tiny):
    known = modules(tiny)
    graph = imports(known)
    assert cycles(graph) == [(["mpicoll.a", "mpicoll.b", "mpicoll.sub.c", "mpicoll.a"], [])]
    # the TYPE_CHECKING import is no edge; the commented deferred import is explained
    assert [i.target for i in graph["mpicoll.sub.c"]] == ["mpicoll.a"]
    assert unexplained_deferred(known, graph) == ["mpicoll.b:2 imports mpicoll.sub.c inside "
                                                  "a function"]
