"""One rank leaves while the others still need it. Usage: leave_early.py <case> <token>.

exit3      rank 1 calls sys.exit(3) while the others wait in all_reduce
normal     rank 1 ends normally after one all_reduce; the others start a second one
recv       rank 1 sends one message and ends; rank 0 receives two
late       rank 1 calls sys.exit(3); the others start all_reduce a second later
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
if rank == 1:
    print("rank 1: done", flush=True)
elif case != "recv" or rank == 0:
    print(f"rank {rank}: unreachable", flush=True)
