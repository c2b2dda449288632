#!/bin/bash
# The GPU checks, in one go, on a CUDA machine that has torch, CuPy and JAX but no package
# registry (the workplace's device machine). The MPI comes as carried wheels in .whl/
# (mpich, mpi4py for the machine's Python, pytest-mpi), installed under a prefix of their
# own. Logs go to $OUT (default /tmp/gpu-out).
#
#   env.txt     what the machine has: GPU, versions, which MPI the image's mpi4py uses,
#               and mpicoll info (the compiled core, built here: build.log)
#   np1.log     tests/test_gpu.py and test_device.py at 1 and 2 ranks, the JAX jit tests at
#               1 rank (JAX's default device is the GPU there)
#   np2.log     the collective modules' torch-cuda and cupy cases at 1 rank, then at 2 ranks
#               one job per module (a failing rank aborts its job); the JAX jit tests at 2
#   seeds.log   the seed examples at 4 ranks with torch's default device set to cuda,
#               against the same examples on the CPU
#   bench.log   tests/scripts/gpu_bench.py at 2 ranks
# In that order, the most wanted first, so a run cut short still brings back the first.
# Arguments name the parts to run (tests seeds bench modules); none runs them all.
set -u
want() { [ $# -eq 0 ] || [ -z "$PARTS" ] || [[ " $PARTS " == *" $1 "* ]]; }
PARTS="$*"
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
PFX=/tmp/mpipfx
PYV=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
{
  nvidia-smi -L; python3 -V; which python3
  python3 -c "import torch, cupy, jax; print('torch', torch.__version__, 'cupy', cupy.__version__, 'jax', jax.__version__, jax.devices())"
  echo "--- the image's own mpi4py:"
  python3 -c "import mpi4py; print(mpi4py.__version__, mpi4py.__file__); from mpi4py import MPI; print(MPI.Get_library_version())" 2>&1 | tail -4
  ldconfig -p | grep -i "libmpi\|libucx\|libucp" ; command -v mpiexec mpirun ompi_info
} >"$OUT/env.txt" 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --prefix $PFX .whl/*.whl \
  >>"$OUT/env.txt" 2>&1 || { echo "wheel install failed"; cat "$OUT/env.txt"; exit 1; }
export PYTHONPATH=$PFX/lib/python$PYV/site-packages:$PWD LD_LIBRARY_PATH=$PFX/lib
export PATH=$PFX/bin:$PATH XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
export MPICOLL_TEST_FRAMEWORKS=numpy,torch,jax,cupy,torch-cuda MPIEXEC=$PFX/bin/mpiexec
python3 -c "from mpi4py import MPI; print('carried MPI:', MPI.Get_library_version().splitlines()[0])" >>"$OUT/env.txt" 2>&1
# The compiled core (and JAX's FFI handler, JAX being there) for this Python, with the
# carried wheel's mpicc, in place; MPICOLL_CORE=0 in the environment leaves it unbuilt.
if [ "${MPICOLL_CORE:-1}" != 0 ]; then
  MPICC=$PFX/bin/mpicc timeout 180 python3 setup.py -q build_ext --inplace >"$OUT/build.log" 2>&1 \
    || { echo "core build failed"; tail -30 "$OUT/build.log"; }
fi
python3 -m mpicoll info >>"$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

PYTEST="python3 -m pytest -q --with-mpi -p no:cacheprovider -rfEs --tb=short"
COLL="tests/test_all_gather.py tests/test_all_reduce.py tests/test_all_to_all.py tests/test_autograd.py
  tests/test_avg_integers.py tests/test_functional.py tests/test_gather_by_alltoallv.py
  tests/test_nan_minmax.py tests/test_new_calls.py tests/test_ordering.py tests/test_p2p.py
  tests/test_quick_path.py tests/test_reduce_scatter.py tests/test_rooted.py
  tests/test_separate_lists.py"
want tests && {
  echo "=== 1 rank: test_gpu, test_device, test_jax_jit"
  timeout 150 $PYTEST tests/test_gpu.py tests/test_device.py tests/test_jax_jit.py
  echo "=== 2 ranks: test_gpu, test_device"
  timeout 120 mpiexec -n 2 $PYTEST tests/test_gpu.py tests/test_device.py; echo "rc=$?"
} >"$OUT/np1.log" 2>&1
want tests && grep -E "^===|passed|failed|rc=" "$OUT/np1.log"
want seeds && {
  for f in examples/seed_00*.py; do
    echo "=== $f"
    timeout 60 mpiexec -n 4 python3 "$f" 2>&1 | sort >/tmp/cpu.txt
    timeout 60 mpiexec -n 4 python3 -c "import runpy, sys, torch; torch.set_default_device('cuda'); sys.argv=['$f']; runpy.run_path('$f', run_name='__main__')" 2>&1 | sort >/tmp/gpu.txt
    grep -c "cuda" /tmp/gpu.txt | sed 's/^/lines naming cuda: /'
    sed -e "s/, device='cuda:0'//g" /tmp/gpu.txt | diff /tmp/cpu.txt - && echo "SAME as on the CPU"
    cat /tmp/gpu.txt
  done
} >"$OUT/seeds.log" 2>&1
want seeds && grep -E "^===|SAME|cuda:" "$OUT/seeds.log" | head -20
want bench && timeout 200 mpiexec -n 2 python3 tests/scripts/gpu_bench.py >"$OUT/bench.log" 2>&1
want bench && cat "$OUT/bench.log"
want modules && {
  echo "=== 1 rank: collective modules, torch-cuda and cupy cases"
  # shellcheck disable=SC2086
  timeout 150 $PYTEST $COLL -k "torch-cuda or cupy"
  echo "=== 2 ranks: test_jax_jit"
  timeout 120 mpiexec -n 2 $PYTEST tests/test_jax_jit.py; echo "rc=$?"
  for m in $COLL; do
    echo "=== 2 ranks: $m (torch-cuda, cupy)"
    timeout 60 mpiexec -n 2 $PYTEST "$m" -k "torch-cuda or cupy" 2>&1 | tail -25; echo "rc=${PIPESTATUS[0]}"
  done
} >"$OUT/np2.log" 2>&1
want modules && grep -E "^===|passed|failed|rc=" "$OUT/np2.log"
