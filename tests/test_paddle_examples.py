"""Seed 002's Paddle examples under mpiexec -n 2, checked against their documented output."""

from __future__ import annotations

import pytest
from _launch import run_per_rank

# paddle is installed wherever the suite runs (make venv): without it these fail, not skip
pytestmark = pytest.mark.spawn


def _line(text: str, prefix: str) -> str:
    for line in text.splitlines():
        if line.startswith(prefix):
            return line[len(prefix):]
    raise AssertionError(f"no line starting with {prefix!r} in:\n{text}")


# The documentation's "# output for rank r: ..." values, as Tensor.tolist() prints them.
CASE_1 = {0: "[0, 2]", 1: "[1, 3]"}
CASE_2 = {0: "[[0.0, 0.0], [1.0, 1.0]]", 1: "[[0.0, 0.0], [0.0, 0.0], [1.0, 1.0], [1.0, 1.0]]"}


def test_seed_002_alltoall_single_verbatim_under_v2():
    p, out = run_per_rank(2, ["examples/seed_002_alltoall_single.py"])
    assert p.returncode == 0, p.stderr
    for r in range(2):
        assert _line(out[r], f"case 1 rank {r}: ") == CASE_1[r]
        assert _line(out[r], f"case 2 rank {r}: ") == CASE_2[r]
    # the example's own print(output): Paddle's repr of the same values
    assert "[0, 2])" in out[0] and "[1, 3])" in out[1]
    assert "[[0., 0.],\n        [1., 1.]])" in out[0]
    assert "[[0., 0.],\n        [0., 0.],\n        [1., 1.],\n        [1., 1.]])" in out[1]


def test_paddle_3x_order_gives_the_same_outputs():
    p, out = run_per_rank(2, ["examples/paddle_alltoall_3x.py"])
    assert p.returncode == 0, p.stderr
    for r in range(2):
        for style in ("positional", "keywords"):
            assert _line(out[r], f"case 1 {style} rank {r}: ") == CASE_1[r]
            assert _line(out[r], f"case 2 {style} rank {r}: ") == CASE_2[r]
        assert _line(out[r], f"alltoall case 1 rank {r}: ") == f"[[{r}], [{r + 2}]]"
    assert _line(out[0], "alltoall case 2 rank 0: ") == "[[[0.0, 0.0]], [[1.0, 1.0]]]"
    assert _line(out[1], "alltoall case 2 rank 1: ") == (
        "[[[0.0, 0.0], [0.0, 0.0]], [[1.0, 1.0], [1.0, 1.0]]]")
    for r, rows in ((0, 2), (1, 4)):
        assert _line(out[r], f"2.x order rank {r}: ") == (
            f"ValueError: alltoall_single: in_split_sizes must sum to dim 0 of in_tensor: "
            f"expected {rows}, got sum([1, 2]) = 3; the tensors may have been passed in "
            "Paddle 2.x order (in_tensor, out_tensor): mpicoll.paddle follows Paddle 3.x "
            "(out_tensor, in_tensor); for the 2.x order use mpicoll.paddle.v2")
