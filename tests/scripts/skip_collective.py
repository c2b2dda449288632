"""Rank 1 skips an all_reduce; with MPICOLL_TIMEOUT the watchdog ends the job."""
import numpy as np

import mpicoll as dist

dist.barrier()
if dist.get_rank() != 1:
    dist.all_reduce(np.ones(16, np.float32))
else:
    import time

    time.sleep(60)  # stands for a rank that went elsewhere
print("unreachable")
