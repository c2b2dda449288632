"""A distributed 2-D FFT (numpy): row FFTs, an all_to_all transpose, row FFTs again.

Run: mpiexec -n 4 python examples/numpy_fft2_transpose.py

The N x N array is split by rows over the ranks. After the local FFT along
axis 1, an all_to_all_single transposes the distributed array (the
pencil-decomposition step of spectral solvers), then the local FFT along the
other axis completes the 2-D transform. Rank 0 gathers the result and compares
it with numpy.fft.fft2 on the whole array.
"""
import numpy as np

import mpicoll as dist

rank, world = dist.get_rank(), dist.get_world_size()
N = 8 * world
rows = N // world
full = np.random.default_rng(7).standard_normal((N, N))  # every rank can rebuild it
mine = full[rank * rows:(rank + 1) * rows].astype(np.complex128)

step1 = np.fft.fft(mine, axis=1)                       # (rows, N)
# cut my rows into `world` column blocks; block j goes to rank j
blocks = step1.reshape(rows, world, rows).transpose(1, 0, 2)   # (world, rows, rows), a view
recv = np.empty((world, rows, rows), np.complex128)
dist.all_to_all_single(recv, blocks)   # a non-contiguous input: mpicoll packs it correctly
# recv[i] = rows of rank i, my column block: transpose to get my rows of the transpose
mine_t = recv.transpose(2, 0, 1).reshape(rows, N)       # (my columns, all rows)
step2 = np.fft.fft(mine_t, axis=1)                      # FFT along the original axis 0

gathered = np.empty((N, N), np.complex128) if rank == 0 else None
dist.gather(step2, [gathered[i * rows:(i + 1) * rows] for i in range(world)]
            if rank == 0 else None, dst=0)
if rank == 0:
    err = np.max(np.abs(gathered.T - np.fft.fft2(full)))
    print(f"distributed fft2 of {N}x{N} on {world} ranks: max error {err:.2e}",
          "ok" if err < 1e-9 else "WRONG", flush=True)
