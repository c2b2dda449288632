"""A forked child (as a DataLoader worker) gets SIGTERM while its rank waits in a
collective: the child's signal must not end the rank (it inherits the wake-up pipe and
the handlers, which mpicoll drops in the child right after fork). Each rank prints
"rank r ok [...]"."""
import os
import signal
import time

import numpy as np

import mpicoll as dist

rank = dist.get_rank()
dist.barrier()
ready_r, ready_w = os.pipe()
child = os.fork()
if child == 0:
    os.write(ready_w, b"1")  # running (a worker that has started)
    time.sleep(60)
    os._exit(0)
os.read(ready_r, 1)
if rank == 0:
    time.sleep(3)  # rank 1 waits in all_reduce meanwhile, past the monitor's 2 s grace
else:
    os.kill(child, signal.SIGTERM)  # terminated just as this rank starts to wait
x = np.ones(2)
dist.all_reduce(x)
if rank == 0:
    os.kill(child, signal.SIGTERM)
os.waitpid(child, 0)
print(f"rank {rank} ok {x.tolist()}", flush=True)
