"""A rank that fails ends the whole job promptly, with its traceback visible."""

from __future__ import annotations

import time

import pytest
from _launch import run

pytestmark = pytest.mark.spawn


def test_uncaught_exception_on_one_rank_aborts_the_job():
    start = time.monotonic()
    p = run(3, ["tests/scripts/raise_on_one_rank.py"], timeout=60)
    elapsed = time.monotonic() - start
    assert p.returncode != 0
    assert "RuntimeError: boom on rank 1" in p.stderr
    assert "uncaught exception on rank 1; aborting the job" in p.stderr
    assert "unreachable" not in p.stdout
    assert elapsed < 30, f"job took {elapsed:.1f} s to end"


@pytest.mark.parametrize("backend", ["mpicoll", "gloo"])
def test_traceback_survives_torch_distributed_excepthook(backend):
    # torch.distributed's hook calls ours with sys.stderr captured, to prefix the text
    # after we return; we abort instead of returning, so that text must still come out
    p = run(2, ["tests/scripts/raise_after_torch_init.py", backend], timeout=120)
    assert p.returncode != 0
    assert "RuntimeError: boom on rank 1 after init_process_group" in p.stderr, p.stderr
    assert "uncaught exception on rank 1; aborting the job" in p.stderr
    assert "unreachable" not in p.stdout


def test_ctrl_c_says_where_the_rank_was():
    """The KeyboardInterrupt that mpicoll's SIGINT handler passes on names the user's
    frame: its traceback ends in the handler, which would read as mpicoll's own error."""
    import signal
    import sys

    from mpicoll import _signals

    here = sys._getframe()
    with pytest.raises(KeyboardInterrupt, match=r"Ctrl-C \(SIGINT\) while this rank was at "
                                                r".*test_failures.py:\d+ in "
                                                r"test_ctrl_c_says_where_the_rank_was; "
                                                r"mpicoll's handler only passes it on"):
        _signals._on_sigint(signal.SIGINT, here)
