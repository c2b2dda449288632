"""A job whose groups send no messages of their own (run with MPICOLL_DIRECT=0, as on
more than 8 ranks): MPI's v-collectives carry the data, and their counts go beside it.
Each call is made once by the general path, then again with the Python path's call
refused, so that only the compiled core can make it: all_to_all_single with uneven split
sizes, all_to_all of chunks and of tensors allocated apart, all_gather into a list of
chunks of every rank's size, the tensor forms (all_to_all_single, all_gather_into_tensor,
reduce_scatter_tensor: their signature beside them), reduce_scatter from a list of chunks
and from tensors allocated apart (packed), gather and scatter of
every rank's size. Each result is compared with numpy's, each record must say completed;
then rank 1 repeats another validated call than its peers (SizeMismatch on every rank,
the record failed), the same for all_gather's list (every rank compares the counts: its
data may be left running), for a packed reduce_scatter and for all_gather_into_tensor
(every rank compares), for gather (the root compares) and scatter (each rank compares its
own), and the calls after them are right. On numpy arrays and torch tensors; prints one
line per framework and check (tests/test_core.py reads them)."""

from __future__ import annotations

import numpy as np
import torch

import mpicoll as dist
from mpicoll import _recorder
from mpicoll._collectives import _call, _rooted_quick, all_gather, all_to_all, reduce_scatter
from mpicoll.errors import SizeMismatch

dist.init_process_group()
rank, n = dist.get_rank(), dist.get_world_size()
assert dist.new_group(list(range(n))).direct is None, "run with MPICOLL_DIRECT=0"
QUICK = {m: m.quick for m in (_call, all_to_all, all_gather, reduce_scatter, _rooted_quick)}


def refused(*args, **kwargs):
    raise AssertionError("the Python path made a call the core makes")


def numpy_of(t):
    return t.numpy() if isinstance(t, torch.Tensor) else t


def pieces(t, sizes):
    if isinstance(t, torch.Tensor):
        return list(t.split(sizes))
    at = np.cumsum([0, *sizes])
    return [t[at[k]:at[k + 1]] for k in range(len(sizes))]


