"""Fixtures for tests that run at any world size, under pytest or mpiexec.

Every rank runs the same tests in the same order. A failure on one rank
aborts the whole MPI job at once, so its peers never wait in a collective.

``rank``, ``size``; ``group``: the test module's own process group (a communicator of
its own, freed at the module's end); ``xp``: each writable framework of the registry in
tests/_frameworks.py (numpy, torch, paddle; cupy with a GPU); ``xin``: each framework
that can supply inputs (those, and JAX).
"""

from __future__ import annotations

import sys

import _frameworks as frameworks
import pytest
from mpi4py import MPI

import mpicoll

WORLD = MPI.COMM_WORLD


def pytest_report_header(config):
    names = [fw.name if fw.writable else f"{fw.name} (inputs only)"
             for fw in frameworks.installed()]
    return (f"MPI: {MPI.Get_library_version().splitlines()[0].strip()}; "
            f"world size {WORLD.Get_size()}; frameworks: {', '.join(names)}")


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


@pytest.fixture(scope="module")
def group(request):
    """This module's own process group: every rank, on a new communicator made from
    mpicoll's WORLD (itself a Dup of COMM_WORLD), freed when the module ends.

    A module's collectives never share a communicator with another module's, and no
    module depends on WORLD surviving the modules before it.
    """
    pg = mpicoll.new_group(list(range(WORLD.Get_size())),
                           group_desc=f"tests:{request.module.__name__}")
    yield pg
    mpicoll.destroy_process_group(pg)


# Modules that still take `xp` as the framework's module (numpy or torch), as before the
# registry: they get exactly that (and only those two) until they move to
# tests/_frameworks.py, so no test of theirs silently runs another framework's path.
_MODULE_XP = {"test_torch_complete"}


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc):
    if "xp" in metafunc.fixturenames and metafunc.module.__name__ in _MODULE_XP:
        modules = [frameworks.get("numpy").module, frameworks.get("torch").module]
        metafunc.definition.add_marker(pytest.mark.parametrize("xp", modules,
                                                               ids=["numpy", "torch"]))


# The frameworks the collective tests run on (tests/_frameworks.py). numpy, torch and
# paddle are installed wherever the suite runs (make venv): their tests always run, and a
# broken install fails them. CuPy joins where it imports and sees a GPU.
@pytest.fixture(params=frameworks.writable(), ids=lambda fw: fw.name)
def xp(request):
    """A framework whose tensors serve as inputs and outputs."""
    return request.param


@pytest.fixture(params=frameworks.installed(), ids=lambda fw: fw.name)
def xin(request):
    """A framework that supplies inputs (JAX included); outputs go to xin.output()."""
    return request.param


@pytest.fixture
def refuse_list_general_path(monkeypatch):
    """A call that, once the list forms are warm, makes their general path raise: what
    runs after it must have taken the quick path."""
    def refuse_now():
        from mpicoll._collectives import _validate, all_gather, reduce_scatter

        def refuse(*args, **kwargs):
            raise AssertionError("the general path was taken")

        monkeypatch.setattr(_validate, "tensor_list", refuse)
        for module in (all_gather, reduce_scatter):
            monkeypatch.setattr(module, "as_buffer", refuse)
    return refuse_now
