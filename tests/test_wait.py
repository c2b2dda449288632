"""How a blocking call waits: a few Tests, then the monitored wait.

A blocking collective polls its request ``MPICOLL_POLLS`` times (200 by default,
0 when a node's ranks outnumber their cores) before it registers with the monitor
and blocks in MPI's Wait. A KeyboardInterrupt raised in between leaves the request
with MPI: the call's buffers stay alive in a pending Work, which completes later.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time

import numpy as np
import pytest
from _launch import ROOT, clean_env, mpiexec

import mpicoll as dist
from mpicoll import _pending
from mpicoll._collectives import _messages
from mpicoll._process_group import resolve


def _interrupt_in(function: str):
    """A trace function that raises KeyboardInterrupt at ``function``'s first line,
    where a SIGINT's Python handler would raise it between two of its bytecodes."""
    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_name == function:
            def local(frame, event, arg):
                sys.settrace(None)
                raise KeyboardInterrupt
            return local
        return None
    return tracer


@pytest.fixture
def python_path(monkeypatch):
    """The Python path, whose tests and waits run Python bytecode, where a
    KeyboardInterrupt can land; the compiled core's run none (a signal there is the
    monitor's, as in MPI's Wait: test_never_hangs)."""
    from mpicoll import _core_loader

    _core_loader.load()  # (decided: not loaded again by a first call)
    monkeypatch.setattr(_core_loader, "module", None)


def _interrupted_then_completed(op, call, pg):
    """``call()`` interrupted in its wait raises KeyboardInterrupt and leaves one pending
    Work of ``op`` on ``pg``, which completes when the group's pending Works are waited."""
    before = set(_pending.pending)
    sys.settrace(_interrupt_in("wait_requests"))
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
    finally:
        sys.settrace(None)
    new = [w for k, w in _pending.pending.items() if k not in before]
    assert [(w.op, w.group is pg) for w in new] == [(op, True)]
    _pending.wait_pending(pg)
    assert not set(_pending.pending) - before


@pytest.mark.parametrize("blocking", ["quick", "general"])
def test_interrupted_wait_keeps_the_request(rank, size, blocking, python_path):
    if size == 1:
        pytest.skip("needs a peer that is late, so that the call waits")
    # the general path: a first call of this dtype and shape; the quick path: a repeat
    x = np.full(5 if blocking == "quick" else 7, rank + 1.0)
    if blocking == "quick":
        dist.all_reduce(x)
        x[:] = rank + 1.0
    want = np.full(x.shape, sum(range(1, size + 1)), np.float64)
    pg = resolve(None, "test")
    if rank == 0:
        # the request is MPI's still: one pending Work holds it and its buffer
        _interrupted_then_completed("all_reduce", lambda: dist.all_reduce(x), pg)
    else:
        time.sleep(0.3)  # rank 0 is waiting by now
        dist.all_reduce(x)
    np.testing.assert_array_equal(x, want)


def _polling(n: int, **env: str) -> list[str]:
    """Rank 0's "blocking wait" row of ``info --verbose``, then any other rank's that
    differs (listed under it)."""
    p = subprocess.run([*mpiexec(), "-n", str(n), sys.executable, "-m", "mpicoll", "info",
                        "--verbose"], cwd=ROOT, env=clean_env(**env), capture_output=True,
                       text=True, timeout=120, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    lines = p.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("blocking wait"))
    rows = [lines[at].split("  ", 1)[1].strip()]
    for line in lines[at + 1:]:
        if not line.startswith(" "):
            break
        rows.append(line.strip())
    return rows


@pytest.mark.spawn
def test_polls_unless_ranks_outnumber_cores():
    cores = len(os.sched_getaffinity(0))  # mpiexec here binds nothing: every rank's cores
    assert _polling(1) == [f"200 Tests before a monitored wait (1 rank on {cores} "
                           f"core{'s' * (cores != 1)} of this node)"]
    crowd = cores + 1
    # every rank chooses alike: rank 0's row, and no rank listed as differing
    assert _polling(crowd) == [f"0 Tests before a monitored wait ({crowd} ranks on {cores} "
                               f"core{'s' * (cores != 1)} of this node)"]
    assert _polling(2, MPICOLL_POLLS="7") == ["7 Tests before a monitored wait "
                                              "(MPICOLL_POLLS)"]


