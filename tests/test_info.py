"""``python -m mpicoll info`` reports versions, MPI facts and frameworks."""

from __future__ import annotations

import subprocess
import sys

import pytest
from _launch import ROOT, clean_env
from mpi4py import MPI

pytestmark = pytest.mark.spawn


def test_info():
    p = subprocess.run([sys.executable, "-m", "mpicoll", "info"], cwd=ROOT, env=clean_env(),
                       capture_output=True, text=True, timeout=120, check=True)
    rows = dict(line.split(None, 1) if "  " not in line else
                [part.strip() for part in line.split("  ", 1)]
                for line in p.stdout.splitlines() if line.strip())
    import mpi4py

    assert rows["mpicoll"] == "0.1.0"
    assert rows["mpi4py"] == mpi4py.__version__
    assert rows["MPI standard"] == "{}.{}".format(*MPI.Get_version())
    assert rows["thread level"].startswith("MPI_THREAD_")
    assert rows["GPU-aware MPI"].startswith(("yes (", "no ("))
    assert rows["numpy"][0].isdigit()
    p2 = subprocess.run([sys.executable, "-m", "mpicoll", "info"], cwd=ROOT,
                        env=clean_env(MPICOLL_GPU_AWARE="1"), capture_output=True, text=True,
                        timeout=120, check=True)
    assert "GPU-aware MPI  yes (forced by MPICOLL_GPU_AWARE=1)" in p2.stdout
