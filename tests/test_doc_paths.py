"""Every repository path and mpicoll module that README.md and docs/ name exists: a stale
name (a module renamed, a note outside the repository) fails here, not in a reader's
hands. Paths are read from inline code and from relative links; dotted names from inline
code (``mpicoll._collectives._direct``, ``mpicoll.torch.serve_as_mpi``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_TOP = ("mpicoll/", "tests/", "examples/", "docs/", ".ci/", "shared/")
_MADE = ("docs/_build", "bench-results")  # what a command makes: named before it exists
_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
_DOTTED = re.compile(r"^mpicoll(?:\.\w+)+$")


def _paths(page: Path) -> list[str]:
    text = page.read_text()
    found = []
    for code in _CODE.findall(text):
        for word in code.split():
            word = word.strip("'\",;:()")
            if word.startswith(_TOP) and not word.startswith(_MADE) and \
                    not any(c in word for c in "*<>{}$"):
                found.append(word.split("::")[0].split(":")[0])
    return found


def _links(page: Path) -> list[str]:
    return [link for link in _LINK.findall(page.read_text())
            if "://" not in link and not link.startswith("mailto:")]


def _defines(module: Path, name: str) -> bool:
    text = module.read_text()
    # (a package's lazy names are listed as strings: mpicoll/__init__.py)
    return re.search(rf"^(?:def|class) {name}\b|^{name}\b[^=\n]*=|^    def {name}\b|"
                     rf"import[^\n]*\b{name}\b|\"{name}\"", text, re.M) is not None


# compiled modules, named by setup.py, and the source they are built from
_BUILT = {"_core_mpich": "_core.c", "_core_openmpi": "_core.c", "_jax_ffi": "_jax_ffi.c"}


def _resolves(dotted: str) -> bool:
    """Whether ``mpicoll.a.b`` names a module, or a name a module of mpicoll defines."""
    parts = dotted.split(".")
    if len(parts) == 2 and parts[1] in _BUILT:
        return (ROOT / "mpicoll" / _BUILT[parts[1]]).exists() and \
            parts[1] in (ROOT / "setup.py").read_text().replace("{family}", parts[1][6:])
    here = ROOT / parts[0]
    for i, part in enumerate(parts[1:], 1):
        if (here / part).is_dir() and (here / part / "__init__.py").exists():
            here = here / part
        elif (here / f"{part}.py").exists():
            here = here / f"{part}.py"
            rest = parts[i + 1:]
            return not rest or _defines(here, rest[0])
        else:
            init = here / "__init__.py" if here.is_dir() else here
            return init.exists() and _defines(init, part)
    return True


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_named_paths_exist(page: Path):
    missing = [p for p in _paths(page) if not (ROOT / p.rstrip("/")).exists()
               and not any((ROOT / p.rstrip("/")).parent.glob(Path(p).name + "*"))]
    missing += [link for link in _links(page) if not (page.parent / link).exists()]
    assert missing == [], f"{page.relative_to(ROOT)} names paths that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_named_modules_exist(page: Path):
    names = {w.strip("()'\",") for code in _CODE.findall(page.read_text())
             for w in code.split()}
    missing = sorted(n for n in names if _DOTTED.match(n) and not _resolves(n))
    assert missing == [], f"{page.relative_to(ROOT)} names what mpicoll does not have: {missing}"
