"""On the torch of each lane: the torch backend's calls raise no FutureWarning or
DeprecationWarning from mpicoll's code (run with both as errors), the new calls where
torch has them, and, on torch >= 2.14, the backend found by its entry point with nothing
of mpicoll imported."""

from __future__ import annotations

import socket
import sys

import pytest
import torch
from _launch import run

pytestmark = pytest.mark.spawn
NEW = tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 14)


def _port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _run(*args: str, **env: str):
    res = run(2, ["-W", "error::FutureWarning", "-W", "error::DeprecationWarning",
                  "tests/scripts/torch_calls_no_warnings.py", *args], timeout=180, **env)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-6000:]
    return res.stdout


def test_no_future_or_deprecation_warning():
    out = _run()
    for r in range(2):
        assert f"rank {r}: torch {torch.__version__} ok" in out, out


@pytest.mark.skipif(not NEW, reason=f"torch {torch.__version__} has no backend entry points "
                    "(torch >= 2.14): the newest-torch lane runs this")
def test_found_by_its_entry_point():
    out = _run("ep", MASTER_ADDR="127.0.0.1", MASTER_PORT=_port())
    for r in range(2):
        assert f"rank {r}: torch {torch.__version__} ok (new calls) by entry point" in out, out


def test_the_entry_point_is_declared():
    from importlib.metadata import entry_points

    eps = [e for e in entry_points(group="torch.distributed.backends") if e.name == "mpicoll"]
    assert [e.value for e in eps] == ["mpicoll.torch:registered"], eps
    assert sys.modules.get("mpicoll.torch") is None or callable(eps[0].load())