@pytest.mark.spawn
def test_bad_polls_setting_is_named():
    p = subprocess.run([sys.executable, "-m", "mpicoll", "info", "--verbose"], cwd=ROOT,
                       env=clean_env(MPICOLL_POLLS="many"), capture_output=True, text=True,
                       timeout=120, check=False)
    assert p.returncode != 0
    assert "environment variable MPICOLL_POLLS='many': expected a number of Tests" in p.stderr


@pytest.mark.parametrize("blocking", ["quick", "general"])
def test_interrupted_direct_exchange_keeps_its_messages(rank, size, blocking, python_path):
    from mpicoll._collectives import _direct

    if not 1 < size <= _direct.MAX_RANKS:
        pytest.skip("needs a late peer on a group small enough to exchange directly")
    rows = 3 if blocking == "quick" else 2  # (a first call of its shape: the general path)
    x = np.arange(rows * size, dtype=np.float64) + 100 * rank
    y = np.full(rows * size, -1.0)
    if blocking == "quick":
        dist.all_to_all_single(y, x, [rows] * size, [rows] * size)
        y[:] = -1.0
    want = np.concatenate([np.arange(rows * rank, rows * (rank + 1)) + 100.0 * j
                           for j in range(size)])
    pg = resolve(None, "test")
    if rank == 0:
        # the messages are MPI's still: one pending Work holds them, its counts compared
        # when it completes
        _interrupted_then_completed(
            "all_to_all_single",
            lambda: dist.all_to_all_single(y, x, [rows] * size, [rows] * size), pg)
    else:
        time.sleep(0.3)  # rank 0 is waiting by now
        dist.all_to_all_single(y, x, [rows] * size, [rows] * size)
    np.testing.assert_array_equal(y, want)
    # the same call again (on the quick path: messages the group keeps, never the ones the
    # interrupted call's Work held, which it freed once complete)
    y[:] = -1.0
    dist.all_to_all_single(y, x, [rows] * size, [rows] * size)
    np.testing.assert_array_equal(y, want)
    # (the group's kept entries can run again: persistent requests alive, or, posted
    # afresh at each call, none left running)
    assert all(not r if _messages.FRESH else r for entry in pg.kept.values() for r in entry.reqs)


def _interrupt_at_return_of(function: str):
    """A trace function that raises KeyboardInterrupt as ``function`` returns (its work
    done), where a SIGINT's Python handler could raise it too."""
    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_name == function:
            def local(frame, event, arg):
                if event == "return":
                    sys.settrace(None)
                    raise KeyboardInterrupt
                return local
            return local
        return None
    return tracer


@pytest.mark.parametrize("blocking", ["quick", "general"])
def test_interrupt_after_the_messages_completed_still_reduces(rank, size, blocking,
                                                              python_path):
    # a direct reduce_scatter reduces once its messages complete: an interrupt that comes
    # as its wait returns (nothing left pending, so no Work) must not skip that
    from mpicoll._collectives import _direct

    if not 1 < size <= _direct.MAX_RANKS:
        pytest.skip("needs a late peer on a group small enough to exchange directly")
    n = 3 if blocking == "quick" else 2  # (a first call of its shape: the general path)
    x = np.arange(n * size, dtype=np.float64) + 100 * rank
    y = np.full(n, -1.0)
    if blocking == "quick":
        dist.reduce_scatter_tensor(y, x)
        y[:] = -1.0
    want = sum(np.arange(n * rank, n * (rank + 1)) + 100.0 * j for j in range(size))
    pg = resolve(None, "test")
    if rank == 0:
        before = set(_pending.pending)
        sys.settrace(_interrupt_at_return_of("wait_requests"))
        try:
            with pytest.raises(KeyboardInterrupt):
                dist.reduce_scatter_tensor(y, x)
        finally:
            sys.settrace(None)
        assert set(_pending.pending) == before  # nothing left pending
    else:
        time.sleep(0.3)  # rank 0 is waiting by now
        dist.reduce_scatter_tensor(y, x)
    np.testing.assert_array_equal(y, want)
    y[:] = -1.0  # and the same call again
    dist.reduce_scatter_tensor(y, x)
    np.testing.assert_array_equal(y, want)
    _pending.wait_pending(pg)
