"""Seed 002's exchanges through ``mpicoll.paddle``, which follows Paddle 3.x.

Paddle 3.x's ``alltoall_single(out_tensor, in_tensor, in_split_sizes,
out_split_sizes, group, sync_op)`` takes the output first. Each exchange runs
once positionally in that order and once with keywords (which mean what their
names say in every convention); both give seed 002's documented outputs.
Passing the 2.x order here with split sizes that contradict the shapes fails
with an error that points to ``mpicoll.paddle.v2``, shown at the end.

Run: mpiexec -n 2 python examples/paddle_alltoall_3x.py
"""

import paddle

import mpicoll.paddle as dist

dist.init_parallel_env()
rank = dist.get_rank()
size = dist.get_world_size()
assert size == 2, "this example is written for 2 ranks"

# case 1: equal splits.
data = paddle.arange(2, dtype='int64') + rank * 2
output = paddle.empty([2], dtype='int64')
dist.alltoall_single(output, data)
print(f"case 1 positional rank {rank}: {output.tolist()}", flush=True)

output = paddle.empty([2], dtype='int64')
dist.alltoall_single(in_tensor=data, out_tensor=output)
print(f"case 1 keywords rank {rank}: {output.tolist()}", flush=True)

# case 2: uneven splits, a group, sync_op=False.
in_split_sizes = [i + 1 for i in range(size)]
out_split_sizes = [rank + 1 for i in range(size)]
data = paddle.ones([sum(in_split_sizes), size], dtype='float32') * rank
group = dist.new_group([0, 1])

output = paddle.empty([(rank + 1) * size, size], dtype='float32')
task = dist.alltoall_single(output, data, in_split_sizes, out_split_sizes, group, False)
task.wait()
print(f"case 2 positional rank {rank}: {output.tolist()}", flush=True)

output = paddle.empty([(rank + 1) * size, size], dtype='float32')
task = dist.alltoall_single(in_tensor=data, out_tensor=output, in_split_sizes=in_split_sizes,
                            out_split_sizes=out_split_sizes, group=group, sync_op=False)
task.wait()
print(f"case 2 keywords rank {rank}: {output.tolist()}", flush=True)

# The same exchanges with lists (alltoall), output list first. An empty output
# list is filled by appending tensors shaped like the inputs, as Paddle does, so
# it suits equal splits; uneven ones pass their output tensors.
out_list = []
dist.alltoall(out_list, list(paddle.split(paddle.arange(2, dtype='int64') + rank * 2, size)))
print(f"alltoall case 1 rank {rank}: {[t.tolist() for t in out_list]}", flush=True)

out_list = [paddle.empty([n, size], dtype='float32') for n in out_split_sizes]
dist.alltoall(out_list, list(paddle.split(data, in_split_sizes)), group=group)
print(f"alltoall case 2 rank {rank}: {[t.tolist() for t in out_list]}", flush=True)

# Seed 002's 2.x order (data, output) given to the 3.x module: refused before
# any data moves, since the split sizes do not fit the tensors in that order.
output = paddle.empty([(rank + 1) * size, size], dtype='float32')
try:
    dist.alltoall_single(data, output, in_split_sizes, out_split_sizes, group=group)
except ValueError as e:
    print(f"2.x order rank {rank}: ValueError: {e}", flush=True)
