"""[2] gather_single (alias gather_into_tensor) -> Gather: every rank's tensor into one
tensor on the destination (torch 2.15's single-tensor gather)."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._adapter import as_buffer
from .._adapter.dtypes import mpi_datatype
from .._process_group import _State, resolve
from .._work import Work
from ..errors import ArgumentValueError as _Value
from . import _validate
from ._call import issue
from ._sizes import rooted as rooted_sizes


def gather_single(tensor: Any, gather_tensor: Any = None, dst: int | None = None,
                  group: Any = None, async_op: bool = False,
                  group_dst: int | None = None) -> Work | None:
    """Gather every rank's ``tensor`` (the same size on every rank) into
    ``gather_tensor`` on rank ``dst``, in rank order.

    ``gather_tensor`` is given on the destination only and written in place; it holds
    ``P * tensor.numel()`` elements, concatenated ``(P * n, ...)`` or stacked
    ``(P, n, ...)``: only the count is checked, as torch does.
    """
    name = "gather_single"
    pg = _State.default if group is None else None
    if pg is None and (pg := resolve(group, name)) is None:
        return None
    if dst is None and group_dst is None:
        dst = 0  # torch's default: global rank 0
    root = _validate.root(pg, name, dst, group_dst, "dst", "group_dst")
    src = as_buffer(tensor, op=name, name="tensor")
    dt = mpi_datatype(src.array.dtype)
    n = src.numel
    if pg.my_rank != root:
        return issue(name, pg, "Gather", ([src.array, n, dt], None, root), None, async_op,
                     sig=lambda: {"dtype": src.dtype, "root": root, "mine": n},
                     sizes=rooted_sizes(name, pg, root, True, n, None, src.dtype))
    if gather_tensor is None:
        raise _Value(name, "missing", "{arg} is required on the destination rank",
                     {"arg": "gather_tensor"})
    out = as_buffer(gather_tensor, writable=True, op=name, name="gather_tensor")
    _validate.same_dtype(name, out, src, "gather_tensor", "tensor")
    if out.numel != pg.nranks * n:
        raise _Value(name, "numel_mismatch", "{arg} must hold {p} copies of {t}: expected "
                     "{expected} elements, got {got}",
                     {"arg": "gather_tensor", "p": str(pg.nranks), "t": "tensor"},
                     expected=pg.nranks * n, got=out.numel)
    if n and np.may_share_memory(src.view, out.view):
        src.detach_input()
    send = src.array
    return issue(name, pg, "Gather", ([send, n, dt], [out.array, n, dt], root),
                 out.commit_hook, async_op, [gather_tensor],
                 sig=lambda: {"dtype": src.dtype, "root": root, "mine": n},
                 sizes=rooted_sizes(name, pg, root, True, n, [n] * pg.nranks, src.dtype))


gather_into_tensor = gather_single
