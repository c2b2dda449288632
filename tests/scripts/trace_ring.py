"""One rank, MPICOLL_TRACE_ENTRIES small: the ring keeps the last operations only.
argv[1] == 'kill': dump over and over until killed (the file must stay readable)."""
import sys

import numpy as np

import mpicoll as dist

kill = sys.argv[1:] == ["kill"]
x = np.ones(8, np.float32)
for _ in range(3000 if kill else 12):
    dist.all_reduce(x)
if kill:
    print("dumping", flush=True)
    while True:
        dist.dump_trace()
print(dist.dump_trace())
