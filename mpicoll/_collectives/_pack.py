"""[2] Lists of tensors as one MPI buffer: zero-copy when adjacent, else one pack."""

from __future__ import annotations

from itertools import accumulate

import numpy as np

from .._adapter import Buffer
from .._mpi import MPI


def displs(counts: list[int]) -> list[int]:
    """Exclusive prefix sums of ``counts``."""
    return [0, *accumulate(counts)][:-1]


def joined(bufs: list[Buffer]) -> np.ndarray | None:
    """One flat array over the list's memory, when the tensors lie end to end.

    This is the ``x.chunk(n)`` / ``x.split(sizes)`` pattern: MPI then reads or
    writes the caller's memory directly, with no pack or unpack.
    """
    first = None
    start = end = 0
    for b in bufs:
        if b.staged:
            return None
        a = b.array
        size = a.nbytes
        if not size:
            continue
        addr = MPI.buffer(a).address  # 0.1 us, where a.ctypes.data costs 1 us
        if first is None:
            first, start = a, addr
        elif addr != end:
            return None
        end = addr + size
    if first is None:
        return bufs[0].array.reshape(-1)[:0] if bufs else None
    if end - start == first.nbytes:  # one tensor holds it all
        return first.reshape(-1)
    # one flat array over the span (as_strided costs ~10x more); callers keep the
    # tensors alive for as long as MPI uses this memory
    mem = MPI.buffer.fromaddress(start, end - start, readonly=not first.flags.writeable)
    return np.frombuffer(mem, dtype=first.dtype)


def pack(bufs: list[Buffer]) -> np.ndarray:
    """The list's data, concatenated into a new flat array (one copy)."""
    joint = joined(bufs)
    if joint is not None:
        return joint
    return np.concatenate([b.array.reshape(-1) for b in bufs])


def receive_area(bufs: list[Buffer], total: int) -> tuple[np.ndarray, bool]:
    """Where MPI writes a list's data: its own memory if adjacent, else staging.

    Returns (flat array, whether unpack() is needed afterwards).
    """
    joint = joined(bufs)
    if joint is not None:
        return joint, False
    return np.empty(total, dtype=bufs[0].array.dtype), True


def unpack(flat: np.ndarray, bufs: list[Buffer]) -> None:
    """Copy a staged flat receive area into each tensor of the list."""
    off = 0
    for b in bufs:
        n = b.array.size
        b.array[...] = flat[off:off + n].reshape(b.array.shape)
        b.commit()
        off += n


def commit_all(bufs: list[Buffer]) -> None:
    """Write back every staged tensor of a list."""
    for b in bufs:
        b.commit()
