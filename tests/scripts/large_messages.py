"""Messages of more than 2**31 elements (int8, so also more than 2 GiB) per rank.

Run at 2 ranks: mpiexec -n 2 python tests/scripts/large_messages.py
Prints one line per collective and the peak memory per rank relative to the
largest message, then "large messages ok".
"""
import resource
import sys
import time

import numpy as np

import mpicoll as dist

BIG = 2**31 + 64  # elements (and bytes) of the largest buffer
rank, size = dist.get_rank(), dist.get_world_size()
assert size == 2, "written for 2 ranks"


def pattern(n, salt):
    """Position-dependent int8 data, built in slices (an int64 arange would be 8x)."""
    out = np.empty(n, np.int8)
    step = 1 << 24
    for off in range(0, n, step):
        m = min(step, n - off)
        out[off:off + m] = slice_pattern(salt)(off, m)
    return out


def check(name, got, expected_fn):
    # compare in 256 MiB slices to keep the memory bounded
    step = 1 << 24
    for off in range(0, got.size, step):
        n = min(step, got.size - off)
        exp = expected_fn(off, n)
        if not np.array_equal(got[off:off + n], exp):
            bad = np.nonzero(got[off:off + n] != exp)[0][0] + off
            raise AssertionError(f"{name}: wrong value at element {bad}")


def timed(name, fn):
    dist.barrier()
    t0 = time.perf_counter()
    fn()
    dist.barrier()
    if rank == 0:
        print(f"{name}: {time.perf_counter() - t0:.2f} s", flush=True)


def slice_pattern(salt):
    def make(off, n):
        return ((np.arange(off, off + n, dtype=np.int64) % 251) + salt).astype(np.int8)
    return make


# all_reduce in place: > 2**31 elements
x = pattern(BIG, rank)
timed("all_reduce int8 2**31+64", lambda: dist.all_reduce(x))
check("all_reduce", x, lambda off, n: (slice_pattern(0)(off, n).astype(np.int64) * 2 + 1)
      .astype(np.int8))
del x

# broadcast from rank 1
y = pattern(BIG, 5) if rank == 1 else np.zeros(BIG, np.int8)
timed("broadcast int8 2**31+64", lambda: dist.broadcast(y, src=1))
check("broadcast", y, slice_pattern(5))
del y

# all_to_all_single with one split above 2**31: rank 0 sends BIG to rank 1, 8 to itself
small = 8
inp = pattern(small + BIG, 10 + rank) if rank == 0 else pattern(2 * small, 10 + rank)
in_splits = [small, BIG] if rank == 0 else [small, small]
out_splits = [small, small] if rank == 0 else [BIG, small]
out = np.zeros(sum(out_splits), np.int8)
timed("all_to_all_single, one split of 2**31+64", lambda: dist.all_to_all_single(
    out, inp, out_splits, in_splits))
if rank == 0:  # its own block, then rank 1's first block
    check("all_to_all_single own block", out[:small], slice_pattern(10))
    check("all_to_all_single from rank 1", out[small:], slice_pattern(11))
else:  # rank 0's large block, then its own second block
    check("all_to_all_single", out[:BIG], lambda off, n: slice_pattern(10)(off + small, n))
    check("all_to_all_single own block", out[BIG:],
          lambda off, n: slice_pattern(11)(off + small, n))
del inp, out

# all_gather_into_tensor: 2**30+32 per rank into > 2**31
half = BIG // 2
mine = pattern(half, 20 + rank)
gathered = np.zeros(2 * half, np.int8)
timed("all_gather_into_tensor to 2**31+64", lambda: dist.all_gather_into_tensor(gathered, mine))
check("all_gather[0]", gathered[:half], slice_pattern(20))
check("all_gather[1]", gathered[half:], slice_pattern(21))
del mine, gathered

peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(f"rank {rank}: peak memory {peak / 2**30:.2f} GiB = {peak / BIG:.2f} x the largest "
      "message", flush=True)
if rank == 0:
    print("large messages ok", flush=True)
sys.stdout.flush()
