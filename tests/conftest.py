"""Fixtures for tests that run at any world size, under pytest or mpiexec.

Every rank runs the same tests in the same order. A failure on one rank
aborts the whole MPI job at once, so its peers never wait in a collective.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest
from mpi4py import MPI

import mpicoll

WORLD = MPI.COMM_WORLD


def pytest_report_header(config):
    return (f"MPI: {MPI.Get_library_version().splitlines()[0].strip()}; "
            f"world size {WORLD.Get_size()}")


def pytest_collection_modifyitems(config, items):
    if WORLD.Get_size() > 1:
        skip = pytest.mark.skip(reason="spawns its own mpiexec: runs in the 1-rank session")
        for item in items:
            if "spawn" in item.keywords:
                item.add_marker(skip)


_config = None


def pytest_configure(config):
    global _config
    _config = config


@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if report.failed and WORLD.Get_size() > 1:
        capman = _config.pluginmanager.getplugin("capturemanager") if _config else None
        if capman is not None:
            capman.suspend_global_capture(in_=False)
        sys.stderr.write(f"\n[rank {WORLD.Get_rank()}] FAILED {report.nodeid}\n"
                         f"{report.longreprtext}\n")
        sys.stderr.flush()
        WORLD.Abort(1)


@pytest.fixture(scope="session")
def rank():
    return mpicoll.get_rank()


@pytest.fixture(scope="session")
def size():
    return mpicoll.get_world_size()


@pytest.fixture(params=["numpy", "torch"])
def xp(request):
    if request.param == "torch":
        import torch  # installed wherever the suite runs (make venv): a failure, never a skip

        return torch
    return np
