"""Seed 002: paddle.distributed.alltoall_single examples, verbatim, over mpicoll.

The documentation example passes ``(data, output)``: Paddle 2.x's order
``(in_tensor, out_tensor)``, which ``mpicoll.paddle.v2`` follows (Paddle 3.x
puts the output first, as ``mpicoll.paddle`` does). The only change from the
documentation is the import line, plus a print of each rank's result.

Run: mpiexec -n 2 python examples/seed_002_alltoall_single.py
"""

import paddle

import mpicoll.paddle.v2 as dist

dist.init_parallel_env()
rank = dist.get_rank()
size = dist.get_world_size()
assert size == 2, "seed 002 is written for 2 ranks"

# case 1 (2 GPUs)
data = paddle.arange(2, dtype='int64') + rank * 2
# data for rank 0: [0, 1]
# data for rank 1: [2, 3]
output = paddle.empty([2], dtype='int64')
dist.alltoall_single(data, output)
print(output)
# output for rank 0: [0, 2]
# output for rank 1: [1, 3]
print(f"case 1 rank {rank}: {output.tolist()}", flush=True)

# case 2 (2 GPUs)
in_split_sizes = [i + 1 for i in range(size)]
# in_split_sizes for rank 0: [1, 2]
# in_split_sizes for rank 1: [1, 2]
out_split_sizes = [rank + 1 for i in range(size)]
# out_split_sizes for rank 0: [1, 1]
# out_split_sizes for rank 1: [2, 2]
data = paddle.ones([sum(in_split_sizes), size], dtype='float32') * rank
# data for rank 0: [[0., 0.], [0., 0.], [0., 0.]]
# data for rank 1: [[1., 1.], [1., 1.], [1., 1.]]
output = paddle.empty([(rank + 1) * size, size], dtype='float32')
group = dist.new_group([0, 1])
task = dist.alltoall_single(data,
                            output,
                            in_split_sizes,
                            out_split_sizes,
                            sync_op=False,
                            group=group)
task.wait()
print(output)
# output for rank 0: [[0., 0.], [1., 1.]]
# output for rank 1: [[0., 0.], [0., 0.], [1., 1.], [1., 1.]]
print(f"case 2 rank {rank}: {output.tolist()}", flush=True)
