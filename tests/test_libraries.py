"""Real libraries over the torch backend, each in its own 2-rank job, each compared with
gloo or with a local reference (never with itself): Lightning's fit with DDP and
``sync_dist`` logging, accelerate on CPU over the "mpi" stand-in
(``mpicoll.torch.serve_as_mpi``; its gather of a 2-D tensor included), torchmetrics
synced with uneven sample counts, a Hugging Face ``Trainer``, and torch's own libraries
(PowerSGD's DDP hook, checkpointing, pipelining, compiled functional collectives)."""

from __future__ import annotations

import socket

import numpy as np
import pytest
from _launch import run

pytestmark = pytest.mark.spawn


def _port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def _job(script: str, *args: str, **env: str) -> str:
    res = run(2, [f"tests/scripts/{script}", *args], timeout=300, **env)
    assert res.returncode == 0, f"{script} {args}:\n{res.stdout[-4000:]}\n{res.stderr[-6000:]}"
    return res.stdout


def test_lightning_fit_over_mpicoll_equals_gloo(tmp_path):
    import lightning  # noqa: F401  (installed by the test extras: a missing one fails)

    weights = {}
    for backend in ("mpicoll", "gloo"):
        out = _job("lightning_fit.py", backend, str(tmp_path / f"{backend}.npy"))
        assert "rank 0: fit done" in out and "rank 1: fit done" in out, out
        weights[backend] = np.load(tmp_path / f"{backend}.npy")
    # DDP averages two ranks' gradients: a + b is exact in either order, so the two runs
    # end on the same weights, bit for bit
    np.testing.assert_array_equal(weights["mpicoll"], weights["gloo"])


def _over_mpi_and_gloo(tmp_path, script: str, says: str, ext: str) -> dict:
    """Run ``script MODE OUT`` over the "mpi" stand-in and over gloo, each rank saying
    ``<says> <mode>``; the file each wrote (OUT)."""
    paths = {}
    for mode in ("mpi", "gloo"):
        paths[mode] = tmp_path / f"{mode}{ext}"
        out = _job(script, mode, str(paths[mode]), MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=_port())
        for rank in (0, 1):
            assert f"rank {rank}: {says} {mode}" in out, out
    return paths


def test_accelerate_over_the_mpi_stand_in_equals_gloo(tmp_path):
    import accelerate  # noqa: F401

    paths = _over_mpi_and_gloo(tmp_path, "accelerate_train.py", "accelerate ok over", ".npy")
    np.testing.assert_array_equal(np.load(paths["mpi"]), np.load(paths["gloo"]))


def test_torchmetrics_sync_with_uneven_samples():
    import torchmetrics  # noqa: F401

    out = _job("torchmetrics_sync.py")
    assert "rank 0: torchmetrics ok" in out and "rank 1: torchmetrics ok" in out, out


def test_hugging_face_trainer_over_the_mpi_stand_in_equals_gloo(tmp_path):
    import transformers  # noqa: F401

    paths = _over_mpi_and_gloo(tmp_path, "hf_trainer.py", "trainer ok over", ".npz")
    got = {mode: np.load(path) for mode, path in paths.items()}
    np.testing.assert_array_equal(got["mpi"]["weights"], got["gloo"]["weights"])
    assert got["mpi"]["eval_loss"] == got["gloo"]["eval_loss"]


def test_torch_libraries_over_mpicoll_equal_gloo(tmp_path):
    got = {}
    for backend in ("mpicoll", "gloo"):
        (tmp_path / backend).mkdir()
        out = _job("torch_ecosystem.py", backend, str(tmp_path / backend),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=_port())
        for rank in (0, 1):
            assert f"rank {rank}: torch libraries ok over {backend}" in out, out
        got[backend] = [dict(np.load(tmp_path / backend / f"{rank}.npz")) for rank in (0, 1)]
    for rank in (0, 1):
        mine, gloo = got["mpicoll"][rank], got["gloo"][rank]
        assert mine.keys() == gloo.keys()
        for what in mine:  # sums of two ranks' values: exact in either order
            np.testing.assert_array_equal(mine[what], gloo[what], err_msg=what)
    # the ranks' DDP weights agree, and the compiled function's values are known:
    # all_gather(sum over ranks of 2 (arange(4) + rank), plus 1)
    np.testing.assert_array_equal(got["mpicoll"][0]["powersgd"], got["mpicoll"][1]["powersgd"])
    np.testing.assert_array_equal(got["mpicoll"][0]["compiled"], np.tile([3.0, 7, 11, 15], 2))
