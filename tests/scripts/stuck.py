"""Every rank waits in a collective that cannot complete (rank 0 reduces, the others
broadcast), after rank 0 printed "ready": for the Ctrl-C and SIGTERM tests."""
import numpy as np

import mpicoll as dist

dist.barrier()
if dist.get_rank() == 0:
    print("ready", flush=True)
if dist.get_rank() == 0:
    dist.all_reduce(np.ones(4))
else:
    dist.broadcast(np.ones(4), src=0)
print("unreachable", flush=True)
