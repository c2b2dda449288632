"""Rank 1 is killed (SIGKILL) while the others wait in a collective."""
import os
import signal

import numpy as np

import mpicoll as dist

dist.all_reduce(np.ones(4))
if dist.get_rank() == 1:
    os.kill(os.getpid(), signal.SIGKILL)
dist.all_reduce(np.ones(4))
print("unreachable")
