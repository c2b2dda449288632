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


# The faces translate a framework's calls into mpicoll's; they reach the layers below
# through public names only, never a private table or setting (an underscore name: a
# key rebuilt by hand goes stale silently when the table changes), and nothing of the
# collectives' private modules. The collectives' argument checks, which the faces
# share, are the one private module of theirs they import.
FACES = ("jax", "torch", "paddle")
SHARED_WITH_FACES = {"mpicoll._collectives._validate"}


def private_reaches(root: Path) -> list[str]:
    """Each underscore name a face imports from, or reads off, a module of mpicoll
    outside the face (modules aside: the layers are modules such as ``_process_group``;
    their private names are what is refused)."""
    known = modules(root)
    found = []
    for face in FACES:
        for path in sorted((root / face).rglob("*.py")):
            name = ".".join(path.relative_to(root.parent).with_suffix("").parts)
            name = name.removesuffix(".__init__")
            own = f"{root.name}.{face}"
            tree = ast.parse(path.read_text())
            aliases: dict[str, str] = {}
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom):
                    base = node.module or ""
                    if node.level:  # (relative: from the face's module's package up)
                        parts = name.split(".")
                        if path.name != "__init__.py":
                            parts = parts[:-1]
                        parts = parts[:len(parts) - node.level + 1]
                        base = ".".join(parts + ([node.module] if node.module else []))
                    if not base.startswith(root.name) or base.startswith(own):
                        continue
                    last = base.split(".")[-1]
                    if base.startswith(f"{root.name}._collectives.") and \
                            last.startswith("_") and base not in SHARED_WITH_FACES:
                        found.append(f"{path.name}:{node.lineno} imports from {base}")
                        continue
                    for a in node.names:
                        full = f"{base}.{a.name}"
                        if full in known:  # (a module)
                            if a.name.startswith("_") and full not in SHARED_WITH_FACES \
                                    and ".".join(full.split(".")[:-1]) != root.name:
                                found.append(f"{path.name}:{node.lineno} imports {full}")
                            aliases[a.asname or a.name] = full
                        elif a.name.startswith("_"):
                            found.append(f"{path.name}:{node.lineno} imports {a.name} "
                                         f"from {base}")
                elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                        and node.value.id in aliases and node.attr.startswith("_") \
                        and not node.attr.startswith("__"):
                    found.append(f"{path.name}:{node.lineno} reads "
                                 f"{aliases[node.value.id]}.{node.attr}")
    return found


def test_faces_reach_only_public_names():
    assert private_reaches(PACKAGE) == []


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


def test_checker_names_a_face_reaching_a_private_table(tmp_path):
    pkg = tmp_path / "mpicoll"
    for d in ("jax", "_collectives"):
        (pkg / d).mkdir(parents=True)
        (pkg / d / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "_env.py").write_text("_settings = None\n")
    (pkg / "_collectives" / "all_gather.py").write_text("_QUICK = {}\n")
    (pkg / "_collectives" / "_reduce.py").write_text("QUICK = {}\n")
    (pkg / "jax" / "_host.py").write_text(
        "from .. import _env\nfrom .._collectives import all_gather, _reduce\n"
        "from .._env import _settings\nT = all_gather._QUICK\nS = _env._settings\n"
        "from .._collectives._reduce import QUICK\n")
    assert private_reaches(pkg) == [
        "_host.py:2 imports mpicoll._collectives._reduce",
        "_host.py:3 imports _settings from mpicoll._env",
        "_host.py:6 imports from mpicoll._collectives._reduce",
        "_host.py:4 reads mpicoll._collectives.all_gather._QUICK",
        "_host.py:5 reads mpicoll._env._settings"]
