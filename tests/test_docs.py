"""The documentation: its runnable examples run under mpiexec, and the site builds.

A fenced ``python`` block in ``docs/**/*.md`` is runnable when the line just
before it is an HTML comment (invisible on the site) naming the launch::

    <!-- run: mpiexec -n 2 -->
    <!-- run: mpiexec -n 3 MPICOLL_CHECK=1 -->         environment for the job
    <!-- run: mpiexec -n 2 requires=cupy -->           skipped (visibly) without it
    <!-- run: mpiexec -n 2 mpi=mpich -->               on that MPI family only (visibly)

Each runnable block is written to a file and run as ``mpiexec -n N python file``
under a timeout (and with ``MPICOLL_TIMEOUT`` set, so a stuck collective reports
itself instead of hanging); it must exit 0. A block whose top-level imports (or
``requires=``) are not installed is skipped, visibly, unless the suite's own venv
installs them (numpy, torch, paddle, jax: then it fails); ``cupy`` also needs a CUDA
device. Comments of the form ``# prints on rank R: TEXT`` or
``# prints on every rank: TEXT`` state output: rank R's stdout must contain a line
equal to TEXT.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from _launch import ROOT, clean_env, run_per_rank

pytestmark = pytest.mark.spawn

DOCS = ROOT / "docs"
_FENCE = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)
_RUN = re.compile(r"<!--\s*run:\s*mpiexec\s+-n\s+(\d+)([^>]*?)\s*-->\s*$")
_PRINTS = re.compile(r"#\s*prints on (rank (\d+)|every rank):[ ]?(.*)$")

# Pages whose main example must be runnable (and so is checked here).
MUST_RUN = ["index.md", "guides/numpy.md", "guides/torch.md", "guides/paddle.md",
            "guides/cupy.md", "guides/jax.md", "guides/functional.md",
            "guides/torch-backend.md", "guides/migration.md"]


class Block:
    """One fenced python block of a docs page."""

    def __init__(self, page: str, line: int, code: str, run: str | None) -> None:
        self.page, self.line, self.code = page, line, code
        self.ranks = 0
        self.env: dict[str, str] = {}
        self.requires: list[str] = []
        self.mpi = ""  # (the MPI family it shows, where its output is that family's)
        if run is not None:
            m = _RUN.match(run)
            assert m, f"{page}:{line}: malformed run marker {run!r}"
            self.ranks = int(m.group(1))
            for word in m.group(2).split():
                key, sep, value = word.partition("=")
                assert sep, f"{page}:{line}: expected KEY=VALUE in run marker, got {word!r}"
                if key == "requires":
                    self.requires = value.split(",")
                elif key == "mpi":
                    self.mpi = value
                else:
                    self.env[key] = value

    @property
    def runnable(self) -> bool:
        return self.ranks > 0

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"

    def expected(self) -> dict[int | None, list[str]]:
        """Stated output: rank (None for every rank) -> lines."""
        out: dict[int | None, list[str]] = {}
        for line in self.code.splitlines():
            m = _PRINTS.search(line)
            if m:
                rank = None if m.group(2) is None else int(m.group(2))
                out.setdefault(rank, []).append(m.group(3).strip())
        return out


def _blocks() -> list[Block]:
    found = []
    for path in sorted(DOCS.rglob("*.md")):
        if "_build" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        page = path.relative_to(DOCS).as_posix()
        for m in _FENCE.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1].strip()
            found.append(Block(page, line, m.group(1),
                               before if before.startswith("<!-- run:") else None))
    return found


BLOCKS = _blocks()
RUNNABLE = [b for b in BLOCKS if b.runnable]


# What `make venv` installs (EXTRAS): a block that needs one of these always runs, so a
# missing install fails the block instead of skipping it. Only cupy (a CUDA machine's
# extra) may be absent.
INSTALLED_WITH_THE_SUITE = {"mpicoll", "mpi4py", "numpy", "torch", "paddle", "jax"}


def _family() -> str:
    """The MPI family of the jobs this suite runs: mpich or openmpi."""
    from mpi4py import MPI  # (the lane's MPI)

    return "openmpi" if MPI.Get_library_version().startswith("Open MPI") else "mpich"


def _missing(module: str) -> str | None:
    """Why a required module cannot serve the block here, or None."""
    if module in INSTALLED_WITH_THE_SUITE:
        return None
    if importlib.util.find_spec(module) is None:
        return f"{module} is not installed"
    if module == "cupy":
        probe = subprocess.run(
            [sys.executable, "-c", "import cupy; print(cupy.cuda.runtime.getDeviceCount())"],
            capture_output=True, text=True, timeout=120, check=False)
        if probe.returncode != 0 or probe.stdout.strip() in ("", "0"):
            return "no CUDA device for cupy"
    return None


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_runnable_block(block: Block, tmp_path: Path) -> None:
    # the modules it imports at top level (imports inside try/except are fallbacks)
    imported = re.findall(r"^(?:import|from)\s+([A-Za-z_]\w*)", block.code, re.M)
    for module in dict.fromkeys([*block.requires, *imported]):
        why = _missing(module)
        if why:
            pytest.skip(f"{block.id}: {why}")
    if block.mpi and block.mpi != _family():
        pytest.skip(f"{block.id}: shows what the {block.mpi} family does (this is {_family()})")
    script = tmp_path / "block.py"
    script.write_text(block.code, encoding="utf-8")
    env = {"MPICOLL_TIMEOUT": "60", **block.env}
    p, out = run_per_rank(block.ranks, [str(script)], timeout=240, **env)
    assert p.returncode == 0, f"{block.id} failed (exit {p.returncode}):\n{p.stderr[-6000:]}"
    for rank, lines in block.expected().items():
        ranks = range(block.ranks) if rank is None else [rank]
        for r in ranks:
            got = [ln.strip() for ln in out.get(r, "").splitlines()]
            for want in lines:
                assert want in got, (f"{block.id}: rank {r} should print {want!r}; it printed:\n"
                                     + "\n".join(got))


def test_main_pages_have_runnable_examples() -> None:
    pages = {b.page for b in RUNNABLE}
    missing = [p for p in MUST_RUN if p not in pages]
    assert not missing, f"pages without a runnable example: {missing}"


def test_every_run_marker_precedes_a_block() -> None:
    markers = sum(len(re.findall(r"<!--\s*run\b", path.read_text(encoding="utf-8")))
                  for path in DOCS.rglob("*.md") if "_build" not in path.parts)
    assert markers == len(RUNNABLE), "a <!-- run: ... --> marker is not right above a python block"


def test_stated_output_is_always_checked() -> None:
    # a "# prints on" comment in a block nobody runs would be an unchecked claim
    unchecked = [b.id for b in BLOCKS if not b.runnable and b.expected()]
    assert not unchecked, f"blocks that state output but are not runnable: {unchecked}"


@pytest.mark.parametrize("script", ["slurm_job.sh", "pbs_job.sh"])
def test_batch_job_scripts_parse(script: str) -> None:
    # they run on clusters only; here: they exist and are valid bash
    path = DOCS / "examples" / script
    p = subprocess.run(["bash", "-n", str(path)], capture_output=True, text=True, timeout=30,
                       check=False)
    assert p.returncode == 0, p.stderr


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    pytest.importorskip("mkdocstrings_handlers.python")
    site = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                        str(site)], cwd=ROOT, env=clean_env(), capture_output=True, text=True,
                       timeout=300, check=False)
    assert p.returncode == 0, p.stdout + p.stderr
    api = (site / "api" / "mpicoll" / "index.html").read_text(encoding="utf-8")
    assert "all_to_all_single" in api and "output_split_sizes" in api
