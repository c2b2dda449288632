"""Every rank waits in an operation that cannot complete, after rank 0 printed "ready":
rank 0 in an all_reduce the others never join, the others in a receive from rank 0 that
never comes (not in another collective: a library may match two different collectives'
messages, as Open MPI's libnbc does an all_reduce with a broadcast at 2 ranks, and so
complete them). For the Ctrl-C and SIGTERM tests."""
import numpy as np

import mpicoll as dist

dist.barrier()
if dist.get_rank() == 0:
    print("ready", flush=True)
if dist.get_rank() == 0:
    dist.all_reduce(np.ones(4))
else:
    dist.recv(np.ones(4), src=0)
print("unreachable", flush=True)
