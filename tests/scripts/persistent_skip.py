"""Rank 1 skips the second start of a persistent all_reduce; with MPICOLL_TIMEOUT the
watchdog ends the job and names the start (argument: "blocking" or "async")."""
import sys
import time

import numpy as np

import mpicoll as dist

dist.barrier()
t = np.ones(16, np.float32)
coll = dist.all_reduce_init(t)
coll()
if dist.get_rank() != 1:
    if sys.argv[1] == "blocking":
        coll()
    else:
        coll.start(async_op=True).wait()
else:
    time.sleep(60)  # stands for a rank that went elsewhere
print("unreachable")
