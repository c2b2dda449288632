"""Seed 001: torch reduce_scatter with a list of 0-d tensors, verbatim but for
the CUDA lines (``torch.cuda.set_device`` and ``.to("cuda:...")``), over mpicoll.

Run: mpiexec -n 4 python examples/seed_001_reduce_scatter.py
"""
import os
import torch
import mpicoll as dist
from torch.multiprocessing import Process
os.environ['MASTER_ADDR'] = '127.0.0.1'
os.environ['MASTER_PORT'] = '29500'
backend = 'nccl'
dist.init_process_group(backend)
rank = dist.get_rank()
# simple dist
if rank == 0:
    print("pid is {}, rank is {}".format(os.getpid(), rank))
else:
    print("pid is {}, rank is {}".format(os.getpid(), rank))
output = torch.tensor(0)
input_list = [torch.tensor(var) for var in range(4)]
if rank == 0:
    dist.reduce_scatter(output, input_list, op=dist.ReduceOp.SUM, async_op=False)
else:
    dist.reduce_scatter(output, input_list, op=dist.ReduceOp.SUM, async_op=False)
print('Pid is ', os.getpid(), ', Rank ', rank, ', output is: ', output)
