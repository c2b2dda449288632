"""``python -m mpicoll info`` reports versions, MPI facts and frameworks."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from _launch import ROOT, clean_env
from mpi4py import MPI

pytestmark = pytest.mark.spawn


def _rows(*args: str, **env: str) -> dict[str, str]:
    p = subprocess.run([sys.executable, "-m", "mpicoll", "info", *args], cwd=ROOT,
                       env=clean_env(**env), capture_output=True, text=True, timeout=120,
                       check=True)
    assert p.stderr == "", p.stderr  # nothing of a framework's own (Paddle warns at import)
    return dict(line.split(None, 1) if "  " not in line else
                [part.strip() for part in line.split("  ", 1)]
                for line in p.stdout.splitlines() if line.strip())


def test_info():
    import importlib.metadata as md

    import mpi4py

    from mpicoll._adapter.device import gpu_aware

    rows = _rows(MPICOLL_CHECK="", MPICOLL_DIRECT="", MPICOLL_TIMEOUT="", MPICOLL_NOTICE="")
    assert rows["mpicoll"] == "0.1.0"
    assert rows["mpi4py"] == mpi4py.__version__
    # mpi4py asks for MPI_THREAD_MULTIPLE, which both pip MPIs give (the progress thread
    # relies on it)
    library = MPI.Get_library_version().splitlines()[0]
    name = "MPICH " if library.startswith("MPICH") else "Open MPI v"
    assert rows["MPI"].startswith(name), rows["MPI"]
    assert rows["MPI"].endswith(", MPI {}.{}, thread level multiple".format(*MPI.Get_version()))
    assert rows["world size"] == "1"
    from mpicoll import _core_loader

    assert rows["jax handler"] == _core_loader.jax_handler()[1]
    assert rows["flight record"] == ("the last 2000 operations per rank; not written (set "
                                     "MPICOLL_TRACE_DIR=<dir>)")
    aware, why = gpu_aware()  # this process decides from the same environment
    assert rows["GPU-aware MPI"] == f"{'yes' if aware else 'no'} ({why})"
    # the frameworks the suite installs, by their versions (none imported: info is quick)
    for module, dist in (("numpy", "numpy"), ("torch", "torch"), ("paddle", "paddlepaddle"),
                         ("jax", "jax")):
        assert rows[module] == md.version(dist), (module, rows[module])
    # which checks are on, and the watchdog's times, as the settings make them
    assert rows["checks"] == (
        "a mismatch raises on every rank where the call carries what to compare: the counts, "
        "the signature (collective, dtype, op) and the call's number (modulo 16: a message "
        "left from an earlier call is refused) in the messages' tags on groups of 2 to 8 "
        "ranks (a broadcast's and a scatter's root in their acknowledgements); the counts "
        "and the signature "
        "beside MPI's collectives that send counts; the signature and root beside "
        "all_reduce, broadcast and reduce from 2**20 elements; a persistent collective's "
        "set-up (collective, dtype, op, root, size; all_to_all_single's split sizes "
        "paired), once. Not compared: those three "
        "below 2**20 elements where MPI's own collective makes them (above 512 elements, or "
        "on more than 8 ranks); the roots of reduce and gather on "
        "groups that send messages. MPICOLL_CHECK=1 compares every call")
    assert rows["watchdog"] == (
        "a collective that waits 30 min ends the job on every rank (MPICOLL_TIMEOUT) (a group "
        "made with its own timeout= keeps it); 'still waiting' after 1 min, then every 4 "
        "times as long (MPICOLL_NOTICE)")
    other = _rows(MPICOLL_CHECK="1", MPICOLL_TIMEOUT="90", MPICOLL_NOTICE="0")
    assert other["checks"].startswith("checked mode (MPICOLL_CHECK=1): every call's signature")
    assert other["watchdog"] == ("a collective that waits 90 s ends the job on every rank "
                                 "(MPICOLL_TIMEOUT) (a group made with its own timeout= "
                                 "keeps it); no 'still waiting' notices (MPICOLL_NOTICE=0)")
    other = _rows(MPICOLL_CHECK="0", MPICOLL_DIRECT="0", MPICOLL_TIMEOUT="0")
    assert other["checks"].startswith("off (MPICOLL_CHECK=0): ")
    assert other["watchdog"].startswith("no timeout (MPICOLL_TIMEOUT=0)")
    assert _rows(MPICOLL_DIRECT="0")["checks"].endswith(
        "makes them (every group, with MPICOLL_DIRECT=0). "
        "MPICOLL_CHECK=1 compares every call")
    assert "call choices" not in rows  # internals: --verbose
    assert _rows(MPICOLL_GPU_AWARE="1")["GPU-aware MPI"] == "yes (forced by MPICOLL_GPU_AWARE=1)"


def test_info_says_what_a_thread_level_below_multiple_changes():
    # the user's own level (mpi4py's variable) is kept, and info says what it costs
    rows = _rows(MPI4PY_RC_THREAD_LEVEL="serialized")
    assert rows["MPI"].endswith(
        "thread level serialized (below multiple: no departure notices, a peer that left "
        "ends at the timeout; the torch backend's futures complete when made)"), rows["MPI"]


def test_info_verbose():
    import importlib.metadata as md

    rows = _rows("--verbose")
    # the calls chosen over their slower equivalents: MPICH's Ireduce_scatter_block
    mpich = MPI.Get_library_version().startswith("MPICH")
    assert ("reduce_scatter with equal counts from 256 KiB to 3 MiB as Ireduce_scatter," in
            rows["call choices"]) == mpich, rows["call choices"]
    # and all_gather as Ialltoallv, from a block size that depends on the library
    least = "64 KiB" if mpich else "4 KiB" if MPI.Get_library_version().startswith(
        "Open MPI") else None
    assert (f"all_gather of {least} or more a rank, up to 8 ranks: Ialltoallv" in
            rows["call choices"]) if least else "all_gather" not in rows["call choices"]
    # the counts beside the v-collectives' data: persistent requests on an MPI-4 library
    from mpicoll._collectives._persistent_choice import choose
    from mpicoll._env import Settings

    assert rows["sizes check"] == ("counts beside each v-collective's data: " + (
        "a persistent collective per group and form, restarted each call (MPI_*_init)"
        if choose()[0] else "a nonblocking collective per call") if Settings().sizes else
        "off (MPICOLL_CHECK=0): sizes that disagree across ranks are not caught"
    ), rows["sizes check"]
    # direct messages on few ranks (MPICOLL_DIRECT: the largest such group)
    most = int(os.environ.get("MPICOLL_DIRECT") or 8)
    assert rows["exchanges"] == (
        "all_to_all, all_gather, reduce_scatter, gather and scatter (and all_reduce, "
        "broadcast and reduce of small tensors; barrier too, on the MPICH family) on "
        "groups of 2 to "
        f"{most} ranks: point-to-point "
        "messages, each with "
        "its count and the call's signature in its tag, and the call's number; a repeated "
        "blocking call's kept by the compiled core and posted afresh (up to 16 per group; "
        "posted with no core, or where a group's calls mostly find none)" if most > 1 else
        f"never (MPICOLL_DIRECT={most}): MPI collectives, their counts beside them"), rows["exchanges"]
    # each framework imported: its version, and no "(import failed: ...)"
    for module, dist in (("numpy", "numpy"), ("torch", "torch"), ("paddle", "paddlepaddle"),
                         ("jax", "jax")):
        assert rows[module] == md.version(dist), (module, rows[module])


def test_info_under_mpiexec_prints_one_table():
    """Rank 0 prints; a rank whose value differs is listed under the row (here rank 1's
    GPU-awareness, forced by its own environment)."""
    from _launch import mpiexec

    env_flag = ["-x", "MPICOLL_GPU_AWARE=1"] if "Open MPI" in MPI.Get_library_version() \
        else ["-env", "MPICOLL_GPU_AWARE", "1"]
    cmd = [*mpiexec(), "-n", "1", sys.executable, "-m", "mpicoll", "info", ":", "-n", "1",
           *env_flag, sys.executable, "-m", "mpicoll", "info"]
    p = subprocess.run(cmd, cwd=ROOT, env=clean_env(), capture_output=True, text=True,
                       timeout=120, check=True)
    lines = p.stdout.splitlines()
    assert sum(line.startswith("mpicoll ") for line in lines) == 1, p.stdout
    assert "world size      2" in lines, p.stdout
    from mpicoll._adapter.device import gpu_aware

    aware, why = gpu_aware()  # rank 0's environment is this one's
    at = next(i for i, line in enumerate(lines) if line.startswith("GPU-aware MPI"))
    assert lines[at].split(None, 2)[2] == f"{'yes' if aware else 'no'} ({why})", lines[at]
    assert lines[at + 1].split() == ["rank", "1:", "yes", "(forced", "by",
                                     "MPICOLL_GPU_AWARE=1)"], lines[at:at + 2]


_VARS = ("OMPI_MCA_coll_libnbc_ireduce_algorithm", "OMPI_MCA_coll_libnbc_iallreduce_algorithm")


def _info(**env: str) -> tuple[str, list[str]]:
    """(call choices, the libnbc algorithms the started MPI saw) of a fresh process."""
    base = clean_env(**env)
    for var in _VARS:  # (this session's, set by mpicoll here, unless the test sets it)
        if var not in env:
            base.pop(var, None)
    code = ("import os, mpicoll; mpicoll.get_rank(); "
            "from mpicoll._collectives import _choices; print('; '.join(_choices.describe()));"
            f"print(*[os.environ[v] for v in {_VARS!r}])")
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=base, capture_output=True,
                       text=True, timeout=120, check=True)
    choices, algorithms = p.stdout.splitlines()[-2:]
    return choices, algorithms.split()


def test_open_mpi_libnbc_algorithms_are_chosen_unless_the_user_did():
    """libnbc's binomial Ireduce and Rabenseifner Iallreduce where the user has not chosen
    (Open MPI settings the other MPIs ignore); a user's choice is kept; info says which on
    Open MPI."""
    choices, algorithms = _info()
    assert algorithms == ["binomial", "rabenseifner"]
    open_mpi = MPI.Get_library_version().startswith("Open MPI")
    for chosen in ("Ireduce algorithm (coll_libnbc_ireduce_algorithm) binomial, chosen by "
                   "mpicoll", "Iallreduce algorithm (coll_libnbc_iallreduce_algorithm) "
                   "rabenseifner, chosen by mpicoll"):
        assert (chosen in choices) == open_mpi, choices
    choices, algorithms = _info(OMPI_MCA_coll_libnbc_ireduce_algorithm="chain")
    assert algorithms == ["chain", "rabenseifner"]
    assert ("(coll_libnbc_ireduce_algorithm) set by the user: chain" in choices) == open_mpi, \
        choices
