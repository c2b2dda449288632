"""Start an mpiexec job from the single-process test session, always under a timeout."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def mpiexec() -> list[str]:
    """The launcher: $MPIEXEC (with its flags) or the one beside this Python."""
    env = os.environ.get("MPIEXEC")
    if env:
        return shlex.split(env)
    beside = Path(sys.executable).parent / "mpiexec"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("mpiexec")
    if not found:
        raise RuntimeError("no mpiexec found: install the mpich wheel (pip install mpich)")
    return [found]


def clean_env(**extra: str) -> dict[str, str]:
    """This environment minus the MPI runtime's own variables (a fresh job starts clean)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PMI_", "PMIX_", "OMPI_COMM", "OMPI_MCA_orte", "HYDRA_",
                                "MPI_LOCALNRANKS", "MPI_LOCALRANKID"))
           # torch rendezvous variables this session may have set (mpicoll.torch does)
           and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE",
                         "MASTER_ADDR", "MASTER_PORT")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def run(n: int, args: list[str], timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    """Run ``mpiexec -n n python args...``; a job past ``timeout`` is killed and fails."""
    cmd = [*mpiexec(), "-n", str(n), sys.executable, *args]
    return subprocess.run(cmd, cwd=ROOT, env=clean_env(**env), capture_output=True,
                          text=True, timeout=timeout, check=False)


def run_per_rank(n: int, args: list[str], timeout: float = 120,
                 **env: str) -> tuple[subprocess.CompletedProcess, dict[int, str]]:
    """Like :func:`run`, plus each rank's own stdout, uninterleaved (one file per rank)."""
    with tempfile.TemporaryDirectory() as tmp:
        wrapper = str(ROOT / "tests" / "scripts" / "per_rank_output.py")
        cmd = [*mpiexec(), "-n", str(n), sys.executable, wrapper, tmp, *args]
        try:
            p = subprocess.run(cmd, cwd=ROOT, env=clean_env(**env), capture_output=True,
                               text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired as e:
            logs = "\n".join(f"--- {path.name} ---\n{path.read_text()[-4000:]}"
                             for path in sorted(Path(tmp).rglob("*")) if path.is_file())
            raise AssertionError(f"{' '.join(cmd)} timed out after {timeout} s\n{logs}") from e
        out, err = {}, []
        for path in sorted(Path(tmp).rglob("*")):
            m = re.search(r"out\.(\d+)$", path.name)
            if m:
                out[int(m.group(1))] = path.read_text()
            m = re.search(r"err\.(\d+)$", path.name)
            if m:
                err.append(f"--- rank {m.group(1)} stderr ---\n{path.read_text()}")
        p.stderr = "\n".join([p.stderr, *err])  # every rank's stderr, for failure messages
    return p, out
