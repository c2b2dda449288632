"""Seed 003: torch all_gather_into_tensor with a stacked (size, 2) output.

The seed's ``run(rank, size)`` is kept verbatim (with ``import mpicoll as
dist``); mpiexec replaces its subprocess launcher, so ``init_process_group``
checks that ``rank`` and ``world_size`` agree with MPI.

Run: mpiexec -n 4 python examples/seed_003_all_gather_into_tensor.py
"""
import torch
import mpicoll as dist
import os


def run(rank, size):
    # 初始化分布式环境
    os.environ['MASTER_ADDR'] = 'localhost'
    os.environ['MASTER_PORT'] = '12355'
    dist.init_process_group('gloo', rank=rank, world_size=size)  # 使用gloo后端(CPU),也可换nccl(GPU)
    # 每个进程创建本地张量(示例:rank=0→[0,0], rank=1→[1,1], 以此类推)
    local_tensor = torch.tensor([rank] * 2, dtype=torch.float32)
    print(f"进程 {rank} 的本地张量: {local_tensor}")
    # 预先分配输出张量:总大小 = 进程数 × 本地张量大小
    output_tensor = torch.empty((size, 2), dtype=torch.float32)  # 4个进程×2元素=8元素
    # 执行all_gather_into_tensor:聚合所有进程的本地张量到output_tensor
    dist.all_gather_into_tensor(output_tensor, local_tensor)
    # 每个进程都会得到完整的聚合结果
    print(f"进程 {rank} 的聚合结果: {output_tensor}")


def main():
    # mpicoll starts MPI here (its settings first: under srun --mpi=pmi2 the mpich wheel
    # needs the OFI network module, which mpicoll chooses only if it starts MPI)
    run(dist.get_rank(), dist.get_world_size())


if __name__ == "__main__":
    main()
