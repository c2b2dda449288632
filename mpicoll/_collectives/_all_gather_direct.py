"""[2] all_gather and all_gather_into_tensor as direct messages (:mod:`._direct`): this
rank's tensor to every peer, each peer's received where it goes, this rank's own block
copied locally; each receive's tag tells what its peer sent, so a size that disagrees
raises on the rank whose output it spoils (:class:`~mpicoll.errors.SizeMismatch`), with
no message beside the data."""

from __future__ import annotations

from functools import partial
from typing import Any

import numpy as np

from .._adapter.dtypes import mpi_datatype
from .._adapter.views import PLAIN
from .._mpi import MPI
from .._work import Work
from . import _direct, _pack
from ._call import exchange_key
from ._entries import Messages
from ._large import INT_MAX
from ._own_block import own_block_copy
from ._signature import signature
from ._sizes import exchange as exchange_sizes


def into_tensor(pg: Any, src: Any, dst: Any, output: Any, count: int, dt: Any,
                async_op: bool, table: dict[tuple, Any]) -> Work | None:
    """all_gather_into_tensor as direct messages (:mod:`._direct`): this rank's input to
    every peer, each peer's block received where it goes; its quick entry stored."""
    name, me, n, rarr = "all_gather_into_tensor", pg._rank, pg._size, dst.array
    counts = [count] * n
    d = _direct.plan(pg, counts, counts, exchange_sizes(name, pg, counts, counts,
                                                        "output_tensor"),
                     signature(name, rarr.dtype))
    rd = _pack.displs(counts)
    # (this rank's block, flat: where it lies in the input and in the output)
    flat = own = (slice(0, count), slice(rd[me], rd[me] + count)) if count else None
    send = src.array
    if own is not None and np.may_share_memory(src.view, dst.view):
        if not dst.staged and send.ctypes.data == rarr.reshape(-1)[own[1]].ctypes.data:
            own = None  # in place: sent from where it lies, no copy
        else:
            src.detach_input()
            send = src.array
    if src.dtype in PLAIN and rarr.size <= INT_MAX:  # (apart, as the quick path's calls)
        table[exchange_key(rarr, send, pg, me)] = Messages("direct", (d.zeros, rd), dt, flat,
                                                            d)
    return _direct.issue(name, pg, d, ([send, (d.counts[0], d.zeros), dt],
                                       [rarr, (d.counts[1], rd), dt]),
                         (send, d.zeros, rarr, rd, dt), None if own is None else
                         (rarr.reshape(-1), own[1], send.reshape(-1)), dst.commit_hook,
                         async_op, [output], sig=lambda: {"dtype": src.dtype, "numel": count},
                         depth=4)


def listed(pg: Any, src: Any, sendspec: Any, recv: Any, staged: bool, counts: list[int],
           outs: list[Any], tensor_list: list[Any], async_op: bool,
           table: dict[tuple, Any]) -> Work | None:
    """all_gather of a list as direct messages (:mod:`._direct`): ``tensor`` to every
    peer, each peer's received into its entry of the list's area ``recv`` (``staged``: a
    staging area, unpacked after); ``sendspec``: the general path's (``MPI.IN_PLACE``
    where the tensor is its own entry: sent from there, no copy); its quick entry
    stored (by the displacements of an area of adjacent views)."""
    name, me, n, c = "all_gather", pg._rank, pg._size, src.numel
    d = _direct.plan(pg, [c] * n, counts, exchange_sizes(
        name, pg, [c] * n, counts, "tensor_list[{peer}]"), signature(name, recv.dtype))
    dt, rd = mpi_datatype(recv.dtype), _pack.displs(counts)
    send = recv[rd[me]:rd[me] + c] if sendspec is MPI.IN_PLACE else sendspec[0]
    if src.dtype in PLAIN:
        table[(recv.dtype, c, me, *counts)] = Messages("direct", rd, dt, None, d)
    return _direct.issue(name, pg, d, ([send, (d.counts[0], d.zeros), dt],
                                       [recv, (d.counts[1], rd), dt]),
                         (send, d.zeros, recv, rd, dt),
                         own_block_copy(send, recv, (0, rd[me], c))
                         if c and sendspec is not MPI.IN_PLACE else None,
                         partial(_pack.unpack, recv, outs) if staged else None, async_op,
                         list(tensor_list), keep=outs,
                         sig=lambda: {"dtype": src.dtype, "counts": counts}, depth=4)