def run(xp):
    new = (lambda a: torch.from_numpy(np.array(a, np.float64))) if xp == "torch" else (
        lambda a: np.array(a, np.float64))
    g = dist.new_group(list(range(n)))
    splits = [rank + j + 1 for j in range(n)]  # (what rank j sends here: the same)
    inputs = [np.arange(sum(r + j + 1 for j in range(n)), dtype=np.float64) + 100 * r
              for r in range(n)]

    def block(src, dst):  # rank src's block for rank dst
        at = sum(src + k + 1 for k in range(dst))
        return inputs[src][at:at + src + dst + 1]
    exchanged = np.concatenate([block(j, rank) for j in range(n)])
    x, out = new(inputs[rank]), new(np.zeros(sum(splits)))
    chunk_in, chunk_out = pieces(x, splits), pieces(out, splits)
    sep_in, sep_out = [], []
    for j in range(n):  # (tensors allocated one by one: the lists' spans meet)
        sep_in.append(new(block(rank, j)))
        sep_out.append(new(np.zeros(splits[j])))
    mine = new(np.full(rank + 1, float(rank)))
    gathered = new(np.zeros(n * (n + 1) // 2))
    gather_out = pieces(gathered, [j + 1 for j in range(n)])
    summed = new(np.zeros(rank + 1))
    to_sum = new(np.arange(n * (n + 1) // 2, dtype=np.float64) * (rank + 1))
    first = rank * (rank + 1) // 2
    last = n - 1  # (gather's root; scatter's is rank 0)
    gathered_at = new(np.zeros(n * (n + 1) // 2))
    scattered = new(np.zeros(rank + 1))
    to_scatter = new(np.arange(n * (n + 1) // 2, dtype=np.float64) + 1000)
    to_sum_apart = [new(np.arange(j + 1, dtype=np.float64) * (rank + 1)) for j in range(n)]
    even_in, even_out = new(np.arange(2 * n, dtype=np.float64) + 10 * rank), new(np.zeros(2 * n))
    block_in, block_out = new(np.full(2, float(rank))), new(np.zeros(2))
    summed_apart = new(np.zeros(rank + 1))
    calls = [
        ("all_to_all_single", lambda: dist.all_to_all_single(out, x, splits, splits, group=g),
         lambda: numpy_of(out), exchanged),
        ("all_to_all", lambda: dist.all_to_all(chunk_out, chunk_in, group=g),
         lambda: numpy_of(out), exchanged),
        ("all_to_all", lambda: dist.all_to_all(sep_out, sep_in, group=g),
         lambda: np.concatenate([numpy_of(t) for t in sep_out]), exchanged),
        ("all_gather", lambda: dist.all_gather(gather_out, mine, group=g),
         lambda: numpy_of(gathered),
         np.concatenate([np.full(j + 1, float(j)) for j in range(n)])),
        ("reduce_scatter",
         lambda: dist.reduce_scatter(summed, pieces(to_sum, [j + 1 for j in range(n)]),
                                     group=g),
         lambda: numpy_of(summed),
         np.arange(first, first + rank + 1, dtype=np.float64) * (n * (n + 1) // 2)),
        # the tensor forms, their signature beside the data
        ("all_to_all_single", lambda: dist.all_to_all_single(even_out, even_in, group=g),
         lambda: numpy_of(even_out),
         np.concatenate([np.arange(2 * rank, 2 * rank + 2, dtype=np.float64) + 10 * j
                         for j in range(n)])),
        ("all_gather_into_tensor",
         lambda: dist.all_gather_into_tensor(even_out, block_in, group=g),
         lambda: numpy_of(even_out), np.repeat(np.arange(n, dtype=np.float64), 2)),
        ("reduce_scatter_tensor",
         lambda: dist.reduce_scatter_tensor(block_out, even_in, group=g),
         lambda: numpy_of(block_out),
         np.arange(2 * rank, 2 * rank + 2, dtype=np.float64) * n + 10 * n * (n - 1) / 2),
        ("reduce_scatter",  # (tensors allocated one by one: packed)
         lambda: dist.reduce_scatter(summed_apart, to_sum_apart, group=g),
         lambda: numpy_of(summed_apart),
         np.arange(rank + 1, dtype=np.float64) * (n * (n + 1) // 2)),
        ("gather",  # (uneven sizes: rank j sends j + 1 elements)
         lambda: dist.gather(mine, pieces(gathered_at, [j + 1 for j in range(n)])
                             if rank == last else None, dst=last, group=g),
         lambda: numpy_of(gathered_at if rank == last else mine),
         np.concatenate([np.full(j + 1, float(j)) for j in range(n)]) if rank == last
         else np.full(rank + 1, float(rank))),
        ("scatter",
         lambda: dist.scatter(scattered, pieces(to_scatter, [j + 1 for j in range(n)])
                              if rank == 0 else None, src=0, group=g),
         lambda: numpy_of(scattered),
         np.arange(first, first + rank + 1, dtype=np.float64) + 1000),
    ]
    wide, narrow = new(np.arange(2 * n)), new(np.arange(n))
    wide_out, narrow_out = new(np.zeros(2 * n)), new(np.zeros(n))
    two, one = [2] * n, [1] * n
    for _, call, _, _ in calls:  # (validated, their quick entries stored)
        call()
    dist.all_to_all_single(wide_out, wide, two, two, group=g)
    dist.all_to_all_single(narrow_out, narrow, one, one, group=g)
    for m in QUICK:
        m.quick = refused
    try:
        for _ in range(2):
            for op, call, got, want in calls:
                for t in (out, gathered, summed, summed_apart, gathered_at, scattered,
                          even_out, block_out, *sep_out):
                    t[...] = -1.0
                call()
                np.testing.assert_array_equal(got(), want, err_msg=op)
        records = _recorder.records()[-len(calls):]
        assert [r[_recorder.OP] for r in records] == [op for op, *_ in calls], records
        assert all(_recorder.state(r) == _recorder.COMPLETED for r in records), records
        try:  # rank 1 repeats the other validated call
            if rank == 1:
                dist.all_to_all_single(narrow_out, narrow, one, one, group=g)
            else:
                dist.all_to_all_single(wide_out, wide, two, two, group=g)
        except SizeMismatch as e:
            said = str(e)
        else:
            raise AssertionError("no SizeMismatch")
        assert _recorder.state(_recorder.records()[-1]) == _recorder.FAILED
        print(f"{xp}: {len(calls)} calls made in the core, right, recorded; the mismatch "
              f"raised SizeMismatch: {said}", flush=True)
        # where every rank compares (Agreed): all_gather of a list (MPI may relay the
        # data, which may be left running), reduce_scatter of tensors allocated apart (the
        # packed bytes kept with data MPI may still read), and a tensor form (its
        # signature beside the data). Each made with 2 and 3 elements a rank first, then
        # rank 1 makes the other
        for said_as, call in (
                ("relayed", lambda k: dist.all_gather(pieces(new(np.zeros(k * n)), [k] * n),
                                                      new(np.ones(k)), group=g)),
                ("packed", lambda k: dist.reduce_scatter(
                    new(np.zeros(k)), [new(np.ones(k)) for _ in range(n)], group=g)),
                ("signed", lambda k: dist.all_gather_into_tensor(new(np.zeros(k * n)),
                                                                 new(np.ones(k)), group=g))):
            for k in (2, 3):
                call(k)
            try:
                call(3 if rank == 1 else 2)
            except SizeMismatch as e:
                print(f"{xp}: {said_as}, SizeMismatch: {e}", flush=True)
            else:
                raise AssertionError(f"{said_as}: no SizeMismatch")
        # gather's counts compared on the root, scatter's on each rank: rank 1 repeats
        # the other validated call, and the rank that compares raises
        ones, twos = new(np.zeros(n)), new(np.zeros(2 * n))
        for k, at in ((1, ones), (2, twos)):
            dist.gather(new(np.ones(k)), pieces(at, [k] * n) if rank == 0 else None, dst=0,
                        group=g)
            dist.scatter(new(np.zeros(k)), pieces(at, [k] * n) if rank == 0 else None, src=0,
                         group=g)
        k = 2 if rank == 1 else 1
        for op, call in (("gather", lambda: dist.gather(
                              new(np.ones(k)), pieces(ones, [1] * n) if rank == 0 else None,
                              dst=0, group=g)),
                         ("scatter", lambda: dist.scatter(
                              new(np.zeros(k)), pieces(ones, [1] * n) if rank == 0 else None,
                              src=0, group=g))):
            try:
                call()
            except SizeMismatch as e:
                print(f"{xp}: {op} compared here, SizeMismatch: {e}", flush=True)
            else:
                assert rank != (0 if op == "gather" else 1), f"{op}: no SizeMismatch"
        for op, call, got, want in calls:  # (and the group goes on, right)
            call()
            np.testing.assert_array_equal(got(), want, err_msg=op)
        print(f"{xp}: after it, right", flush=True)
    finally:
        for m, f in QUICK.items():
            m.quick = f
    dist.destroy_process_group(g)


run("numpy")
run("torch")
