"""One rank leaves while the others still need it. Usage: leave_early.py <case> <token>.

exit3      rank 1 calls sys.exit(3) while the others wait in all_reduce
normal     rank 1 ends normally after one all_reduce; the others start a second one
recv       rank 1 sends one message and ends; rank 0 receives two
late       rank 1 calls sys.exit(3); the others start all_reduce a second later
others     rank 2 ends normally; ranks 0 and 1 go on repeating calls on a group of their
           own (kept messages of every collective, run once a rank has left)
"""
import sys
import time

import numpy as np

import mpicoll as dist

case = sys.argv[1]
rank = dist.get_rank()
x = np.ones(4)
if case == "exit3":
    if rank == 1:
        sys.exit(3)
    dist.all_reduce(x)
elif case == "late":
    if rank == 1:
        sys.exit(3)
    time.sleep(1.0)
    dist.all_reduce(x)
elif case == "normal":
    dist.all_reduce(x)
    if rank != 1:
        dist.all_reduce(x)
elif case == "recv":
    if rank == 1:
        dist.send(x, dst=0)
    elif rank == 0:
        dist.recv(x, src=1)
        print("first message received", flush=True)
        dist.recv(x, src=1)
elif case == "others":
    g = dist.new_group([0, 1])
    if rank == 2:
        sys.exit(0)
    inp, out, mine = np.zeros(4), np.zeros(4), np.zeros(2)
    chunks, one = list(np.split(inp, 2)), np.zeros(2)
    for k in range(6):
        if k == 3:
            time.sleep(1.0)  # (rank 2 has left: its notice is in)
        inp[:] = np.arange(4.0) + 10 * rank + k
        one[:] = rank + k
        dist.all_to_all_single(out, inp, group=g)
        dist.reduce_scatter(mine, chunks, group=g)
        dist.all_reduce(one, group=g)
        want = np.concatenate([np.arange(2 * rank, 2 * rank + 2) + 10 * j + k for j in (0, 1)])
        assert np.array_equal(out, want), (k, out, want)
        assert np.array_equal(mine, 2 * (np.arange(2 * rank, 2 * rank + 2) + k) + 10), mine
        assert np.array_equal(one, np.full(2, 1.0 + 2 * k)), one
        # (every other kept call of one tensor or of a list of chunks: broadcast, reduce,
        # gather and scatter at the root and off it, all_gather and all_to_all of chunks)
        one[:] = rank + k
        dist.broadcast(one, src=1, group=g)
        assert np.array_equal(one, np.full(2, 1.0 + k)), one
        one[:] = rank + k
        dist.reduce(one, dst=0, group=g)
        assert np.array_equal(one, np.full(2, 1.0 + 2 * k if rank == 0 else rank + k)), one
        one[:] = rank + k
        outs = list(np.split(out, 2))
        dist.gather(one, outs if rank == 0 else None, dst=0, group=g)
        if rank == 0:
            assert np.array_equal(out, np.repeat([k, 1.0 + k], 2)), out
        dist.scatter(one, chunks if rank == 1 else None, src=1, group=g)
        assert np.array_equal(one, inp[2 * rank:2 * rank + 2] - 10 * rank + 10), one
        dist.all_gather(outs, mine, group=g)
        assert np.array_equal(out, 2 * (np.arange(4) + k) + 10), out
        dist.all_to_all(outs, chunks, group=g)
        assert np.array_equal(out, want), (k, out, want)
    print(f"rank {rank}: others went on", flush=True)
    sys.exit(0)
if rank == 1:
    print("rank 1: done", flush=True)
elif case != "recv" or rank == 0:
    print(f"rank {rank}: unreachable", flush=True)
