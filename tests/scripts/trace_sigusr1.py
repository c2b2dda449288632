"""Rank 0 is stuck in a receive for a while; meanwhile SIGUSR1 reaches it, and it writes
its flight record from the monitor thread (its main thread is inside MPI). Rank 0 then
prints what that dump said about the receive, read before the exit's dump replaces it."""
import json
import os
import pickle
import signal
import sys
import threading
import time

import numpy as np

import mpicoll as dist

rank = dist.get_rank()
dist.barrier()
folder = os.environ["MPICOLL_TRACE_DIR"]
path = os.path.join(folder, f"mpicoll_trace_rank_{rank}")
if rank == 0:
    threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGUSR1)).start()
    buf = np.empty(3, np.int64)
    dist.recv(buf, src=1)
    with open(path, "rb") as f:
        m = pickle.load(f)["mpicoll"]
    last = m["records"][-1]
    print(json.dumps({"reason": m["reason"], "op": last["op"], "state": last["state"],
                      "peer": last["peer"], "got": buf.tolist()}))
else:
    deadline = time.monotonic() + 30
    while not os.path.exists(os.path.join(folder, "mpicoll_trace_rank_0")):
        if time.monotonic() > deadline:
            sys.exit("rank 0 wrote no flight record on SIGUSR1")
        time.sleep(0.05)
    dist.send(np.arange(3, dtype=np.int64), dst=0)
